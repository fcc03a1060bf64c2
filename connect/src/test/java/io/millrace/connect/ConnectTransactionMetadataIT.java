package io.millrace.connect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.embedded.EmbeddedPg;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorOffset;
import org.apache.kafka.connect.util.clusters.EmbeddedConnectCluster;
import org.apache.kafka.connect.util.clusters.WorkerHandle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import static io.millrace.connect.ConnectClusterTests.DB;
import static io.millrace.connect.ConnectClusterTests.NAME;
import static io.millrace.connect.ConnectClusterTests.awaitSlotCaughtUp;
import static io.millrace.connect.ConnectClusterTests.awaitTrue;
import static io.millrace.connect.ConnectClusterTests.connect;
import static io.millrace.connect.ConnectClusterTests.exec;
import static io.millrace.connect.ConnectClusterTests.pg;
import static io.millrace.connect.ConnectClusterTests.readAll;
import static io.millrace.connect.ConnectClusterTests.taskState;
import static io.millrace.connect.ConnectClusterTests.workerOfTaskOrNull;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code provide.transaction.metadata=true} on a real Connect cluster with exactly-once source support (the cluster and
 * helpers of {@link ConnectClusterTests}): for every source transaction a {@code read_committed} consumer sees one BEGIN
 * and one END on {@code <topic.prefix>.transaction}, the END's counts (in all and per table) equal to the transaction's
 * change records, whose blocks number them 1..n without a gap or a repeat — also for a large transaction cut into many
 * batches (Kafka transactions) and for one during which the worker running the task is stopped after a commit inside
 * it, so that the task resumes on the other worker in the middle of it (its counts come from the offset).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ConnectTransactionMetadataIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private String name;
    private String db;

    @BeforeAll
    void start() {
        name = NAME;
        db = DB;
        NAME = "txmeta";
        DB = "txmeta";
        pg = EmbeddedPg.builder().major(17).start();
        Map<String, String> worker = new HashMap<>();
        worker.put("exactly.once.source.support", "enabled");
        worker.put("offset.flush.interval.ms", "100");
        worker.put("task.shutdown.graceful.timeout.ms", "1");
        worker.put("scheduled.rebalance.max.delay.ms", "2000");
        worker.put("plugin.discovery", "service_load"); // every plugin has its ServiceLoader manifest: no 30 s classpath scan
        Properties broker = new Properties();
        broker.put("transaction.state.log.replication.factor", "1");
        broker.put("transaction.state.log.min.isr", "1");
        connect = new EmbeddedConnectCluster.Builder().name("millrace-txmeta").numWorkers(2).numBrokers(1).workerProps(worker)
                .brokerProps(broker).build();
        connect.start();
    }

    @AfterAll
    void stop() {
        ConnectClusterTests.stopOwn();
        NAME = name;
        DB = db;
    }

    /** The source transactions made, by xid: how many change records each must have, per table. */
    private final Map<Long, Map<String, Long>> expected = new LinkedHashMap<>();

    /** Runs {@code sql} as one transaction and records what it must produce (one record per row; a key change two). */
    private void tx(Map<String, Long> counts, String... sql) throws Exception {
        try (Connection c = pg.connect(DB); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            for (String q : sql) {
                s.execute(q);
            }
            long xid;
            try (ResultSet rs = s.executeQuery("SELECT pg_current_xact_id()::text::bigint")) {
                rs.next();
                xid = rs.getLong(1);
            }
            c.commit();
            expected.put(xid, counts);
        }
    }

    private static Map<String, Long> counts(long accounts, long ledger) {
        Map<String, Long> m = new TreeMap<>();
        if (accounts > 0) {
            m.put("public.accounts", accounts);
        }
        if (ledger > 0) {
            m.put("public.ledger", ledger);
        }
        return m;
    }

    @Test
    void eachSourceTransactionHasOneBeginItsChangesAndOneEndExactlyOnceAcrossAFailover() throws Exception {
        pg.createDatabase(DB);
        exec("CREATE TABLE accounts (id int PRIMARY KEY, owner text NOT NULL, balance bigint NOT NULL)",
                "CREATE TABLE ledger (id bigint PRIMARY KEY, account int NOT NULL, amount bigint NOT NULL)",
                "INSERT INTO accounts SELECT g, 'owner ' || g, 0 FROM generate_series(1, 300) g");
        Map<String, String> config = ConnectClusterTests.config();
        config.put("table.include.list", "public\\.accounts,public\\.ledger");
        config.put("provide.transaction.metadata", "true");
        config.put("exactly.once.support", "required");
        config.put("transaction.boundary", "connector");
        config.put("millrace.pipeline.batch.kb", "16"); // a large transaction is cut into many batches, each a Kafka transaction
        connect.configureConnector(NAME, config);
        connect.assertions().assertConnectorAndExactlyNumTasksAreRunning(NAME, 1, "the connector runs");
        awaitSlotCaughtUp();

        for (int i = 1; i <= 20; i++) { // small transactions over both tables
            tx(counts(1, 2), "INSERT INTO ledger VALUES (" + (2 * i) + ", " + i + ", 5), (" + (2 * i + 1) + ", " + i + ", -5)",
                    "UPDATE accounts SET balance = balance + 1 WHERE id = " + i);
        }
        tx(counts(10, 0), "UPDATE accounts SET id = id + 1000 WHERE id BETWEEN 21 AND 25"); // key changes: a delete and a create each
        tx(counts(5, 0), "DELETE FROM accounts WHERE id BETWEEN 26 AND 30");
        tx(counts(100, 8000), "INSERT INTO ledger SELECT g, g % 100, g FROM generate_series(100000, 107999) g",
                "UPDATE accounts SET balance = balance - 1 WHERE id BETWEEN 101 AND 200");
        awaitSlotCaughtUp();

        // A large transaction, and the worker running the task stopped once a batch inside it is committed.
        WorkerHandle running = workerOfTaskOrNull();
        assertThat(running).as("the worker running the task").isNotNull();
        tx(counts(0, 30000), "INSERT INTO ledger SELECT g, g % 100, g FROM generate_series(200000, 229999) g");
        awaitTrue("a committed offset inside the large transaction", this::insideATransaction);
        connect.removeWorker(running); // abandons its task (see ConnectClusterTests); the other worker takes it over
        awaitTrue("the task runs on another worker", () -> {
            WorkerHandle now = workerOfTaskOrNull();
            return now != null && !now.equals(running) && taskState().equals("RUNNING");
        });
        for (int i = 1; i <= 5; i++) {
            tx(counts(1, 1), "INSERT INTO ledger VALUES (" + (300000 + i) + ", " + i + ", 1)",
                    "UPDATE accounts SET balance = balance + 1 WHERE id = " + (200 + i));
        }
        awaitSlotCaughtUp();
        check();
    }

    /** Whether the committed offset carries an open source transaction (the task is inside a cut one). */
    private boolean insideATransaction() {
        try {
            for (ConnectorOffset o : connect.connectorOffsets(NAME).offsets()) {
                if (o.offset().get(TransactionMetadata.OFFSET_KEY) != null) {
                    return true;
                }
            }
        } catch (Exception e) {
            // the REST API between workers: look again
        }
        return false;
    }

    /** Each source transaction: one BEGIN, its change records numbered 1..n, one END whose counts match. */
    private void check() throws Exception {
        Map<Long, List<JsonNode>> blocks = new HashMap<>(); // by xid: {table, block, lsn, commit_lsn} of each change record
        Set<String> changes = new HashSet<>();
        long snapshotRows = 0;
        for (String table : List.of("accounts", "ledger")) {
            for (ConsumerRecord<byte[], byte[]> rec : readAll(DB + ".public." + table)) {
                if (rec.value() == null) {
                    continue; // a tombstone: no value, no block, not counted (as Debezium's)
                }
                JsonNode v = JSON.readTree(rec.value());
                JsonNode src = v.get("source");
                if (v.get("op").textValue().equals("r")) {
                    assertThat(v.get("transaction").isNull()).as("a snapshot row belongs to no transaction").isTrue();
                    snapshotRows++;
                    continue;
                }
                JsonNode b = v.get("transaction");
                assertThat(b.isObject()).as("a streamed change has the transaction block: " + v).isTrue();
                String[] id = b.get("id").textValue().split(":");
                assertThat(Long.parseLong(id[0])).isEqualTo(src.get("txId").longValue());
                assertThat(Long.parseLong(id[1])).as("the block's LSN is the change's").isEqualTo(src.get("lsn").longValue());
                String change = src.get("commit_lsn") + "/" + src.get("ordinal") + "/" + v.get("op").textValue();
                assertThat(changes.add(change)).as("each change once: " + change).isTrue();
                blocks.computeIfAbsent(src.get("txId").longValue(), x -> new ArrayList<>()).add(JSON.createObjectNode()
                        .put("table", "public." + table).put("commit_lsn", src.get("commit_lsn").longValue())
                        .put("total_order", b.get("total_order").longValue())
                        .put("data_collection_order", b.get("data_collection_order").longValue()).put("id", b.get("id").textValue()));
            }
        }
        assertThat(snapshotRows).isEqualTo(300);

        Map<Long, List<JsonNode>> boundaries = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> rec : readAll(DB + ".transaction")) {
            JsonNode key = JSON.readTree(rec.key());
            JsonNode v = JSON.readTree(rec.value());
            assertThat(key.get("id")).isEqualTo(v.get("id"));
            boundaries.computeIfAbsent(Long.parseLong(v.get("id").textValue().split(":")[0]), x -> new ArrayList<>()).add(v);
        }
        assertThat(new TreeSet<>(boundaries.keySet())).as("the transactions on the transaction topic").isEqualTo(new TreeSet<>(expected.keySet()));
        assertThat(new TreeSet<>(blocks.keySet())).as("the transactions of the change records").isEqualTo(new TreeSet<>(expected.keySet()));
        for (Map.Entry<Long, Map<String, Long>> e : expected.entrySet()) {
            long xid = e.getKey();
            List<JsonNode> b = boundaries.get(xid);
            assertThat(b).as(xid + ": one BEGIN then one END").extracting(n -> n.get("status").textValue()).containsExactly("BEGIN", "END");
            JsonNode end = b.get(1);
            List<JsonNode> records = blocks.get(xid);
            long total = e.getValue().values().stream().mapToLong(Long::longValue).sum();
            assertThat(records).as(xid + ": its change records").hasSize((int) total);
            assertThat(end.get("event_count").longValue()).as(xid + ": END's event_count").isEqualTo(total);
            Map<String, Long> perTable = new TreeMap<>();
            end.get("data_collections").forEach(d -> perTable.put(d.get("data_collection").textValue(), d.get("event_count").longValue()));
            assertThat(perTable).as(xid + ": END's data_collections").isEqualTo(e.getValue());
            Set<Long> totals = new TreeSet<>();
            Map<String, Set<Long>> orders = new TreeMap<>();
            String first = null;
            for (JsonNode r : records) {
                totals.add(r.get("total_order").longValue());
                orders.computeIfAbsent(r.get("table").textValue(), t -> new TreeSet<>()).add(r.get("data_collection_order").longValue());
                if (r.get("total_order").longValue() == 1) {
                    first = r.get("id").textValue();
                }
                assertThat(end.get("id").textValue()).isEqualTo(xid + ":" + r.get("commit_lsn").longValue());
            }
            assertThat(totals).as(xid + ": total_order 1..n").hasSize((int) total).first().isEqualTo(1L);
            assertThat(totals).last().isEqualTo(total);
            orders.forEach((t, o) -> assertThat(o).as(xid + " " + t + ": data_collection_order 1..n").hasSize(e.getValue().get(t).intValue())
                    .last().isEqualTo(e.getValue().get(t)));
            assertThat(b.get(0).get("id").textValue()).as(xid + ": BEGIN's id is its first change's").isEqualTo(first);
            assertThat(b.get(0).get("event_count").isNull()).isTrue();
        }
    }
}
