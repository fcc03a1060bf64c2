package io.millrace.cli.migrate;

import io.millrace.api.Millrace;
import io.millrace.migrate.Migration;
import io.millrace.migrate.MigrationState;
import io.millrace.migrate.VerifyReport;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Files;
import java.sql.Connection;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.IntStream;

import static io.millrace.cli.migrate.MigrateCrashIT.ids;
import static io.millrace.cli.migrate.MigrateCrashIT.one;
import static io.millrace.cli.migrate.MigrateCrashIT.rows;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code millrace migrate verify --repair} and then {@code millrace migrate cutover}, each SIGKILLed at a random moment
 * (not at a named point: wherever the kill lands) in a JVM of its own, while the target follows and a writer commits
 * multi-statement transactions. After each kill: the migration is still FOLLOWING with the source writable (verify), or
 * {@code status} names a step (FOLLOWING, FENCING, FENCED or CUT_OVER) and whether the source is fenced, agreeing with the
 * server; then the migration ends cleanly — cutover run again reaches CUT_OVER with every transaction whose COMMIT
 * returned on the target and the tables equal, or abort (chosen at random where it is allowed) reaches ABORTED with the
 * source writable. Seeded ({@code -Dmillrace.migrate.kill.seed=N}); 2 runs in the test command,
 * {@code -Dmillrace.migrate.kill.runs=10} for the documented long run.
 */
class MigrateKillIT extends TwoServers {
    static final long SEED = Long.getLong("millrace.migrate.kill.seed", System.nanoTime() % 100_000);

    @TempDir
    static Path dir;

    static IntStream runs() {
        System.out.println("MigrateKillIT seed " + SEED + " (-Dmillrace.migrate.kill.seed=" + SEED + " replays it)");
        return IntStream.range(0, Integer.getInteger("millrace.migrate.kill.runs", 2));
    }

