package io.millrace.migrate;

import io.millrace.api.Millrace;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The write-unavailable window over several cutovers under a steady write load (a measurement, off by default):
 * {@code -Dmillrace.migrate.windows=10} runs 10 migrations of the shop schema, each cut over while
 * {@code -Dmillrace.migrate.writers=4} writers (default) commit multi-statement transactions as fast as they can, and
 * prints the load's rate and the window's p50 and max. Every cutover keeps the checks of {@link MigrateCutoverIT}: no
 * committed transaction missing.
 */
class CutoverWindowIT extends TwoServers {

    @Test
    void windowOverCutoversUnderLoad() throws Exception {
        int runs = Integer.getInteger("millrace.migrate.windows", 0);
        Assumptions.assumeTrue(runs > 0, "a measurement: -Dmillrace.migrate.windows=10");
        int writers = Integer.getInteger("millrace.migrate.writers", 4);
        List<Long> windows = new ArrayList<>();
        List<Double> rates = new ArrayList<>();
        for (int i = 0; i < runs; i++) {
            String db = "window" + i;
            Migration m = shop(db, WriteLoad.LEDGER);
            WriteLoad load;
            CutoverReport r;
            try (Millrace following = m.follow(Duration.ofSeconds(60))) {
                load = new WriteLoad(src, db, writers, 0);
                try (load) {
                    Thread.sleep(1000);
                    int before = load.committed.size();
                    long t0 = System.nanoTime();
                    Thread.sleep(2000);
                    rates.add((load.committed.size() - before) / ((System.nanoTime() - t0) / 1e9));
                    r = m.cutover(1 << 20, Duration.ofSeconds(60));
                }
            }
            assertThat(Servers.count(tgt, db, "SELECT count(*) FROM shop.ledger")).isGreaterThanOrEqualTo(load.committed.size());
            windows.add(r.writeUnavailable().toMillis());
            System.out.printf("cutover %d: window %d ms, load %.0f tx/s, lag at fence %d bytes%n", i, r.writeUnavailable().toMillis(),
                    rates.get(rates.size() - 1), r.lagBytesAtFence());
            src.execute("postgres", "ALTER DATABASE " + db + " RESET default_transaction_read_only");
            src.execute("postgres", "DROP DATABASE " + db + " WITH (FORCE)");
            tgt.execute("postgres", "DROP DATABASE " + db + " WITH (FORCE)");
        }
        List<Long> sorted = new ArrayList<>(windows);
        sorted.sort(null);
        System.out.printf("window over %d cutovers, %d writers (%.0f tx/s median): p50 %d ms, max %d ms; all %s%n", runs, writers,
                rates.stream().sorted().toList().get(rates.size() / 2), sorted.get((sorted.size() - 1) / 2), sorted.get(sorted.size() - 1),
                windows);
    }
}
