package com.example.millrace.csv;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Op;
import io.millrace.core.event.EnvelopeWriter;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.fault.Faults;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.FileReset;
import io.millrace.core.sink.Sink;
import io.millrace.core.sink.SinkReset;
import io.millrace.core.types.UnchangedToast;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
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
 * {@code ""} (RFC 4180 quoting); a TOASTed value an update left unchanged is {@value #UNCHANGED} (Debezium's
 * placeholder): its value is the one of the row's earlier line. When a table's columns change, its next lines go to a
 * new file {@code <schema>.<table>.<n>.csv} (n = 2, 3, ...) with the new header.
 *
 * <h2>Delivery: at least once</h2>
 * A write appends its lines, fsyncs the files, and then atomically replaces the state file ({@value #STATE_FILE}: the
 * checkpoint and each file's length at it), so the checkpoint never covers a line that is not on disk (INV: DURABLE).
 * After a crash {@link #open()} cuts every file back to the length the state file gives and removes the files begun
 * since; the engine then sends the changes after the checkpoint again. The files therefore hold each change once after
 * open, but a reader that tailed a file meanwhile may see lines again: it recognises them by their position and keeps
 * only lines whose {@code (_commit_lsn, _ordinal)} is after the last it read ({@link CsvChangeLog} reads what the state
 * file covers). Snapshot rows all carry {@code 0/0}, 0; a table copied again is preceded by a truncate. A directory
 * that holds CSV files but no state file is refused, never cut: they are someone else's.
 *
 * <p>One writer thread owns the sink, as {@link Sink} says. File names keep letters, digits, {@code _} and {@code -} of
 * the schema and table names and replace other characters by {@code _}.
 */
public final class CsvSink implements Sink {
    static final String STATE_FILE = CsvState.NAME;
    /** What an unchanged TOASTed value is written as: Debezium's placeholder, as in Millrace's other outputs (docs/EVENTS.md). */
    public static final String UNCHANGED = EnvelopeWriter.UNAVAILABLE_VALUE;
    /** {@link #write}: lines fsynced, state file not yet replaced: the lines are cut on open and written again. */
    public static final FaultPoint BEFORE_STATE = new FaultPoint("sink.csv.before-state");
    /** {@link #write}: state file replaced, {@code write} not yet returned: nothing is written again. */
    public static final FaultPoint AFTER_STATE = new FaultPoint("sink.csv.after-state");

    private enum State { NEW, OPEN, FAILED, CLOSED }

    /** One file of a table being appended to: its columns, and its length up to the last line written. */
    private static final class Part {
        final String file;
        final TableRef table;
        final int number;
        final List<String> columns;
        long length;

        Part(CsvState.FileEntry e) {
            this.file = e.file();
            this.table = e.table();
            this.number = e.number();
            this.columns = e.columns();
            this.length = e.length();
        }

        CsvState.FileEntry entry() {
            return new CsvState.FileEntry(file, table, number, columns, length);
        }
    }

    private final CsvSinkConfig config;
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
            if (!Files.exists(dir.resolve(STATE_FILE))) {
                refuseForeignFiles(dir);
                new CsvState(Optional.empty(), List.of()).write(dir); // from now on every .csv file here is this destination's
            }
            CsvState stored = CsvState.read(dir);
            for (CsvState.FileEntry e : stored.files()) {
                Part p = new Part(e);
                parts.put(p.file, p);
                current.put(p.table, p); // files are listed in the order begun: the last of a table is its current one
            }
            cutBackToTheCheckpoint(dir);
            state = State.OPEN;
            return stored.checkpoint();
        } catch (IOException | RuntimeException e) {
            state = State.FAILED;
            throw e instanceof MillraceException m ? m
                    : new MillraceException(Kind.SINK, "csv destination '" + name() + "': cannot open " + dir + ": " + e.getMessage(), e);
        }
    }

    /** Without a state file the directory is new to this destination: CSV files in it are someone else's, never cut or removed. */
    private void refuseForeignFiles(Path dir) throws IOException {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "*.csv")) {
            for (Path f : files) {
                throw new MillraceException(Kind.SINK, "csv destination '" + name() + "': " + dir + " holds " + f.getFileName()
                        + " but no " + STATE_FILE + ": it is not this destination's directory (or its state was removed);"
                        + " name an empty or new directory, or move the files away");
            }
        }
    }

    /** Lines past the checkpoint (a torn last one too) are cut, files begun since removed: the engine sends them again. */
    private void cutBackToTheCheckpoint(Path dir) throws IOException {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "*.csv")) {
            for (Path f : files) {
                Part p = parts.get(f.getFileName().toString());
                if (p == null) {
                    Files.delete(f);
                } else if (Files.size(f) < p.length) {
                    throw new MillraceException(Kind.SINK, "csv destination '" + name() + "': " + f + " is shorter ("
                            + Files.size(f) + " bytes) than its checkpoint says (" + p.length + "): it was changed by hand");
                } else if (Files.size(f) > p.length) {
                    try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
                        ch.truncate(p.length);
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
            new CsvState(Optional.of(checkpoint), parts.values().stream().map(Part::entry).toList()).write(config.directory());
            Faults.hit(AFTER_STATE);
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
        Part next = new Part(new CsvState.FileEntry(file, t, number, columns, 0));
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

    @Override
    public SinkReset reset(List<TableRef> tables, SinkReset.Data data) {
        Path dir = config.directory();
        try {
            if (!Files.exists(dir.resolve(STATE_FILE))) {
                return SinkReset.none(); // never written to: nothing of this pipeline's is here
            }
            Checkpoint checkpoint = CsvState.read(dir).checkpoint().orElse(null);
            List<Path> files = new ArrayList<>();
            try (DirectoryStream<Path> found = Files.newDirectoryStream(dir, "*.csv")) {
                found.forEach(files::add);
            }
            files.sort(null);
            return new FileReset("csv destination '" + name() + "'", checkpoint, files, "csv file(s)", dir, dir.resolve(STATE_FILE),
                    CsvState.temporary(dir), data);
        } catch (IOException e) {
            throw new MillraceException(Kind.SINK, "csv destination '" + name() + "': cannot read " + dir + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        state = State.CLOSED;
    }
}
