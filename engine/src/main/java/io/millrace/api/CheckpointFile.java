package io.millrace.api;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.CheckpointJson;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Optional;

/**
 * A checkpoint kept in a file of its own, replaced atomically: written to a temporary file in the same folder,
 * fsynced, renamed over the old one, and the folder fsynced, so that after a crash the file holds the old checkpoint
 * or the new one, whole (INV: DURABLE).
 */
final class CheckpointFile {
    private final String destination;
    private final Path file;

    CheckpointFile(String destination, Path file) {
        this.destination = destination;
        this.file = file.toAbsolutePath();
    }

    Optional<Checkpoint> read() {
        try {
            return Optional.of(CheckpointJson.read(Files.readString(file, StandardCharsets.UTF_8)));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new MillraceException(Kind.SINK, "destination '" + destination + "': cannot read its checkpoint file " + file + ": "
                    + e.getMessage(), e);
        } catch (IllegalArgumentException e) {
            throw new MillraceException(Kind.SINK, "destination '" + destination + "': its checkpoint file " + file + " is damaged ("
                    + e.getMessage() + "); restore it, or remove it to start over (a new snapshot)", e);
        }
    }

    void write(Checkpoint checkpoint) {
        Path dir = file.getParent();
        Path tmp = dir.resolve(file.getFileName() + ".tmp");
        try {
            Files.createDirectories(dir);
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.WRITE)) {
                ByteBuffer b = ByteBuffer.wrap((CheckpointJson.write(checkpoint) + "\n").getBytes(StandardCharsets.UTF_8));
                while (b.hasRemaining()) {
                    ch.write(b);
                }
                ch.force(true);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
                d.force(true);
            }
        } catch (IOException e) {
            throw new MillraceException(Kind.SINK, "destination '" + destination + "': cannot write its checkpoint file " + file + ": "
                    + e.getMessage(), e);
        }
    }
}
