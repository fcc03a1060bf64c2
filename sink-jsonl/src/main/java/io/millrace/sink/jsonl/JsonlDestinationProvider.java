package io.millrace.sink.jsonl;

import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.DestinationContext;
import io.millrace.core.sink.DestinationProvider;
import io.millrace.core.sink.DestinationSettings;

import java.nio.file.Path;

/** {@code type: jsonl}: Debezium-envelope JSON lines in files or on standard output, at least once ({@link JsonlSinkConfig}). */
public final class JsonlDestinationProvider implements DestinationProvider {
    public static final String TYPE = "jsonl";

    @Override
    public String type() {
        return TYPE;
    }

    @Override
    public DestinationConfig configure(String name, DestinationSettings s, DestinationContext context) {
        s.allow("stdout", "directory", "state_file", "rotate_mb", "encoder_threads");
        boolean stdout = s.bool("stdout", false);
        Path dir = s.path("directory", null);
        if (stdout && dir != null) {
            throw s.error("directory", "and " + s.key("stdout") + ": true are both set; keep one (a directory for events files, or stdout)");
        }
        if (!stdout && dir == null) {
            throw s.error("directory", "is required for a jsonl destination (e.g. directory: ./events),"
                    + " or set " + s.key("stdout") + ": true (with a state_file) to write events to standard output");
        }
        Path state = s.path("state_file", null);
        if (stdout && state == null) {
            throw s.error("state_file", "is required with " + s.key("stdout") + ": true: a path where the checkpoint"
                    + " can live, e.g. state_file: ./" + name + "-checkpoint.json");
        }
        long rotate = (long) s.integer("rotate_mb", (int) (JsonlSinkConfig.DEFAULT_ROTATE_BYTES >> 20), 1, 1 << 20) << 20;
        int encoders = s.integer("encoder_threads", JsonlSinkConfig.defaultEncoderThreads(), 0, JsonlSinkConfig.MAX_ENCODER_THREADS);
        return new JsonlSinkConfig(name, dir, state, rotate, context.meta(), encoders);
    }
}
