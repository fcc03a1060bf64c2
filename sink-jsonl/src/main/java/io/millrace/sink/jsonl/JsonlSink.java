package io.millrace.sink.jsonl;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.millrace.core.MillraceException;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.event.EnvelopeWriter;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.fault.Faults;
import io.millrace.core.sink.Sink;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The {@code jsonl} destination: one Debezium-compatible change event per line (see docs/EVENTS.md),
 * UTF-8, each line ended by {@code '\n'}, into numbered files or standard output. At least once: after a
 * crash the events after the last checkpoint are written again, and a repeat is recognisable by its
 * position {@code (source.commit_lsn, source.ordinal)} (INV: RESUME).
 *
 * <h2>Files</h2>
 * {@code <directory>/events-000001.jsonl}, {@code events-000002.jsonl}, ... The sink appends to the
 * highest-numbered file; once that file has reached {@code rotateBytes} it is flushed, fsynced and
 * closed, the state file is moved on to the next number, and only then is the next file created (so a
 * file exceeds {@code rotateBytes} by at most one event). Hence a file never changes again once a
 * higher-numbered file exists: it is complete, and a reader may process and remove it. In the newest
 * file a reader takes only lines ended by {@code '\n'}; bytes after the checkpointed offset may be cut
 * back on restart (see below). A reader that must not see an event twice keeps the last position it
 * processed and drops events not after it.
 *
 * <h2>Durability (INV: DURABLE)</h2>
 * {@link #write} appends the lines, flushes and fsyncs the file, and only then replaces the state file
 * atomically (temporary file in the same directory, fsync, rename over, fsync of the directory). The
 * state file ({@link SinkState}) holds the checkpoint with the current file's name and length. So the
 * checkpoint never covers an event that is not on disk.
 *
 * <h2>Recovery</h2>
 * {@link #open} reads the state file. Bytes of the current file after the recorded offset were written
 * after the last checkpoint by a process that then died: they are cut (truncated; logged at INFO) and
 * the engine writes those events again from the checkpoint. A torn line never survives a restart.
 * Events of a batch that a rotation cut may already sit, complete, in the file before; they are written
 * again too (at least once, recognisable by position). A first open writes a state file without a
 * checkpoint before any event, so a crash before the first checkpoint is recovered the same way.
 *
 * <h2>Standard output</h2>
 * Lines go to {@link System#out} (as it is at {@link #open}), buffered, flushed at the end of each
 * {@link #write}; the checkpoint goes to the state file after the flush. Nothing can be taken back from
 * a pipe: after a crash the events after the checkpoint appear again.
 *
 * <h2>Encoding</h2>
 * Into files, a write of {@value #PARALLEL_MIN_EVENTS} or more events is encoded by the {@link LineEncoders} threads
 * ({@code encoder_threads}), chunk by chunk, and the writer thread writes the chunks' lines in order while later ones
 * are encoded (INV: ORDER): the same bytes, files and rotations as when the writer thread encodes alone.
 *
 * <h2>Lifecycle</h2>
 * NEW → OPEN ({@link #open}) → CLOSED ({@link #close}); a failed {@link #write} moves OPEN → FAILED, after
 * which only {@link #close} is allowed (the engine reopens a new sink, which cuts the partial tail).
 * One writer thread owns the sink (see {@link Sink}).
 */
public final class JsonlSink implements Sink {
    private static final Logger LOG = LoggerFactory.getLogger(JsonlSink.class);
    private static final String PREFIX = "events-";
    private static final String SUFFIX = ".jsonl";
    /** The file of schema-change events (docs/EVENTS.md), beside the events files. */
    static final String SCHEMA_CHANGES = "schema-changes.jsonl";
    private static final int BUFFER = 256 * 1024;

    private enum State { NEW, OPEN, FAILED, CLOSED }

    private final JsonlSinkConfig config;
    private final EnvelopeWriter envelope;
    private final JsonFactory factory;
    /** Encoding threads (files mode with {@code encoder_threads} > 0), or null: the writer thread encodes. */
    private LineEncoders encoders;
    /** A write of fewer events is encoded on the writer thread (a hand-off would cost more than it saves). */
    static final int PARALLEL_MIN_EVENTS = 64;

    /** Named places where a test makes the sink fail as if the process died there. */
    interface FaultPoints {
        FaultPoints NONE = name -> { };

        /** Called at {@code name}; throws to simulate a crash there. */
        void reached(String name) throws IOException;
    }

    /** After the events of a write are flushed and fsynced, before the state file is replaced. */
    static final String FAULT_BEFORE_CHECKPOINT = "jsonl.before-checkpoint";
    /** After a full file was closed and the next one created, inside a write. */
    static final String FAULT_AFTER_ROTATE = "jsonl.after-rotate";

    private FaultPoints faults = FaultPoints.NONE;
    private State state = State.NEW;
    private JsonGenerator gen;
    // files mode
    private ChannelOutput out;
    private FileChannel channel;
    private int fileNumber;
    /** The checkpoint last made durable (null before the first); rotations write it again. */
    private Checkpoint durable;
    // stdout mode
    private PrintStream stdout;
    /** The schema changes written (or, to standard output, announced) by this sink. */
    private final io.millrace.core.event.SchemaChanges schemaChanges = new io.millrace.core.event.SchemaChanges();

    public JsonlSink(JsonlSinkConfig config) {
        this(config, new EnvelopeWriter(config.meta()));
    }

    /** With a given envelope writer (tests pin its clock and version). */
    public JsonlSink(JsonlSinkConfig config, EnvelopeWriter envelope) {
        this.config = config;
        this.envelope = envelope;
        this.factory = LineEncoders.factory();
    }

    /** For tests: where to fail. */
    void faults(FaultPoints points) {
        this.faults = points;
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
        move(State.NEW, State.OPEN);
        try {
            return config.toStdout() ? openStdout() : openFiles();
        } catch (RuntimeException e) {
            state = State.FAILED;
            closeQuietly();
            throw e;
        }
    }

    private Optional<Checkpoint> openStdout() {
        Path stateFile = config.stateFile();
        prepareDirectory(stateFile.toAbsolutePath().getParent(), "the state file's directory");
        SinkState st = readState(stateFile);
        if (st != null && st.eventsFile() != null) {
            throw sinkError("state file " + stateFile + " belongs to a jsonl destination that writes files (it names "
                    + st.eventsFile() + "), but this one writes to standard output: give this destination its own"
                    + " 'state_file'", null);
        }
        if (st == null) {
            writeState(new SinkState(null, 0, null));
        }
        stdout = System.out;
        gen = generator(new BufferedOutputStream(stdout, BUFFER));
        return Optional.ofNullable(st == null ? null : st.checkpoint());
    }

    private Optional<Checkpoint> openFiles() {
        Path dir = config.directory();
        prepareDirectory(dir, "the events directory");
        prepareDirectory(config.stateFile().toAbsolutePath().getParent(), "the state file's directory");
        TreeMap<Integer, Path> files = listEventsFiles(dir);
        SinkState st = readState(config.stateFile());
        if (st == null) {
            if (!files.isEmpty()) {
                throw sinkError("directory " + dir + " holds events files (" + files.firstEntry().getValue().getFileName()
                        + " ...) but no state file " + config.stateFile() + ", so it is unknown which events they hold:"
                        + " move them away (or give this destination an empty 'directory') to start over, or restore the"
                        + " state file", null);
            }
            st = new SinkState(fileName(1), 0, null);
            // Written before the first events file exists, so a crash before the first checkpoint is
            // recovered like any other (and never leaves events files without a state file).
            writeState(st);
        } else if (st.eventsFile() == null) {
            throw sinkError("state file " + config.stateFile() + " belongs to a jsonl destination that writes to standard"
                    + " output, but this one writes files to " + dir + ": give this destination its own 'state_file'", null);
        }
        fileNumber = eventsFileNumber(st.eventsFile());
        Path current = dir.resolve(st.eventsFile());
        try {
            // The state file names the next file before it is created (see rotate), so no newer file
            // can come from this destination: one that exists was put there by something else.
            if (!files.tailMap(fileNumber, false).isEmpty()) {
                throw sinkError("events file " + files.lastEntry().getValue() + " is newer than " + st.eventsFile()
                        + ", the file the state file " + config.stateFile() + " names, so it was not written by this"
                        + " destination: move it away (or give this destination a directory of its own)", null);
            }
            if (!files.containsKey(fileNumber) && st.offset() > 0) {
                throw sinkError("events file " + current + " is missing but the checkpoint in " + config.stateFile()
                        + " says it holds " + st.offset() + " bytes: it was moved or deleted outside Millrace; restore it,"
                        + " or start over with an empty 'directory' (the source is then read again)", null);
            }
            channel = FileChannel.open(current, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            long size = channel.size();
            if (size < st.offset()) {
                throw sinkError("events file " + current + " has " + size + " bytes but the checkpoint in "
                        + config.stateFile() + " says it holds " + st.offset() + ": it was cut or replaced outside Millrace;"
                        + " restore it, or start over with an empty 'directory' (the source is then read again)", null);
            }
            if (size > st.offset()) {
                // INV: RESUME: what was written after the checkpoint is cut; the engine writes it again
                channel.truncate(st.offset());
                channel.force(true);
                LOG.info("jsonl destination '{}': truncated {} from {} to {} bytes ({} bytes written after the last"
                        + " checkpoint; those events are written again on resume)", config.name(), current, size,
                        st.offset(), size - st.offset());
            }
            channel.position(st.offset());
            repairSchemaChanges(dir);
            SinkState.fsyncDirectory(dir.toAbsolutePath());
        } catch (IOException e) {
            throw sinkError("cannot prepare events file " + current + " (" + e + "): check that the directory is writable"
                    + " by the user running Millrace and that the disk is not full", e);
        }
        out = new ChannelOutput(BUFFER);
        out.target(channel, st.offset());
        gen = generator(out);
        if (config.encoderThreads() > 0) {
            encoders = new LineEncoders(config.encoderThreads(), envelope, factory, config.name());
        }
        durable = st.checkpoint();
        return Optional.ofNullable(durable);
    }

    /**
     * Writes {@code events}, one line each, makes them durable, then the checkpoint. When this returns
     * both are durable; when it throws the checkpoint has not moved (INV: DURABLE) and the sink is failed.
     */
    @Override
    public void write(List<ChangeEvent> events, Checkpoint checkpoint) {
        if (state != State.OPEN) {
            throw new IllegalStateException("jsonl destination '" + config.name() + "' cannot write: it is " + state
                    + (state == State.FAILED ? " after an earlier error (close it and open a new sink)" : ""));
        }
        try {
            if (config.toStdout()) {
                for (ChangeEvent e : events) {
                    io.millrace.core.schema.SchemaChange c = schemaChanges.due(e);
                    // Inline, before the first change in the new shape; only exact ones (the event trigger installed): a
                    // consumer of standard output that reads every line as a change event kept working without it.
                    if (c != null && c.exact()) {
                        envelope.writeSchemaChange(gen, c, e);
                        gen.writeRaw('\n');
                    }
                    envelope.writeValue(gen, e);
                    gen.writeRaw('\n');
                }
                gen.flush();
                if (stdout.checkError()) {
                    throw new IOException("standard output refused the events (closed pipe?)");
                }
                writeState(new SinkState(null, 0, checkpoint));
            } else {
                writeSchemaChanges(events);
                long rotate = config.rotateBytes();
                if (encoders != null && events.size() >= PARALLEL_MIN_EVENTS) {
                    writeEncoded(events, rotate);
                } else {
                    for (ChangeEvent e : events) {
                        if (out.position() + gen.getOutputBuffered() >= rotate) {
                            rotate();
                        }
                        envelope.writeValue(gen, e);
                        gen.writeRaw('\n');
                    }
                }
                gen.flush();
                channel.force(false); // INV: DURABLE: the lines reach the disk before the checkpoint names them
                faults.reached(FAULT_BEFORE_CHECKPOINT);
                Faults.hit(FaultPoint.SINK_JSONL_BEFORE_CHECKPOINT);
                writeState(new SinkState(fileName(fileNumber), out.position(), checkpoint));
                Faults.hit(FaultPoint.SINK_JSONL_AFTER_CHECKPOINT);
            }
            durable = checkpoint;
        } catch (IOException | UncheckedIOException e) {
            state = State.FAILED;
            IOException io = e instanceof UncheckedIOException u ? u.getCause() : (IOException) e;
            throw sinkError("cannot write events to " + target() + " (" + io + "): check free space and permissions;"
                    + " the checkpoint did not advance, the events are written again after a restart", io);
        } catch (RuntimeException e) {
            state = State.FAILED;
            throw e;
        }
    }

    /**
     * The lines of {@code events}, encoded by the {@link LineEncoders} threads, written in order (INV: ORDER), each
     * chunk as soon as it is encoded while later ones are being encoded. A file rotates before the same line as in the
     * serial loop above: before a line when the file has reached {@code rotate}.
     */
    private void writeEncoded(List<ChangeEvent> events, long rotate) throws IOException {
        gen.flush(); // nothing is buffered after a write; the lines below bypass the generator
        java.util.ArrayDeque<LineEncoders.Chunk> pending = new java.util.ArrayDeque<>();
        int next = 0;
        try {
            while (next < events.size() || !pending.isEmpty()) {
                while (next < events.size() && pending.size() < encoders.window()) {
                    int to = Math.min(events.size(), next + encoders.chunkEvents());
                    pending.add(encoders.submit(events, next, to));
                    next = to;
                }
                LineEncoders.Chunk c = pending.peek().await();
                pending.poll();
                writeLines(c, rotate);
                encoders.recycle(c);
            }
        } finally {
            for (LineEncoders.Chunk c : pending) {
                c.cancel(); // a failed write: what was not written yet is not needed
            }
        }
    }

    private void writeLines(LineEncoders.Chunk c, long rotate) throws IOException {
        int i = 0;
        while (i < c.lines) {
            if (out.position() >= rotate) {
                rotate();
            }
            int base = c.start(i);
            long room = rotate - out.position();
            int j = i + 1; // line i goes into this file; so does each next one while the file stays below rotate
            while (j < c.lines && c.ends[j - 1] - base < room) {
                j++;
            }
            out.write(c.buf, base, c.ends[j - 1] - base);
            i = j;
        }
    }

    /**
     * Appends the schema-change events due before {@code events} to {@value #SCHEMA_CHANGES} and fsyncs it, before any of
     * the events is written: a reader finds a table's new columns there before the first change in the new shape. At
     * least once (after a crash an event may appear again, with the same position); a torn last line is cut at open.
     */
    private void writeSchemaChanges(List<ChangeEvent> events) throws IOException {
        ByteArrayOutputStream lines = null;
        for (ChangeEvent e : events) {
            io.millrace.core.schema.SchemaChange c = schemaChanges.due(e);
            if (c != null) {
                if (lines == null) {
                    lines = new ByteArrayOutputStream();
                }
                lines.write(envelope.schemaChangeBytes(c, e));
                lines.write('\n');
            }
        }
        if (lines == null) {
            return;
        }
        Path file = config.directory().resolve(SCHEMA_CHANGES);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(lines.toByteArray());
            while (b.hasRemaining()) {
                ch.write(b);
            }
            ch.force(false);
        }
    }

    /** Cuts a torn last line of {@value #SCHEMA_CHANGES} (a crash while appending). */
    private static void repairSchemaChanges(Path dir) throws IOException {
        Path file = dir.resolve(SCHEMA_CHANGES);
        if (!Files.exists(file)) {
            return;
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long end = ch.size();
            java.nio.ByteBuffer one = java.nio.ByteBuffer.allocate(1);
            while (end > 0) {
                one.clear();
                ch.read(one, end - 1);
                if (one.get(0) == '\n') {
                    break;
                }
                end--;
            }
            if (end < ch.size()) {
                ch.truncate(end);
                ch.force(true);
            }
        }
    }

    /** The reset of this destination ({@link io.millrace.core.sink.FileReset}): reads the state file and lists the events files, changing nothing. */
    @Override
    public io.millrace.core.sink.SinkReset reset(List<io.millrace.core.schema.TableRef> tables, io.millrace.core.sink.SinkReset.Data data) {
        move(State.NEW, State.CLOSED);
        SinkState st = readState(config.stateFile());
        List<Path> files = new java.util.ArrayList<>();
        if (!config.toStdout() && Files.isDirectory(config.directory())) {
            files.addAll(listEventsFiles(config.directory()).values());
            Path schema = config.directory().resolve(SCHEMA_CHANGES);
            if (Files.exists(schema)) {
                files.add(schema); // the schema-change events go with the events
            }
        }
        return new io.millrace.core.sink.FileReset("jsonl destination '" + config.name() + "'", st == null ? null : st.checkpoint(), List.copyOf(files),
                "events file(s)", config.toStdout() ? null : config.directory(), config.stateFile(), SinkState.tempFile(config.stateFile()), data);
    }

    /**
     * Closes the full file (fsynced), moves the state file on to the next number, then creates that file.
     * In this order a file never changes once a higher-numbered one exists: a restart continues in the
     * file the state names and never cuts an earlier one. The state keeps the last durable checkpoint, so
     * after a crash this batch's events in the full file are written again in the next (at least once).
     */
    private void rotate() throws IOException {
        gen.flush();
        channel.force(true);
        channel.close();
        channel = null;
        fileNumber++;
        writeState(new SinkState(fileName(fileNumber), 0, durable));
        Path next = config.directory().resolve(fileName(fileNumber));
        channel = FileChannel.open(next, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        SinkState.fsyncDirectory(config.directory().toAbsolutePath());
        out.target(channel, 0);
        faults.reached(FAULT_AFTER_ROTATE);
        LOG.debug("jsonl destination '{}': rotated to {}", config.name(), next);
    }

    @Override
    public void close() {
        if (state == State.CLOSED) {
            return;
        }
        state = State.CLOSED;
        // Everything acknowledged was flushed and fsynced by write(); what is left after a failure is
        // a partial tail that the next open() cuts, so nothing is flushed here.
        closeQuietly();
    }

    private void closeQuietly() {
        if (encoders != null) {
            encoders.close();
            encoders = null;
        }
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException e) {
                LOG.warn("jsonl destination '{}': closing {} failed: {}", config.name(), target(), e.toString());
            }
            channel = null;
        }
        gen = null;
        stdout = null;
    }

    private JsonGenerator generator(OutputStream target) {
        try {
            JsonGenerator g = factory.createGenerator(target);
            g.setRootValueSeparator(null); // lines are separated by '\n' written after each event
            return g;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void writeState(SinkState st) {
        try {
            st.writeAtomically(config.stateFile());
        } catch (IOException e) {
            state = State.FAILED;
            throw sinkError("cannot write state file " + config.stateFile() + " (" + e + "): check that its directory is"
                    + " writable by the user running Millrace and that the disk is not full", e);
        }
    }

    private SinkState readState(Path file) {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            throw sinkError("cannot read state file " + file + " (" + e + "): make it readable by the user running"
                    + " Millrace", e);
        }
        try {
            return SinkState.parse(bytes);
        } catch (IllegalArgumentException e) {
            throw sinkError("state file " + file + " is unreadable: " + e.getMessage() + ". It was damaged or written"
                    + " by another program: restore it from a backup, or to start over remove it together with the events"
                    + " files (the source is then read again)", e);
        }
    }

    /**
     * For {@code millrace preflight}: the events directory (unless the events go to standard output) and the state file's
     * directory can be written, or, not there yet, created in the nearest directory that is: a probe file written and
     * removed there, nothing created.
     */
    void preflight() {
        if (!config.toStdout()) {
            probeDirectory(config.directory().toAbsolutePath(), "the events directory");
        }
        probeDirectory(config.stateFile().toAbsolutePath().getParent(), "the state file's directory");
    }

    private void probeDirectory(Path dir, String what) {
        Path at = dir;
        while (at != null && !Files.exists(at)) {
            at = at.getParent();
        }
        if (at == null || !Files.isDirectory(at)) {
            throw sinkError(what + " " + dir + " cannot be created: " + at + " is not a directory; choose another path", null);
        }
        probe(at, what + " " + dir + (at.equals(dir) ? " is not writable" : " cannot be created in " + at));
    }

    private void probe(Path dir, String failure) {
        try {
            io.millrace.core.sink.WriteProbe.probe(dir);
        } catch (IOException e) {
            throw sinkError(failure + " (" + e + "): give the user running Millrace write permission on it, or choose another"
                    + " directory", e);
        }
    }

    private void prepareDirectory(Path dir, String what) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw sinkError("cannot create " + what + " " + dir + " (" + e + "): choose a directory the user running"
                    + " Millrace can create and write", e);
        }
        if (!Files.isDirectory(dir)) {
            throw sinkError(what + " " + dir + " is not a directory: choose another path", null);
        }
        probe(dir, what + " " + dir + " is not writable");
    }

    private static TreeMap<Integer, Path> listEventsFiles(Path dir) {
        TreeMap<Integer, Path> files = new TreeMap<>();
        List<Path> all = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            s.forEach(all::add);
        } catch (IOException e) {
            throw new MillraceException(MillraceException.Kind.SINK, "cannot list events directory " + dir + " (" + e
                    + "): make it readable by the user running Millrace", e);
        }
        for (Path p : all) {
            int n = eventsFileNumber(p.getFileName().toString());
            if (n > 0) {
                files.put(n, p);
            }
        }
        return files;
    }

    static String fileName(int number) {
        return String.format("%s%06d%s", PREFIX, number, SUFFIX);
    }

    /** The number of {@code events-NNNNNN.jsonl}, or -1 when the name is not an events file's. */
    static int eventsFileNumber(String name) {
        if (!name.startsWith(PREFIX) || !name.endsWith(SUFFIX)) {
            return -1;
        }
        String digits = name.substring(PREFIX.length(), name.length() - SUFFIX.length());
        if (digits.length() < 6 || digits.length() > 9) {
            return -1;
        }
        for (int i = 0; i < digits.length(); i++) {
            if (digits.charAt(i) < '0' || digits.charAt(i) > '9') {
                return -1;
            }
        }
        int n = Integer.parseInt(digits);
        return n > 0 && fileName(n).equals(name) ? n : -1;
    }

    private String target() {
        return config.toStdout() ? "standard output" : config.directory().resolve(fileName(fileNumber)).toString();
    }

    private MillraceException sinkError(String message, Throwable cause) {
        return new MillraceException(MillraceException.Kind.SINK, "jsonl destination '" + config.name() + "': " + message,
                cause);
    }

    private void move(State expected, State next) {
        if (state != expected) {
            throw new IllegalStateException(String.format("Cannot change jsonl destination '%s' to %s: it is %s, not %s",
                    config.name(), next, state, expected));
        }
        state = next;
    }
}
