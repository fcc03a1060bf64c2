package io.millrace.snapshot;

import io.millrace.core.HeapCost;
import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.change.SnapshotProgress;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.fault.Faults;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.pipeline.Batch;
import io.millrace.source.PgConnections;
import io.millrace.source.PgErrors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

/**
 * The initial snapshot: N readers import the slot's exported snapshot and COPY the tables' chunks
 * in parallel, as {@code r} (read) events, into the pipeline's writer.
 *
 * <p>INV: HANDOVER — every reader sees exactly the database as of the slot's consistent point, and
 * streaming starts at that point, so each change comes either from the copy or from the stream.
 * INV: COVER — see {@link ChunkPlanner}. A table is recorded as done in the checkpoint only after all
 * its chunks were handed to the writer; the writer applies batches in order, so the progress batch
 * lands after the rows it counts.
 */
public final class SnapshotRunner {
    private static final Logger LOG = LoggerFactory.getLogger(SnapshotRunner.class);

    /** Where batches go (the pipeline's writer). Returns false when the pipeline is stopping. */
    @FunctionalInterface
    public interface Output {
        boolean submit(Batch batch) throws InterruptedException;
    }

    /** Progress figures for the terminal, status page and metrics. Called from reader threads. */
    public interface Listener {
        default void tableStarted(TableRef table, long estimatedRows) {
        }

        default void rowsCopied(TableRef table, long rows) {
        }

        default void tableDone(TableRef table, long rows) {
        }
    }

    /** A table to copy. */
    public record Table(RelationInfo relation, boolean partitioned, long estimatedRows) {
    }

    /**
     * @param readers       parallel COPY readers
     * @param pagesPerChunk CTID chunk size in 8 kB pages
     * @param batchBytes    rows per batch handed to the writer, by size
     */
    /**
     * @param binary read tables in binary COPY where every column's codec decodes the binary form ({@link CopyRows});
     *               false with {@code source.binary: off}
     */
    public record Options(int readers, long pagesPerChunk, long batchBytes, boolean binary) {
        public Options(int readers, long pagesPerChunk, long batchBytes) {
            this(readers, pagesPerChunk, batchBytes, true);
        }

        public static Options defaults() {
            return new Options(Math.max(2, Runtime.getRuntime().availableProcessors()), 4096, 4L << 20);
        }
    }

    private final PgConnections connections;
    private final String snapshotName;
    private final Lsn consistentPoint;
    private final List<Table> tables;
    private final Options options;
    private final Output output;
    private final Listener listener;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final Object progressLock = new Object();
    // @GuardedBy("progressLock")
    private final Set<TableRef> tablesDone;
    // @GuardedBy("progressLock")
    private final Map<TableRef, Integer> chunksLeft = new HashMap<>();
    // @GuardedBy("progressLock") — chunks landed of tables not yet done, recorded in the checkpoint
    private final List<SnapshotProgress.Chunk> chunksDone = new ArrayList<>();
    // @GuardedBy("progressLock")
    private final Map<TableRef, Long> rowsByTable = new HashMap<>();

    public SnapshotRunner(PgConnections connections, String snapshotName, Lsn consistentPoint, List<Table> tables,
                          Options options, Output output, Listener listener) {
        this.connections = connections;
        this.snapshotName = snapshotName;
        this.consistentPoint = consistentPoint;
        this.tables = List.copyOf(tables);
        this.options = options;
        this.output = output;
        this.listener = listener;
        this.tablesDone = new LinkedHashSet<>();
    }

    private java.util.Map<TableRef, String> rowFilters = java.util.Map.of();

    /**
     * Reads only the rows of each table that meet its row filter ({@code transforms.tables[].filter}, an SQL condition),
     * as the publication's row filter passes only their changes. Call before {@link #run()}.
     */
    public SnapshotRunner rowFilters(java.util.Map<TableRef, String> filters) {
        this.rowFilters = java.util.Map.copyOf(filters);
        return this;
    }

    /** Copies every table; returns when all rows are handed to the writer with the progress that says so. */
    public void run() throws InterruptedException {
        Faults.hit(FaultPoint.SNAPSHOT_BEFORE_LOCKS);
        copyAll();
    }

