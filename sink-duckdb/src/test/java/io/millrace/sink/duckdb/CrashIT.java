package io.millrace.sink.duckdb;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A writer killed with SIGKILL at a random moment leaves data and checkpoint in step (INV: DURABLE, INV: RESUME), and no
 * copy of DuckDB's native library in its temporary directory (57 MB each; the driver removes its copy only at a normal
 * exit, and /tmp filled with them under the crash tests: {@link NativeCopy}).
 */
class CrashIT {
    @TempDir
    Path dir;

    @Test
    void killedWriterLeavesDataAndCheckpointInStep() throws Exception {
        Path file = dir.resolve("crash.duckdb");
        Path tmp = java.nio.file.Files.createDirectories(dir.resolve("tmp"));
        long lastSeen = 0;
        for (int round = 0; round < 3; round++) {
            Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Djava.io.tmpdir=" + tmp, "-cp", System.getProperty("java.class.path"), CrashWriter.class.getName(), file.toString())
                    .redirectErrorStream(true).start();
            long committed = 0;
            try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                long target = lastSeen + 3 + round; // kill a few batches in, at varying points of a write
                while ((line = out.readLine()) != null) {
                    if (line.startsWith("committed ")) {
                        committed = Long.parseLong(line.substring(10));
                        if (committed >= target) {
                            Thread.sleep(17L * round);
                            p.destroyForcibly(); // SIGKILL: no close, no rollback
                            break;
                        }
                    }
                }
            }
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            try (var left = java.nio.file.Files.list(tmp)) {
                assertEquals(List.of(), left.map(f -> f.getFileName().toString()).filter(n -> n.startsWith("libduckdb_java")).toList(),
                        "round " + round + ": DuckDB's native library copies left in the killed writer's temporary directory");
            }
            assertTrue(committed > lastSeen, "round " + round + " committed nothing after " + lastSeen);

            long checkpoint;
            try (DuckDbSink sink = new DuckDbSink(new DuckDbSinkConfig("crash", file, null))) {
                checkpoint = sink.open().orElseThrow().flushLsn().value();
            }
            // every batch reported committed is durable (the child may have committed more before the kill landed)
            assertTrue(checkpoint >= committed, "checkpoint " + checkpoint + ", committed " + committed);
            try (Connection c = DriverManager.getConnection("jdbc:duckdb:" + file.toAbsolutePath());
                 Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT count(*), count(DISTINCT batch), max(batch),"
                         + " (SELECT batch FROM public.crash WHERE id = 0) FROM public.crash WHERE id > 0")) {
                rs.next();
                assertEquals(checkpoint * 1000, rs.getLong(1), "rows of exactly the checkpointed batches");
                assertEquals(checkpoint, rs.getLong(2));
                assertEquals(checkpoint, rs.getLong(3));
                assertEquals(checkpoint, rs.getLong(4), "the upserted row matches the checkpoint");
            }
            lastSeen = checkpoint;
        }
    }
}
