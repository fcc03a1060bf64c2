package io.millrace.sink.duckdb;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

/**
 * DuckDB's JDBC driver copies its native library (about 57 MB) into {@code java.io.tmpdir} when it loads, and removes the
 * copy only when the JVM exits normally ({@code File.deleteOnExit}): a JVM that is killed (SIGKILL, the OOM killer, a
 * crash) leaves it behind, one per start — the temporary directory filled with them under the crash tests, and a
 * Millrace restarted after {@code kill -9} or by a supervisor in a crash loop would fill it the same way. Once loaded, the
 * file is not needed on Linux (the library stays mapped after its file is removed), so the copy this JVM loaded — the one
 * {@code /proc/self/maps} names, in the temporary directory — is removed after the first connection. Copies of other
 * processes are never touched; without {@code /proc} nothing is done. Any thread; once per JVM.
 */
final class NativeCopy {
    private static final Logger LOG = LoggerFactory.getLogger(NativeCopy.class);
    private static final AtomicBoolean DONE = new AtomicBoolean();

    private NativeCopy() {
    }

    /** Removes this JVM's loaded copy of DuckDB's native library from the temporary directory, the first time only. */
    static void forgetOnce() {
        if (!DONE.compareAndSet(false, true)) {
            return;
        }
        Path maps = Path.of("/proc/self/maps");
        if (!Files.isReadable(maps)) {
            return;
        }
        try {
            Path tmp = Path.of(System.getProperty("java.io.tmpdir")).toRealPath();
            List<Path> ours;
            try (Stream<String> lines = Files.lines(maps)) {
                ours = lines.map(l -> l.indexOf('/') < 0 ? "" : l.substring(l.indexOf('/'))) // the mapped file's path, if any
                        .filter(p -> !p.isEmpty() && !p.endsWith(" (deleted)")).distinct().map(Path::of)
                        .filter(p -> p.getFileName().toString().startsWith("libduckdb_java") && p.getFileName().toString().endsWith(".so"))
                        .filter(p -> tmp.equals(p.getParent())).toList();
            }
            for (Path p : ours) {
                Files.deleteIfExists(p);
                LOG.debug("removed DuckDB's native library copy {} (loaded; it stays mapped)", p);
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("DuckDB's native library copy in the temporary directory is left to the JVM's exit: {}", e.toString());
        }
    }
}