    private void copyAll() throws InterruptedException {
        long started = System.nanoTime();
        // the first reader's transaction locks the tables before anything else is done (INV: HANDOVER, lockAll)
        Connection first = openReader(true);
        ConcurrentLinkedQueue<Chunk> queue;
        try {
            rewrittenSince(first);
            queue = new ConcurrentLinkedQueue<>(plan(first));
        } catch (RuntimeException e) {
            try {
                first.close();
            } catch (SQLException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
        int n = Math.max(1, Math.min(options.readers(), queue.size()));
        List<Thread> readers = new ArrayList<>();
        others.set(n - 1);
        for (int i = 0; i < n; i++) {
            Connection own = i == 0 ? first : null;
            Thread t = new Thread(() -> read(queue, own), "millrace-snapshot-" + i);
            t.setDaemon(true);
            readers.add(t); // registered before start (INV: NO-SILENT-ERROR)
        }
        readers.forEach(Thread::start);
        try {
            for (Thread t : readers) {
                t.join();
            }
        } catch (InterruptedException e) {
            failure.compareAndSet(null, e);
            for (Thread t : readers) {
                t.join(5000);
            }
            throw e;
        }
        Throwable f = failure.get();
        if (f instanceof RuntimeException re) {
            throw re;
        }
        if (f instanceof InterruptedException ie) {
            throw ie;
        }
        if (f != null) {
            throw new MillraceException(Kind.INTERNAL, "snapshot reader failed: " + f, f);
        }
        synchronized (progressLock) {
            output.submit(new Batch(List.of(), null, null,
                    new SnapshotProgress(SnapshotProgress.State.DONE, consistentPoint, List.copyOf(tablesDone))));
        }
        long rows = rowsByTable.values().stream().mapToLong(Long::longValue).sum();
        double secs = (System.nanoTime() - started) / 1e9;
        LOG.info("snapshot done: {} rows from {} tables in {} s ({} rows/s, {} readers)", rows, tables.size(),
                String.format("%.1f", secs), Math.round(rows / Math.max(secs, 1e-3)), n);
    }

    /**
     * Cuts the tables into chunks by their sizes, read on {@code c}, the first reader's connection, which holds the tables'
     * locks: pg_relation_size takes a lock too, and on another connection it would queue behind a TRUNCATE that waits for
     * the copy to end.
     */
    private List<Chunk> plan(Connection c) {
        List<Chunk> all = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT pg_relation_size(?) / current_setting('block_size')::bigint")) {
            for (Table t : tables) {
                long pages = 0;
                if (!t.partitioned()) {
                    ps.setInt(1, t.relation().oid());
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        pages = rs.getLong(1);
                    }
                }
                List<Chunk> chunks = ChunkPlanner.plan(t.relation(), pages, options.pagesPerChunk(), t.partitioned());
                synchronized (progressLock) {
                    chunksLeft.put(t.relation().table(), chunks.size());
                    rowsByTable.put(t.relation().table(), 0L);
                }
                listener.tableStarted(t.relation().table(), t.estimatedRows());
                all.addAll(chunks);
            }
        } catch (SQLException e) {
            throw PgErrors.translate("planning the snapshot", e);
        }
        LOG.info("snapshot of {} tables in {} chunks at {}", tables.size(), all.size(), consistentPoint);
        return all;
    }

