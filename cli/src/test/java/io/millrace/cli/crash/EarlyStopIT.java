package io.millrace.cli.crash;

import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code millrace run} stopped by SIGTERM while it loads its configuration (the JVM's first second or two: a service
 * manager stopping it at once, a user's Ctrl-C). It ended with 143, not in the README's exit codes, because the stop
 * signals were handled only once the engine existed (found by a user). Now it exits 0 and starts nothing. The password
 * file is a FIFO, so that the signal comes, for sure, while the configuration loads: the engine reads it then.
 */
class EarlyStopIT {
    @Test
    void aSigtermWhileTheConfigurationLoadsExitsZeroAndStartsNothing(@TempDir Path dir) throws Exception {
        try (EmbeddedPg pg = EmbeddedPg.builder().major(17).start()) {
            pg.createDatabase("early");
            pg.execute("early", "CREATE TABLE public.items (id int PRIMARY KEY)",
                    "CREATE ROLE early_role LOGIN REPLICATION PASSWORD 'early-Pw-7'", "GRANT SELECT ON public.items TO early_role");
            Path fifo = dir.resolve("password");
            assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
            Path config = dir.resolve("config.yaml");
            Files.writeString(config, String.join("\n", "name: early",
                    "source: {host: 127.0.0.1, port: " + pg.port() + ", database: early, user: early_role, password_file: " + fifo
                            + ", slot: early, publication: early_pub, tables: [public.items]}",
                    "destinations:", "  - {name: files, type: jsonl, directory: " + dir.resolve("events") + "}", ""), StandardCharsets.UTF_8);
            EngineProcess engine = EngineProcess.start(config, dir.resolve("engine.log"));
            try {
                // Opening a FIFO to write waits for its reader: once open, the engine is reading the password, loading its
                // configuration.
                java.util.concurrent.CompletableFuture<java.io.OutputStream> writer = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                    try {
                        return Files.newOutputStream(fifo);
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
                try (java.io.OutputStream out = writer.get(60, java.util.concurrent.TimeUnit.SECONDS)) {
                    assertThat(new ProcessBuilder("kill", "-TERM", Long.toString(engine.pid())).start().waitFor()).isZero();
                    Thread.sleep(300);
                    out.write("early-Pw-7\n".getBytes(StandardCharsets.UTF_8)); // the load goes on, and finds the stop asked
                }
                assertThat(engine.awaitExit(60_000)).as("exit status; log:%n%s", engine.logTail(20)).isZero();
            } finally {
                engine.destroyQuietly();
            }
            try (Connection c = pg.connect("early"); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'early'")) {
                rs.next();
                assertThat(rs.getLong(1)).as("no slot created").isZero();
            }
            assertThat(dir.resolve("events")).doesNotExist();
        }
    }
}
