package io.millrace.connect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.connect.util.clusters.WorkerHandle;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link ConnectClusterTests} with exactly-once source support on the workers and connector-defined transaction
 * boundaries: a {@code read_committed} consumer sees each change exactly once, also across failovers. Plus scale-out:
 * three connectors on three source databases, spread over the workers, each exactly once; and an online snapshot asked
 * for by a signal, resumed on another worker.
 */
class ConnectClusterIT extends ConnectClusterTests {
    @Override
    boolean exactlyOnce() {
        return true;
    }

    @Test
    void threeConnectorsOnThreeDatabasesSpreadOverTheWorkers() throws Exception {
        String name = NAME;
        String db = DB;
        List<String> databases = List.of("east", "west", "north");
        Map<String, Expected> expected = new HashMap<>();
        try {
            for (String d : databases) {
                use(d);
                pg.createDatabase(d);
                exec("CREATE TABLE accounts (id int PRIMARY KEY, owner text NOT NULL, balance bigint NOT NULL)",
                        "INSERT INTO accounts SELECT g, '" + d + " ' || g, g FROM generate_series(1, 500) g");
                Expected e = new Expected();
                e.r = 500;
                expected.put(d, e);
                connect.configureConnector(NAME, config());
            }
            for (String d : databases) {
                use(d);
                connect.assertions().assertConnectorAndExactlyNumTasksAreRunning(NAME, 1, NAME + " runs");
                awaitSlotCaughtUp();
            }
            for (String d : databases) {
                use(d);
                workload(expected.get(d), 60, 1);
            }
            Set<String> workers = new HashSet<>();
            for (String d : databases) {
                use(d);
                awaitSlotCaughtUp();
                check(expected.get(d), NAME);
                workers.add(connect.connectorStatus(NAME).tasks().get(0).workerId());
            }
            assertThat(workers).as("the three tasks run on more than one worker").hasSizeGreaterThan(1);
            for (String d : databases) {
                use(d);
                connect.deleteConnector(NAME);
            }
        } finally {
            NAME = name;
            DB = db;
        }
    }

