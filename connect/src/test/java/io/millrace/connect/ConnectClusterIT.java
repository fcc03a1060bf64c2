package io.millrace.connect;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link ConnectClusterTests} with exactly-once source support on the workers and connector-defined transaction
 * boundaries: a {@code read_committed} consumer sees each change exactly once, also across failovers. Plus scale-out:
 * three connectors on three source databases, spread over the workers, each exactly once.
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
