package io.millrace.sink.jsonl;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.CheckpointJson;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Iterator;
import java.util.Set;

/**
 * What the state file holds: the checkpoint and how far the events files are covered by it.
 *
 * <pre>{@code {"format":1,"events_file":"events-000003.jsonl","offset":1048576,"checkpoint":{...}}}</pre>
 *
 * <p>{@code events_file} is {@code null} when the sink writes to standard output; {@code checkpoint} is
 * {@code null} until the first write (the state file is created at the first open, before any event).
 * Every byte of {@code events_file} before {@code offset}, and every lower-numbered events file, holds
 * events at or before the checkpoint; bytes after it were written after (and are cut on open).
 */
record SinkState(String eventsFile, long offset, Checkpoint checkpoint) {
    static final int FORMAT = 1;
    private static final Set<String> FIELDS = Set.of("format", "events_file", "offset", "checkpoint");
    private static final JsonFactory FACTORY = new JsonFactory();
    private static final ObjectMapper MAPPER = new ObjectMapper();

    byte[] toJson() {
        ByteArrayBuilder out = new ByteArrayBuilder(512);
        try (JsonGenerator g = FACTORY.createGenerator(out)) {
            g.writeStartObject();
            g.writeNumberField("format", FORMAT);
            if (eventsFile == null) {
                g.writeNullField("events_file");
            } else {
                g.writeStringField("events_file", eventsFile);
            }
            g.writeNumberField("offset", offset);
            g.writeFieldName("checkpoint");
            if (checkpoint == null) {
                g.writeNull();
            } else {
                g.writeRawValue(CheckpointJson.write(checkpoint));
            }
            g.writeEndObject();
        } catch (IOException e) {
            throw new IllegalStateException("cannot happen: writing to memory", e);
        }
        out.append('\n');
        return out.toByteArray();
    }

    /** Parses the state file's content; throws {@link IllegalArgumentException} saying what is wrong. */
    static SinkState parse(byte[] json) {
        JsonNode root;
        try {
            root = MAPPER.readTree(json);
        } catch (IOException e) {
            throw new IllegalArgumentException("not JSON (" + e.getMessage() + ")", e);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("not a JSON object");
        }
        for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!FIELDS.contains(f)) {
                throw new IllegalArgumentException("unknown field '" + f + "'");
            }
        }
        JsonNode format = root.get("format");
        if (format == null || !format.isInt() || format.intValue() != FORMAT) {
            throw new IllegalArgumentException("format " + format + " is not supported (this build reads " + FORMAT + ")");
        }
        JsonNode file = root.get("events_file");
        if (file == null || !(file.isNull() || file.isTextual())) {
            throw new IllegalArgumentException("'events_file' missing or not a string");
        }
        JsonNode offset = root.get("offset");
        if (offset == null || !offset.canConvertToLong() || !offset.isIntegralNumber() || offset.longValue() < 0) {
            throw new IllegalArgumentException("'offset' missing or not a non-negative integer");
        }
        JsonNode cp = root.get("checkpoint");
        if (cp == null) {
            throw new IllegalArgumentException("'checkpoint' missing");
        }
        Checkpoint checkpoint = cp.isNull() ? null : CheckpointJson.read(cp.toString());
        String name = file.isNull() ? null : file.textValue();
        if (name != null && JsonlSink.eventsFileNumber(name) < 0) {
            throw new IllegalArgumentException("'events_file' '" + name + "' is not an events file name");
        }
        return new SinkState(name, offset.longValue(), checkpoint);
    }

    /**
     * Replaces {@code file} atomically: a temporary file in the same directory, fsynced, renamed over,
     * then the directory fsynced. A crash leaves either the old or the new state, never a torn one.
     */
    void writeAtomically(Path file) throws IOException {
        Path tmp = tempFile(file);
        byte[] bytes = toJson();
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer bb = ByteBuffer.wrap(bytes);
            while (bb.hasRemaining()) {
                ch.write(bb);
            }
            ch.force(true);
        }
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        fsyncDirectory(file.toAbsolutePath().getParent());
    }

    static Path tempFile(Path stateFile) {
        return stateFile.resolveSibling(stateFile.getFileName() + ".tmp");
    }

    /** Makes a directory's entries (new, renamed, removed files) durable. */
    static void fsyncDirectory(Path dir) throws IOException {
        io.millrace.core.sink.FileReset.fsyncDirectory(dir);
    }
}
