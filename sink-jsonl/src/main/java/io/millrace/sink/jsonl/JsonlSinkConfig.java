package io.millrace.sink.jsonl;

import io.millrace.core.MillraceException;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.Sink;

import java.nio.file.Path;

/**
 * Settings of a {@link JsonlSink}: the YAML's {@code type: jsonl} reads into one ({@link JsonlDestinationProvider});
 * an application may build one with {@link #files}, {@link #stdout} or this constructor, which check every value.
 *
 * @param name        the destination's name in the configuration (part of the checkpoint identity)
 * @param directory   where the events files go; {@code null} writes to standard output
 * @param stateFile   where the checkpoint lives; {@code null} means {@code <directory>/checkpoint.json}.
 *                    Required when writing to standard output
 * @param rotateBytes a file that has reached this size is closed and the next one begun
 *                    ({@link #DEFAULT_ROTATE_BYTES} by default); must be positive
 * @param meta        the source's logical name and database, written into every event
 * @param encoderThreads threads that encode events into lines for the writer thread, which then only writes bytes
 *                    (files only; the same bytes in the same order); 0 encodes on the writer thread.
 *                    {@link #defaultEncoderThreads()} by default
 */
public record JsonlSinkConfig(String name, Path directory, Path stateFile, long rotateBytes, SourceMeta meta,
                              int encoderThreads) implements DestinationConfig {
    public static final long DEFAULT_ROTATE_BYTES = 256L * 1024 * 1024;
    public static final String DEFAULT_STATE_FILE = "checkpoint.json";
    /** The most {@code encoder_threads} accepts. */
    public static final int MAX_ENCODER_THREADS = 64;

    /** With {@link #defaultEncoderThreads()}. */
    public JsonlSinkConfig(String name, Path directory, Path stateFile, long rotateBytes, SourceMeta meta) {
        this(name, directory, stateFile, rotateBytes, meta, defaultEncoderThreads());
    }

    /** The machine's cores, at most 4 (docs/BENCHMARKS.md, issue 16). */
    public static int defaultEncoderThreads() {
        return Math.min(4, Runtime.getRuntime().availableProcessors());
    }

    /** The same settings with {@code n} encoding threads. */
    public JsonlSinkConfig withEncoderThreads(int n) {
        return new JsonlSinkConfig(name, directory, stateFile, rotateBytes, meta, n);
    }

    public JsonlSinkConfig {
        if (name == null || name.isBlank()) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "jsonl destination: 'name' must not be empty");
        }
        if (meta == null) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "jsonl destination '" + name
                    + "': the source's logical name and database (meta) must be given");
        }
        if (directory == null && stateFile == null) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "jsonl destination '" + name
                    + "': 'state_file' is required when writing to standard output (no 'directory'):"
                    + " set it to a path where the checkpoint can live, e.g. ./" + name + "-checkpoint.json");
        }
        if (rotateBytes <= 0) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "jsonl destination '" + name
                    + "': 'rotate_bytes' must be positive, got " + rotateBytes + " (default " + DEFAULT_ROTATE_BYTES + ")");
        }
        if (encoderThreads < 0 || encoderThreads > MAX_ENCODER_THREADS) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "jsonl destination '" + name
                    + "': 'encoder_threads' must be between 0 and " + MAX_ENCODER_THREADS + ", got " + encoderThreads
                    + " (0 encodes on the writer thread; default " + defaultEncoderThreads() + ", the cores up to 4)");
        }
        if (stateFile == null) {
            stateFile = directory.resolve(DEFAULT_STATE_FILE);
        }
    }

    /** Events files in {@code directory}, checkpoint in {@code <directory>/checkpoint.json}, 256 MiB files. */
    public static JsonlSinkConfig files(String name, Path directory, SourceMeta meta) {
        if (directory == null) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "jsonl destination '" + name + "': 'directory' must be given");
        }
        return new JsonlSinkConfig(name, directory, null, DEFAULT_ROTATE_BYTES, meta);
    }

    /** Events to standard output, checkpoint in {@code stateFile}. */
    public static JsonlSinkConfig stdout(String name, Path stateFile, SourceMeta meta) {
        return new JsonlSinkConfig(name, null, stateFile, DEFAULT_ROTATE_BYTES, meta);
    }

    @Override
    public String type() {
        return JsonlDestinationProvider.TYPE;
    }

    @Override
    public Sink newSink() {
        return new JsonlSink(this);
    }

    /** The directories it writes can be written (see {@link JsonlSink#preflight()}). */
    @Override
    public void preflight() {
        new JsonlSink(this).preflight();
    }

    public boolean toStdout() {
        return directory == null;
    }
}
