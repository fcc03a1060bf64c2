package com.example.millrace.csv;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.CheckpointJson;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.FileReset;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The state file ({@value #NAME}) of a csv destination: its checkpoint and, at it, each file's table, columns and
 * length; the files in the order begun, so a table's last is the one being appended to.
 *
 * @param checkpoint empty before the first write
 */
record CsvState(Optional<Checkpoint> checkpoint, List<FileEntry> files) {
    static final String NAME = "_millrace_state.json";
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * One file of a table.
     *
     * @param number  1 for {@code <schema>.<table>.csv}, n for {@code <schema>.<table>.<n>.csv} (its n-th shape)
     * @param length  its bytes the checkpoint covers: whole lines
     */
    record FileEntry(String file, TableRef table, int number, List<String> columns, long length) {
    }

    static CsvState read(Path directory) throws IOException {
        JsonNode root = JSON.readTree(directory.resolve(NAME).toFile());
        List<FileEntry> files = new ArrayList<>();
        for (JsonNode f : root.get("files")) {
            List<String> columns = new ArrayList<>();
            f.get("columns").forEach(c -> columns.add(c.asText()));
            files.add(new FileEntry(f.get("file").asText(), new TableRef(f.get("schema").asText(), f.get("table").asText()),
                    f.get("number").asInt(), List.copyOf(columns), f.get("length").asLong()));
        }
        JsonNode cp = root.get("checkpoint");
        return new CsvState(cp == null || cp.isNull() ? Optional.empty() : Optional.of(CheckpointJson.read(cp.toString())), files);
    }

    /** Replaces the state file: a new file, fsynced, renamed over the old one, and the directory fsynced. */
    void write(Path directory) throws IOException {
        ObjectNode root = JSON.createObjectNode();
        root.set("checkpoint", checkpoint.isEmpty() ? JSON.nullNode() : JSON.readTree(CheckpointJson.write(checkpoint.get())));
        ArrayNode list = root.putArray("files");
        for (FileEntry e : files) {
            ObjectNode f = list.addObject().put("file", e.file()).put("schema", e.table().schema()).put("table", e.table().table())
                    .put("number", e.number()).put("length", e.length());
            e.columns().forEach(f.putArray("columns")::add);
        }
        Path tmp = temporary(directory);
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer buf = ByteBuffer.wrap(JSON.writeValueAsBytes(root));
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
            ch.force(true);
        }
        java.nio.file.Files.move(tmp, directory.resolve(NAME), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        FileReset.fsyncDirectory(directory); // the rename itself survives a crash
    }

    static Path temporary(Path directory) {
        return directory.resolve(NAME + ".tmp");
    }
}
