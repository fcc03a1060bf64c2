package io.millrace.core.sink;

import io.millrace.core.MillraceException;
import io.millrace.core.change.Checkpoint;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The reset of a destination made of files beside a state file (jsonl, a third party's file sink): the data files
 * are deleted or, with {@link Data#KEEP}, moved into a folder {@code reset-<time>} of their directory (a file left
 * beside no state file would stop the next start: it is unknown which changes it holds), then the state file goes.
 * Files first: a crash in between leaves the state file, and the reset can be run again. Only a state file holding a
 * checkpoint is this pipeline's; without one nothing is touched.
 */
public final class FileReset implements SinkReset {
    private final String destination;
    private final Checkpoint checkpoint;
    private final List<Path> files;
    private final String kind;
    private final Path directory;
    private final Path stateFile;
    private final List<Path> stateFiles;
    private final Data data;
    private final Path aside;

    /**
     * @param destination the destination as messages name it, e.g. {@code jsonl destination 'files'}
     * @param checkpoint  the state file's checkpoint; null when there is none (nothing is then touched)
     * @param files       the data files, in their order, in {@code directory}
     * @param kind        what they are called, plural, e.g. {@code events file(s)}
     * @param directory   where the files are (null: none, e.g. standard output)
     * @param stateFile   the state file, deleted last, with {@code temporary} (a state file being replaced) before it
     */
    public FileReset(String destination, Checkpoint checkpoint, List<Path> files, String kind, Path directory, Path stateFile,
                     Path temporary, Data data) {
        this.destination = destination;
        this.checkpoint = checkpoint;
        this.files = List.copyOf(files);
        this.kind = kind;
        this.directory = directory;
        this.stateFile = stateFile;
        this.stateFiles = List.of(temporary, stateFile);
        this.data = data;
        this.aside = directory == null ? null : directory.resolve("reset-"
                + DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").format(ZonedDateTime.now(ZoneOffset.UTC)));
    }

    @Override
    public Optional<Checkpoint> checkpoint() {
        return Optional.ofNullable(checkpoint);
    }

    @Override
    public List<String> actions() {
        List<String> a = new ArrayList<>();
        if (checkpoint == null) {
            return a;
        }
        if (!files.isEmpty()) {
            String which = files.size() + " " + kind + " (" + files.get(0).getFileName()
                    + (files.size() > 1 ? " … " + files.get(files.size() - 1).getFileName() : "") + ")";
            a.add(data == Data.KEEP ? "move " + which + " into " + aside + " (kept there)" : "delete " + which + " in " + directory);
        }
        a.add("delete its state file " + stateFile + " (checkpoint at " + checkpoint.applied() + ")");
        return a;
    }

    @Override
    public List<String> keeps() {
        if (checkpoint == null && !files.isEmpty()) {
            return List.of(files.size() + " " + kind + " in " + directory + ": no state file holds a checkpoint of them,"
                    + " so they may not be this pipeline's");
        }
        return List.of();
    }

    @Override
    public void apply() {
        if (checkpoint == null) {
            return;
        }
        try {
            if (!files.isEmpty()) {
                if (data == Data.KEEP) {
                    Files.createDirectories(aside);
                }
                for (Path f : files) {
                    if (data == Data.KEEP) {
                        Files.move(f, aside.resolve(f.getFileName()));
                    } else {
                        Files.deleteIfExists(f);
                    }
                }
                fsyncDirectory(directory.toAbsolutePath());
            }
            for (Path f : stateFiles) {
                Files.deleteIfExists(f);
            }
            fsyncDirectory(stateFile.toAbsolutePath().getParent());
        } catch (IOException e) {
            throw new MillraceException(MillraceException.Kind.SINK, destination + ": the reset failed (" + e + "); the state file"
                    + " stays until it succeeds: fix the cause (permissions, disk) and run the reset again", e);
        }
    }

    /** Makes a directory's entries (new, renamed, removed files) durable. */
    public static void fsyncDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }

    @Override
    public void close() {
    }
}
