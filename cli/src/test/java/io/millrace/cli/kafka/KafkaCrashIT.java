package io.millrace.cli.kafka;

import io.millrace.cli.crash.EngineProcess;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.Lsn;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.sink.kafka.testing.KafkaBroker;
import io.millrace.sink.kafka.testing.TopicState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Kafka crash test: {@code millrace run} in its own JVM, writing to a real broker in this JVM, is
 * killed with SIGKILL at random moments ({@value #DEFAULT_KILLS} times by default; the first one during
 * the initial snapshot) while a load thread keeps changing the source, and started again; then a last
 * run catches up and is stopped with SIGTERM.
 *
 * <p>Every row change is identifiable: each UPDATE increments the row's {@code version}. A
 * {@code read_committed} consumer rebuilding the table from its topic ({@link TopicState}) must then
 * find each change exactly once and in order per key (a repeated change repeats a version, a lost one
 * skips one; positions increase strictly), and the rebuilt rows must equal the source
 * (INV: RESUME, exactly once). Even-numbered kills wait until the run has committed a transaction to
 * Kafka, so they land between transactions of a moving stream. Snapshot reads are state, not changes:
 * a chunk of an interrupted snapshot may be read again (counted, and never older than what was seen). After each kill the slot's {@code confirmed_flush_lsn} must be at or
 * before the flush LSN of the checkpoint committed in Kafka (INV: DURABLE). The seed is printed;
 * {@code -Dmillrace.crash.seed} and {@code -Dmillrace.crash.kills} replay or change the run.
 */
class KafkaCrashIT {
    static final int DEFAULT_KILLS = 10;
    private static final String DB = "kcrash";
    private static final String TOPIC = "kcrash.public.items";
    private static final ObjectMapper JSON = new ObjectMapper();

    private static EmbeddedPg pg;
    private static KafkaBroker kafka;

    @BeforeAll
    static void start() throws Exception {
        kafka = KafkaBroker.start();
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase(DB);
        pg.execute(DB, "CREATE TABLE public.items (id bigint PRIMARY KEY, version int NOT NULL, payload text)",
                "INSERT INTO public.items SELECT g, 0, md5(g::text) FROM generate_series(1, 60000) g");
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
    void eachSourceChangeIsInKafkaExactlyOnceAfterRandomSigkills() throws Exception {
        long seed = Long.getLong("millrace.crash.seed", System.nanoTime());
        int kills = Integer.getInteger("millrace.crash.kills", DEFAULT_KILLS);
        System.out.printf("KafkaCrashIT: seed %d, %d kills (replay with -Dmillrace.crash.seed=%d)%n", seed, kills, seed);
        Random rnd = new Random(seed);
        Path work = Path.of("target", "kafka-crash").toAbsolutePath();
        Files.createDirectories(work);
        Path config = work.resolve("config.yaml");
        Files.writeString(config, config(), StandardCharsets.UTF_8);

        Load load = new Load(seed * 31 + 7);
        Thread loadThread = new Thread(load, "kafka-crash-load");
        loadThread.start();
        List<String> kinds = new ArrayList<>();
        EngineProcess engine = null;
        try (Connection src = pg.connect(DB)) {
            for (int i = 1; i <= kills; i++) {
                awaitSlotIdle(src);
                engine = EngineProcess.start(config, work.resolve(String.format("engine-%02d.log", i)));
                long delay;
                if (i == 1) {
                    awaitLog(engine, "snapshot of", 60_000);
                    delay = engine.millisSinceStart() + 200 + rnd.nextInt(800); // inside the initial snapshot (60 000 rows)
                } else if (i == 2) {
                    // the interrupted snapshot is finished (online) before the next kill, so that later kills hit a stream
                    // that moves; the snapshot's own exactly-once is the first kill's part
                    // unless the first run finished the snapshot before its kill (it takes under a second here): then this
                    // run resumes streaming and copies nothing
                    if (!java.nio.file.Files.readString(work.resolve("engine-01.log")).contains("snapshot done")) {
                        awaitLog(engine, "snapshot of public.items landed", 240_000);
                    }
                    delay = engine.millisSinceStart() + 200 + rnd.nextInt(1000);
                } else if (i % 2 == 0) {
                    // in the stream, after this run committed something: a kill between two of its transactions
                    awaitLog(engine, "streaming from slot", 120_000);
                    Lsn before = committedCheckpoint();
                    while (java.util.Objects.equals(committedCheckpoint(), before)) {
                        assertThat(engine.alive()).as("run %d ended; log:%n%s", i, engine.logTail(40)).isTrue();
                        assertThat(engine.millisSinceStart()).as("run %d committed nothing in 180 s", i).isLessThan(180_000);
                        Thread.sleep(200);
                    }
                    delay = engine.millisSinceStart() + rnd.nextInt(1500);
                } else {
                    delay = 300 + rnd.nextInt(3500); // anywhere: JVM start, open, resume, streaming
                }
                while (engine.millisSinceStart() < delay && engine.alive()) {
                    Thread.sleep(5);
                }
                assertThat(engine.alive()).as("run %d ended by itself; log %s:%n%s", i, engine.log(), engine.logTail(40)).isTrue();
                String phase = engine.logText().contains("streaming from") ? "streaming" : engine.logText().contains("snapshot of") ? "snapshot" : "startup";
                kinds.add(phase);
                assertThat(engine.kill()).as("exit status after SIGKILL").isEqualTo(137);
                engine = null;
                // INV: DURABLE — the slot never passes the checkpoint committed in Kafka
                Lsn confirmed = confirmedFlush(src);
                Lsn durable = committedCheckpoint();
                System.out.printf("KafkaCrashIT: kill %2d in %-9s slot confirmed %s, Kafka checkpoint %s%n", i, phase, confirmed, durable);
                if (confirmed != null && durable != null) {
                    assertThat(confirmed.compareTo(durable)).as("INV: DURABLE: confirmed_flush_lsn %s <= Kafka checkpoint %s", confirmed, durable)
                            .isLessThanOrEqualTo(0);
                }
                load.throwIfFailed();
            }
            load.stop();
            loadThread.join();
            load.throwIfFailed();

            awaitSlotIdle(src);
            engine = EngineProcess.start(config, work.resolve("engine-final.log"));
            List<String> expected = source(src);
            TopicState state = null;
            long deadline = System.currentTimeMillis() + 120_000;
            while (System.currentTimeMillis() < deadline) {
                state = TopicState.rebuild(kafka.readCommitted(TOPIC), "version");
                if (state.lines("version", "payload").equals(expected)) {
                    break;
                }
                assertThat(engine.alive()).as("final run ended; log:%n%s", engine.logTail(40)).isTrue();
                Thread.sleep(500);
            }
            int exit = engine.terminate(60);
            engine = null;
            System.out.printf("KafkaCrashIT summary: seed %d, kills %s, %d source transactions, %d events in Kafka"
                    + " (%d snapshot re-reads), final exit %d%n", seed, kinds, load.committed.get(), state.events(), state.rereads(), exit);
            assertThat(state.problems()).as("changes repeated, lost or out of order for read_committed").isEmpty();
            assertThat(state.lines("version", "payload")).as("rebuilt from Kafka = source").isEqualTo(expected);
            assertThat(kinds).as("kills during the snapshot").contains("snapshot");
            assertThat(kinds.stream().filter("streaming"::equals).count()).as("kills while streaming").isGreaterThanOrEqualTo(kills / 3);
            assertThat(exit).as("exit after SIGTERM").isEqualTo(0);
        } finally {
            if (engine != null) {
                engine.kill();
            }
            load.stop();
            loadThread.join(10_000);
        }
    }

    private static String config() {
        return String.join("\n",
                "name: kcrash",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: " + DB + ", user: postgres, slot: kcrash,",
                "         publication: kcrash, tables: [public.items], status_interval_ms: 1000}",
                "snapshot: {mode: initial, readers: 2, chunk_pages: 64}",
                "pipeline: {memory_budget_mb: 8, batch_kb: 64, linger_ms: 50}",
                "destinations:",
                "  - name: bus",
                "    type: kafka",
                "    bootstrap_servers: " + kafka.bootstrapServers(),
                "");
    }

    /** "{"id":n} -> version=v payload=p" lines ordered as TopicState orders keys (by their text). */
    private static List<String> source(Connection c) throws SQLException {
        TreeMap<String, String> rows = new TreeMap<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT id, version, payload FROM public.items")) {
            while (rs.next()) {
                String key = "{\"id\":" + rs.getLong(1) + "}";
                rows.put(key, key + " -> version=" + rs.getInt(2) + " payload=" + rs.getString(3));
            }
        }
        return new ArrayList<>(rows.values());
    }

    private static Lsn confirmedFlush(Connection src) throws SQLException {
        try (Statement s = src.createStatement();
             ResultSet rs = s.executeQuery("SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'kcrash'")) {
            return rs.next() && rs.getString(1) != null ? Lsn.parse(rs.getString(1)) : null;
        }
    }

    /** flush_lsn of the last checkpoint committed to the checkpoint topic, or null. */
    private static Lsn committedCheckpoint() throws Exception {
        if (!kafka.topics().contains("millrace.checkpoints")) {
            return null;
        }
        Lsn last = null;
        for (ConsumerRecord<String, String> r : kafka.readCommitted("millrace.checkpoints")) {
            if (r.value() != null) {
                JsonNode cp = JSON.readTree(r.value());
                last = Lsn.parse(cp.get("flush_lsn").asText());
            }
        }
        return last;
    }

    private static void awaitSlotIdle(Connection src) throws Exception {
        long start = System.currentTimeMillis();
        while (true) {
            try (Statement s = src.createStatement();
                 ResultSet rs = s.executeQuery("SELECT active FROM pg_replication_slots WHERE slot_name = 'kcrash'")) {
                if (!rs.next() || !rs.getBoolean(1)) {
                    return;
                }
            }
            assertThat(System.currentTimeMillis() - start).as("slot still active 30 s after the kill").isLessThan(30_000);
            Thread.sleep(10);
        }
    }

    private static void awaitLog(EngineProcess engine, String line, long timeoutMillis) throws InterruptedException {
        while (!engine.logText().contains(line)) {
            assertThat(engine.alive()).as("engine ended before '%s'; log %s:%n%s", line, engine.log(), engine.logTail(40)).isTrue();
            assertThat(engine.millisSinceStart()).as("no '%s' after %d ms; log %s", line, timeoutMillis, engine.log()).isLessThan(timeoutMillis);
            Thread.sleep(10);
        }
    }

    /**
     * The source load: transactions of 1–20 statements, each an insert of a new row, an update that
     * increments a random row's version (and changes its payload) or a delete; one large transaction of
     * up to 5000 updates every 200 transactions.
     */
    static final class Load implements Runnable {
        private final Random rnd;
        private final AtomicReference<Throwable> error = new AtomicReference<>();
        private volatile boolean stop;
        final AtomicLong committed = new AtomicLong();
        private long nextId = 1_000_000;

        Load(long seed) {
            this.rnd = new Random(seed);
        }

        @Override
        public void run() {
            try (Connection c = pg.connect(DB); Statement s = c.createStatement()) {
                c.setAutoCommit(false);
                while (!stop) {
                    if (committed.get() % 200 == 199) {
                        long from = 1 + rnd.nextInt(55_000);
                        s.executeUpdate("UPDATE public.items SET version = version + 1 WHERE id BETWEEN " + from + " AND " + (from + 5000));
                    } else {
                        int n = 1 + rnd.nextInt(20);
                        for (int i = 0; i < n; i++) {
                            int what = rnd.nextInt(10);
                            if (what < 3) {
                                s.executeUpdate("INSERT INTO public.items VALUES (" + (nextId++) + ", 0, 'new')");
                            } else if (what < 9) {
                                s.executeUpdate("UPDATE public.items SET version = version + 1, payload = md5(random()::text) WHERE id = "
                                        + (1 + rnd.nextInt(60_000)));
                            } else {
                                s.executeUpdate("DELETE FROM public.items WHERE id = " + (1 + rnd.nextInt(60_000)));
                            }
                        }
                    }
                    c.commit();
                    committed.incrementAndGet();
                    Thread.sleep(2);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Throwable t) {
                error.set(t);
            }
        }

        void stop() {
            stop = true;
        }

        void throwIfFailed() {
            if (error.get() != null) {
                throw new AssertionError("load failed", error.get());
            }
        }
    }
}