    @ParameterizedTest(name = "run {0}")
    @MethodSource("runs")
    void killedDuringVerifyAndCutoverEndsCompletedOrCleanlyAborted(int run) throws Exception {
        SplittableRandom rnd = new SplittableRandom(SEED + run);
        String db = "kill" + run;
        src.createDatabase(db);
        tgt.createDatabase(db);
        src.execute(db, "CREATE TABLE account (id serial PRIMARY KEY, balance int NOT NULL CHECK (balance >= 0))",
                "CREATE TABLE ledger (id bigserial PRIMARY KEY, account int NOT NULL REFERENCES account, amount int NOT NULL)",
                "CREATE TABLE doc (id int PRIMARY KEY, body text NOT NULL)",
                "INSERT INTO account (balance) SELECT 1000 FROM generate_series(1, 50)",
                "INSERT INTO doc SELECT i, repeat(md5(i::text), 3) FROM generate_series(1, 40000) i");
        Path cfg = MigrateCrashIT.config(dir, db, "public.account", "public.ledger", "public.doc");
        Migration m = MigrateCrashIT.migration(db, "public.account", "public.ledger", "public.doc");
        Set<Long> committed = ConcurrentHashMap.newKeySet();
        AtomicBoolean stopLoad = new AtomicBoolean();
        boolean finish;
        try (Millrace following = m.follow(Duration.ofSeconds(60))) {
            Thread load = new Thread(() -> MigrateCrashIT.write(db, committed, stopLoad), "kill-load");
            load.start();
            while (committed.size() < 100) {
                Thread.sleep(20);
            }
            // Rows changed behind Millrace's back, so that the killed verify has something to repair.
            tgt.execute(db, "UPDATE doc SET body = 'tampered' WHERE id % 7919 = 0");

            // JVM start-up takes seconds on a loaded machine: the random moment counts from the process's first log line, or
            // (half the runs) from the comparison of the last table, after which the repairs run (a few ms each).
            boolean inRepair = rnd.nextBoolean();
            int verifyKillMs = inRepair ? rnd.nextInt(200) : rnd.nextInt(5000);
            Path verifyLog = dir.resolve(db + "-verify.log");
            int exit = killAfter(cfg, verifyLog, inRepair ? () -> text(verifyLog).contains("verify public.ledger") : () -> size(verifyLog) > 0,
                    verifyKillMs, "verify", "--repair", "--chunk-rows", "500");
            long repairedBefore = text(verifyLog).lines().filter(l -> l.contains("copied again")).count();
            assertThat(m.status().state()).isEqualTo(MigrationState.FOLLOWING);
            assertThat(m.status().fenced()).isFalse();
            VerifyReport again = m.verify(true, 500);
            VerifyReport after = m.verify(false, 500);
            assertThat(after.divergent()).as(after.render()).isEmpty();

            // Most kills count from FENCING recorded (the window is a few hundred ms), some from the process's start.
            boolean fromFencing = rnd.nextInt(4) != 0;
            int cutoverKillMs = fromFencing ? rnd.nextInt(400) : rnd.nextInt(3000);
            Path cutLog = dir.resolve(db + "-cutover.log");
            int cutExit;
            try (Connection probe = tgt.connect(db)) {
                cutExit = killAfter(cfg, cutLog, fromFencing ? () -> fencingRecorded(probe) : () -> true, cutoverKillMs, "cutover",
                        "--max-lag-mb", "1", "--timeout-s", "30");
            }
            Migration.MigrationStatus st = m.status();
            boolean fencedNow = one(src, db, "SELECT count(*) FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase"
                    + " WHERE d.datname = current_database() AND 'default_transaction_read_only=on' = ANY (s.setconfig)") == 1;
            System.out.println("run " + run + ": verify killed " + verifyKillMs + " ms after " + (inRepair ? "its last comparison"
                    : "its first log line") + " (exit " + exit + ", " + repairedBefore + " chunk(s) repaired before, "
                    + again.divergent().size() + " after); cutover killed " + cutoverKillMs + " ms after "
                    + (fromFencing ? "FENCING" : "its start") + " (exit " + cutExit + "): " + st.render().lines().findFirst().orElse(""));
            assertThat(st.fenced()).as("status says whether the source is fenced").isEqualTo(fencedNow);
            assertThat(st.state()).isIn(MigrationState.FOLLOWING, MigrationState.FENCING, MigrationState.FENCED, MigrationState.CUT_OVER);
            if (st.state() == MigrationState.FOLLOWING) {
                assertThat(fencedNow).as("FOLLOWING: the fence is recorded before the source is touched").isFalse();
            }
            if (st.state() == MigrationState.FENCING || st.state() == MigrationState.FENCED) {
                assertThat(st.render()).contains("a cutover was interrupted");
            }
            finish = st.state() == MigrationState.CUT_OVER || st.state() == MigrationState.FOLLOWING || rnd.nextBoolean();
            if (finish && st.state() != MigrationState.CUT_OVER) {
                m.cutover(1 << 20, Duration.ofSeconds(30));
            }
            stopLoad.set(true);
            load.join(10_000);
        }
        if (!finish) {
            m.abort();
        }
        Migration.MigrationStatus end = m.status();
        if (finish) {
            assertThat(end.state()).isEqualTo(MigrationState.CUT_OVER);
            assertThat(end.fenced()).isTrue();
            assertThat(ids(tgt, db)).containsAll(committed); // INV: FENCE
            for (String t : List.of("account", "ledger", "doc")) {
                assertThat(rows(tgt, db, t)).as(t).isEqualTo(rows(src, db, t));
            }
            assertThat(one(tgt, db, "SELECT nextval('ledger_id_seq')")).isGreaterThan(one(src, db, "SELECT last_value FROM ledger_id_seq"));
        } else {
            assertThat(end.state()).isEqualTo(MigrationState.ABORTED);
            assertThat(end.fenced()).isFalse();
            src.execute(db, "INSERT INTO ledger (account, amount) VALUES (1, 1)"); // writable again
        }
        src.execute("postgres", "ALTER DATABASE " + db + " RESET default_transaction_read_only");
    }

    /**
     * Runs {@code millrace migrate ARGS} in a JVM of its own and SIGKILLs it {@code millis} after {@code ready} first holds
     * (polled every 10 ms), if it has not ended by then.
     */
    private static int killAfter(Path cfg, Path log, java.util.function.BooleanSupplier ready, int millis, String... args)
            throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new java.util.ArrayList<>(List.of(java, "-Xmx256m", "-XX:+UseSerialGC", "-cp",
                System.getProperty("java.class.path"), "io.millrace.cli.Main", "migrate", args[0], cfg.toString()));
        cmd.addAll(List.of(args).subList(1, args.length));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (p.isAlive() && !ready.getAsBoolean() && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            if (!p.waitFor(millis, TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
            }
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
            int exit = p.exitValue();
            assertThat(exit).as("killed (137) or ended by itself (0); log:%n%s", Files.readString(log)).isIn(0, 137);
            return exit;
        } finally {
            p.destroyForcibly();
        }
    }

    /** Whether the cutover recorded FENCING on the target (one cheap query on an open session: the window is short). */
    private static boolean fencingRecorded(Connection c) {
        try (var s = c.createStatement(); var rs = s.executeQuery("SELECT to_regclass('millrace.migration') IS NOT NULL"
                + " AND EXISTS (SELECT 1 FROM millrace.migration WHERE step = 'FENCING')")) {
            rs.next();
            return rs.getBoolean(1);
        } catch (java.sql.SQLException e) {
            return false;
        }
    }

    private static String text(Path file) {
        try {
            return Files.readString(file);
        } catch (java.io.IOException e) {
            return "";
        }
    }

    private static long size(Path file) {
        try {
            return Files.size(file);
        } catch (java.io.IOException e) {
            return 0;
        }
    }
}
