package io.millrace.engine.online;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.CheckpointJson;
import io.millrace.core.change.KeyBound;
import io.millrace.core.change.OnlineTask;
import io.millrace.core.fault.Faults;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import io.millrace.sink.kafka.testing.KafkaBroker;
import io.millrace.sink.kafka.testing.TopicState;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The checkpoint upgrade (issue 17): online copies under way when Millrace stopped — one of a whole table, one of a
 * signal's filtered rows — recorded by each destination type (postgres, jsonl, DuckDB, Kafka) in checkpoint format 1, as
 * the release before the task kinds wrote them. The stored checkpoints are rewritten here into format 1 from what this
 * build wrote (format 1 is format 2 without a task's {@code kind}: a copy is told by its filter, a re-read by a comment at
 * the start of it, a reconciling copy by a flag). The next start reads them in every destination, continues both copies
 * from their landed ranges (the rows of landed chunks are not read again), loses no change made while it was stopped, and
 * writes format 2 back.
 *
 * <p>INV: RESUME — without the upgrade reading format 1 the start fails on every destination ("checkpoint format version 1
 * is not supported"); one that read the filtered task as a whole copy would copy the odd rows of {@code f} too.
 */
class CheckpointUpgradeIT {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final int T_ROWS = 30_000;
    private static final int F_ROWS = 10_000;
    private static final String ONLINE = "snapshot:\n  mode: never\n  readers: 2\n  online:\n    readers: 2\n    chunk_rows: 500\n"
            + "    min_chunk_rows: 500\n    max_chunk_rows: 500\n    target_chunk_ms: 50\n";
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

    private static String yaml(String db, Path dir) {
        return E2e.yaml(pg, db, "s_" + db, List.of("public.t", "public.f"), "auto", db + "_dst", dir.resolve("files"), "  batch_kb: 64\n")
                .replace("snapshot:\n  mode: initial\n  readers: 2\n", ONLINE)
                .replace("pipeline:\n", "  - {name: mirror, type: duckdb, file: '" + dir.resolve("mirror.duckdb").toAbsolutePath() + "'}\n"
                        + "  - {name: bus, type: kafka, bootstrap_servers: '" + kafka.bootstrapServers() + "', checkpoint_topic: upg_checkpoints,"
                        + " transactional_id: upg-bus}\npipeline:\n");
    }

    @Test
    void onlineCopiesRecordedInFormatOneByEveryDestinationContinueAfterTheUpgrade(@TempDir Path dir) throws Exception {
        String db = "upg";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        Files.createDirectories(dir.resolve("files"));
        TableRef t = new TableRef("public", "t");
        TableRef f = new TableRef("public", "f");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL, note text)",
                    "CREATE TABLE f (id int PRIMARY KEY, v int NOT NULL)",
                    "INSERT INTO t SELECT g, g, 'row ' || g FROM generate_series(1, " + T_ROWS + ") g",
                    "INSERT INTO f SELECT g, g FROM generate_series(1, " + F_ROWS + ") g", "ANALYZE");

            // 1. Both copies started (t's chunks are read first), and stopped once some of t's landed (each chunk read slowly).
            try (Faults.Armed slow = Faults.arm("snapshot.online.chunk-read:delay:150");
                 RunningEngine e = RunningEngine.start(yaml(db, dir), dir).awaitStreaming(WAIT)) {
                e.engine().snapshot(List.of(t), null);
                e.engine().snapshot(List.of(f), "id % 2 = 0");
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (true) {
                    Checkpoint p = InterruptedSnapshotIT.postgresCheckpoint(dst);
                    Checkpoint j = InterruptedSnapshotIT.jsonlCheckpoint(dir.resolve("files"));
                    if (landedSome(p, "public.t") && landedSome(j, "public.t") && p.online().size() == 2 && j.online().size() == 2) {
                        break;
                    }
                    assertThat(System.nanoTime()).as("no chunk of t landed: %s", e.engine().onlineSnapshots()).isLessThan(deadline);
                    Thread.sleep(20);
                }
            }
            Map<String, String> stored = new LinkedHashMap<>();
            stored.put("replica", E2e.queryString(dst, "SELECT checkpoint::text FROM millrace.checkpoints WHERE destination = 'replica'"));
            stored.put("files", E2e.JSON.readTree(Files.readString(dir.resolve("files/checkpoint.json"))).path("checkpoint").toString());
            stored.put("mirror", duckdb(dir, null));
            stored.put("bus", kafkaCheckpoint());
            int tLandedBelow = Integer.MAX_VALUE;
            for (Map.Entry<String, String> s : stored.entrySet()) {
                Checkpoint c = CheckpointJson.read(s.getValue());
                assertThat(c.online()).as("%s: both copies under way", s.getKey()).extracting(OnlineTask::table, OnlineTask::kind)
                        .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple(t, OnlineTask.Kind.COPY),
                                org.assertj.core.groups.Tuple.tuple(f, OnlineTask.Kind.FILTERED));
                OnlineTask copy = c.online().stream().filter(x -> x.table().equals(t)).findFirst().orElseThrow();
                assertThat(copy.remaining().get(0).lo()).as("%s: a chunk of t landed", s.getKey()).isInstanceOf(KeyBound.Key.class);
                tLandedBelow = Math.min(tLandedBelow, Integer.parseInt(((KeyBound.Key) copy.remaining().get(0).lo()).values().get(0)));
            }
            System.out.println("CheckpointUpgradeIT: t landed through id " + tLandedBelow + " of " + T_ROWS + " in every destination");

            // 2. Each destination's checkpoint as format 1 wrote it.
            try (PreparedStatement ps = dst.prepareStatement("UPDATE millrace.checkpoints SET checkpoint = ?::jsonb WHERE destination = 'replica'")) {
                ps.setString(1, formatOne(stored.get("replica")));
                assertThat(ps.executeUpdate()).isEqualTo(1);
            }
            ObjectNode state = (ObjectNode) E2e.JSON.readTree(Files.readString(dir.resolve("files/checkpoint.json")));
            state.set("checkpoint", E2e.JSON.readTree(formatOne(stored.get("files"))));
            Files.writeString(dir.resolve("files/checkpoint.json"), E2e.JSON.writeValueAsString(state));
            duckdb(dir, formatOne(stored.get("mirror")));
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
            try (KafkaProducer<String, String> p = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
                p.send(new ProducerRecord<>("upg_checkpoints", "upg-bus", formatOne(stored.get("bus")))).get();
            }
            assertThat(kafkaCheckpoint()).as("the Kafka destination's checkpoint is format 1").contains("\"version\":1");

            // 3. Changes while stopped: in t's landed part and in the part still to copy, and in f.
            E2e.exec(src, "UPDATE t SET v = -v, note = 'while stopped' WHERE id % 97 = 0", "DELETE FROM t WHERE id % 101 = 0",
                    "INSERT INTO t SELECT g, g, 'new' FROM generate_series(" + (T_ROWS + 1) + ", " + (T_ROWS + 300) + ") g",
                    "UPDATE f SET v = -v WHERE id % 50 = 0");

            // 4. The upgraded start: both copies continue from their landed ranges.
            int eventsBefore = E2e.events(dir.resolve("files")).size();
            try (LogCapture log = new LogCapture(); RunningEngine e = RunningEngine.start(yaml(db, dir), dir).awaitStreaming(WAIT)) {
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (!e.engine().onlineSnapshots().isEmpty()) {
                    assertThat(System.nanoTime()).as("copies not landed: %s", e.engine().onlineSnapshots()).isLessThan(deadline);
                    Thread.sleep(20);
                }
                assertThat(log.awaitContaining("online snapshot of public.t landed")).hasSize(1);
                assertThat(log.awaitContaining("online snapshot of public.f landed")).hasSize(1);
                E2e.tx(src, "INSERT INTO t VALUES (-1, -1, 'after the copies')");
                E2e.awaitRow(dst, "SELECT count(*) FROM public.t WHERE id = -1", WAIT);
            }

            // Nothing lost, nothing more: t whole, f the filtered copy's even rows plus the rows changed while stopped.
            E2e.awaitSame(src, dst, List.of(t), WAIT);
            assertThat(E2e.queryString(dst, "SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM public.f"))
                    .as("f: the filtered copy's rows (even ids; those changed while stopped are even too)")
                    .isEqualTo(E2e.queryString(src, "SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM f WHERE id % 2 = 0"));
            // The rows of t's landed chunks were not read again: after the start, reads of t come from the ranges left.
            List<JsonNode> after = E2e.events(dir.resolve("files")).subList(eventsBefore, E2e.events(dir.resolve("files")).size());
            TreeSet<Integer> tReads = new TreeSet<>();
            for (JsonNode ev : after) {
                if (E2e.isTable(ev, "t") && ev.path("op").asText().equals("r")) {
                    tReads.add(ev.path("after").path("id").asInt());
                }
            }
            assertThat(tReads).as("t copied on after the start").isNotEmpty();
            assertThat(tReads.first()).as("no row of a landed chunk of t read again").isGreaterThan(tLandedBelow);
            // Every destination wrote its checkpoint back in the current format, with nothing left to copy.
            Map<String, String> now = new HashMap<>();
            now.put("replica", E2e.queryString(dst, "SELECT checkpoint::text FROM millrace.checkpoints WHERE destination = 'replica'"));
            now.put("files", E2e.JSON.readTree(Files.readString(dir.resolve("files/checkpoint.json"))).path("checkpoint").toString());
            now.put("mirror", duckdb(dir, null));
            now.put("bus", kafkaCheckpoint());
            now.forEach((name, json) -> {
                assertThat(E2e.JSON.valueToTree(parse(json)).path("version").asInt()).as("%s: written back in format %d", name,
                        Checkpoint.VERSION).isEqualTo(Checkpoint.VERSION);
                assertThat(CheckpointJson.read(json).online()).as("%s: nothing left to copy", name).isEmpty();
            });
            try (Connection duck = DriverManager.getConnection("jdbc:duckdb:" + dir.resolve("mirror.duckdb").toAbsolutePath())) {
                for (String table : List.of("t", "f")) {
                    String sql = "SELECT CAST(count(*) AS VARCHAR) || ':' || CAST(coalesce(sum(id), 0) AS VARCHAR) || ':'"
                            + " || CAST(coalesce(sum(v), 0) AS VARCHAR) FROM ";
                    assertThat(E2e.queryString(duck, sql + "public." + table)).as("DuckDB %s", table)
                            .isEqualTo(E2e.queryString(dst, sql + "public." + table));
                }
            }
            TopicState topic = TopicState.rebuild(kafka.readCommitted("e2e.public.t"), null);
            assertThat(topic.rows()).as("Kafka: t's rows rebuilt from the topic").hasSize((int) E2e.queryLong(src, "SELECT count(*) FROM t"));
        }
    }

    private static JsonNode parse(String json) {
        try {
            return E2e.JSON.readTree(json);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /** {@code json} (format 2) as format 1 wrote it: no task kind; a re-read's filter marked, a reconciling copy flagged. */
    static String formatOne(String json) throws Exception {
        ObjectNode root = (ObjectNode) E2e.JSON.readTree(json);
        root.put("version", 1);
        for (JsonNode n : root.path("online")) {
            ObjectNode task = (ObjectNode) n;
            String kind = task.remove("kind").asText();
            if (kind.equals("reread")) {
                task.put("filter", "/* millrace: moved keys read again */ " + task.get("filter").asText());
            } else if (kind.equals("reconcile")) {
                task.put("reconcile", true);
            }
        }
        return E2e.JSON.writeValueAsString(root);
    }

    private static boolean landedSome(Checkpoint c, String table) {
        return c != null && c.online().stream().anyMatch(x -> x.table().toString().equals(table) && !x.remaining().isEmpty()
                && x.remaining().get(0).lo() instanceof KeyBound.Key);
    }

    /** The DuckDB destination's checkpoint JSON; with {@code replace}, first stores that instead. Millrace stopped. */
    private static String duckdb(Path dir, String replace) throws SQLException {
        try (Connection duck = DriverManager.getConnection("jdbc:duckdb:" + dir.resolve("mirror.duckdb").toAbsolutePath())) {
            if (replace != null) {
                try (PreparedStatement ps = duck.prepareStatement("UPDATE millrace.checkpoints SET checkpoint = ? WHERE destination = 'mirror'")) {
                    ps.setString(1, replace);
                    assertThat(ps.executeUpdate()).isEqualTo(1);
                }
            }
            return E2e.queryString(duck, "SELECT checkpoint FROM millrace.checkpoints WHERE destination = 'mirror'");
        }
    }

    /** The Kafka destination's checkpoint JSON: the last committed record of its key in the checkpoint topic. */
    private static String kafkaCheckpoint() {
        List<String> values = new ArrayList<>();
        kafka.readCommitted("upg_checkpoints").stream().filter(r -> "upg-bus".equals(r.key()) && r.value() != null)
                .forEach(r -> values.add(r.value()));
        assertThat(values).as("Kafka checkpoints").isNotEmpty();
        return values.get(values.size() - 1);
    }
}
