package io.millrace.connect;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.Lsn;
import io.millrace.embedded.EmbeddedPg;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.connect.util.clusters.EmbeddedConnectCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static io.millrace.connect.ConnectClusterTests.DB;
import static io.millrace.connect.ConnectClusterTests.NAME;
import static io.millrace.connect.ConnectClusterTests.awaitTrue;
import static io.millrace.connect.ConnectClusterTests.committedFlush;
import static io.millrace.connect.ConnectClusterTests.confirmedFlush;
import static io.millrace.connect.ConnectClusterTests.connect;
import static io.millrace.connect.ConnectClusterTests.exec;
import static io.millrace.connect.ConnectClusterTests.pg;
import static io.millrace.connect.ConnectClusterTests.readAll;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Debezium user's worker as it is: no exactly-once source support and {@code offset.flush.interval.ms} at its default,
 * 60 s (the cluster and helpers of {@link ConnectClusterTests}, one worker). The records flow while the worker has not
 * flushed its offsets yet: 40 transactions, 100 ms apart, all reach the topic within 30 s of the last, well before the
 * first flush can store their offsets; and the slot is confirmed only up to what a flush stored, then up to the last
 * (INV: DURABLE, sampled throughout). Before, the engine waited for each batch's offset to be stored before it handed
 * Connect the next: one batch a minute (found by a user: about 17 records/s) — this test then fails, the records of
 * all but the first batch or two still waiting. A restart inside the task before the first flush (its replication
 * connection terminated) resumes from the offset of the last batch in Kafka, once the flush stored it: each row is in the
 * topic once (before, the restart read no stored offset and started over).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ConnectDefaultWorkerIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private String name;
    private String db;

    @BeforeAll
    void start() {
        name = NAME;
        db = DB;
        NAME = "defaults";
        DB = "defaults";
        pg = EmbeddedPg.builder().major(17).start();
        Map<String, String> worker = new HashMap<>();
        worker.put("exactly.once.source.support", "disabled"); // the default, said here: at least once
        worker.put("plugin.discovery", "service_load"); // every plugin has its ServiceLoader manifest: no 30 s classpath scan
        connect = new EmbeddedConnectCluster.Builder().name("millrace-defaults").numWorkers(1).numBrokers(1).workerProps(worker)
                .build();
        connect.start();
    }

    @AfterAll
    void stop() {
        ConnectClusterTests.stopOwn();
        NAME = name;
        DB = db;
    }

    @Test
    void recordsFlowBetweenOffsetFlushesAndTheSlotFollowsTheFlushes() throws Exception {
        pg.createDatabase(DB);
        exec("CREATE TABLE accounts (id int PRIMARY KEY, owner text NOT NULL, balance bigint NOT NULL)",
                "INSERT INTO accounts SELECT g, 'owner ' || g, g FROM generate_series(1, 100) g");
        Map<String, String> config = ConnectClusterTests.config();
        config.remove("exactly.once.support"); // a worker without exactly-once support refuses it
        config.remove("transaction.boundary");
        connect.configureConnector(NAME, config);
        connect.assertions().assertConnectorAndExactlyNumTasksAreRunning(NAME, 1, "the connector runs");
        String topic = DB + ".public.accounts";
        awaitTrue("the snapshot's 100 rows in the topic", () -> ids(topic).size() >= 100);

        AtomicReference<String> violation = new AtomicReference<>();
        AtomicBoolean sampling = new AtomicBoolean(true);
        Thread sampler = new Thread(() -> sample(sampling, violation), "slot-sampler");
        sampler.start();
        try {
            for (int t = 0; t < 40; t++) {
                int from = 1000 + t * 10;
                exec("INSERT INTO accounts SELECT g, 'stream', g FROM generate_series(" + from + ", " + (from + 9) + ") g");
                Thread.sleep(100);
            }
            long written = System.nanoTime();
            Lsn end = currentWal();
            long deadline = written + 30_000_000_000L;
            while (ids(topic).size() < 500) {
                assertThat(System.nanoTime()).as("all 500 rows in the topic within 30 s of the last transaction, before the"
                        + " worker's offset flush (60 s); in it: " + ids(topic).size()).isLessThan(deadline);
                Thread.sleep(200);
            }
            // A restart inside the task before any flush (the replication connection lost: the engine starts again in the
            // same task and reads the stored offset): it waits for the worker's flush to store the last batch's offset and
            // resumes there, delivering nothing again. Before, it read no offset at all and started over.
            int walsender = (int) ConnectClusterTests.count("SELECT active_pid FROM pg_replication_slots WHERE slot_name = '" + DB + "_slot'");
            exec("SELECT pg_terminate_backend(" + walsender + ")");
            awaitTrue("the engine streams again from a new connection", () -> {
                try {
                    long now = ConnectClusterTests.count("SELECT coalesce(active_pid, 0) FROM pg_replication_slots WHERE slot_name = '"
                            + DB + "_slot'");
                    return now != 0 && now != walsender;
                } catch (Exception e) {
                    return false;
                }
            });
            // The slot follows the flushes only: the worker's first flush after the rows (within 60 s) stores the last offset.
            awaitTrue("the slot confirms " + end + " once the worker flushed its offsets", () -> {
                try {
                    Lsn c = confirmedFlush();
                    return c != null && !end.isAfter(c);
                } catch (Exception e) {
                    return false;
                }
            });
            exec("INSERT INTO accounts VALUES (5000, 'after', 1)"); // streaming goes on after the restart
            awaitTrue("the row after the restart in the topic", () -> ids(topic).contains(5000));
            assertThat(readAll(topic)).as("records in the topic: each row once (nothing delivered again after the restart)")
                    .hasSize(501);
            Lsn stored = committedFlush(); // read after the slot's: it was stored before the slot was confirmed
            assertThat(stored).as("the offset Connect stored when the slot confirmed " + end).isNotNull();
            assertThat(stored.isAfter(end) || stored.equals(end)).as("stored offset " + stored + " covers " + end).isTrue();
        } finally {
            sampling.set(false);
            sampler.join();
        }
        assertThat(violation.get()).as("slot confirmed past the stored offset").isNull();
    }

    private static Set<Integer> ids(String topic) {
        Set<Integer> ids = new HashSet<>();
        for (ConsumerRecord<byte[], byte[]> r : readAll(topic)) {
            if (r.key() != null) {
                try {
                    ids.add(JSON.readTree(r.key()).get("id").intValue());
                } catch (java.io.IOException e) {
                    throw new AssertionError(e);
                }
            }
        }
        return ids;
    }

    private static Lsn currentWal() throws Exception {
        try (var c = pg.connect(DB); var s = c.createStatement(); var rs = s.executeQuery("SELECT pg_current_wal_lsn()")) {
            rs.next();
            return Lsn.parse(rs.getString(1));
        }
    }

    /**
     * The slot's confirmed position, then the stored offset's: the first never past the second, and while no offset is
     * stored the slot does not move from where it was first seen (INV: DURABLE).
     */
    private static void sample(AtomicBoolean running, AtomicReference<String> violation) {
        Lsn first = null;
        while (running.get()) {
            try {
                Lsn confirmed = confirmedFlush();
                Lsn stored = committedFlush();
                first = first == null ? confirmed : first;
                if (confirmed != null && stored != null && !stored.equals(Lsn.ZERO) && confirmed.isAfter(stored)) {
                    violation.compareAndSet(null, "confirmed_flush_lsn " + confirmed + " > stored offset's flush_lsn " + stored);
                } else if (confirmed != null && stored == null && !confirmed.equals(first)) {
                    violation.compareAndSet(null, "confirmed_flush_lsn moved from " + first + " to " + confirmed + " with no offset stored");
                }
                Thread.sleep(100);
            } catch (InterruptedException e) {
                return;
            } catch (Exception e) {
                // the REST API while the task starts: sample again
            }
        }
    }
}