    /**
     * INV: HANDOVER — the check {@link #lockAndCheck} makes of a table when a reader reaches it, made of every table at once
     * right after the first reader locked them: a table truncated or rewritten between the slot's consistent point and the
     * lock fails the snapshot now, before any row is copied, rather than once the tables before it were read (a retry then
     * cost the whole copy again: found with a queue table truncated four times a second beside a large one,
     * RewriteDuringSnapshotIT).
     */
    private void rewrittenSince(Connection c) {
        if (tables.isEmpty()) {
            return;
        }
        String oids = tables.stream().map(t -> Integer.toUnsignedString(t.relation().oid())).collect(java.util.stream.Collectors.joining(","));
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT coalesce((SELECT inhparent FROM pg_inherits"
                + " WHERE inhrelid = c.oid LIMIT 1), c.oid) FROM pg_class c WHERE (c.oid IN (" + oids + ") OR c.oid IN (SELECT inhrelid"
                + " FROM pg_inherits WHERE inhparent IN (" + oids + "))) AND c.relfilenode <> pg_relation_filenode(c.oid) LIMIT 1")) {
            if (rs.next()) {
                long oid = rs.getLong(1);
                String name = tables.stream().filter(t -> Integer.toUnsignedLong(t.relation().oid()) == oid).map(t -> t.relation().table()
                        .toString()).findFirst().orElse("with oid " + oid);
                throw new Invalidated("table " + name + " was truncated or rewritten after the snapshot began, so the snapshot cannot"
                        + " show its rows");
            }
        } catch (SQLException e) {
            throw PgErrors.translate("checking the tables' files in the snapshot", e);
        }
    }

