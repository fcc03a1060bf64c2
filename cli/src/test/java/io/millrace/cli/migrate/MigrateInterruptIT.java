package io.millrace.cli.migrate;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A {@code millrace migrate} command ended by SIGTERM (or Ctrl-C) in the middle leaves a word on the terminal, not only an
 * exit status: what state it may have left and the command that goes on. Found by a user: a cutover interrupted after the
 * fence ended silently with the source fenced, and so did a run interrupted during the copy. Here {@code migrate run} is
 * stopped during its copy; the cutover's message is made by the same means ({@code MigrateCommand.Interrupted}).
 */
class MigrateInterruptIT extends TwoServers {
    @TempDir
    static Path dir;

    @Test
    void aRunInterruptedDuringTheCopySaysHowToGoOn() throws Exception {
        String db = "interrupt";
        src.createDatabase(db);
        tgt.createDatabase(db);
        src.execute(db, "CREATE TABLE doc (id int PRIMARY KEY, body text NOT NULL)",
                "INSERT INTO doc SELECT i, repeat(md5(i::text), 8) FROM generate_series(1, 400000) i");
        Path cfg = MigrateCrashIT.config(dir, db, "public.doc");
        Path log = dir.resolve("run.log");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(List.of(java, "-Xmx256m", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"),
                "io.millrace.cli.Main", "migrate", "run", cfg.toString())).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (p.isAlive() && !Files.readString(log).contains("snapshot of") && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            assertThat(Files.readString(log)).as("the copy began").contains("snapshot of");
            p.destroy(); // SIGTERM, as Ctrl-C would end it
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
            String out = Files.readString(log);
            assertThat(out).as("exit %d; log:%n%s", p.exitValue(), out).doesNotContain("following. Next:")
                    .contains("migrate run: interrupted before following began").contains("millrace migrate status " + cfg);
        } finally {
            p.destroyForcibly();
        }
    }
}
