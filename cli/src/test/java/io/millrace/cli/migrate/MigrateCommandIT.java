package io.millrace.cli.migrate;

import io.millrace.cli.Cli.Run;
import io.millrace.cli.crash.EngineProcess;
import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static io.millrace.cli.Cli.millrace;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code millrace migrate} end to end, in-process: plan refuses a target that has the table (exit 11, the fix printed,
 * nothing written), plan passes once it is dropped, run copies and follows, verify exits 0 (and 12 once a target row is
 * changed behind its back, 0 after --repair), cutover prints the window and run stops by itself, status names CUT_OVER
 * and the fenced source, abort is refused after the cutover; with {@code --reverse}, {@code migrate reverse} streams the new
 * primary's writes back into the old one until SIGTERM.
 */
class MigrateCommandIT extends TwoServers {

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        src.createDatabase("app");
        tgt.createDatabase("app");
        src.execute("app", "CREATE TABLE items (id serial PRIMARY KEY, v text NOT NULL)",
                "INSERT INTO items (v) SELECT 'v' || i FROM generate_series(1, 3000) i");
    }

    @Test
    void planRunVerifyCutover() throws Exception {
        Path cfg = dir.resolve("migrate.yaml");
        Files.writeString(cfg, "source:\n  host: 127.0.0.1\n  port: " + src.port() + "\n  database: app\n  user: postgres\n"
                + "  tables: [public.items]\ndestinations:\n  - name: target\n    type: postgres\n    port: " + tgt.port()
                + "\n    database: app\n    user: postgres\n");
        tgt.execute("app", "CREATE TABLE items (id int PRIMARY KEY)", "INSERT INTO items VALUES (1)");
        Run refused = millrace("migrate", "plan", cfg.toString());
        assertThat(refused.exitCode()).as(refused.out() + refused.err()).isEqualTo(11);
        assertThat(refused.out()).contains("FAIL the target already has table public.items and it is not empty (1 rows)")
                .contains("fix: DROP TABLE \"public\".\"items\" on the target");
        Run refusedRun = millrace("migrate", "run", cfg.toString());
        assertThat(refusedRun.exitCode()).isEqualTo(11);
        assertThat(refusedRun.err()).startsWith("millrace: migrate: the plan has 1 problem(s), nothing was written");

        tgt.execute("app", "DROP TABLE items");
        Path withPort = dir.resolve("with-port.yaml"); // a configuration made for 'millrace run': its status page is said not served
        Files.writeString(withPort, Files.readString(cfg) + "operations:\n  http_port: 56999\n");
        Run portPlan = millrace("migrate", "plan", withPort.toString());
        assertThat(portPlan.exitCode()).as(portPlan.out() + portPlan.err()).isZero();
        assertThat(portPlan.err()).contains("operations.http_port 56999 is not served by 'millrace migrate'");
        Run ready = millrace("migrate", "plan", cfg.toString());
        assertThat(ready.exitCode()).as(ready.out()).isZero();
        assertThat(ready.err()).doesNotContain("http_port");
        assertThat(ready.out()).contains("will copy:\n  - public.items").contains("ready: run 'millrace migrate run");

        CompletableFuture<Run> run = CompletableFuture.supplyAsync(() -> millrace("migrate", "run", cfg.toString()));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!millrace("migrate", "status", cfg.toString()).out().startsWith("migration: FOLLOWING")) {
            assertThat(System.nanoTime()).as("following in time").isLessThan(deadline);
            assertThat(run).isNotDone();
            Thread.sleep(200);
        }
        src.execute("app", "INSERT INTO items (v) VALUES ('later')");
        Run equal = millrace("migrate", "verify", cfg.toString(), "--chunk-rows", "500");
        assertThat(equal.exitCode()).as(equal.out() + equal.err()).isZero();
        assertThat(equal.out()).contains("0 divergent");

        tgt.execute("app", "UPDATE items SET v = 'changed behind its back' WHERE id = 1234");
        Run differs = millrace("migrate", "verify", cfg.toString(), "--chunk-rows", "500");
        assertThat(differs.exitCode()).isEqualTo(12);
        assertThat(differs.out()).contains("DIVERGENT public.items key range (1000 .. 1500]: 1 key(s) differ, e.g. 1234");
        Run repaired = millrace("migrate", "verify", cfg.toString(), "--chunk-rows", "500", "--repair");
        assertThat(repaired.exitCode()).isZero();
        assertThat(repaired.out()).contains("(repaired: copied again)");

        Run early = millrace("migrate", "reverse", cfg.toString());
        assertThat(early.exitCode()).isEqualTo(2);
        assertThat(early.err()).contains("the way back starts after 'millrace migrate cutover --reverse'");
        Run cut = millrace("migrate", "cutover", cfg.toString(), "--max-lag-mb", "1", "--timeout-s", "30", "--reverse");
        assertThat(cut.exitCode()).as(cut.out() + cut.err()).isZero();
        assertThat(cut.out()).containsPattern("write-unavailable window \\d+ ms")
                .contains("run 'millrace migrate reverse " + cfg + "'");
        System.out.println(cut.out());
        Run ended = run.get(30, TimeUnit.SECONDS);
        assertThat(ended.exitCode()).as(ended.err()).isZero();
        assertThat(ended.out()).contains("the migration is CUT_OVER; following stops")
                .contains("replication slot dropped on the source");
        assertThat(src.connect("app").createStatement().executeQuery("SELECT count(*) FROM pg_replication_slots")).satisfies(rs -> {
            rs.next();
            assertThat(rs.getLong(1)).isZero();
        });

        Run status = millrace("migrate", "status", cfg.toString());
        assertThat(status.out()).startsWith("migration: CUT_OVER; source FENCED");
        Run abort = millrace("migrate", "abort", cfg.toString());
        assertThat(abort.exitCode()).isEqualTo(2);
        assertThat(abort.err()).contains("the migration is cut over") // it advised lifting the fence by hand (a user's walk)
                .contains("'millrace migrate reverse' (after 'cutover --reverse') and then 'millrace migrate rollback'");
        // Found by a user: after the cutover the plan said "ready", and 'millrace reset --yes' with the migration's
        // configuration began emptying the new primary's tables (the count below: nothing removed).
        Run plan = millrace("migrate", "plan", cfg.toString());
        assertThat(plan.exitCode()).as(plan.out() + plan.err()).isEqualTo(2);
        assertThat(plan.out()).contains("this migration is cut over already (recorded on the target in \"millrace\".\"migration\")")
                .doesNotContain("ready: run");
        Run lateVerify = millrace("migrate", "verify", cfg.toString()); // it waited 35 s for a follower, then advised 'run'
        assertThat(lateVerify.exitCode()).as(lateVerify.out() + lateVerify.err()).isEqualTo(2);
        assertThat(lateVerify.err()).contains("the migration is CUT_OVER: the stream into the target ended at the cutover");
        Run reset = millrace("reset", cfg.toString(), "--yes");
        assertThat(reset.exitCode()).as(reset.out() + reset.err()).isEqualTo(2);
        assertThat(reset.err()).contains("is the target of a 'millrace migrate' whose last recorded step is CUT_OVER")
                .contains("it is the primary now").contains("nothing was removed");
        assertThat(tgt.connect("app").createStatement().executeQuery("SELECT count(*) FROM items")).satisfies(rs -> {
            rs.next();
            assertThat(rs.getLong(1)).isEqualTo(3001);
        });

        // The way back: a write on the new primary made before 'migrate reverse' starts, and one while it runs, reach the
        // old one; SIGTERM stops it cleanly.
        tgt.execute("app", "INSERT INTO items (v) VALUES ('on the new primary')", "DELETE FROM items WHERE id = 1");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        EngineProcess back = EngineProcess.startCommand(dir.resolve("reverse.log"), List.of(java, "-Xmx256m", "-cp",
                System.getProperty("java.class.path"), "io.millrace.cli.Main", "migrate", "reverse", cfg.toString()));
        try {
            tgt.execute("app", "UPDATE items SET v = 'updated on the new primary' WHERE id = 2");
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (count("SELECT count(*) FROM items WHERE v IN ('on the new primary', 'updated on the new primary')") != 2
                    || count("SELECT count(*) FROM items WHERE id = 1") != 0) {
                assertThat(System.nanoTime()).as("reverse in time; log:%n%s", back.logTail(30)).isLessThan(until);
                assertThat(back.alive()).as("reverse running; log:%n%s", back.logTail(30)).isTrue();
                Thread.sleep(200);
            }
            assertThat(back.terminate(30)).as(back.logTail(30)).isZero();
            assertThat(back.logText()).contains("migrate reverse: streaming the target's changes into the source");
        } finally {
            back.destroyQuietly();
        }
        assertThat(count("SELECT count(*) FROM items")).isEqualTo(3001);

        // The rollback: reverse started again goes on; 'migrate rollback' makes the old primary the primary again, and
        // reverse then stops by itself and drops its slot on the new primary.
        tgt.execute("app", "INSERT INTO items (v) VALUES ('last on the new primary')");
        EngineProcess again = EngineProcess.startCommand(dir.resolve("reverse2.log"), List.of(java, "-Xmx256m", "-cp",
                System.getProperty("java.class.path"), "io.millrace.cli.Main", "migrate", "reverse", cfg.toString()));
        try {
            Run rollback = millrace("migrate", "rollback", cfg.toString(), "--timeout-s", "60");
            assertThat(rollback.exitCode()).as(rollback.err() + "\nreverse:\n" + again.logTail(30)).isZero();
            assertThat(rollback.out()).contains("rollback done: write-unavailable window").contains("switch the applications back");
            assertThat(count("SELECT count(*) FROM items WHERE v = 'last on the new primary'")).isOne();
            src.execute("app", "INSERT INTO items (v) VALUES ('the old primary takes writes')");
            assertThat(again.awaitExit(30_000)).as(again.logTail(30)).isZero();
            assertThat(again.logText()).contains("the migration is ROLLED_BACK; streaming stops").contains("its slot dropped on the target");
        } finally {
            again.destroyQuietly();
        }
        Run after = millrace("migrate", "status", cfg.toString());
        assertThat(after.out()).contains("migration: ROLLED_BACK").contains("source not fenced");
        // Found by a user: after the rollback, run said it followed, then failed on the slot the rollback had dropped,
        // advising a reset; the plan said "ready".
        Run rerun = millrace("migrate", "run", cfg.toString());
        assertThat(rerun.exitCode()).as(rerun.out() + rerun.err()).isEqualTo(2);
        assertThat(rerun.err()).contains("this migration was rolled back").contains("start from an empty target");
        assertThat(rerun.out()).doesNotContain("following");
        Run recut = millrace("migrate", "cutover", cfg.toString()); // it said the source may be fenced: 'cutover again' or 'abort'
        assertThat(recut.exitCode()).as(recut.out() + recut.err()).isEqualTo(2);
        assertThat(recut.err()).contains("the migration is ROLLED_BACK").contains("it was rolled back")
                .doesNotContain("may be fenced").doesNotContain("migrate cutover: migrate cutover");
        Run replan = millrace("migrate", "plan", cfg.toString());
        assertThat(replan.exitCode()).isEqualTo(2);
        assertThat(replan.out()).contains("this migration was rolled back").doesNotContain("ready: run");
    }

    /** On the source. */
    private static long count(String sql) throws Exception {
        try (var c = src.connect("app"); var s = c.createStatement(); var rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
