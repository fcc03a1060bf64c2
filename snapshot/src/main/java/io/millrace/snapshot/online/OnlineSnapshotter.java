package io.millrace.snapshot.online;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.OnlineTask;
import io.millrace.core.change.OnlineTask.KeyRange;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.pipeline.Watermarks;
import io.millrace.snapshot.CopyText;
import io.millrace.snapshot.SnapshotRunner;
import io.millrace.source.PgConnections;
import io.millrace.source.PgErrors;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyOut;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * Online snapshots (DBLog watermarks) while the stream runs: resumes interrupted copies, copies tables
 * added to a running pipeline, and re-copies tables on demand, optionally filtered.
 *
 * <p>Readers (a fixed pool) take chunks from the tasks in order; several readers may work on one table.
 * For each chunk a reader writes the low watermark, reads the chunk's rows in a REPEATABLE READ
 * snapshot, hands them to the chunk's {@link Watermarks.Window} with that snapshot's in-progress
 * transactions, writes the high watermark and waits until the assembler emitted them (INV: WATERMARK;
 * at most one chunk per reader in memory — INV: BOUNDED). Progress (the key ranges not landed per
 * task) is recorded in the checkpoint with the batch holding each chunk's last row (INV: RESUME).
 *
 * <p>Errors go to {@code onFailure} (the pipeline's failure: it stops everything — INV: NO-SILENT-ERROR).
 */
public final class OnlineSnapshotter implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(OnlineSnapshotter.class);

    /** What the snapshotter needs to know of a table. */
    public record Target(RelationInfo relation, List<String> keyColumns, boolean partitioned) {
    }

    /** Resolves a table from the source catalog; throws a MillraceException naming the problem. */
    @FunctionalInterface
    public interface Catalog {
        Target resolve(TableRef table);
    }

    /**
     * @param readers     parallel chunk readers
     * @param sizing      chunk sizes in rows and the target time per chunk read
     * @param signalTable a source table whose inserted rows ask for snapshots (Debezium's signal format), or null
     */
    public record Options(int readers, KeysetChunker.Sizing sizing, TableRef signalTable) {
        public Options(int readers, KeysetChunker.Sizing sizing) {
            this(readers, sizing, null);
        }

        public static Options defaults() {
            return new Options(2, new KeysetChunker.Sizing(5_000, 500, 50_000, 500_000_000L, 4L << 20));
        }
    }

    /** A table being copied. */
    private final class Task {
        final TableRef table;
        final String filter;
        final Target target;
        final KeysetChunker chunker;
        final AtomicLong rows;
        volatile boolean finished;

        Task(TableRef table, String filter, Target target, List<KeyRange> remaining, long rowsDone) {
            this.table = table;
            this.filter = filter;
            this.target = target;
            this.rows = new AtomicLong(rowsDone);
            this.chunker = new KeysetChunker(remaining, options.sizing(), new KeysetChunker.Boundaries() {
                @Override
                public List<String> nth(List<String> lo, List<String> hi, long n) throws SQLException {
                    return Task.this.nth(lo, hi, n);
                }

                @Override
                public long rowBytes() throws SQLException {
                    return Task.this.rowBytes();
                }
            });
        }

        String from() {
            return (target.partitioned() ? "" : "ONLY ") + table.sql();
        }

        String keyList() {
            return target.keyColumns().stream().map(Ident::quote).collect(Collectors.joining(", "));
        }

        /** {@code (k1, k2) > ('a', 'b') AND (k1, k2) <= (...)}, with the filter: literals, for COPY. */
        String where(KeyRange r) {
            List<String> parts = new ArrayList<>();
            if (r.lo() != null) {
                parts.add("(" + keyList() + ") > (" + r.lo().stream().map(Ident::literal).collect(Collectors.joining(", ")) + ")");
            }
            if (r.hi() != null) {
                parts.add("(" + keyList() + ") <= (" + r.hi().stream().map(Ident::literal).collect(Collectors.joining(", ")) + ")");
            }
            if (filter != null) {
                parts.add("(" + filter + ")");
            }
            return parts.isEmpty() ? "" : " WHERE " + String.join(" AND ", parts);
        }

        /** Average size of a row in COPY text, from a sample of up to 100 rows (0 for an empty table). */
        long rowBytes() throws SQLException {
            String cols = target.relation().columns().stream().map(col -> Ident.quote(col.name())).collect(Collectors.joining(", "));
            try (Connection c = connections.open(); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT coalesce(avg(octet_length(t::text)), 0)::bigint FROM (SELECT " + cols
                         + " FROM " + from() + " LIMIT 100) t")) {
                rs.next();
                return rs.getLong(1);
            }
        }

        List<String> nth(List<String> lo, List<String> hi, long n) throws SQLException {
            // Aliased: a bare "ORDER BY k" names the output column when one is called k, and would sort the text, not the key.
            String cols = target.keyColumns().stream().map(k -> Ident.quote(k) + "::text AS " + Ident.quote("millrace.key." + k)).collect(Collectors.joining(", "));
            String sql = "SELECT " + cols + " FROM " + from() + where(new KeyRange(lo, hi)) + " ORDER BY " + keyList()
                    + " OFFSET " + (n - 1) + " LIMIT 2";
            try (Connection c = connections.open()) {
                c.setAutoCommit(false);
                try (Statement s = c.createStatement()) {
                    s.execute("SET TRANSACTION READ ONLY"); // the filter is the operator's SQL: it may read, never write
                    try (ResultSet rs = s.executeQuery(sql)) {
                        if (!rs.next()) {
                            return null;
                        }
                        List<String> key = new ArrayList<>();
                        for (int i = 1; i <= target.keyColumns().size(); i++) {
                            key.add(rs.getString(i));
                        }
                        return rs.next() ? key : null;
                    }
                } finally {
                    c.rollback();
                }
            }
        }

        OnlineTask progress() {
            return new OnlineTask(table.toString(), filter, chunker.remaining(), rows.get());
        }
    }

    private final PgConnections connections;
    private final Watermarks watermarks;
    private final Catalog catalog;
    private final Options options;
    private final SnapshotRunner.Listener listener;
    private final Consumer<Throwable> onFailure;
    private final List<Task> tasks = new CopyOnWriteArrayList<>();
    private final Object wake = new Object();
    private final List<Thread> readers = new ArrayList<>();
    private volatile boolean paused;
    private volatile boolean stopped;
    private final AtomicLong peakBuffered = new AtomicLong();
    private final AtomicLong chunksRead = new AtomicLong();
    private final AtomicLong chunksRetried = new AtomicLong();

    public OnlineSnapshotter(PgConnections connections, Watermarks watermarks, Catalog catalog, Options options,
                             SnapshotRunner.Listener listener, Consumer<Throwable> onFailure) {
        this.connections = connections;
        this.watermarks = watermarks;
        this.catalog = catalog;
        this.options = options;
        this.listener = listener;
        this.onFailure = onFailure;
        watermarks.progressSource(this::progress);
    }

    /** Starts the readers with the tasks a checkpoint left unfinished (may be empty). */
    public void start(List<OnlineTask> resumed) {
        for (OnlineTask t : resumed) {
            TableRef ref = TableRef.parse(t.table());
            add(new Task(ref, t.filter(), catalog.resolve(ref), t.remaining(), t.rowsDone()), true);
        }
        for (int i = 0; i < Math.max(1, options.readers()); i++) {
            Thread t = new Thread(this::readLoop, "millrace-online-" + i);
            t.setDaemon(true);
            readers.add(t); // registered before start (INV: NO-SILENT-ERROR)
        }
        readers.forEach(Thread::start);
    }

    /**
     * Copies {@code table} (again) while the stream runs, limited to rows matching {@code filter} (an SQL
     * condition, or null). A task already under way for the table is replaced (its remaining chunks are
     * dropped; the new copy covers them). Recorded in the checkpoint with the next batch.
     */
    public void submit(TableRef table, String filter) {
        Target target = catalog.resolve(table);
        if (filter != null) {
            validateFilter(table, target, filter);
        }
        tasks.removeIf(t -> t.table.equals(table));
        add(new Task(table, filter, target, List.of(KeyRange.ALL), 0), false);
    }

    private void validateFilter(TableRef table, Target target, String filter) {
        if (filter.contains(";")) {
            throw new MillraceException(Kind.CONFIG, "snapshot filter for " + table + " contains ';': write one SQL condition on the"
                    + " table's columns, e.g. \"id > 1000\"");
        }
        try (Connection c = connections.open(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            s.execute("SET TRANSACTION READ ONLY");
            // A check for a clear early error only (the copy's own queries are read-only too): bounded in time, since a
            // selective filter may scan the table, and this may run on the assembler thread (a signal).
            s.execute("SET LOCAL statement_timeout = 2000");
            try {
                // evaluated on a row (LIMIT 0 would not call its functions), read only: a filter may read, never write
                s.executeQuery("SELECT 1 FROM " + (target.partitioned() ? "" : "ONLY ") + table.sql() + " WHERE (" + filter + ") LIMIT 1").close();
            } catch (SQLException e) {
                if (!"57014".equals(e.getSQLState())) {
                    throw e;
                }
                // too slow to check here: the copy's queries report a bad filter themselves
            }
            c.rollback();
        } catch (SQLException e) {
            throw new MillraceException(Kind.CONFIG, "snapshot filter for " + table + " is not a valid condition: " + e.getMessage()
                    + " (write it as an SQL WHERE condition on the table's columns, e.g. \"id > 1000\")", e);
        }
    }

    private void add(Task t, boolean resumed) {
        if (t.target.keyColumns().isEmpty()) {
            throw new MillraceException(Kind.CONFIG, "table " + t.table + " has no primary key (or replica identity index), so it cannot"
                    + " be copied online: chunks are cut in key order. Add a primary key, or a unique index on NOT NULL columns and"
                    + " ALTER TABLE " + t.table.sql() + " REPLICA IDENTITY USING INDEX <index>");
        }
        tasks.add(t);
        watermarks.active(true);
        watermarks.markDirty(); // the task is recorded with the next batch
        listener.tableStarted(t.table, -1);
        LOG.info("online snapshot of {}{}{}", t.table, t.filter == null ? "" : " where " + t.filter, resumed ? " resumed at "
                + t.chunker.remaining().size() + " remaining range(s), " + t.rows.get() + " rows landed before" : "");
        synchronized (wake) {
            wake.notifyAll();
        }
    }

    /** Readers finish the chunk they hold and take no new one until {@link #resume()}. */
    public void pause() {
        paused = true;
        LOG.info("online snapshots paused");
    }

    public void resume() {
        paused = false;
        synchronized (wake) {
            wake.notifyAll();
        }
        LOG.info("online snapshots resumed");
    }

    public boolean paused() {
        return paused;
    }

    /** The tasks not landed in full, as recorded in checkpoints. Any thread. */
    public List<OnlineTask> progress() {
        List<OnlineTask> out = new ArrayList<>();
        for (Task t : tasks) {
            if (!t.finished) {
                out.add(t.progress());
            }
        }
        return out;
    }

    /** The highest number of chunk rows held in memory at once. */
    public long peakBufferedRows() {
        return peakBuffered.get();
    }

    public long chunksRead() {
        return chunksRead.get();
    }

    /** Chunks read again because their snapshot missed a transaction committed just before the low watermark. */
    public long chunksRetried() {
        return chunksRetried.get();
    }

    /** True when no task has work left. */
    public boolean idle() {
        return tasks.stream().allMatch(t -> t.finished);
    }

    private record Work(Task task, KeysetChunker.Chunk chunk) {
    }

    private Work nextWork() throws Exception {
        for (Task t : tasks) {
            if (t.finished) {
                continue;
            }
            KeysetChunker.Chunk c;
            try {
                c = t.chunker.next();
            } catch (SQLException e) {
                if (!abandon(t, e)) {
                    throw e;
                }
                continue;
            }
            if (c != null) {
                return new Work(t, c);
            }
        }
        return null;
    }

    /**
     * A query of {@code t} failed. When the failure is the query's own (its filter divides by zero, calls a function that
     * writes, names a column that was dropped; the table was dropped), only that copy stops: it is dropped with an error
     * in the log, the stream and the other copies go on. Connection and server failures are the pipeline's (false).
     */
    private boolean abandon(Task t, SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        boolean own = state.startsWith("22") || state.startsWith("42") || state.startsWith("25") || state.startsWith("2B")
                || state.startsWith("P0") || state.startsWith("0A");
        if (!own) {
            return false;
        }
        if (tasks.remove(t)) {
            watermarks.markDirty(); // recorded as dropped with the next batch
            LOG.error("online snapshot of {}{} stopped, the stream goes on: {} (SQLSTATE {}). Fix the filter or the table and ask"
                    + " for the copy again", t.table, t.filter == null ? "" : " where " + t.filter, e.getMessage(), state);
        }
        return true;
    }

    private void readLoop() {
        try (Connection c = connections.open()) {
            while (!stopped) {
                Work w = paused ? null : nextWork();
                if (w == null) {
                    synchronized (wake) {
                        if (!stopped) {
                            wake.wait(200);
                        }
                    }
                    continue;
                }
                try {
                    read(c, w.task(), w.chunk());
                } catch (SQLException e) {
                    if (!abandon(w.task(), e)) {
                        throw e;
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (SQLException e) {
            if (!stopped) {
                onFailure.accept(PgErrors.translate("online snapshot", e));
            }
        } catch (Throwable e) {
            if (!stopped) {
                onFailure.accept(e);
            }
        }
    }

    private void read(Connection c, Task task, KeysetChunker.Chunk chunk) throws SQLException, InterruptedException {
        RelationInfo r = task.target.relation();
        Watermarks.Window window = watermarks.open(r, task.target.keyColumns(), emitted -> {
            if (emitted >= 0) { // assembler thread: the rows are in the batch being built, the progress follows them
                task.chunker.landed(chunk);
                task.rows.addAndGet(emitted);
                if (task.chunker.finished()) {
                    task.finished = true;
                }
            }
        });
        try {
            readChunk(c, task, chunk, window);
        } catch (SQLException | RuntimeException e) {
            watermarks.abandon(window); // the stream stops recording keys for it
            throw e;
        }
    }

    private void readChunk(Connection c, Task task, KeysetChunker.Chunk chunk, Watermarks.Window window)
            throws SQLException, InterruptedException {
        c.setAutoCommit(true);
        emit(c, window.message(true));
        long started = System.nanoTime();
        List<Object[]> rows = new ArrayList<>();
        long[] inProgress;
        long xmax;
        long bytes;
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            s.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
            try (ResultSet rs = s.executeQuery("SELECT ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(pg_current_snapshot()) x),"
                    + " pg_snapshot_xmax(pg_current_snapshot())::text::bigint")) {
                rs.next(); // the transaction's snapshot is taken here: the chunk is read in it
                xmax = rs.getLong(2);
                Array a = rs.getArray(1);
                Long[] xs = (Long[]) a.getArray();
                inProgress = new long[xs.length];
                for (int i = 0; i < xs.length; i++) {
                    inProgress[i] = xs[i];
                }
            }
            bytes = copy(c, task, chunk, rows);
            c.commit();
        } catch (SQLException | RuntimeException e) {
            c.rollback();
            task.chunker.giveBack(chunk);
            throw e;
        } finally {
            c.setAutoCommit(true);
        }
        long readNanos = System.nanoTime() - started;
        window.fill(rows, inProgress, xmax);
        peakBuffered.accumulateAndGet(watermarks.bufferedRows(), Math::max);
        emit(c, window.message(false));
        long emitted;
        while ((emitted = window.awaitEmitted(200)) == -1) {
            if (stopped) {
                return;
            }
        }
        chunksRead.incrementAndGet();
        if (emitted == Watermarks.Window.RETRY) {
            chunksRetried.incrementAndGet();
            task.chunker.giveBack(chunk);
            LOG.debug("chunk {} of {} read again: its snapshot missed a transaction committed before its low watermark", chunk.seq(),
                    task.table);
            return;
        }
        task.chunker.report(chunk, rows.size(), readNanos, bytes);
        listener.rowsCopied(task.table, emitted);
        if (task.finished && tasks.remove(task)) {
            listener.tableDone(task.table, task.rows.get());
            LOG.info("online snapshot of {} landed: {} rows ({} chunks read, peak {} rows buffered)", task.table, task.rows.get(),
                    chunksRead.get(), peakBuffered.get());
            watermarks.markDirty();
        }
    }

    private static void emit(Connection c, String content) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_logical_emit_message(true, ?, ?)")) {
            ps.setString(1, Watermarks.PREFIX);
            ps.setString(2, content);
            ps.execute();
        }
    }

    /** Reads the chunk's rows into {@code out}; returns the bytes read (COPY text). */
    private long copy(Connection c, Task task, KeysetChunker.Chunk chunk, List<Object[]> out) throws SQLException {
        RelationInfo r = task.target.relation();
        String cols = r.columns().stream().map(col -> Ident.quote(col.name())).collect(Collectors.joining(", "));
        String sql = "COPY (SELECT " + cols + " FROM " + task.from() + task.where(chunk.range()) + ") TO STDOUT";
        CopyOut copy = c.unwrap(PGConnection.class).getCopyAPI().copyOut(sql);
        String[] fields = new String[r.columnCount()];
        long bytes = 0;
        try {
            byte[] row;
            while ((row = copy.readFromCopy()) != null) {
                bytes += row.length;
                int n = CopyText.split(row, row.length, fields);
                if (n != fields.length) {
                    throw new MillraceException(Kind.DECODE, "COPY of " + task.table + " returned " + n + " columns, expected " + fields.length);
                }
                Object[] after = new Object[n];
                for (int i = 0; i < n; i++) {
                    if (fields[i] != null) {
                        try {
                            after[i] = r.codec(i).decodeText(fields[i]);
                        } catch (RuntimeException e) {
                            throw new MillraceException(Kind.DECODE, "cannot decode column " + r.column(i).name() + " of " + task.table
                                    + " (type " + r.codec(i).typeName() + ") in an online snapshot: " + e.getMessage(), e);
                        }
                    }
                }
                out.add(after);
            }
        } finally {
            if (copy.isActive()) {
                copy.cancelCopy();
            }
        }
        return bytes;
    }

    /** Stops the readers (a chunk not emitted yet is read again after a restart). */
    @Override
    public void close() {
        stopped = true;
        synchronized (wake) {
            wake.notifyAll();
        }
        for (Thread t : readers) {
            try {
                t.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
