package io.millrace.engine.transform;

import com.fasterxml.jackson.databind.JsonNode;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import io.millrace.sink.kafka.testing.KafkaBroker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code transforms.toast: complete}: a jsonl and a Kafka consumer get every update's TOASTed value, also where PostgreSQL left it
 * out of the update (the column did not change, and the table has no REPLICA IDENTITY FULL), under concurrent updates of
 * the same rows that change the value and that do not.
 *
 * <p>The consistency rule (docs/EVENTS.md) checked event by event: each body carries its version, which only grows.
 * While the engine runs from its snapshot, every unchanged value is the one the row had at that change (the body of the
 * key's latest earlier event, from the cache the snapshot and the stream fill). After a restart (the cache starts empty,
 * no snapshot: the source is read by key) a value is the row's at that change or a later one, never an earlier one, and
 * always one the row really had. No event carries the placeholder; at the end the last event of each key holds the
 * source's body. The Kafka topic (read_committed, its partitions put back in commit order by each event's position) is
 * checked by the same rule.
 */
class ToastCompleteIT {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final String PLACEHOLDER = "__debezium_unavailable_value";
    private static final int ROWS = 300;
    private static EmbeddedPg pg;
    private static KafkaBroker kafka;

    @BeforeAll
    static void start() throws Exception {
        E2e.init();
        pg = EmbeddedPg.builder().major(17).setting("synchronous_commit", "on").start();
        kafka = KafkaBroker.start();
    }

    @AfterAll
    static void stop() throws Exception {
        if (kafka != null) {
            kafka.close();
        }
        if (pg != null) {
            pg.close();
        }
    }

    private static String yaml(Path dir, String cacheMb) {
        return E2e.yaml(pg, "toast", "s_toast", List.of("public.docs"), "auto", "toast_dst", dir.resolve("events"))
                .replace("pipeline:\n", "  - {name: bus, type: kafka, bootstrap_servers: '" + kafka.bootstrapServers() + "'}\npipeline:\n")
                + "\ntransforms:\n  toast: complete\n  toast_cache_mb: " + cacheMb + "\n";
    }

    /** The Kafka topic's change events, in commit order (by position; a partition keeps its keys' order). */
    private static List<JsonNode> kafkaEvents() throws Exception {
        String topic = kafka.topics().stream().filter(t -> t.endsWith(".public.docs")).findFirst().orElse(null);
        List<JsonNode> out = new ArrayList<>();
        if (topic == null) {
            return out; // not made yet
        }
        for (var r : kafka.readCommitted(topic)) {
            if (r.value() != null) {
                out.add(E2e.JSON.readTree(r.value()));
            }
        }
        out.sort(java.util.Comparator.comparing(E2e.Pos::of)); // stable: snapshot reads keep their order
        return out;
    }

    /** About 3.9 kB stored out of line, uncompressed: always TOASTed. Starts with its version: v<n>-<id>-... */
    private static final String BODY = "'v' || %s || '-' || id || '-' || repeat(md5(random()::text), 120)";

    @Test
    void everyUnchangedToastValueReachesJsonlAndKafkaUnderConcurrentUpdates(@TempDir Path dir) throws Exception {
        pg.createDatabase("toast");
        pg.createDatabase("toast_dst");
        pg.execute("toast", "CREATE TABLE public.docs (id int PRIMARY KEY, n int NOT NULL DEFAULT 0, body text)",
                "ALTER TABLE public.docs ALTER COLUMN body SET STORAGE EXTERNAL",
                "INSERT INTO public.docs (id, body) SELECT id, " + String.format(BODY, "0") + " FROM generate_series(1, " + ROWS + ") id");
        int firstRun;
        E2e.Pos firstRunEnd;
        try (RunningEngine e = RunningEngine.start(yaml(dir, "32"), dir).awaitStreaming(WAIT)) {
            load(Duration.ofSeconds(4));
            awaitCaughtUp(dir);
            List<JsonNode> first = unique(E2e.events(dir.resolve("events")));
            firstRun = first.size();
            firstRunEnd = E2e.Pos.of(first.get(first.size() - 1));
            assertThat(e.engine().state()).isNotNull();
        }
        // Started again: no snapshot, an empty cache, so the first update of each row reads the source.
        try (RunningEngine e = RunningEngine.start(yaml(dir, "1"), dir).awaitStreaming(WAIT)) {
            load(Duration.ofSeconds(4));
            awaitCaughtUp(dir);
        }
        List<JsonNode> events = unique(E2e.events(dir.resolve("events")));
        check(events, firstRun);
        List<JsonNode> inKafka = unique(kafkaEvents());
        assertThat(inKafka).as("each change once in Kafka").hasSameSizeAs(events);
        check(inKafka, (int) inKafka.stream().filter(x -> E2e.Pos.of(x).compareTo(firstRunEnd) <= 0).count());
    }