    /**
     * Kafka Connect's validate (also called when a connector is created) checks the database once the settings hold, as
     * Debezium's connector does: a database that does not exist, a role without REPLICATION and a table without a
     * replica identity are refused at once, on the key to change, with the fix, in the connector's key names. Before,
     * the connector was created and its task failed after it started, with a message naming the YAML configuration's
     * keys (source.database).
     */
    @Test
    void validateChecksTheDatabaseAndNamesTheKeyToChange() throws Exception {
        String name = NAME;
        String db = DB;
        try {
            use("valid");
            pg.createDatabase(DB);
            exec("CREATE TABLE accounts (id int PRIMARY KEY, owner text)", "CREATE TABLE notes (line text)",
                    "CREATE ROLE plain LOGIN PASSWORD 'plain-pw'", "GRANT SELECT ON ALL TABLES IN SCHEMA public TO plain");
            Map<String, String> good = config();
            good.put("name", NAME);
            assertThat(errors(good)).as("a configuration that can start").isEmpty();

            Map<String, String> noDb = new HashMap<>(good);
            noDb.put("database.dbname", "nosuchdb");
            assertThat(errors(noDb)).singleElement().satisfies(e -> assertThat(e).startsWith("database.dbname=")
                    .contains("\"nosuchdb\" does not exist").contains("Check the database name (database.dbname)"));
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> connect.configureConnector(NAME, noDb))
                    .as("creating it is refused too").hasMessageContaining("nosuchdb");

            // a port nothing listens on: the error is on database.port too, not only on database.hostname (found by a user)
            Map<String, String> wrongPort = new HashMap<>(good);
            try (java.net.ServerSocket free = new java.net.ServerSocket(0)) {
                wrongPort.put("database.port", String.valueOf(free.getLocalPort()));
            }
            assertThat(errors(wrongPort)).anySatisfy(e -> assertThat(e).startsWith("database.port=").contains("refused"));

            Map<String, String> plain = new HashMap<>(good);
            plain.put("database.user", "plain");
            plain.put("database.password", "plain-pw");
            assertThat(errors(plain)).anySatisfy(e -> assertThat(e).startsWith("database.user=").contains("REPLICATION"));

            Map<String, String> keyless = new HashMap<>(good);
            keyless.put("table.include.list", "public\\.notes");
            assertThat(errors(keyless)).singleElement().satisfies(e -> assertThat(e).startsWith("table.include.list=")
                    .contains("public.notes").contains("REPLICA IDENTITY"));

            // A running connector's configuration changed (PUT .../config validates it first): its own task reads the slot,
            // which is no error. Before, every change was refused with "slot ... is in use by process ..." and a fix that
            // would end the task's own replication connection (found by a user).
            connect.configureConnector(NAME, good);
            connect.assertions().assertConnectorAndExactlyNumTasksAreRunning(NAME, 1, NAME + " runs");
            awaitTrue("the task reads the slot", () -> {
                try {
                    return ConnectClusterTests.count("SELECT count(*) FROM pg_replication_slots WHERE active AND slot_name = '"
                            + good.get("slot.name") + "'") == 1;
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            assertThat(errors(good)).as("validate while its own task reads the slot").isEmpty();
            Map<String, String> changed = new HashMap<>(good);
            changed.put("millrace.pipeline.linger.ms", "50");
            connect.configureConnector(NAME, changed);
            connect.assertions().assertConnectorAndExactlyNumTasksAreRunning(NAME, 1, NAME + " runs with the change");
            connect.deleteConnector(NAME);
        } finally {
            NAME = name;
            DB = db;
        }
    }

    /**
     * An online snapshot asked for by a row in the signal table (Debezium's {@code execute-snapshot}) of a connector that
     * only streams ({@code snapshot.mode=no_data}), in chunks of Debezium's {@code incremental.snapshot.chunk.size}, while
     * the table is written to; the worker running the task is stopped in the middle of the copy. The task resumes the copy
     * on the other worker from the committed offset: a {@code read_committed} consumer sees each row's copy ({@code r}) at
     * most once (a chunk's records and the offset that counts it copied are one Kafka transaction), and the table rebuilt
     * from the topic in its order ({@code r} as an upsert, {@code c}/{@code u}/{@code d} applied) equals the source: no copy
     * of a row overwrote a newer change of it (the watermark windows).
     */
    @Test
    void anOnlineSnapshotBySignalResumesOnAnotherWorker() throws Exception {
        String name = NAME;
        String db = DB;
        int rows = 30_000;
        AtomicBoolean writing = new AtomicBoolean(true);
        Thread writer = null;
        try {
            use("signals");
            pg.createDatabase(DB);
            exec("CREATE TABLE accounts (id int PRIMARY KEY, owner text NOT NULL, balance bigint NOT NULL)",
                    "INSERT INTO accounts SELECT g, 'before ' || g, g FROM generate_series(1, " + rows + ") g",
                    "CREATE TABLE millrace_signals (id text PRIMARY KEY, type text NOT NULL, data text)");
            Map<String, String> config = config();
            config.put("snapshot.mode", "no_data");
            config.put("signal.data.collection", "public.millrace_signals");
            config.put("incremental.snapshot.chunk.size", "250");
            connect.configureConnector(NAME, config);
            connect.assertions().assertConnectorAndExactlyNumTasksAreRunning(NAME, 1, NAME + " runs");
            awaitSlotCaughtUp();

            AtomicReference<Exception> failed = new AtomicReference<>();
            writer = new Thread(() -> {
                try (Connection c = pg.connect(DB); Statement st = c.createStatement()) {
                    int next = 1_000_000;
                    while (writing.get()) {
                        int id = ThreadLocalRandom.current().nextInt(1, rows + 1);
                        switch (ThreadLocalRandom.current().nextInt(4)) {
                            case 0 -> st.execute("DELETE FROM accounts WHERE id = " + id);
                            case 1 -> st.execute("INSERT INTO accounts VALUES (" + next++ + ", 'new', 0)");
                            default -> st.execute("UPDATE accounts SET balance = balance + 1, owner = 'changed' WHERE id = " + id);
                        }
                    }
                } catch (Exception e) {
                    failed.set(e);
                }
            }, "writer");
            writer.start();
            exec("INSERT INTO millrace_signals VALUES ('copy-1', 'execute-snapshot',"
                    + " '{\"data-collections\": [\"public.accounts\"], \"type\": \"incremental\"}')");
            awaitTrue("the copy has begun", () -> copiedRows() > 0);
            WorkerHandle running = workerOfTaskOrNull();
            connect.removeWorker(running); // abandons its task in the middle of the copy (see ConnectClusterTests)
            long copiedBefore = copiedRows();
            JsonNode resumeFrom = committedCheckpoint();
            connect.addWorker();
            awaitTrue("the task runs on another worker", () -> {
                WorkerHandle now = workerOfTaskOrNull();
                return now != null && !now.equals(running) && taskState().equals("RUNNING");
            });
            Thread.sleep(1000);
            writing.set(false);
            writer.join();
            assertThat(failed.get()).isNull();
            assertThat(copiedBefore).as("rows the copy had delivered when the worker was stopped").isBetween(1L, rows - 1L);
            // the offset the next task resumes from holds the copy in progress, with rows done: a resume in the middle of it
            assertThat(resumeFrom.path("online")).as("the committed offset's online copy: " + resumeFrom).singleElement()
                    .satisfies(t -> assertThat(t.path("rows_done").asLong()).isPositive());

            // The copy ends by itself (the committed offset holds no copy in progress), and then the rebuilt table equals
            // the source: every r record was checked (each once, none older than a change of its row).
            awaitTrue("the online copy ends", () -> {
                try {
                    return committedCheckpoint().path("online").isEmpty();
                } catch (Exception e) {
                    return false;
                }
            });
            assertThat(differences()).as("keys whose row rebuilt from the topic differs from the source").isEmpty();
            connect.deleteConnector(NAME);
        } finally {
            writing.set(false);
            if (writer != null) {
                writer.join();
            }
            NAME = name;
            DB = db;
        }
    }

    /** Millrace's checkpoint in the connector's committed offset. */
    private static JsonNode committedCheckpoint() throws Exception {
        for (org.apache.kafka.connect.runtime.rest.entities.ConnectorOffset o : connect.connectorOffsets(NAME).offsets()) {
            Object cp = o.offset().get(MillraceSourceTask.OFFSET_KEY);
            if (cp != null) {
                return new ObjectMapper().readTree(cp.toString());
            }
        }
        throw new AssertionError("no committed offset of " + NAME);
    }

    /** Rows the online copy has delivered so far (r records, committed), each key once: else fails. */
    private static long copiedRows() {
        Set<String> copied = new HashSet<>();
        for (ConsumerRecord<byte[], byte[]> rec : readAll(DB + ".public.accounts")) {
            if (rec.value() != null && new String(rec.value(), StandardCharsets.UTF_8).contains("\"op\":\"r\"")) {
                String key = new String(rec.key(), StandardCharsets.UTF_8);
                assertThat(copied.add(key)).as("the copy of " + key + " once").isTrue();
            }
        }
        return copied.size();
    }

    /** Keys whose row, rebuilt from the topic in its order, differs from the source's; checks each key is copied once. */
    private static List<String> differences() throws Exception {
        ObjectMapper json = new ObjectMapper();
        Map<String, String> rebuilt = new HashMap<>();
        Set<String> copied = new HashSet<>();
        for (ConsumerRecord<byte[], byte[]> rec : readAll(DB + ".public.accounts")) {
            if (rec.value() == null) {
                continue; // a tombstone
            }
            String key = json.readTree(rec.key()).toString();
            JsonNode v = json.readTree(rec.value());
            switch (v.get("op").textValue()) {
                case "d" -> rebuilt.remove(key);
                case "r" -> {
                    assertThat(copied.add(key)).as("the copy of " + key + " once").isTrue();
                    rebuilt.put(key, v.get("after").toString());
                }
                default -> rebuilt.put(key, v.get("after").toString());
            }
        }
        Map<String, String> source = new HashMap<>();
        try (Connection c = pg.connect(DB); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT id, owner, balance FROM accounts")) {
            while (rs.next()) {
                source.put("{\"id\":" + rs.getInt(1) + "}", json.writeValueAsString(json.createObjectNode().put("id", rs.getInt(1))
                        .put("owner", rs.getString(2)).put("balance", rs.getLong(3))));
            }
        }
        Set<String> keys = new TreeSet<>(source.keySet());
        keys.addAll(rebuilt.keySet());
        keys.removeIf(k -> Objects.equals(source.get(k), rebuilt.get(k)));
        return new ArrayList<>(keys);
    }

    /** "key=message" for each error validate gives. */
    private static List<String> errors(Map<String, String> config) {
        List<String> out = new java.util.ArrayList<>();
        for (org.apache.kafka.connect.runtime.rest.entities.ConfigInfo ci : connect.validateConnectorConfig(
                "io.millrace.connect.MillraceSourceConnector", config).configs()) {
            if (ci.configValue() != null) {
                ci.configValue().errors().forEach(e -> out.add(ci.configValue().name() + "=" + e));
            }
        }
        return out;
    }

    private static void use(String database) {
        DB = database;
        NAME = "millrace-" + database;
    }
}
