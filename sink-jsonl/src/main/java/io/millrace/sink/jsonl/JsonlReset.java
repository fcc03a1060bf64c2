package io.millrace.sink.jsonl;

import io.millrace.core.MillraceException;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.sink.SinkReset;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The reset of a jsonl destination: its state file goes, and its events files are deleted or, with
 * {@link Data#KEEP}, moved into a folder {@code reset-<time>} of the events directory (an events file left beside
 * no state file would stop the next start: it is unknown which events it holds). Only a state file holding a
 * checkpoint is this pipeline's; without one nothing is touched. Events files first, then the state file: a crash
 * in between leaves the state file, and the reset can be run again.
 */
final class JsonlReset implements SinkReset {
    private final JsonlSinkConfig config;
    private final Checkpoint checkpoint;
    private final List<Path> files;
    private final Data data;
    private final Path aside;

    JsonlReset(JsonlSinkConfig config, SinkState state, List<Path> files, Data data) {
        this.config = config;
        this.checkpoint = state == null ? null : state.checkpoint();
        this.files = List.copyOf(files);
        this.data = data;
        this.aside = config.toStdout() ? null : config.directory().resolve("reset-"
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
            String which = files.size() + " events file(s) (" + files.get(0).getFileName()
                    + (files.size() > 1 ? " … " + files.get(files.size() - 1).getFileName() : "") + ")";
            a.add(data == Data.KEEP ? "move " + which + " into " + aside + " (kept there)" : "delete " + which + " in " + config.directory());
        }
        a.add("delete its state file " + config.stateFile() + " (checkpoint at " + checkpoint.applied() + ")");
        return a;
    }

    @Override
    public List<String> keeps() {
        if (checkpoint == null && !files.isEmpty()) {
            return List.of(files.size() + " events file(s) in " + config.directory() + ": no state file holds a checkpoint of them,"
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
                SinkState.fsyncDirectory(config.directory().toAbsolutePath());
            }
            Files.deleteIfExists(SinkState.tempFile(config.stateFile()));
            Files.deleteIfExists(config.stateFile());
            SinkState.fsyncDirectory(config.stateFile().toAbsolutePath().getParent());
        } catch (IOException e) {
            throw new MillraceException(MillraceException.Kind.SINK, "jsonl destination '" + config.name() + "': the reset failed ("
                    + e + "); the state file stays until it succeeds: fix the cause (permissions, disk) and run the reset again", e);
        }
    }

    @Override
    public void close() {
    }
}
