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

    private static void use(String database) {
        DB = database;
        NAME = "millrace-" + database;
    }
}
