package com.example.millrace.csv;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.CheckpointJson;
import io.millrace.core.change.Op;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.fault.Faults;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.Sink;
import io.millrace.core.types.UnchangedToast;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A change log in CSV: one file per source table in the destination's directory, one line per change, appended in
 * stream order (INV: ORDER).
 *
 * <h2>Files</h2>
 * {@code <schema>.<table>.csv} begins with the header {@code _commit_lsn,_ordinal,_op,<column>,...}; each line holds
 * the change's position, its op ({@code r} snapshot read, {@code c} insert, {@code u} update, {@code d} delete,
 * {@code t} truncate) and the row in PostgreSQL's text form: the new row, or for a delete the old one (only its key
 * columns unless the table has REPLICA IDENTITY FULL), none for a truncate. NULL is an empty field, an empty string
 * {@code ""} (RFC 4180 quoting); a TOASTed value an update left unchanged is {@value #UNCHANGED}: its value is the one
 * of the row's earlier line. When a table's columns change, its next lines go to a new file
 * {@code <schema>.<table>.<n>.csv} (n = 2, 3, ...) with the new header.
 *
 * <h2>Delivery: at least once</h2>
 * A write appends its lines, fsyncs the files, and then atomically replaces the state file ({@value #STATE_FILE}: the
 * checkpoint and each file's length at it), so the checkpoint never covers a line that is not on disk (INV: DURABLE).
 * After a crash {@link #open()} cuts every file back to the length the state file gives and removes the files begun
 * since; the engine then sends the changes after the checkpoint again. The files therefore hold each change once after
 * open, but a reader that tailed a file meanwhile may see lines again: it recognises them by their position and keeps
 * only lines whose {@code (_commit_lsn, _ordinal)} is after the last it read. (Snapshot rows all carry {@code 0/0}, 0;
 * a table copied again is preceded by a truncate.)
 *
 * <p>One writer thread owns the sink, as {@link Sink} says. File names keep letters, digits, {@code _} and {@code -} of
 * the schema and table names and replace other characters by {@code _}.
 */
public final class CsvSink implements Sink {
    static final String STATE_FILE = "_millrace_state.json";
    static final String UNCHANGED = "__unchanged_toast";
    /** {@link #write}: lines fsynced, state file not yet replaced: the lines are cut on open and written again. */
    public static final FaultPoint BEFORE_STATE = new FaultPoint("sink.csv.before-state");

    private enum State { NEW, OPEN, FAILED, CLOSED }

    /** One file of a table: its columns, and its length up to the last line written. */
    private static final class Part {
        final String file;
        final TableRef table;
        final int number;
        final List<String> columns;
        long length;

        Part(String file, TableRef table, int number, List<String> columns, long length) {
            this.file = file;
            this.table = table;
            this.number = number;
            this.columns = columns;
            this.length = length;
        }
    }

    private final CsvSinkConfig config;
    private final ObjectMapper json = new ObjectMapper();
    /** Every file, in the order begun. */
    private final Map<String, Part> parts = new LinkedHashMap<>();
    /** Each table's file being appended to: its latest. */
    private final Map<TableRef, Part> current = new HashMap<>();
    private State state = State.NEW;

    public CsvSink(CsvSinkConfig config) {
        this.config = config;
    }

    @Override
    public String name() {
        return config.name();
    }

    @Override
    public boolean transactional() {
        return false;
    }

    @Override
    public Optional<Checkpoint> open() {
        if (state != State.NEW) {
            throw new IllegalStateException("csv destination '" + name() + "': open() once, on a new sink (it is " + state + ")");
        }
        Path dir = config.directory();
        try {
            Files.createDirectories(dir);
            Optional<Checkpoint> checkpoint = readState(dir.resolve(STATE_FILE));
            try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "*.csv")) {
                for (Path f : files) {
                    Part p = parts.get(f.getFileName().toString());
                    if (p == null) {
                        Files.delete(f); // begun after the checkpoint: its lines come again
                    } else if (Files.size(f) < p.length) {
                        throw new MillraceException(Kind.SINK, "csv destination '" + name() + "': " + f + " is shorter ("
                                + Files.size(f) + " bytes) than its checkpoint says (" + p.length + "): it was changed by hand");
                    } else if (Files.size(f) > p.length) {
                        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
                            ch.truncate(p.length); // lines after the checkpoint (or a torn last line): they come again
                            ch.force(true);
                        }
                    }
                }
            }
            for (Part p : parts.values()) {
                if (!Files.exists(dir.resolve(p.file))) {
                    throw new MillraceException(Kind.SINK, "csv destination '" + name() + "': " + dir.resolve(p.file)
                            + " is missing, but the checkpoint covers its lines; restore it, or remove " + dir + " to start afresh");
                }
            }
            state = State.OPEN;
            return checkpoint;
        } catch (IOException | RuntimeException e) {
            state = State.FAILED;
            throw e instanceof MillraceException m ? m
                    : new MillraceException(Kind.SINK, "csv destination '" + name() + "': cannot open " + dir + ": " + e.getMessage(), e);
        }
    }

    private Optional<Checkpoint> readState(Path file) throws IOException {
        if (!Files.exists(file)) {
            return Optional.empty();
        }
        JsonNode root = json.readTree(file.toFile());
        for (JsonNode f : root.get("files")) {
            List<String> columns = new ArrayList<>();
            f.get("columns").forEach(c -> columns.add(c.asText()));
            Part p = new Part(f.get("file").asText(), new TableRef(f.get("schema").asText(), f.get("table").asText()),
                    f.get("number").asInt(), List.copyOf(columns), f.get("length").asLong());
            parts.put(p.file, p);
            current.put(p.table, p); // files are listed in the order begun: the last of a table is its current one
        }
        return Optional.of(CheckpointJson.read(root.get("checkpoint").toString()));
    }

    @Override
    public void write(List<ChangeEvent> events, Checkpoint checkpoint) {
        if (state != State.OPEN) {
            throw new IllegalStateException("csv destination '" + name() + "' is " + state + ", not open");
        }
        try {
            Map<Part, StringBuilder> lines = new LinkedHashMap<>();
            for (ChangeEvent e : events) {
                Part p = partFor(e.relation(), lines);
                line(lines.computeIfAbsent(p, x -> new StringBuilder()), e);
            }
            for (Map.Entry<Part, StringBuilder> w : lines.entrySet()) {
                Part p = w.getKey();
                byte[] bytes = w.getValue().toString().getBytes(StandardCharsets.UTF_8);
                try (FileChannel ch = FileChannel.open(config.directory().resolve(p.file), StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
                    ByteBuffer buf = ByteBuffer.wrap(bytes);
                    while (buf.hasRemaining()) {
                        ch.write(buf);
                    }
                    ch.force(true); // INV: DURABLE: the lines reach the disk before the state file covers them
                }
                p.length += bytes.length;
            }
            Faults.hit(BEFORE_STATE);
            writeState(checkpoint);
        } catch (IOException | RuntimeException e) {
            state = State.FAILED; // the files may be ahead of the state file: a new sink's open() cuts them back
            throw e instanceof MillraceException m ? m
                    : new MillraceException(Kind.SINK, "csv destination '" + name() + "': cannot write to " + config.directory() + ": "
                    + e.getMessage(), e);
        }
    }

    /** The file {@code relation}'s lines go to; a new one (its header queued in {@code lines}) when its columns changed. */
    private Part partFor(RelationInfo relation, Map<Part, StringBuilder> lines) {
        List<String> columns = relation.columns().stream().map(ColumnInfo::name).toList();
        Part p = current.get(relation.table());
        if (p != null && p.columns.equals(columns)) {
            return p;
        }
        int number = p == null ? 1 : p.number + 1;
        TableRef t = relation.table();
        String file = safe(t.schema()) + "." + safe(t.table()) + (number == 1 ? "" : "." + number) + ".csv";
        Part next = new Part(file, t, number, columns, 0);
        parts.put(file, next);
        current.put(t, next);
        StringBuilder header = lines.computeIfAbsent(next, x -> new StringBuilder()).append("_commit_lsn,_ordinal,_op");
        for (String c : columns) {
            field(header.append(','), c);
        }
        header.append('\n');
        return next;
    }

    private static String safe(String name) {
        return name.replaceAll("[^A-Za-z0-9_-]", "_");
    }

    private static void line(StringBuilder out, ChangeEvent e) {
        out.append(e.position().commitLsn()).append(',').append(e.position().ordinal()).append(',').append(e.op().code());
        Object[] row = e.op() == Op.DELETE ? e.before() : e.after();
        if (row != null) {
            for (int i = 0; i < row.length; i++) {
                out.append(',');
                Object v = row[i];
                if (v == UnchangedToast.INSTANCE) {
                    out.append(UNCHANGED);
                } else if (v != null) {
                    field(out, e.relation().codec(i).toPgText(v));
                }
            }
        }
        out.append('\n');
    }

    /** RFC 4180: a value with a comma, quote or line break, or an empty one (to tell it from NULL), is quoted. */
    private static void field(StringBuilder out, String value) {
        if (value.isEmpty() || value.indexOf(',') >= 0 || value.indexOf('"') >= 0 || value.indexOf('\n') >= 0 || value.indexOf('\r') >= 0) {
            out.append('"').append(value.replace("\"", "\"\"")).append('"');
        } else {
            out.append(value);
        }
    }

    /** Replaces the state file: a new file, fsynced, renamed over the old one, and the directory fsynced. */
    private void writeState(Checkpoint checkpoint) throws IOException {
        ObjectNode root = json.createObjectNode();
        root.set("checkpoint", json.readTree(CheckpointJson.write(checkpoint)));
        ArrayNode files = root.putArray("files");
        for (Part p : parts.values()) {
            ObjectNode f = files.addObject().put("file", p.file).put("schema", p.table.schema()).put("table", p.table.table())
                    .put("number", p.number).put("length", p.length);
            p.columns.forEach(f.putArray("columns")::add);
        }
        Path dir = config.directory();
        Path tmp = dir.resolve(STATE_FILE + ".tmp");
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer buf = ByteBuffer.wrap(json.writeValueAsBytes(root));
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
            ch.force(true);
        }
        Files.move(tmp, dir.resolve(STATE_FILE), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true); // the rename itself survives a crash
        }
    }

    @Override
    public void close() {
        state = State.CLOSED;
    }
}
