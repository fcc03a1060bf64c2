package io.millrace.connect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.Lsn;
import io.millrace.embedded.EmbeddedPg;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfo;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfos;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorOffset;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorOffsets;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorStateInfo;
import org.apache.kafka.connect.util.clusters.EmbeddedConnectCluster;
import org.apache.kafka.connect.util.clusters.WorkerHandle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Millrace's connector on a real Kafka Connect cluster: Kafka's {@link EmbeddedConnectCluster} (two distributed
 * workers, a KRaft broker, exactly-once source support enabled) and an embedded PostgreSQL 17. The connector is made
 * through the REST API from a Debezium-style JSON configuration.
 *
 * <p>Run with exactly-once source support ({@link ConnectClusterIT}) and without ({@link ConnectAtLeastOnceIT}: then
 * repeats are allowed and dropped by their position, as a consumer does, and everything else holds).
 *
 * <p>Proves: snapshot and streaming of a mixed workload (inserts, updates, deletes, key changes, a truncate amid a
 * transaction's inserts, a large transaction)
 * reach the topics exactly once, in order per key, for a {@code read_committed} consumer, and the state rebuilt from
 * the topics equals the source (INV: ORDER, exactly once); the worker running the task is stopped under a write load
 * ({@value #FAILOVERS} times), the task resumes on the other worker from the committed offsets and the exactly-once check
 * still holds (INV: RESUME); the slot's {@code confirmed_flush_lsn} is never past the committed offset's position
 * (sampled throughout: INV: DURABLE); the REST validate call names a key Millrace does not support.
 *
 * <p>"Stopped" is {@link EmbeddedConnectCluster#removeWorker(WorkerHandle)} with a 1 ms graceful shutdown timeout: the
 * worker abandons its task (its producer is closed, its transaction is not committed), as close to a crash as an
 * in-JVM cluster allows; it is not a process kill.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ConnectClusterTests {
    /** Whether the workers have exactly-once source support (and the connector defines the transaction boundaries). */
    abstract boolean exactlyOnce();

    /**
     * With exactly-once workers: whether the connector's configuration asks for connector-defined transaction boundaries
     * ({@code transaction.boundary=connector}, {@code exactly.once.support=required}); without them, as a Debezium user's
     * JSON has it, the worker's default applies (a transaction per poll).
     */
    boolean connectorBoundaries() {
        return exactlyOnce();
    }

    private static boolean boundaries;

    private static boolean eos;

    private static final int FAILOVERS = Integer.getInteger("millrace.connect.failovers", 1);
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The connector the helpers look at, and its database (also its topic prefix, slot and publication stem). */
    static String NAME = "inventory";
    static String DB = "shop";

    static EmbeddedPg pg;
    static EmbeddedConnectCluster connect;

    @BeforeAll
    void start() {
        eos = exactlyOnce();
        boundaries = connectorBoundaries();
        pg = EmbeddedPg.builder().major(17).start();
        Map<String, String> worker = new HashMap<>();
        worker.put("exactly.once.source.support", eos ? "enabled" : "disabled");
        worker.put("offset.flush.interval.ms", "100"); // at least once: a batch waits for two flushes
        worker.put("task.shutdown.graceful.timeout.ms", "1");
        worker.put("scheduled.rebalance.max.delay.ms", "2000");
        worker.put("plugin.discovery", "service_load"); // every plugin has its ServiceLoader manifest: no 30 s classpath scan
        Properties broker = new Properties();
        broker.put("transaction.state.log.replication.factor", "1");
        broker.put("transaction.state.log.min.isr", "1");
        connect = new EmbeddedConnectCluster.Builder().name("millrace-connect").numWorkers(2).numBrokers(1).workerProps(worker)
                .brokerProps(broker).build();
        connect.start();
    }

    @AfterAll
    void stop() {
        if (connect != null) {
            connect.stop();
        }
        if (pg != null) {
            pg.close();
        }
    }

    /** Stops the cluster and the server a test class of its own started on the helpers' statics, leaving them null. */
    static void stopOwn() {
        if (connect != null) {
            connect.stop();
            connect = null;
        }
        if (pg != null) {
            pg.close();
            pg = null;
        }
    }

    /** The connector's configuration as a Debezium user writes it, with only connector.class changed. */
    static Map<String, String> config() throws Exception {
        String json = """
                {
                  "connector.class": "io.millrace.connect.MillraceSourceConnector",
                  "tasks.max": "1",
                  "database.hostname": "%s",
                  "database.port": "%d",
                  "database.user": "postgres",
                  "database.dbname": "%s",
                  "topic.prefix": "%s",
                  "slot.name": "%s_slot",
                  "publication.name": "%s_pub",
                  "plugin.name": "pgoutput",
                  "table.include.list": "public\\\\.accounts",
                  "snapshot.mode": "initial",
                  "tombstones.on.delete": "true",
                  "skipped.operations": "none",
                  "key.converter": "org.apache.kafka.connect.json.JsonConverter",
                  "key.converter.schemas.enable": "false",
                  "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                  "value.converter.schemas.enable": "false",
                  "topic.creation.default.replication.factor": "1",
                  "topic.creation.default.partitions": "1",
                  "exactly.once.support": "required",
                  "transaction.boundary": "connector",
                  "millrace.source.status.interval.ms": "200",
                  "millrace.pipeline.batch.kb": "64"
                }
                """.formatted(pg.host(), pg.port(), DB, DB, DB, DB);
        Map<String, String> m = new HashMap<>();
        JSON.readTree(json).fields().forEachRemaining(e -> m.put(e.getKey(), e.getValue().asText()));
        if (!eos || !boundaries) {
            // at least once: the worker's offset flushes, repeats are recognisable; or exactly once with the worker's
            // default boundaries (a transaction per poll), as a Debezium user's JSON has it
            m.remove("exactly.once.support");
            m.remove("transaction.boundary");
        }
        return m;
    }

    /** What the workload did, as the events it must produce: one per row changed (a key change: d and c). */
    static final class Expected {
        long c;
        long u;
        long d;
        long r;
        long t;
    }

    @Test
    void throughSnapshotStreamingAndFailover() throws Exception {
        pg.createDatabase(DB);
        // Transactions past 64 kB are streamed by the server while in progress (pgoutput's stream messages), as a large
        // one is on a server with its defaults once it passes 64 MB: the 20k-row transaction below goes that way.
        pg.execute("postgres", "ALTER SYSTEM SET logical_decoding_work_mem = '64kB'", "SELECT pg_reload_conf()");
        exec("CREATE TABLE accounts (id int PRIMARY KEY, owner text NOT NULL, balance bigint NOT NULL)",
                "INSERT INTO accounts SELECT g, 'owner ' || g, g * 10 FROM generate_series(1, 3000) g");
        Expected expected = new Expected();
        expected.r = 3000;

        Map<String, String> config = config();
        Map<String, String> bad = new HashMap<>(config);
        bad.put("name", NAME);
        bad.put("max.queue.size", "8192");
        ConfigInfos infos = connect.validateConnectorConfig("io.millrace.connect.MillraceSourceConnector", bad);
        List<String> errors = new ArrayList<>();
        for (ConfigInfo ci : infos.configs()) {
            if (ci.configValue() != null) {
                errors.addAll(ci.configValue().errors());
            }
        }
        assertThat(errors).singleElement().asString().contains("max.queue.size");
        assertThat(infos.errorCount()).isEqualTo(1);

        connect.configureConnector(NAME, config);
        connect.assertions().assertConnectorAndExactlyNumTasksAreRunning(NAME, 1, "the connector runs");
        awaitSlotCaughtUp(); // the slot exists: its snapshot's consistent point is before every change below

        AtomicReference<String> violation = new AtomicReference<>();
        AtomicBoolean sampling = new AtomicBoolean(true);
        int[] samples = new int[1];
        Thread sampler = new Thread(() -> sample(sampling, violation, samples), "slot-sampler");
        sampler.start();
        try {
            // Streaming: a mix of small transactions, key changes, and one large transaction.
            workload(expected, 200, 1);
            // A truncate between changes of one transaction (skipped.operations=none: it is a record): the rows before it
            // are gone for a consumer that applies it, the rows after it are the table.
            exec("BEGIN; INSERT INTO accounts VALUES (90001, 'gone', 1); TRUNCATE accounts; "
                    + "INSERT INTO accounts SELECT g, 'again ' || g, g * 10 FROM generate_series(1, 3000) g; COMMIT");
            expected.c += 3001;
            expected.t += 1;
            exec("UPDATE accounts SET id = id + 100000 WHERE id BETWEEN 1 AND 20");
            expected.d += 20;
            expected.c += 20;
            exec("BEGIN; INSERT INTO accounts SELECT g, 'bulk ' || g, g FROM generate_series(500001, 520000) g; "
                    + "UPDATE accounts SET balance = balance + 1 WHERE id BETWEEN 21 AND 2000; COMMIT");
            expected.c += 20000;
            expected.u += 1980;
            awaitSlotCaughtUp();
            awaitTrue("the large transaction was streamed in progress", () -> {
                try {
                    return count("SELECT coalesce(sum(stream_txns), 0) FROM pg_stat_replication_slots WHERE slot_name = '" + DB + "_slot'") > 0;
                } catch (Exception e) {
                    return false;
                }
            });
            metricsThroughTheWorker();

            for (int i = 0; i < FAILOVERS; i++) {
                WorkerHandle running = workerOfTask();
                AtomicBoolean writing = new AtomicBoolean(true);
                Expected during = new Expected();
                int base = 300000 + i * 10000;
                Thread writer = new Thread(() -> {
                    try {
                        // A large transaction first (cut into many batches, each its own Kafka transaction), so that the
                        // worker is stopped while it is delivered, then small ones.
                        int big = 2_000_000 + base;
                        exec("INSERT INTO accounts SELECT g, 'big', g FROM generate_series(" + big + ", " + (big + 4999) + ") g");
                        during.c += 5000;
                        int n = 0;
                        while (writing.get() && n < 2000) {
                            workloadStep(during, base + n, 2);
                            n++;
                        }
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }, "writer");
                writer.start();
                Thread.sleep(200 + ThreadLocalRandom.current().nextInt(600));
                connect.removeWorker(running); // abandons its task: see the class comment
                connect.addWorker();
                awaitTrue("the task runs on another worker", () -> {
                    WorkerHandle now = workerOfTaskOrNull();
                    return now != null && !now.equals(running) && taskState().equals("RUNNING");
                });
                Thread.sleep(500);
                writing.set(false);
                writer.join();
                expected.c += during.c;
                expected.u += during.u;
                expected.d += during.d;
                awaitSlotCaughtUp();
                check(expected, "after failover " + (i + 1));
            }
            check(expected, "at the end");
            identityAndRestore(expected);
            pauseDeleteRecreate(expected);
        } finally {
            sampling.set(false);
            sampler.join();
        }
        assertThat(violation.get()).as("slot confirmed past the committed offset").isNull();
        assertThat(samples[0]).as("samples of the slot and the committed offset").isGreaterThan(5);
    }

    /**
     * INV: IDENTITY through the REST API: the connector stopped, its offset altered to a checkpoint of another slot,
     * resumed: the task fails naming the slot. The committed offset put back, it resumes exactly once again.
     */
    private static void identityAndRestore(Expected expected) throws Exception {
        connect.stopConnector(NAME);
        connect.assertions().assertConnectorIsStopped(NAME, "the connector stops");
        // The task stops after the connector says so (its graceful stop times out at once here): the offset read next must
        // be its last, or putting it back below would take the slot's confirmed position back too.
        awaitTrue("the task has let the slot go, and its last offset is committed", () -> {
            try {
                Lsn confirmed = confirmedFlush();
                Lsn committed = committedFlush();
                return count("SELECT count(*) FROM pg_replication_slots WHERE active AND slot_name = '" + DB + "_slot'") == 0
                        && confirmed != null && committed != null && !confirmed.isAfter(committed);
            } catch (Exception e) {
                return false;
            }
        });
        Map<String, ?> partition = Map.of("server", DB);
        String original = connect.connectorOffsets(NAME).offsets().get(0).offset().get(MillraceSourceTask.OFFSET_KEY).toString();
        com.fasterxml.jackson.databind.node.ObjectNode foreign = (com.fasterxml.jackson.databind.node.ObjectNode) JSON.readTree(original);
        ((com.fasterxml.jackson.databind.node.ObjectNode) foreign.get("identity")).put("slot", "other_slot");
        connect.alterSourceConnectorOffset(NAME, partition, Map.of(MillraceSourceTask.OFFSET_KEY, foreign.toString()));
        connect.resumeConnector(NAME);
        awaitTrue("the task refuses the other slot's offset", () -> taskState().equals("FAILED"));
        assertThat(connect.connectorStatus(NAME).tasks().get(0).trace()).contains("slot 'other_slot'");

        connect.stopConnector(NAME);
        connect.assertions().assertConnectorIsStopped(NAME, "the connector stops");
        connect.alterSourceConnectorOffset(NAME, partition, Map.of(MillraceSourceTask.OFFSET_KEY, original));
        connect.resumeConnector(NAME); // the stopped connector's tasks start afresh
        awaitTrue("the task runs again", () -> taskState().equals("RUNNING"));
        workload(expected, 50, 7);
        awaitSlotCaughtUp();
        check(expected, "after the offset was put back");
    }

    /** Millrace's status as the task's plugin metrics, through the worker's JMX reporter. */
    private static void metricsThroughTheWorker() throws Exception {
        javax.management.MBeanServer server = java.lang.management.ManagementFactory.getPlatformMBeanServer();
        Map<String, Object> found = new HashMap<>();
        awaitTrue("the task's metrics in JMX", () -> {
            try {
                for (javax.management.ObjectName n : server.queryNames(new javax.management.ObjectName("kafka.connect:*"), null)) {
                    if (n.toString().contains("connector=" + NAME)) {
                        for (javax.management.MBeanAttributeInfo a : server.getMBeanInfo(n).getAttributes()) {
                            if (a.getName().startsWith("millrace-")) {
                                found.put(a.getName(), server.getAttribute(n, a.getName()));
                            }
                        }
                    }
                }
            } catch (Exception e) {
                return false;
            }
            return found.containsKey("millrace-events-written") && ((Number) found.get("millrace-events-written")).longValue() > 0;
        });
        assertThat(found).containsKeys("millrace-lag-bytes", "millrace-lag-ms", "millrace-durable-lsn").containsEntry("millrace-state",
                "streaming").containsEntry("millrace-not-captured", 0);
    }

    /** Pause and resume, then delete and create again under the same name: it resumes from the offsets Connect kept. */
    private static void pauseDeleteRecreate(Expected expected) throws Exception {
        connect.pauseConnector(NAME);
        connect.assertions().assertConnectorAndExactlyNumTasksArePaused(NAME, 1, "the connector pauses");
        workload(expected, 30, 8);
        connect.resumeConnector(NAME);
        connect.assertions().assertConnectorAndExactlyNumTasksAreRunning(NAME, 1, "the connector resumes");
        awaitSlotCaughtUp();
        check(expected, "after pause and resume");

        connect.deleteConnector(NAME);
        connect.assertions().assertConnectorDoesNotExist(NAME, "the connector is deleted");
        workload(expected, 30, 9);
        connect.configureConnector(NAME, config());
        connect.assertions().assertConnectorAndExactlyNumTasksAreRunning(NAME, 1, "the connector runs again");
        awaitSlotCaughtUp();
        check(expected, "after delete and re-create");
    }

    /** One step of a write load: an insert, an update of it, and every other time its delete. */
    private static void workloadStep(Expected e, int id, int step) throws Exception {
        exec("INSERT INTO accounts VALUES (" + id + ", 'w', 1)");
        e.c++;
        exec("UPDATE accounts SET balance = balance + 1 WHERE id = " + id);
        e.u++;
        if (id % step == 0) {
            exec("DELETE FROM accounts WHERE id = " + id);
            e.d++;
        }
    }

    static void workload(Expected e, int steps, int salt) throws Exception {
        for (int i = 0; i < steps; i++) {
            workloadStep(e, 100000 * (salt + 1) + i, 3);
        }
    }

    /** Reads every record as a read_committed consumer and checks exactly once, order per key, counts and state. */
    static void check(Expected expected, String when) throws Exception {
        Map<String, Long> ops = new TreeMap<>();
        Map<JsonNode, JsonNode> state = new HashMap<>();
        Map<JsonNode, long[]> lastPosition = new HashMap<>();
        Set<String> seen = new HashSet<>();
        int repeats = 0;
        JsonNode pendingDelete = null;
        boolean skipTombstone = false;
        for (ConsumerRecord<byte[], byte[]> rec : readAll(DB + ".public.accounts")) {
            JsonNode key = rec.key() == null ? null : JSON.readTree(rec.key());
            if (rec.value() == null && skipTombstone) {
                skipTombstone = false;
                continue;
            }
            if (rec.value() == null) {
                assertThat(pendingDelete).as(when + ": a tombstone follows a delete of its key").isEqualTo(key);
                pendingDelete = null;
                continue;
            }
            assertThat(pendingDelete).as(when + ": the delete's tombstone comes next").isNull();
            JsonNode v = JSON.readTree(rec.value());
            String op = v.get("op").textValue();
            JsonNode src = v.get("source");
            long[] pos = {src.get("commit_lsn").longValue(), src.get("ordinal").longValue()};
            String id = op.equals("r") ? "r " + key : op + " " + pos[0] + "/" + pos[1];
            if (!eos && seen.contains(id)) {
                repeats++; // at least once: a consumer drops what is not after the last position it processed (EVENTS.md)
                skipTombstone = op.equals("d");
                continue;
            }
            assertThat(seen.add(id)).as(when + ": each change once (" + id + ")").isTrue();

            if (op.equals("t")) {
                assertThat(key).as(when + ": a truncate has no key").isNull();
                ops.merge(op, 1L, Long::sum);
                state.clear(); // a consumer that applies truncates empties its copy of the table
                continue;
            }

            if (!op.equals("r")) {
                long[] last = lastPosition.get(key);
                if (last != null) {
                    assertThat(pos[0] > last[0] || (pos[0] == last[0] && pos[1] > last[1])).as(when + ": in order for key " + key)
                            .isTrue();
                }
                lastPosition.put(key, pos);
            }
            ops.merge(op, 1L, Long::sum);
            switch (op) {
                case "d" -> {
                    state.remove(key);
                    pendingDelete = key;
                }
                default -> state.put(key, v.get("after"));
            }
        }
        Map<String, Long> want = new TreeMap<>(Map.of("r", expected.r, "c", expected.c, "u", expected.u, "d", expected.d));
        if (expected.t > 0) {
            want.put("t", expected.t);
        }
        assertThat(ops).as(when + ": events by op").isEqualTo(want);
        Map<String, String> source = new HashMap<>();
        try (Connection c = pg.connect(DB); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT id, owner, balance FROM accounts")) {
            while (rs.next()) {
                source.put("{\"id\":" + rs.getInt(1) + "}", JSON.writeValueAsString(JSON.createObjectNode().put("id", rs.getInt(1))
                        .put("owner", rs.getString(2)).put("balance", rs.getLong(3))));
            }
        }
        Map<String, String> rebuilt = new HashMap<>();
        state.forEach((k, v) -> rebuilt.put(k.toString(), v.toString()));
        Set<String> differing = new HashSet<>(source.keySet());
        differing.addAll(rebuilt.keySet());
        differing.removeIf(k -> java.util.Objects.equals(source.get(k), rebuilt.get(k)));
        if (!eos) {
            System.out.println(when + ": " + repeats + " repeated records dropped by position (at least once)");
        }
        assertThat(differing).as(when + ": keys whose row rebuilt from the topic differs from the source (of " + source.size() + ")")
                .isEmpty();
    }

    static List<ConsumerRecord<byte[], byte[]>> readAll(String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, connect.kafka().bootstrapServers());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            var partitions = consumer.partitionsFor(topic).stream()
                    .map(i -> new org.apache.kafka.common.TopicPartition(topic, i.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<org.apache.kafka.common.TopicPartition, Long> end = consumer.endOffsets(partitions);
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("could not read " + topic + " to its end " + end);
                }
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
        return out;
    }

    /**
     * Samples the slot's confirmed position, then the committed offset's flush LSN: the first is never past the second.
     * Without exactly-once support, the second is the highest committed offset seen so far: there a task the worker gave up
     * on (a zombie: not fenced without exactly-once support) may still write an older offset after its successor wrote a
     * newer one, and the stored offset goes back — the records up to the newer one are in the topic all the same, and a
     * restart from the older one repeats them (at least once).
     */
    private static void sample(AtomicBoolean running, AtomicReference<String> violation, int[] samples) {
        Lsn highest = Lsn.ZERO;
        while (running.get()) {
            try {
                Lsn confirmed = confirmedFlush();
                Lsn committed = committedFlush();
                if (!eos && committed != null) {
                    highest = committed.isAfter(highest) ? committed : highest;
                    committed = highest;
                }
                // A checkpoint at 0/0 is the initial snapshot's before its first flush position: the slot then stands where
                // it was created (its consistent point), which Millrace did not confirm.
                if (confirmed != null && committed != null && !committed.equals(Lsn.ZERO)) {
                    samples[0]++;
                    if (confirmed.isAfter(committed)) {
                        violation.compareAndSet(null, "confirmed_flush_lsn " + confirmed + " > committed offset's flush_lsn " + committed
                                + " at " + java.time.LocalTime.now() + " (task: " + taskState() + ")");
                    }
                }
                Thread.sleep(100);
            } catch (InterruptedException e) {
                return;
            } catch (Exception e) {
                // the REST API between workers, a restarting task: sample again
            }
        }
    }

    static Lsn confirmedFlush() throws Exception {
        try (Connection c = pg.connect(DB); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '" + DB + "_slot'")) {
            return rs.next() && rs.getString(1) != null ? Lsn.parse(rs.getString(1)) : null;
        }
    }

    static Lsn committedFlush() throws Exception {
        ConnectorOffsets offsets = connect.connectorOffsets(NAME);
        for (ConnectorOffset o : offsets.offsets()) {
            Object cp = o.offset().get(MillraceSourceTask.OFFSET_KEY);
            if (cp != null) {
                return Lsn.parse(JSON.readTree(cp.toString()).get("flush_lsn").textValue());
            }
        }
        return null;
    }

    /** Waits until the slot has confirmed everything written so far: the connector has committed it. */
    static void awaitSlotCaughtUp() throws Exception {
        Lsn target;
        try (Connection c = pg.connect(DB); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT pg_current_wal_lsn()")) {
            rs.next();
            target = Lsn.parse(rs.getString(1));
        }
        awaitTrue("the slot confirms " + target, () -> {
            try {
                Lsn c = confirmedFlush();
                return c != null && !target.isAfter(c);
            } catch (Exception e) {
                return false;
            }
        });
    }

    static String taskState() {
        ConnectorStateInfo s = connect.connectorStatus(NAME);
        return s.tasks().isEmpty() ? "NONE" : s.tasks().get(0).state();
    }

    static WorkerHandle workerOfTaskOrNull() {
        ConnectorStateInfo s = connect.connectorStatus(NAME);
        if (s.tasks().isEmpty()) {
            return null;
        }
        String id = s.tasks().get(0).workerId();
        for (WorkerHandle w : connect.workers()) {
            if (id.endsWith(":" + w.url().getPort())) {
                return w;
            }
        }
        return null;
    }

    private static WorkerHandle workerOfTask() {
        WorkerHandle w = workerOfTaskOrNull();
        assertThat(w).as("the worker running the task").isNotNull();
        return w;
    }

    static void exec(String... sql) throws Exception {
        try (Connection c = pg.connect(DB); Statement s = c.createStatement()) {
            for (String q : sql) {
                s.execute(q);
            }
        }
    }

    static long count(String sql) throws Exception {
        try (Connection c = pg.connect(DB); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static void awaitTrue(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + WAIT + ": " + what + " (task: " + taskState() + ")");
            }
            Thread.sleep(100);
        }
    }
}
