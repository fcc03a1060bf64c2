package io.millrace.migrate;

import io.millrace.api.Millrace;
import io.millrace.core.MillraceException;
import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The write-unavailable window of the cutover under a steady load that pgbench drives at a fixed rate ({@code -R}), from
 * embedded PostgreSQL 15 to 17 (the major-version upgrade). Each transaction is one statement: it updates a random one
 * of 100,000 accounts and inserts a ledger row (a bigserial sequence, a foreign key to the account), by 8 pgbench
 * clients with prepared statements. A measurement when {@code -Dmillrace.migrate.pgbench.windows=10
 * -Dmillrace.migrate.pgbench.rates=2000,10000}: each round makes one migration per rate (rates interleaved), waits until
 * it follows, measures the committed rate over 3 s (ledger rows counted on the source), cuts over ({@code --max-lag-mb
 * 1}) and prints the window; then p50 and max per rate. Without the properties a smoke run: one cutover at 200
 * transactions/s (no timing asserted). Each cutover checks what {@link MigrateCutoverIT} does for the load: the fenced
 * source's every ledger row (every committed transaction) is on the target, and the target's sequence is past the
 * source's. Needs pgbench ({@code /usr/lib/postgresql/15/bin}, or {@code -Dmillrace.pg15.bin}); skipped without it.
 */
class PgbenchWindowIT extends TwoServers {
    static final Path PGBENCH = CopyRateIT.BIN.resolve("pgbench");
    static final String SCRIPT = String.join("\n",
            "\\set aid random(1, 100000)",
            "\\set delta random(-5000, 5000)",
            "WITH a AS (UPDATE bank.accounts SET balance = balance + :delta, updated = now() WHERE id = :aid RETURNING id)"
                    + " INSERT INTO bank.ledger (account, delta) SELECT id, :delta FROM a;",
            "");

    @Override
    int sourceMajor() {
        return 15;
    }

    @BeforeAll
    void needPgbench() {
        Assumptions.assumeTrue(Files.isExecutable(PGBENCH), "pgbench in " + PGBENCH.getParent());
    }

