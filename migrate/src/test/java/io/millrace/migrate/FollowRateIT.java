package io.millrace.migrate;

import io.millrace.api.Millrace;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Can the follow keep up with the load? {@link PgbenchWindowIT}'s pgbench load (one account updated and one ledger row
 * inserted per transaction, 8 clients, a fixed rate) on an embedded PostgreSQL 15 source, followed into an embedded
 * PostgreSQL 17 target by Millrace's migration ({@code Migration.follow}) and, beside it in the same run, by PostgreSQL's
 * own logical replication ({@code CREATE SUBSCRIPTION}, the same tables). For each rate and contestant: pgbench runs for
 * {@code -Dmillrace.migrate.follow.seconds} (default 30) while the ledger rows on source and target are counted every
 * second; then the time the target takes to catch up once the load stops. Printed: the rate reached on the source, the
 * rate applied on the target during the load, the rows behind when the load stopped, the catch-up time, the JVM's CPU
 * seconds (Millrace's follow runs in this JVM; the native apply worker runs in the target server) and the load average.
 * A measurement with {@code -Dmillrace.migrate.follow.rates=5000,10000}; without it a smoke run in the suite (200
 * transactions/s for 3 s, each contestant; no timing asserted, every ledger row arrives).
 */
class FollowRateIT extends TwoServers {
    @Override
    int sourceMajor() {
        return 15;
    }

    @BeforeAll
    void needPgbench() {
        Assumptions.assumeTrue(Files.isExecutable(PgbenchWindowIT.PGBENCH), "pgbench in " + PgbenchWindowIT.PGBENCH.getParent());
    }

    @Test
    void followBesideNativeLogicalReplication() throws Exception {
        List<Integer> rates = Arrays.stream(System.getProperty("millrace.migrate.follow.rates", "200").split(","))
                .map(String::strip).map(Integer::parseInt).toList();
        boolean smoke = System.getProperty("millrace.migrate.follow.rates") == null;
        int seconds = Integer.getInteger("millrace.migrate.follow.seconds", smoke ? 3 : 30);
        int rounds = Integer.getInteger("millrace.migrate.follow.rounds", 1);
        Path script = Files.createTempFile("millrace-pgbench-", ".sql");
        Files.writeString(script, PgbenchWindowIT.SCRIPT);
        List<String> table = new ArrayList<>();
        try {
            for (int round = 0; round < rounds; round++) {
                for (int rate : rates) {
                    // the order alternates per round: the first contestant of a round meets a colder machine
                    List<String> order = round % 2 == 0 ? List.of("millrace", "native") : List.of("native", "millrace");
                    for (String who : order) {
                        table.add(run(who, round, rate, seconds, script));
                    }
                }
            }
        } finally {
            Files.deleteIfExists(script);
        }
        System.out.println("| round | pgbench -R | contestant | reached on the source | applied during the load | rows behind at its end"
                + " | catch-up s | JVM CPU s | load average |");
        System.out.println("|--:|--:|---|--:|--:|--:|--:|--:|---|");
        table.forEach(System.out::println);
    }

    private String run(String who, int round, int rate, int seconds, Path script) throws Exception {
        String db = "fr" + round + "_" + rate + "_" + who;
        Migration m = PgbenchWindowIT.migration(db);
        Millrace following = null;
        String sub = "nat_" + db;
        if (who.equals("millrace")) {
            following = m.follow(Duration.ofSeconds(120));
        } else {
            tgt.execute(db, "CREATE SCHEMA bank",
                    "CREATE TABLE bank.accounts (id int PRIMARY KEY, balance numeric(14,2) NOT NULL, updated timestamptz NOT NULL)",
                    "CREATE TABLE bank.ledger (id bigserial PRIMARY KEY, account int NOT NULL REFERENCES bank.accounts,"
                            + " delta numeric(12,2) NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())",
                    "CREATE INDEX ledger_account ON bank.ledger (account)");
            src.execute(db, "CREATE PUBLICATION " + sub + " FOR TABLE bank.accounts, bank.ledger");
            tgt.execute(db, "CREATE SUBSCRIPTION " + sub + " CONNECTION 'host=" + src.host() + " port=" + src.port() + " dbname=" + db
                    + " user=postgres' PUBLICATION " + sub + " WITH (copy_data = true)");
            while (Servers.count(tgt, db, "SELECT count(*) FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid"
                    + " WHERE s.subname = '" + sub + "' AND r.srsubstate = 'r'") < 2) {
                Thread.sleep(100);
            }
        }
        try {
            long cpu0 = jvmCpuNanos();
            String loadavg = CopyRateIT.loadavg();
            Path out = Files.createTempFile("millrace-pgbench-", ".log");
            long s0 = PgbenchWindowIT.ledger(src, db);
            long t0 = PgbenchWindowIT.ledger(tgt, db);
            long start = System.nanoTime();
            Process pgbench = new ProcessBuilder(PgbenchWindowIT.PGBENCH.toString(), "-h", src.host(), "-p", Integer.toString(src.port()),
                    "-U", "postgres", "-n", "-c", "8", "-j", "2", "-M", "prepared", "-R", Integer.toString(rate), "-T", Integer.toString(seconds),
                    "-f", script.toString(), db).redirectErrorStream(true).redirectOutput(out.toFile()).start();
            try {
                assertThat(pgbench.waitFor(seconds + 60L, TimeUnit.SECONDS)).as("pgbench ends").isTrue();
                assertThat(pgbench.exitValue()).as("pgbench: %s", Files.readString(out)).isZero();
            } finally {
                if (pgbench.isAlive()) {
                    pgbench.destroyForcibly().waitFor();
                }
                Files.deleteIfExists(out);
            }
            double loadSecs = (System.nanoTime() - start) / 1e9;
            long s1 = PgbenchWindowIT.ledger(src, db);
            long t1 = PgbenchWindowIT.ledger(tgt, db);
            long stopped = System.nanoTime();
            long t = t1;
            while (t < s1 && System.nanoTime() - stopped < TimeUnit.SECONDS.toNanos(600)) {
                Thread.sleep(100);
                t = PgbenchWindowIT.ledger(tgt, db);
            }
            double catchUp = (System.nanoTime() - stopped) / 1e9;
            // every ledger row the source committed reaches the target (and no more)
            assertThat(t).as("%s: ledger rows on the target", who).isEqualTo(s1).isPositive();
            double cpu = (jvmCpuNanos() - cpu0) / 1e9;
            return String.format(Locale.ROOT, "| %d | %d | %s | %,.0f tx/s | %,.0f tx/s | %,d | %.1f | %.1f | %s → %s |", round, rate, who,
                    (s1 - s0) / loadSecs, (t1 - t0) / loadSecs, s1 - t1, catchUp, cpu, loadavg, CopyRateIT.loadavg());
        } finally {
            if (following != null) {
                following.close();
                m.abort();
            } else {
                tgt.execute(db, "DROP SUBSCRIPTION " + sub);
            }
            src.execute("postgres", "DROP DATABASE " + db + " WITH (FORCE)");
            tgt.execute("postgres", "DROP DATABASE " + db + " WITH (FORCE)");
        }
    }

    private static long jvmCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }
}