    /** A connection in the snapshot's transaction; the first one locks every table ({@link #lockAll}). */
    private Connection openReader(boolean first) {
        Connection c = connections.openCapture(); // where the slot exported the snapshot: the standby with capture_from
        try {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
                s.execute("SET TRANSACTION SNAPSHOT " + Ident.literal(snapshotName)); // INV: HANDOVER
                if (first && !connections.captureIsStandby()) {
                    lockAll(s);
                }
            }
            return c;
        } catch (SQLException e) {
            try {
                c.close();
            } catch (SQLException closing) {
                e.addSuppressed(closing);
            }
            throw PgErrors.translate("reading the snapshot", e);
        }
    }

    /**
     * Copies chunks from {@code queue} until it is empty, on {@code opened} (the first reader, which holds every table's
     * lock: {@link #lockAll}) or on a reader connection of its own. Another reader locks a table when it reaches it without
     * waiting: when a TRUNCATE waits for the first reader's lock, its lock would queue behind the TRUNCATE and be granted
     * only after it, on a table the snapshot then cannot read (the copy started over). It leaves such a chunk to the first
     * reader ({@link #deferred}), which copies them once the queue is empty and the other readers are done.
     */
    private void read(ConcurrentLinkedQueue<Chunk> queue, Connection opened) {
        boolean first = opened != null;
        try (Connection c = first ? opened : openReader(false)) {
            java.util.Set<RelationInfo> checked = new java.util.HashSet<>();
            while (failure.get() == null) {
                Chunk chunk = queue.poll();
                if (chunk == null && first) {
                    chunk = deferred.poll();
                    if (chunk == null && others.get() > 0) {
                        Thread.sleep(10); // another reader may still leave a chunk here
                        continue;
                    }
                    chunk = chunk != null ? chunk : deferred.poll(); // left before the last reader ended
                }
                if (chunk == null) {
                    break;
                }
                if (!checked.contains(chunk.relation())) {
                    if (!lockAndCheck(c, chunk.relation(), !first)) {
                        deferred.add(chunk);
                        continue;
                    }
                    checked.add(chunk.relation());
                }
                copy(c, chunk);
            }
            c.rollback();
        } catch (SQLException e) {
            failure.compareAndSet(null, PgErrors.translate("reading the snapshot", e));
        } catch (Throwable t) {
            failure.compareAndSet(null, t);
        } finally {
            if (!first) {
                others.decrementAndGet();
            }
        }
    }

    /** Chunks the other readers left to the first one: their table's lock was not to be had at once ({@link #read}). */
    private final ConcurrentLinkedQueue<Chunk> deferred = new ConcurrentLinkedQueue<>();
    /** The readers other than the first still reading. */
    private final java.util.concurrent.atomic.AtomicInteger others = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * INV: HANDOVER — the first reader locks every table of the snapshot (ACCESS SHARE, as pg_dump's leader does) first
     * thing in its transaction, before the chunks are planned: a TRUNCATE or a table-rewriting ALTER of a captured table
     * now waits until the copy ends instead of invalidating it (a table truncated every few seconds made every attempt
     * start over until the snapshot gave up). One committed between the slot's consistent point and this lock is still
     * caught by {@link #lockAndCheck}. The first reader's transaction lasts until the other readers are done.
     *
     * <p>Taken by a reader, never by a separate connection held for the readers: a reader's request (and pg_relation_size,
     * {@link #plan}) queues behind a TRUNCATE waiting for that connection, which would wait for the copy, which waits for
     * the reader (a deadlock PostgreSQL cannot see). The first reader never waits for another. The other readers lock table
     * by table without waiting ({@link #read}, as pg_dump's workers do), so the lock table holds about twice the tables at
     * most, not once per reader: thousands of tables need {@code max_locks_per_transaction} raised, as for pg_dump. Not on a standby ({@code capture_from}): a lock there
     * does not hold the primary back, and every lock replayed from the primary (autovacuum truncating a table's end) would
     * cancel the reader; the check holds there as before.
     */
    private void lockAll(Statement s) throws SQLException {
        if (tables.isEmpty()) {
            return;
        }
        StringBuilder sql = new StringBuilder("LOCK TABLE ");
        for (int i = 0; i < tables.size(); i++) {
            sql.append(i == 0 ? "" : ", ").append(tables.get(i).relation().table().sql());
        }
        s.execute(sql.append(" IN ACCESS SHARE MODE").toString());
    }

    /**
     * INV: HANDOVER — TRUNCATE and table-rewriting ALTERs are not MVCC-safe: committed after the
     * consistent point, they leave the snapshot reading the new (empty or rewritten) file, and the
     * copy would silently miss rows. So each reader locks the table (ACCESS SHARE, as pg_dump does:
     * no rewrite can start until the copy ends) and then checks that its file is still the one the
     * snapshot knows; if not, the snapshot is invalid and starts again.
     *
     * @param nowait take the lock only if it is to be had at once (in a savepoint: the transaction goes on without it)
     * @return false when {@code nowait} and the lock was not to be had
     */
    private boolean lockAndCheck(Connection c, RelationInfo r, boolean nowait) throws SQLException {
        if (nowait) {
            java.sql.Savepoint before = c.setSavepoint();
            try (Statement s = c.createStatement()) {
                s.execute("LOCK TABLE " + r.table().sql() + " IN ACCESS SHARE MODE NOWAIT");
            } catch (SQLException e) {
                if ("55P03".equals(e.getSQLState())) { // lock_not_available: another transaction holds or waits for it
                    c.rollback(before);
                    return false;
                }
                throw e;
            }
            c.releaseSavepoint(before);
        } else {
            try (Statement s = c.createStatement()) {
                s.execute("LOCK TABLE " + r.table().sql() + " IN ACCESS SHARE MODE");
            }
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT bool_or(c.relfilenode <> pg_relation_filenode(c.oid)) FROM pg_class c"
                + " WHERE c.oid = ? OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = ?)")) {
            ps.setInt(1, r.oid());
            ps.setInt(2, r.oid());
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next() && rs.getBoolean(1)) {
                    throw new Invalidated("table " + r.table() + " was truncated or rewritten after the snapshot began, so the"
                            + " snapshot cannot show its rows");
                }
            }
        }
        // The shape Millrace read before the slot existed must be the one the snapshot sees: an ALTER ... TYPE committed in
        // between rewrote the table before the snapshot began (so its file is the snapshot's), and its rows would be decoded
        // with the old types (text read "1" of a bigint as an int4; binary refused its 8 bytes). Read again, on a new slot.
        try (PreparedStatement ps = c.prepareStatement("SELECT attname, atttypid FROM pg_attribute WHERE attrelid = ? AND attnum > 0"
                + " AND NOT attisdropped" + (io.millrace.source.Catalog.serverVersion(c) >= 120000 ? " AND attgenerated = ''" : "")
                + " ORDER BY attnum")) { // the columns as Catalog.relation reads them
            ps.setInt(1, r.oid());
            List<String> seen = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    seen.add(rs.getString(1) + " " + Integer.toUnsignedString(rs.getInt(2)));
                }
            }
            List<String> known = r.columns().stream().map(col -> col.name() + " " + Integer.toUnsignedString(col.type().oid())).toList();
            if (!seen.equals(known)) {
                throw new Invalidated("table " + r.table() + " changed its columns after Millrace read its shape (" + known + ", now "
                        + seen + "), so the snapshot would decode its rows with the old types");
            }
        }
        return true;
    }

    /** The snapshot no longer shows a table as it was at the consistent point: it must start again on a new slot. */
    public static final class Invalidated extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Invalidated(String message) {
            super(message);
        }
    }

    private void copy(Connection c, Chunk chunk) throws SQLException, InterruptedException {
        RelationInfo r = chunk.relation();
        TableRef ref = r.table();
        String cols = r.columns().stream().map(col -> Ident.quote(col.name())).collect(Collectors.joining(", "));
        boolean partitioned = tables.stream().anyMatch(t -> t.relation() == r && t.partitioned());
        String where = chunk.where();
        String filter = rowFilters.get(ref);
        if (filter != null) {
            where += (where.isEmpty() ? " WHERE " : " AND ") + "(" + filter + ")";
        }
        String select = "SELECT " + cols + " FROM " + (partitioned ? "" : "ONLY ") + ref.sql() + where;
        var batch = new Object() {
            List<ChangeEvent> events = new ArrayList<>();
            long bytes;
            long rows;
            long now = System.currentTimeMillis() * 1000;
        };
        CopyRows.read(c, select, r, options.binary(), "during the snapshot", (after, wireBytes) -> {
            batch.events.add(new ChangeEvent(Op.READ, r, null, after, consistentPoint, Position.START, 0, batch.now, true));
            batch.bytes += HeapCost.row(wireBytes, after.length, 1); // INV: BOUNDED — the batch's size is what its rows take on the heap
            batch.rows++;
            if (batch.bytes >= options.batchBytes()) {
                hand(batch.events, ref, batch.rows, batch.bytes);
                Faults.hit(FaultPoint.SNAPSHOT_MID_CHUNK);
                batch.events = new ArrayList<>((int) Math.min(batch.rows + 16, 1 << 20)); // the next batch is about as long: no regrowth
                batch.bytes = 0;
                batch.rows = 0;
                batch.now = System.currentTimeMillis() * 1000;
                return failure.get() == null;
            }
            return true;
        });
        if (failure.get() != null) {
            return;
        }
        List<ChangeEvent> events = batch.events;
        long rows = batch.rows;
        long bytes = batch.bytes;
        hand(events, ref, rows, bytes);
        synchronized (progressLock) {
            int left = chunksLeft.merge(ref, -1, Integer::sum);
            if (left == 0) {
                tablesDone.add(ref);
                chunksDone.removeIf(done -> done.table().equals(ref));
            } else {
                chunksDone.add(new SnapshotProgress.Chunk(ref, chunk.index(), chunk.of()));
            }
            // Every landed chunk is recorded; sent under the lock, so progress reaches the writer in the order it grows,
            // after the rows it counts (the writer applies batches in order).
            if (!output.submit(new Batch(List.of(), null, null, new SnapshotProgress(SnapshotProgress.State.RUNNING, consistentPoint,
                    List.copyOf(tablesDone), List.copyOf(chunksDone))))) {
                throw new InterruptedException("pipeline stopping");
            }
            if (left == 0) {
                listener.tableDone(ref, rowsByTable.get(ref));
                LOG.info("snapshot of {} landed: {} rows", ref, rowsByTable.get(ref));
            }
        }
    }

    /** Hands a batch of {@code heapBytes} to the writer; waits while the rows in flight fill the memory budget (INV: BOUNDED). */
    private void hand(List<ChangeEvent> events, TableRef ref, long rows, long heapBytes) throws InterruptedException {
        if (events.isEmpty()) {
            return;
        }
        if (!output.submit(new Batch(events, null, null, null, null, heapBytes))) {
            throw new InterruptedException("pipeline stopping");
        }
        synchronized (progressLock) {
            rowsByTable.merge(ref, rows, Long::sum);
        }
        listener.rowsCopied(ref, rows);
    }
}
