package io.millrace.cli.kafka;

import io.millrace.cli.crash.EngineProcess;

import io.millrace.embedded.EmbeddedPg;
import io.millrace.sink.kafka.testing.KafkaBroker;
import io.millrace.sink.kafka.testing.TopicState;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Kafka brokers go away for a while under a write load: {@code millrace run} reports it (naming
 * the bootstrap servers), its supervisor restarts the engine with backoff while the brokers are away,
 * and once they are back every change arrives exactly once (INV: RESUME): nothing lost, nothing twice,
 * the rebuilt state equals the source, and the process never stopped.
 */
class KafkaOutageIT {
    private static final String DB = "koutage";
    private static EmbeddedPg pg;
    private static KafkaBroker kafka;

    @BeforeAll
    static void start() throws Exception {
        kafka = KafkaBroker.startBehindProxy(); // cut off for the outage: see its javadoc
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase(DB);
        pg.execute(DB, "CREATE TABLE public.items (id bigint PRIMARY KEY, version int NOT NULL)",
                "INSERT INTO public.items SELECT g, 0 FROM generate_series(1, 2000) g");
    }

    @AfterAll
    static void stop() throws Exception {
        if (pg != null) {
            pg.close();
        }
        if (kafka != null) {
            kafka.close();
        }
    }

    @Test
    void aBrokerOutageIsRetriedAndLosesNothing() throws Exception {
        Path work = Path.of("target", "kafka-outage").toAbsolutePath();
        Files.createDirectories(work);
        Path config = work.resolve("config.yaml");
        Files.writeString(config, String.join("\n",
                "name: koutage",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: " + DB + ", user: postgres, slot: koutage,",
                "         publication: koutage, tables: [public.items], status_interval_ms: 1000}",
                "operations: {retry: {initial_ms: 500, max_ms: 2000, attempts: 0}}",
                "destinations:",
                "  - name: bus",
                "    type: kafka",
                "    bootstrap_servers: " + kafka.bootstrapServers(),
                "    producer: {max.block.ms: 4000, delivery.timeout.ms: 8000, request.timeout.ms: 3000}",
                ""), StandardCharsets.UTF_8);

        AtomicLong committed = new AtomicLong();
        AtomicReference<Throwable> loadError = new AtomicReference<>();
        java.util.concurrent.atomic.AtomicBoolean stopLoad = new java.util.concurrent.atomic.AtomicBoolean();
        Thread load = new Thread(() -> {
            Random rnd = new Random(42);
            long next = 100_000;
            try (Connection c = pg.connect(DB); Statement s = c.createStatement()) {
                while (!stopLoad.get()) {
                    if (rnd.nextInt(4) == 0) {
                        s.executeUpdate("INSERT INTO public.items VALUES (" + (next++) + ", 0)");
                    } else {
                        s.executeUpdate("UPDATE public.items SET version = version + 1 WHERE id = " + (1 + rnd.nextInt(2000)));
                    }
                    committed.incrementAndGet();
                    Thread.sleep(5);
                }
            } catch (Throwable t) {
                loadError.set(t);
            }
        }, "outage-load");

        EngineProcess engine = EngineProcess.start(config, work.resolve("engine.log"));
        try {
            long deadline = System.currentTimeMillis() + 120_000;
            while (!engine.logText().contains("streaming from slot")) {
                assertThat(engine.alive()).as("engine ended; log:%n%s", engine.logTail(40)).isTrue();
                assertThat(System.currentTimeMillis()).as("not streaming after 120 s").isLessThan(deadline);
                Thread.sleep(50);
            }
            load.start();
            Thread.sleep(3_000);
            long before = committed.get();
            kafka.cutOff(); // the brokers go away, mid-stream
            Thread.sleep(15_000);
            long during = committed.get() - before;
            kafka.reconnect();
            Thread.sleep(5_000);
            stopLoad.set(true);
            load.join();
            assertThat(loadError.get()).as("load").isNull();
            assertThat(during).as("source transactions while the brokers were away").isGreaterThan(100);

            List<String> expected = source();
            TopicState state = null;
            deadline = System.currentTimeMillis() + 120_000;
            while (System.currentTimeMillis() < deadline) {
                state = TopicState.rebuild(kafka.readCommitted("koutage.public.items"), "version");
                if (state.lines("version").equals(expected)) {
                    break;
                }
                Thread.sleep(500);
            }
            String log = engine.logText();
            System.out.printf("KafkaOutageIT: %d source transactions (%d while the brokers were away), %d events in Kafka%n",
                    committed.get(), during, state.events());
            assertThat(state.problems()).as("changes repeated, lost or out of order").isEmpty();
            assertThat(state.lines("version")).as("rebuilt from Kafka = source").isEqualTo(expected);
            assertThat(log).as("the outage is reported with the servers").containsAnyOf(
                    "cannot reach Kafka at " + kafka.bootstrapServers(), "could not write a batch");
            assertThat(log).as("and retried by the supervisor").contains("transient failure");
            assertThat(engine.alive()).as("the engine process kept running").isTrue();
            assertThat(engine.terminate(60)).as("exit after SIGTERM").isEqualTo(0);
        } finally {
            stopLoad.set(true);
            if (engine.alive()) {
                engine.kill();
            }
        }
    }

    private static List<String> source() throws Exception {
        TreeMap<String, String> rows = new TreeMap<>();
        try (Connection c = pg.connect(DB); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT id, version FROM public.items")) {
            while (rs.next()) {
                String key = "{\"id\":" + rs.getLong(1) + "}";
                rows.put(key, key + " -> version=" + rs.getInt(2));
            }
        }
        return new ArrayList<>(rows.values());
    }
}