    @Test
    void windowUnderPgbenchRates() throws Exception {
        int runs = Integer.getInteger("millrace.migrate.pgbench.windows", 1);
        List<Integer> rates = Arrays.stream(System.getProperty("millrace.migrate.pgbench.rates", "200").split(","))
                .map(String::strip).map(Integer::parseInt).toList();
        Path script = Files.createTempFile("millrace-pgbench-", ".sql");
        Files.writeString(script, SCRIPT);
        Map<Integer, List<Long>> windows = new LinkedHashMap<>();
        Map<Integer, List<Double>> reached = new LinkedHashMap<>();
        List<String> failed = new ArrayList<>();
        rates.forEach(r -> {
            windows.put(r, new ArrayList<>());
            reached.put(r, new ArrayList<>());
        });
        try {
            for (int i = 0; i < runs; i++) {
                for (int rate : rates) {
                    String db = "pgw" + i + "_" + rate;
                    Migration m = migration(db);
                    CutoverReport r;
                    double tps;
                    String loadavg;
                    try (Millrace following = m.follow(Duration.ofSeconds(120))) {
                        Path out = Files.createTempFile("millrace-pgbench-", ".log");
                        Process pgbench = new ProcessBuilder(PGBENCH.toString(), "-h", src.host(), "-p", Integer.toString(src.port()),
                                "-U", "postgres", "-n", "-c", "8", "-j", "2", "-M", "prepared", "-R", Integer.toString(rate), "-T", "600",
                                "-f", script.toString(), db).redirectErrorStream(true).redirectOutput(out.toFile()).start();
                        try {
                            Thread.sleep(2000);
                            long c0 = ledger(src, db);
                            long t0 = System.nanoTime();
                            Thread.sleep(3000);
                            tps = (ledger(src, db) - c0) / ((System.nanoTime() - t0) / 1e9);
                            assertThat(pgbench.isAlive()).as("pgbench runs: %s", Files.readString(out)).isTrue();
                            loadavg = CopyRateIT.loadavg();
                            try {
                                r = m.cutover(1 << 20, Duration.ofSeconds(60));
                            } catch (MillraceException e) {
                                // e.g. the target never within 1 MB of a load it cannot follow: reported, the run goes on
                                failed.add("round " + i + ", -R " + rate + " (" + Math.round(tps) + " tx/s reached): " + e.getMessage());
                                System.out.println("cutover failed: " + failed.get(failed.size() - 1));
                                r = null;
                            }
                            // The fence ends pgbench's sessions; its clients abort and it exits.
                            if (!pgbench.waitFor(15, TimeUnit.SECONDS)) {
                                pgbench.destroy();
                                pgbench.waitFor(10, TimeUnit.SECONDS);
                            }
                        } finally {
                            if (pgbench.isAlive()) {
                                pgbench.destroyForcibly().waitFor();
                            }
                            Files.deleteIfExists(out);
                        }
                    }
                    if (r == null) {
                        m.abort();
                        src.execute("postgres", "DROP DATABASE " + db + " WITH (FORCE)");
                        tgt.execute("postgres", "DROP DATABASE " + db + " WITH (FORCE)");
                        continue;
                    }
                    // INV: FENCE — every transaction the fenced source committed is on the target; the sequence is past.
                    assertThat(ledger(tgt, db)).as("ledger rows on the target").isEqualTo(ledger(src, db)).isPositive();
                    assertThat(Servers.count(tgt, db, "SELECT nextval('bank.ledger_id_seq')"))
                            .isGreaterThan(Servers.count(src, db, "SELECT last_value FROM bank.ledger_id_seq"));
                    windows.get(rate).add(r.writeUnavailable().toMillis());
                    reached.get(rate).add(tps);
                    System.out.printf(Locale.ROOT, "round %d, pgbench -R %d: reached %.0f tx/s, window %d ms, lag at fence %d bytes, load average %s%n",
                            i, rate, tps, r.writeUnavailable().toMillis(), r.lagBytesAtFence(), loadavg);
                    src.execute("postgres", "ALTER DATABASE " + db + " RESET default_transaction_read_only");
                    src.execute("postgres", "DROP DATABASE " + db + " WITH (FORCE)");
                    tgt.execute("postgres", "DROP DATABASE " + db + " WITH (FORCE)");
                }
            }
        } finally {
            Files.deleteIfExists(script);
        }
        System.out.println("| pgbench -R | reached (median) | cutovers | window p50 | window max | all (ms) |");
        for (int rate : rates) {
            List<Long> w = new ArrayList<>(windows.get(rate));
            w.sort(null);
            if (w.isEmpty()) {
                System.out.printf(Locale.ROOT, "| %d | no cutover finished |%n", rate);
                continue;
            }
            System.out.printf(Locale.ROOT, "| %d | %.0f tx/s | %d | %d ms | %d ms | %s |%n", rate, CopyRateIT.median(reached.get(rate)), w.size(),
                    w.get((w.size() - 1) / 2), w.get(w.size() - 1), windows.get(rate));
        }
        assertThat(failed).as("cutovers that failed").isEmpty();
    }

    /** Database {@code db} on both servers, 100,000 accounts and an empty ledger on the source. */
    static Migration migration(String db) {
        src.createDatabase(db);
        tgt.createDatabase(db);
        src.execute(db, "CREATE SCHEMA bank",
                "CREATE TABLE bank.accounts (id int PRIMARY KEY, balance numeric(14,2) NOT NULL, updated timestamptz NOT NULL)",
                "CREATE TABLE bank.ledger (id bigserial PRIMARY KEY, account int NOT NULL REFERENCES bank.accounts, delta numeric(12,2) NOT NULL,"
                        + " at timestamptz NOT NULL DEFAULT clock_timestamp())",
                "CREATE INDEX ledger_account ON bank.ledger (account)",
                "INSERT INTO bank.accounts SELECT g, 0, now() FROM generate_series(1, 100000) g", "VACUUM ANALYZE");
        return Migration.of(Servers.source(src, db, "bank.*"), Servers.target(tgt, db));
    }

    static long ledger(EmbeddedPg pg, String db) throws Exception {
        return Servers.count(pg, db, "SELECT count(*) FROM bank.ledger");
    }
}