    /** Concurrent updates of random rows: one writer changes only n (the body stays TOASTed and unchanged), one the body. */
    private static void load(Duration d) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (String sql : List.of("UPDATE public.docs SET n = n + 1 WHERE id = ? OR id = ? + 1",
                "UPDATE public.docs SET body = " + String.format(BODY, "(substr(split_part(body, '-', 1), 2)::int + 1)") + " WHERE id = ?",
                "UPDATE public.docs SET n = n + 1 WHERE id = ?")) {
            Thread t = new Thread(() -> {
                try (Connection c = pg.connect("toast"); PreparedStatement ps = c.prepareStatement(sql)) {
                    while (!stop.get()) {
                        int id = 1 + ThreadLocalRandom.current().nextInt(ROWS - 1);
                        for (int i = 1; i <= ps.getParameterMetaData().getParameterCount(); i++) {
                            ps.setInt(i, id);
                        }
                        ps.executeUpdate();
                    }
                } catch (Throwable x) {
                    failed.set(x);
                }
            });
            t.start();
            threads.add(t);
        }
        Thread.sleep(d.toMillis());
        stop.set(true);
        for (Thread t : threads) {
            t.join();
        }
        assertThat(failed.get()).isNull();
    }

    /**
     * Waits until the jsonl and the Kafka destination have a marker written after the load (each destination's writer
     * stops at its own boundary: without the wait one may end the run behind the other).
     */
    private static void awaitCaughtUp(Path dir) throws Exception {
        int marker = ThreadLocalRandom.current().nextInt(1_000_000) + ROWS + 10;
        pg.execute("toast", "INSERT INTO public.docs (id, body) VALUES (" + marker + ", 'marker')");
        E2e.awaitEvent(dir.resolve("events"), x -> E2e.isTable(x, "docs") && x.path("after").path("id").asInt() == marker,
                "the marker " + marker, WAIT);
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (kafkaEvents().stream().noneMatch(x -> x.path("after").path("id").asInt() == marker)) {
            assertThat(System.nanoTime()).as("the marker %d in Kafka", marker).isLessThan(deadline);
            Thread.sleep(200);
        }
    }

    /** Events in file order without the repeats an at-least-once destination may write after a restart. */
    private static List<JsonNode> unique(List<JsonNode> all) {
        Set<E2e.Pos> seen = new HashSet<>();
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode e : all) {
            if (E2e.isTable(e, "docs") && seen.add(E2e.Pos.of(e))) {
                out.add(e);
            }
        }
        return out;
    }

    private static int version(String body) {
        return Integer.parseInt(body.substring(1, body.indexOf('-')));
    }

    private static void check(List<JsonNode> events, int firstRun) throws Exception {
        // Pass 1: which events changed the body (a snapshot row, an insert, an update that left n as it was: the body
        // writer's), and so the body each key had at each version.
        Map<Integer, Integer> lastN = new HashMap<>();
        Map<String, String> bodyAt = new HashMap<>(); // "id/version" -> body
        boolean[] bodyChange = new boolean[events.size()];
        for (int i = 0; i < events.size(); i++) {
            JsonNode after = events.get(i).path("after");
            int id = after.path("id").asInt();
            String body = after.path("body").asText();
            Integer n = lastN.put(id, after.path("n").asInt());
            bodyChange[i] = !"marker".equals(body) && (n == null || n == after.path("n").asInt());
            if (bodyChange[i]) {
                bodyAt.put(id + "/" + version(body), body);
            }
        }
        Map<Integer, String> last = new HashMap<>();
        int updates = 0;
        int exact = 0;
        int later = 0;
        for (int i = 0; i < events.size(); i++) {
            JsonNode e = events.get(i);
            JsonNode after = e.path("after");
            int id = after.path("id").asInt();
            String body = after.path("body").asText();
            if ("marker".equals(body)) {
                continue;
            }
            String what = "event " + i + " (" + e.path("op").asText() + ", " + (i < firstRun ? "first run" : "after the restart")
                    + ") of key " + id;
            assertThat(body).as(what).isNotEqualTo(PLACEHOLDER).startsWith("v");
            // the body the row had at this change: its latest real body (a completed value may have been a later one)
            String before = last.get(id);
            if (e.path("op").asText().equals("u") && before != null) {
                updates++;
                if (bodyChange[i]) {
                    assertThat(version(body)).as(what + ": a new body is the next version").isEqualTo(version(before) + 1);
                } else if (i < firstRun) {
                    assertThat(body).as(what + ": the value the row had at that change (from the cache)").isEqualTo(before);
                    exact++;
                } else {
                    assertThat(version(body)).as(what + ": never an earlier value than at that change").isGreaterThanOrEqualTo(version(before));
                    assertThat(body).as(what + ": a value the row really had").isEqualTo(bodyAt.get(id + "/" + version(body)));
                    if (!body.equals(before)) {
                        later++;
                    }
                }
            }
            if (bodyChange[i]) {
                last.put(id, body);
            }
        }
        System.out.println("ToastCompleteIT: " + events.size() + " events, " + updates + " updates, " + exact
                + " unchanged values completed exactly in the first run, " + later + " later values after the restart");
        assertThat(updates).isGreaterThan(500);
        assertThat(exact).isGreaterThan(100);
        Map<Integer, String> end = new HashMap<>();
        for (JsonNode e : events) {
            end.put(e.path("after").path("id").asInt(), e.path("after").path("body").asText());
        }
        try (Connection c = pg.connect("toast")) {
            for (int id = 1; id <= ROWS; id++) {
                assertThat(end.get(id)).as("key %d at the end", id)
                        .isEqualTo(E2e.queryString(c, "SELECT body FROM public.docs WHERE id = " + id));
            }
        }
    }
}
