package io.millrace.core.sink;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Whether a destination's directory can be written, found by writing: a file created and removed there. Not
 * {@link Files#isWritable}, which says yes to root on a read-only file system.
 */
public final class WriteProbe {
    private WriteProbe() {
    }

    /** Creates and removes {@code .millrace-write-probe} in {@code dir}; the failure as the file system gives it. */
    public static void probe(Path dir) throws IOException {
        Path probe = dir.resolve(".millrace-write-probe");
        Files.deleteIfExists(probe);
        Files.createFile(probe);
        Files.delete(probe);
    }
}
