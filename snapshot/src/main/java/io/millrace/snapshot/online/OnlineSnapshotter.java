package io.millrace.snapshot.online;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.KeyBound;
import io.millrace.core.change.OnlineTask;
import io.millrace.core.change.OnlineTask.KeyRange;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.types.UnchangedToast;
import io.millrace.snapshot.CopyRows;
import io.millrace.snapshot.SnapshotRunner;
import io.millrace.source.PgConnections;
import io.millrace.source.PgErrors;
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
 *
 * <p>Threads. Four kinds call in:
 * <ul>
 *   <li>the readers ({@code millrace-online-N}, {@link Options#readers()} of them): {@link #readLoop}, one chunk each
 *       at a time;</li>
 *   <li>the assembler thread: a window's callbacks (a chunk emitted, or landed up to a key, into the batch being built:
 *       {@link KeysetChunker#landed}, {@link KeysetChunker#landedThrough}, the task's phase), the moved-keys callback
 *       ({@link #moved}), {@link #progress} when the batch's checkpoint is cut, and the submissions made where the stream
 *       reaches a message (a signal's row, a table's join or reconcile message: {@link #submit}, {@link #submitJoined},
 *       {@link #submitReconciling}, {@link #cancel}), so that each task is recorded with the batch that holds its
 *       message (INV: RESUME);</li>
 *   <li>the slot monitor's thread and the reloads (a table left the publication, a reload took one out:
 *       {@link #submitJoined}, {@link #submitReconciling}, {@link #cancel});</li>
 *   <li>the engine's own thread and the controls (start and stop, pause and resume, the status and the metrics:
 *       {@link #start}, {@link #close}, {@link #pause}, {@link #resume}, {@link #progress}, {@link #copying}, the
 *       counters).</li>
 * </ul>
 * No lock of this class is held while a query runs. What they share is safe by construction: the task list is a
 * copy-on-write list; a task's chunker guards its ranges with its own locks (its class comment says which), its row
 * count is atomic and its phase a {@link TaskPhase} (compare-and-set moves); {@code paused} and {@code stopped} are volatile,
 * the counters atomic; readers wait on {@code wake}, which every change that may give them work notifies.
 */
public final class OnlineSnapshotter implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(OnlineSnapshotter.class);

    /** What the snapshotter needs to know of a table. */
    public record Target(RelationInfo relation, List<String> keyColumns, boolean partitioned) {
    }

    /** The source catalog. */
    public interface Catalog {
        /** Resolves a table; throws a MillraceException naming the problem. */
        Target resolve(TableRef table);

        /** The current name of the table of {@code oid}, or null when it no longer exists (a rename keeps the oid). */
        TableRef nameOf(int oid);
    }

    /**
     * @param readers     parallel chunk readers
     * @param sizing      chunk sizes in rows and the target time per chunk read
     * @param signalTable a source table whose inserted rows ask for snapshots (Debezium's signal format), or null
     */
    /** @param binary chunks are read in binary COPY where the types allow ({@code CopyRows}); false with {@code source.binary: off} */
    public record Options(int readers, KeysetChunker.Sizing sizing, TableRef signalTable, boolean binary) {
        public Options(int readers, KeysetChunker.Sizing sizing, TableRef signalTable) {
            this(readers, sizing, signalTable, true);
        }

        public Options(int readers, KeysetChunker.Sizing sizing) {
            this(readers, sizing, null);
        }

        public static Options defaults() {
            return new Options(2, new KeysetChunker.Sizing(5_000, 500, 50_000, 500_000_000L, 4L << 20));
        }
    }

    /**
     * The most keys one destination may hold in one reconciling chunk's key range (or four times the chunk's rows, if
     * more): they are held in memory while the chunk is compared (INV: BOUNDED). More (the source lost nearly every row of a range while the slot was lost) stops
     * the copy with the fix rather than exhaust the heap.
     */
    static final int RECONCILE_MAX_KEYS = 200_000;

    /** Keys one re-read task takes: they are read in one chunk, and recorded in every checkpoint until it lands. */
    static final int REREAD_KEYS = 256;

    /** Re-read tasks pending on one table before the whole table is copied again instead (a bulk key update). */
    static final int MAX_REREAD_TASKS = 8;

    /** A table being copied. */
    private final class Task {
        final TableRef table;
        /** Final, but for a re-read task taking keys ({@link #offer}). */
        volatile String filter;
        final Target target;
        final KeysetChunker chunker;
        final AtomicLong rows;
        /** What the task reads; a {@link OnlineTask.Kind#REREAD} does not show in the table's copy status. */
        final OnlineTask.Kind kind;
        /** The key tuples of a re-read task made in this run; null otherwise. @GuardedBy("this") */
        private final List<String> keys;
        final TaskPhase phase;
        /**
         * The key columns {@link #chunker}'s ranges were cut on ({@link OnlineTask#key}): the target's, but for a task
         * waiting for a key, whose table has none now.
         */
        final List<String> rangeKey;
        /** When {@link #lookForKey} last read the catalog for this task (System.nanoTime). */
        volatile long keyLookedAt;
        /**
         * No chunk is read until every transaction older than this xid (64-bit, as {@code pg_current_snapshot()} shows
         * it) has ended; 0 once none need be waited for. See {@link #submitJoined}.
         */
        volatile long notBefore;
        /** When the wait for {@link #notBefore} began (for one log line); 0 before. */
        long waitingSince;

        /** A re-read task for moved keys, taking keys until its chunk is cut. */
        Task(TableRef table, Target target, String firstKey) {
            this(table, OnlineTask.Kind.REREAD, null, target, List.of(KeyRange.ALL), 0, new ArrayList<>(), null);
            offer(firstKey);
        }

        Task(TableRef table, OnlineTask.Kind kind, String filter, Target target, List<KeyRange> remaining, long rowsDone) {
            this(table, kind, filter, target, remaining, rowsDone, null, null);
        }

        /** @param rangeKey the key {@code remaining} was cut on, when not the target's (its table has none now) */
        Task(TableRef table, OnlineTask.Kind kind, String filter, Target target, List<KeyRange> remaining, long rowsDone,
             List<String> rangeKey) {
            this(table, kind, filter, target, remaining, rowsDone, null, rangeKey);
        }

        private Task(TableRef table, OnlineTask.Kind kind, String filter, Target target, List<KeyRange> remaining, long rowsDone,
                     List<String> keys, List<String> rangeKey) {
            this.table = table;
            this.rangeKey = target.keyColumns().isEmpty() && rangeKey != null ? List.copyOf(rangeKey) : target.keyColumns();
            this.filter = filter;
            this.keys = keys;
            this.phase = new TaskPhase(table, keys != null);
            this.kind = kind;
            this.target = target;
            this.rows = new AtomicLong(rowsDone);
            this.chunker = new KeysetChunker(remaining, options.sizing(), new KeysetChunker.Boundaries() {
                @Override
                public java.util.Optional<KeyBound.Key> nth(KeyRange range, long n) throws SQLException {
                    return Task.this.nth(range, n);
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

        boolean reread() {
            return kind == OnlineTask.Kind.REREAD;
        }

        /** Also deletes what the destinations hold in each chunk's range and the source no longer has. */
        boolean reconcile() {
            return kind == OnlineTask.Kind.RECONCILE;
        }

        /** Adds a key tuple ({@code ('1', 'x')}) to a re-read task whose chunk is not cut yet; false when it takes none. */
        synchronized boolean offer(String tuple) {
            if (phase.get() != TaskPhase.Phase.TAKING_KEYS || keys.size() >= REREAD_KEYS) {
                return false;
            }
            if (!keys.contains(tuple)) {
                keys.add(tuple);
                filter = "(" + keyList() + ") IN (" + String.join(", ", keys) + ")";
            }
            return true;
        }

        /** Called before the chunk is cut: the keys read are the keys recorded. */
        synchronized void freeze() {
            phase.cut();
        }

        boolean finished() {
            return phase.get() == TaskPhase.Phase.FINISHED;
        }

        /**
         * Whether this task copies the table of {@code oid}, now {@code table}: by oid when both are known (not 0), since a
         * task keeps the name it was asked for under. By name, a copy of a table renamed since was replaced by the copy of a
         * new table that took its old name (the swap {@code RENAME TO b_old; CREATE TABLE b}), and was dropped half-way.
         */
        boolean copies(TableRef table, int oid) {
            int own = target.relation().oid();
            return oid != 0 && own != 0 ? own == oid : this.table.equals(table);
        }

        /** Whether this re-read task still has to read the row of {@code tuple}. */
        boolean rereads(String tuple) {
            String f = filter;
            // Tuples are "(" + quoted literals + ")": inside a literal a quote is doubled, so "('" + … + "')" matches whole tuples only.
            return kind == OnlineTask.Kind.REREAD && f != null && f.contains(tuple);
        }

        String keyList() {
            return target.keyColumns().stream().map(Ident::quote).collect(Collectors.joining(", "));
        }

        /** {@code (k1, k2) > ('a', 'b') AND (k1, k2) <= (...)}, with the filter: literals, for COPY. */
        String where(KeyRange r) {
            List<String> parts = new ArrayList<>();
            if (r.lo() instanceof KeyBound.Key lo) {
                parts.add("(" + keyList() + ") > (" + lo.values().stream().map(Ident::literal).collect(Collectors.joining(", ")) + ")");
            }
            if (r.hi() instanceof KeyBound.Key hi) {
                parts.add("(" + keyList() + ") <= (" + hi.values().stream().map(Ident::literal).collect(Collectors.joining(", ")) + ")");
            }
            if (filter != null) {
                parts.add("(" + filter + ")");
            }
            String rowFilter = rowFilters.apply(target.relation().table());
            if (rowFilter != null) {
                parts.add("(" + rowFilter + ")"); // the table's transform: the rows the publication passes on
            }
            return parts.isEmpty() ? "" : " WHERE " + String.join(" AND ", parts);
        }

        /** Average size of a row in COPY text, from a sample of up to 100 rows (0 for an empty table). */
        long rowBytes() throws SQLException {
            String cols = target.relation().columns().stream().map(col -> Ident.quote(col.name())).collect(Collectors.joining(", "));
            // A re-read samples its own rows: rows with out-of-line values, larger than the table's average.
            try (Connection c = connections.open(); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT coalesce(avg(octet_length(t::text)), 0)::bigint FROM (SELECT " + cols
                         + " FROM " + from() + (kind == OnlineTask.Kind.REREAD ? where(KeyRange.ALL) : "") + " LIMIT 100) t")) {
                rs.next();
                return rs.getLong(1);
            }
        }

        java.util.Optional<KeyBound.Key> nth(KeyRange range, long n) throws SQLException {
            // Aliased: a bare "ORDER BY k" names the output column when one is called k, and would sort the text, not the key.
            String cols = target.keyColumns().stream().map(k -> Ident.quote(k) + "::text AS " + Ident.quote("millrace.key." + k)).collect(Collectors.joining(", "));
            String sql = "SELECT " + cols + " FROM " + from() + where(range) + " ORDER BY " + keyList()
                    + " OFFSET " + (n - 1) + " LIMIT 2";
            try (Connection c = connections.open()) {
                c.setAutoCommit(false);
                try (Statement s = c.createStatement()) {
                    s.execute("SET TRANSACTION READ ONLY"); // the filter is the operator's SQL: it may read, never write
                    try (ResultSet rs = s.executeQuery(sql)) {
                        if (!rs.next()) {
                            return java.util.Optional.empty();
                        }
                        List<String> key = new ArrayList<>();
                        for (int i = 1; i <= target.keyColumns().size(); i++) {
                            key.add(rs.getString(i));
                        }
                        return rs.next() ? java.util.Optional.of(new KeyBound.Key(key)) : java.util.Optional.empty();
                    }
                } finally {
                    c.rollback();
                }
            }
        }

        OnlineTask progress() {
            return new OnlineTask(table, kind, filter, chunker.remaining(), rows.get(), target.relation().oid(),
                    rangeKey.isEmpty() ? null : rangeKey);
        }
    }

    private final PgConnections connections;
    private final Watermarks watermarks;
    private final Catalog catalog;
    private final Options options;
    private final SnapshotRunner.Listener listener;
    private final Consumer<Throwable> onFailure;
    /** Every task not finished, in the order readers take chunks from them. Any thread. */
    private final List<Task> tasks = new CopyOnWriteArrayList<>();
    /** Readers wait on it for work; notified by whatever may give them some (a task added, a resume, the close). */
    private final Object wake = new Object();
    private final List<Thread> readers = new ArrayList<>();
    private volatile boolean paused;
    private volatile boolean stopped;
    /** Where reconciling tasks read the keys the destinations hold; null: none can be read (deletes are not found). */
    private volatile DestinationKeys destinationKeys;
    private final AtomicLong peakBuffered = new AtomicLong();
    private final AtomicLong chunksRead = new AtomicLong();
    private final AtomicLong chunksRetried = new AtomicLong();
    /** Copies started again because too many rows moved ({@link #overflow}). */
    private final AtomicLong restarts = new AtomicLong();

    private volatile java.util.function.Function<TableRef, String> rowFilters = t -> null;

    /**
     * The row filter of each table ({@code transforms.tables[].filter}, an SQL condition, or null): a copy reads only the
     * rows that meet it, as the publication passes only their changes. Any thread; copies started after it use it.
     */
    public void rowFilters(java.util.function.Function<TableRef, String> filters) {
        this.rowFilters = filters;
    }

    /** Rows that reconciling chunks deleted because the source no longer had them ({@link Watermarks#reconcileDeletes}). Any thread. */
    public long reconcileDeletes() {
        return watermarks.reconcileDeletes();
    }

    public OnlineSnapshotter(PgConnections connections, Watermarks watermarks, Catalog catalog, Options options,
                             SnapshotRunner.Listener listener, Consumer<Throwable> onFailure) {
        this.connections = connections;
        this.watermarks = watermarks;
        this.catalog = catalog;
        this.options = options;
        this.listener = listener;
        this.onFailure = onFailure;
        watermarks.progressSource(this::progress);
        watermarks.moves(new Watermarks.Moves() {
            @Override
            public boolean copying(TableRef table) {
                return OnlineSnapshotter.this.copying(table);
            }

            @Override
            public void moved(RelationInfo r, Object[] before, Object[] after) {
                OnlineSnapshotter.this.moved(r, before, after);
            }
        });
    }

    /**
     * The keys the destinations hold of a table, for the re-copy after a lost slot ({@link OnlineTask#reconcile}): the union
     * over the destinations that can list theirs ({@code KeyedSink}). Any thread, own connections.
     */
    public interface DestinationKeys {
        /** Each key as the text of its columns {@code keyColumns}, in any order, repeats allowed; at most {@code limit} per destination. */
        List<List<String>> keysIn(int oid, TableRef table, List<String> keyColumns, KeyRange range, int limit);
    }

    /** Sets where reconciling tasks read the destinations' keys; call before {@link #start}. */
    public void destinationKeys(DestinationKeys keys) {
        this.destinationKeys = keys;
    }

    /** Starts the readers with the tasks a checkpoint left unfinished (may be empty). */
    public void start(List<OnlineTask> resumed) {
        start(resumed, java.util.Map.of());
    }

    /**
     * As {@link #start(List)}; the task of a table whose oid {@code notBefore} maps reads no chunk until every transaction
     * older than that xid has ended (a table that joined the publication at this start: see {@link #submitJoined}).
     */
    public void start(List<OnlineTask> resumed, java.util.Map<Integer, Long> notBefore) {
        for (OnlineTask t : resumed) {
            TableRef ref = t.table();
            if (t.oid() != 0) {
                TableRef now = catalog.nameOf(t.oid());
                if (now == null) {
                    LOG.warn("online snapshot of {} not resumed: the table was dropped in the source", ref);
                    watermarks.markDirty(); // recorded as dropped with the next batch
                    continue;
                }
                if (!now.equals(ref)) {
                    LOG.info("online snapshot of {} goes on as {}: the table was renamed in the source", ref, now);
                    ref = now;
                }
            }
            Target target;
            try {
                target = catalog.resolve(ref);
            } catch (MillraceException e) {
                if (e.kind() != Kind.CONFIG) {
                    throw e;
                }
                // a task of an earlier version (no oid) of a table renamed or dropped since: it cannot be followed
                LOG.warn("online snapshot of {} not resumed: {}. If the table was renamed, copy it again under its new name:"
                        + " millrace snapshot CONFIG --table <new name>", ref, e.getMessage());
                watermarks.markDirty();
                continue;
            }
            List<KeyRange> remaining = t.remaining();
            if (t.key() != null && !target.keyColumns().isEmpty() && !t.key().equals(target.keyColumns())) {
                // INV: COVER — ranges of the old key's values would leave rows of the new key unread
                LOG.info("online snapshot of {} starts again from its first key: the table's key changed from ({}) to ({}) while"
                        + " Millrace was stopped", ref, String.join(", ", t.key()), String.join(", ", target.keyColumns()));
                remaining = List.of(KeyRange.ALL);
            }
            Task task = new Task(ref, t.kind(), t.filter(), target, remaining, t.rowsDone(), t.key());
            task.notBefore = notBefore.getOrDefault(target.relation().oid(), 0L);
            if (target.keyColumns().isEmpty() && target.relation().oid() != 0) {
                awaitKey(task);
                continue;
            }
            add(task, true);
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
     * condition, or null). A whole copy replaces a task already under way for the table (its remaining chunks are
     * dropped; the new copy covers them); a filtered one is refused (CONFIG) while a copy of other rows is under way,
     * which it would not cover. Recorded in the checkpoint with the next batch.
     */
    public void submit(TableRef table, String filter) {
        enqueue(table, catalog.resolve(table), filter);
    }

    /**
     * Copies the table of {@code oid} (again) under the name it has when the copy starts, as {@link #submit(TableRef,
     * String)} does. For a copy the stream asks for: the shape it showed may be older than a rename made since, and the
     * copy follows the table, not that name. False (nothing submitted) when the table was dropped meanwhile.
     */
    public boolean submit(int oid, String filter) {
        Target target = resolve(oid);
        if (target == null) {
            return false;
        }
        enqueue(target.relation().table(), target, filter);
        return true;
    }

    /**
     * Copies the whole table of {@code oid} again and reconciles the destinations with it ({@link OnlineTask#reconcile}):
     * what they hold in each chunk's key range that the source does not have under the table's row filter is deleted. For
     * a reload that changed the table's transforms (a row filter narrowed: the rows it now leaves out go). False when the
     * table was dropped meanwhile.
     */
    public boolean submitReconciling(int oid) {
        Target target = resolve(oid);
        if (target == null) {
            return false;
        }
        enqueue(target.relation().table(), target, null, 0, true);
        return true;
    }

    private void enqueue(TableRef table, Target target, String filter) {
        enqueue(table, target, filter, 0);
    }

    private void enqueue(TableRef table, Target target, String filter, long notBefore) {
        enqueue(table, target, filter, notBefore, false);
    }

    private void enqueue(TableRef table, Target target, String filter, long notBefore, boolean reconciling) {
        int oid = target.relation().oid();
        if (filter != null) {
            // INV: COVER — a copy limited by a filter would replace one under way of other rows and drop its remaining
            // chunks, which no chunk would then read: refused.
            for (Task t : tasks) {
                if (!t.reread() && !t.finished() && !t.reconcile() && !filter.equals(t.filter) && t.copies(table, oid)) {
                    throw new MillraceException(Kind.CONFIG, "a copy of " + table + (t.filter == null ? "" : " where " + t.filter)
                            + " is under way: a copy limited to '" + filter + "' would replace it and leave the rest of it"
                            + " uncopied. Ask again once it has landed (status: online_snapshots), or copy the whole table (no"
                            + " filter), which replaces it");
                }
            }
            validateFilter(table, target, filter);
        }
        // A whole copy asked for while a lost slot's re-copy of the table is under way goes on reconciling: it replaces it.
        boolean reconcile = filter == null && (reconciling || tasks.stream().anyMatch(t -> t.reconcile() && !t.finished() && t.copies(table, oid)));
        // Re-reads stay: a filtered copy need not read their keys, and their updates were left to them.
        // A filtered copy beside a reconciling one leaves it: the reconciliation must cover the whole table.
        tasks.removeIf(t -> !t.reread() && (filter == null || !t.reconcile()) && t.copies(table, oid));
        Task t = new Task(table, reconcile ? OnlineTask.Kind.RECONCILE : filter != null ? OnlineTask.Kind.FILTERED : OnlineTask.Kind.COPY,
                filter, target, List.of(KeyRange.ALL), 0);
        t.notBefore = notBefore;
        add(t, false);
    }

    /**
     * Copies the table of {@code oid}, which has just joined the publication, once every transaction older than xid
     * {@code notBefore} has ended: a transaction open when the table joined may have written rows to it before, which
     * the stream does not carry (pgoutput decides by the catalog as of each change), and may commit after a chunk's
     * snapshot was taken, so that neither the chunk nor the stream would bring them. The caller takes
     * {@code notBefore} as {@code pg_snapshot_xmax(pg_current_snapshot())} after the publication change committed.
     * A copy already under way for the table (resumed from a checkpoint) is kept. False when the table was dropped.
     * Recorded in the checkpoint with the next batch.
     */
    public boolean submitJoined(int oid, long notBefore) {
        return submitJoined(oid, notBefore, false);
    }

    /**
     * As {@link #submitJoined(int, long)}; {@code reconciling}: the copy also deletes what the destinations hold in each
     * chunk's key range that the source does not have ({@link OnlineTask#reconcile}) — a table joining again, whose copy
     * in the destinations missed the changes made while it was out of the publication.
     */
    public boolean submitJoined(int oid, long notBefore, boolean reconciling) {
        for (Task t : tasks) {
            if (!t.reread() && !t.finished() && t.target.relation().oid() == oid) {
                return true;
            }
        }
        Target target = resolve(oid);
        if (target == null) {
            return false;
        }
        enqueue(target.relation().table(), target, null, notBefore, reconciling);
        return true;
    }

    /** Stops the copies of the table of {@code oid} (no longer captured); what landed stays. Returns whether one was under way. */
    public boolean cancel(int oid) {
        boolean any = tasks.removeIf(t -> t.target.relation().oid() == oid);
        if (any) {
            watermarks.markDirty(); // recorded as dropped with the next batch
        }
        return any;
    }

    /** Whether the transactions {@code t} waits for have ended (see {@link #submitJoined}). */
    private boolean opened(Connection c, Task t) throws SQLException {
        long nb = t.notBefore;
        if (nb == 0) {
            return true;
        }
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")) {
            rs.next();
            if (rs.getLong(1) >= nb) {
                t.notBefore = 0;
                return true;
            }
        }
        long now = System.nanoTime();
        if (t.waitingSince == 0) {
            t.waitingSince = now;
        } else if (t.waitingSince > 0 && now - t.waitingSince > 10_000_000_000L) {
            t.waitingSince = -1; // logged once
            LOG.warn("online snapshot of {} waits for the transactions open when the table joined the publication to end (xid below {};"
                    + " see pg_stat_activity for old transactions)", t.table, nb);
        }
        return false;
    }

    /**
     * The table of {@code oid} as the catalog shows it now, or null when it was dropped. A table renamed again between
     * the look-up by oid and the one by name (or its name taken meanwhile by another table) is looked up again, three
     * times at most.
     */
    private Target resolve(int oid) {
        for (int attempt = 1; ; attempt++) {
            TableRef now = catalog.nameOf(oid);
            if (now == null) {
                return null;
            }
            try {
                Target target = catalog.resolve(now);
                if (target.relation().oid() == oid) {
                    return target;
                }
                if (attempt == 3) {
                    throw new MillraceException(Kind.CONFIG, "table " + now + " (oid " + Integer.toUnsignedString(oid)
                            + ") was renamed in the source while it was being looked up, three times; copy it again by name");
                }
            } catch (MillraceException e) {
                if (e.kind() != Kind.CONFIG || attempt == 3) {
                    throw e;
                }
            }
        }
    }

    /** Whether a copy of the table of {@code oid} (whole or filtered, not a re-read of keys) is under way. Any thread. */
    public boolean copying(int oid) {
        for (Task t : tasks) {
            if (!t.finished() && !t.reread() && t.target.relation().oid() == oid) {
                return true;
            }
        }
        return false;
    }

    private boolean copying(TableRef table) {
        for (Task t : tasks) {
            if (!t.finished() && t.table.equals(table)) {
                return true;
            }
        }
        return false;
    }

    /**
     * An update of {@code r} kept unchanged TOAST values and carried an old key while the table is being copied
     * (assembler thread). When it moved the row to a new key, that key is read again through a watermark window of its
     * own: the destination may not hold the old row to take the unchanged values from (its chunk not read yet), and
     * the new key may lie in a part of the table already copied. The task joins the checkpoint with the batch that
     * holds the update (INV: RESUME), so the sinks leave the partial row to it; reading a key that landed whole anyway
     * writes the same row again.
     */
    private void moved(RelationInfo r, Object[] before, Object[] after) {
        Task copy = null;
        List<Task> rereads = new ArrayList<>();
        for (Task t : tasks) {
            if (t.finished() || !t.table.equals(r.table())) {
                continue;
            }
            if (t.reread()) {
                rereads.add(t);
            } else if (copy == null) {
                copy = t;
            }
        }
        if (copy != null && copy.filter == null && copy.chunker.untouched()) {
            return; // a whole copy that has not started reads the new key anyway
        }
        Target target = copy != null ? copy.target : rereads.isEmpty() ? null : rereads.get(0).target;
        if (target == null) {
            return;
        }
        String from = tuple(r, target, before, null);
        String to = tuple(r, target, after, before);
        if (to == null) {
            LOG.warn("online snapshot of {}: an update moved a row and kept unchanged TOAST values, but the stream's image of the"
                    + " table lacks a key column of the copy ({}); when the copy has landed, check the row, or copy the table"
                    + " again", r.table(), target.keyColumns());
            return;
        }
        if (to.equals(from)) {
            return;
        }
        if (copy == null && from != null && rereads.stream().noneMatch(t -> t.rereads(from))) {
            // The copy has landed: the old row is in the destination (its own re-read is not pending), and the sink
            // applies the update. Without this rule re-reads would beget re-reads and the copy never end.
            return;
        }
        for (Task t : rereads) {
            if (t.offer(to)) {
                watermarks.markDirty(); // recorded with the batch being built, which holds the update (INV: RESUME)
                return;
            }
        }
        if (rereads.size() >= MAX_REREAD_TASKS) {
            overflow(r.table(), target);
            return;
        }
        tasks.add(new Task(r.table(), target, to));
        watermarks.markDirty(); // recorded with the batch being built, which holds the update (INV: RESUME)
        LOG.info("online snapshot of {}: updates moved rows to new keys and kept unchanged TOAST values; the rows of those keys are"
                + " read again", r.table());
        synchronized (wake) {
            wake.notifyAll();
        }
    }

    /**
     * Too many moved keys to read again one by one (a bulk key update, whose re-reads cannot land while the assembler
     * is still busy with it): the table is copied again from the start, which reads every key from then on. The
     * re-reads go with the old copy; the new one covers them.
     */
    private void overflow(TableRef table, Target target) {
        boolean reconcile = tasks.stream().anyMatch(t -> t.table.equals(table) && t.reconcile() && !t.finished());
        tasks.removeIf(t -> t.table.equals(table));
        add(new Task(table, reconcile ? OnlineTask.Kind.RECONCILE : OnlineTask.Kind.COPY, null, target, List.of(KeyRange.ALL), 0), false);
        long n = restarts.incrementAndGet();
        if (Long.bitCount(n) == 1) { // 1, 2, 4, 8, …: a bulk update of millions of rows does not flood the log
            LOG.warn("online snapshot of {}: more than {} updates moved rows to new keys and kept unchanged TOAST values; the table"
                    + " is copied again from the start ({} time(s) so far)", table, MAX_REREAD_TASKS * REREAD_KEYS, n);
        }
    }

    /**
     * The key of {@code row} as a tuple of SQL literals, {@code ('1', 'x')}; null when a key column is missing. A key
     * column the update left as an unchanged TOAST value (a long text key) is taken from {@code old}.
     */
    private static String tuple(RelationInfo r, Target target, Object[] row, Object[] old) {
        if (row == null) {
            return null;
        }
        StringBuilder out = new StringBuilder("(");
        List<String> keys = target.keyColumns();
        for (int k = 0; k < keys.size(); k++) {
            int i = columnIndex(r, keys.get(k));
            Object v = i < 0 ? null : row[i];
            if (v == UnchangedToast.INSTANCE) {
                v = old == null || old[i] == UnchangedToast.INSTANCE ? null : old[i];
            }
            if (v == null) {
                return null;
            }
            out.append(k == 0 ? "" : ", ").append(Ident.literal(r.codec(i).toPgText(v)));
        }
        return out.append(')').toString();
    }

    private static int columnIndex(RelationInfo r, String name) {
        for (int i = 0; i < r.columnCount(); i++) {
            if (r.column(i).name().equals(name)) {
                return i;
            }
        }
        return -1;
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
        if (!t.reread()) {
            listener.tableStarted(t.table, -1);
        }
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
            if (!t.finished()) {
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
        return tasks.stream().allMatch(t -> t.finished());
    }

    private record Work(Task task, KeysetChunker.Chunk chunk) {
    }

    private Work nextWork(Connection conn) throws Exception {
        // Re-reads first: they are small, and while one waits its keys may be missing from the destinations.
        List<Task> order = new ArrayList<>(tasks.size());
        tasks.stream().filter(t -> t.reread()).forEach(order::add);
        tasks.stream().filter(t -> !t.reread()).forEach(order::add);
        for (Task t : order) {
            if (t.phase.get() == TaskPhase.Phase.AWAITING_KEY) {
                lookForKey(t);
                continue;
            }
            if (t.finished() || !opened(conn, t)) {
                continue;
            }
            KeysetChunker.Chunk c;
            if (t.reread()) {
                t.freeze(); // the keys recorded are the keys its chunk reads
            }
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
        // undefined_table, undefined_column: the table (or a column) renamed or dropped while it was being copied?
        if (("42P01".equals(state) || "42703".equals(state)) && !t.reread() && t.target.relation().oid() != 0 && reshape(t)) {
            return true;
        }
        if (tasks.remove(t)) {
            watermarks.markDirty(); // recorded as dropped with the next batch
            LOG.error("online snapshot of {}{} stopped, the stream goes on: {} (SQLSTATE {}). Fix the filter or the table and ask"
                    + " for the copy again", t.table, t.filter == null ? "" : " where " + t.filter, e.getMessage(), state);
        }
        return true;
    }

    /**
     * The table of {@code t} changed while it was copied: the copy goes on under its current name in its new shape, from
     * every range not landed (INV: COVER — in-flight and given-back chunks included); a table dropped ends its copy.
     * False when nothing changed.
     */
    private boolean reshape(Task t) {
        Target target = resolve(t.target.relation().oid());
        if (target == null) {
            if (tasks.remove(t)) {
                watermarks.markDirty();
                LOG.warn("online snapshot of {} stopped: the table was dropped in the source", t.table);
            }
            return true;
        }
        TableRef now = target.relation().table();
        if ((!now.equals(t.table) || !target.relation().columns().equals(t.target.relation().columns())
                || !target.keyColumns().equals(t.target.keyColumns())) && tasks.remove(t)) {
            LOG.info("online snapshot of {} goes on{}: the table changed in the source while it was copied", t.table,
                    now.equals(t.table) ? "" : " as " + now);
            Task next = new Task(now, t.kind, t.filter, target, onKey(t, target), t.rows.get(), t.rangeKey);
            if (target.keyColumns().isEmpty()) {
                awaitKey(next);
            } else {
                add(next, false);
            }
            return true;
        }
        return false;
    }

    /**
     * The ranges left of {@code t} for a copy on {@code target}'s key: the same when the key is (or none, for a task that
     * waits for one); from the first key when it changed (INV: COVER — ranges of the old key's values, {@code id > 200},
     * read as ranges of the new one, {@code code > 200}, would leave rows unread).
     */
    private static List<KeyRange> onKey(Task t, Target target) {
        if (target.keyColumns().isEmpty() || target.keyColumns().equals(t.rangeKey)) {
            return t.chunker.remaining();
        }
        LOG.info("online snapshot of {} starts again from its first key: the table's key changed from ({}) to ({})", t.table,
                String.join(", ", t.rangeKey), String.join(", ", target.keyColumns()));
        return List.of(KeyRange.ALL);
    }

    /**
     * A copy whose table has no key now waits for one, recorded in the checkpoints (INV: RESUME) with the ranges left and
     * the key they were cut on. The stream goes on: a table without a key can still be captured (REPLICA IDENTITY FULL),
     * only not copied in chunks. Before, a resumed copy of such a table stopped every start with a configuration error.
     */
    private void awaitKey(Task t) {
        t.phase.awaitKey();
        t.keyLookedAt = System.nanoTime();
        tasks.add(t);
        watermarks.markDirty();
        LOG.error("online snapshot of {} waits for a key: the table has no primary key (or replica identity index) now, and a copy"
                + " is cut in key order. The stream goes on; the copy goes on once the table has one. Fix: ALTER TABLE {} ADD PRIMARY"
                + " KEY (...), or a unique index on NOT NULL columns and ALTER TABLE {} REPLICA IDENTITY USING INDEX <index>", t.table,
                t.table.sql(), t.table.sql());
    }

    /** Every {@link #KEY_LOOK_NANOS}, whether the table of a task waiting for a key has one again; it goes on then. */
    private void lookForKey(Task t) {
        long now = System.nanoTime();
        if (now - t.keyLookedAt < KEY_LOOK_NANOS) {
            return;
        }
        t.keyLookedAt = now;
        Target target = resolve(t.target.relation().oid());
        if (target == null) {
            if (tasks.remove(t)) {
                watermarks.markDirty();
                LOG.warn("online snapshot of {} stopped: the table was dropped in the source", t.table);
            }
            return;
        }
        if (!target.keyColumns().isEmpty() && tasks.remove(t)) {
            LOG.info("online snapshot of {} goes on: the table has a key again ({})", target.relation().table(),
                    String.join(", ", target.keyColumns()));
            add(new Task(target.relation().table(), t.kind, t.filter, target, onKey(t, target), t.rows.get()), false);
        }
    }

    /** How often a task waiting for a key looks at the catalog. */
    private static final long KEY_LOOK_NANOS = 2_000_000_000L;

    /**
     * INV: COVER (each chunk holds its own table's rows) — whether the name the task reads by (locked, in the chunk's
     * transaction) is still its table's. A table renamed while
     * copied shows as an error when nothing took its name; when another table did (the swap {@code ALTER TABLE b RENAME TO
     * b_old; CREATE TABLE b ...}), the chunks of b_old's copy read the new b's rows, with no error, into the destinations'
     * b_old (found with DdlIT.aTableRenamedDuringItsCopyKeepsItsCopyWhenANewTableTakesItsName).
     */
    private static boolean namedSo(Connection c, Task task) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT coalesce(to_regclass(?)::oid = ?::oid, false)")) {
            ps.setString(1, task.table.sql());
            ps.setLong(2, Integer.toUnsignedLong(task.target.relation().oid()));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    /** Whether the table's columns (names, types, modifiers, in order) are still those the task reads. */
    private static boolean sameColumns(Connection c, Task task) throws SQLException {
        List<io.millrace.core.schema.ColumnInfo> cols = task.target.relation().columns();
        try (PreparedStatement ps = c.prepareStatement("SELECT attname, atttypid::int8, atttypmod FROM pg_attribute WHERE attrelid = ?::oid"
                + " AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum")) {
            ps.setLong(1, Integer.toUnsignedLong(task.target.relation().oid()));
            try (ResultSet rs = ps.executeQuery()) {
                int i = 0;
                while (rs.next()) {
                    if (i >= cols.size() || !cols.get(i).name().equals(rs.getString(1)) || cols.get(i).type() == null
                            || Integer.toUnsignedLong(cols.get(i).type().oid()) != rs.getLong(2) || cols.get(i).typeMod() != rs.getInt(3)) {
                        return false;
                    }
                    i++;
                }
                return i == cols.size();
            }
        }
    }

    private void readLoop() {
        try (Connection c = connections.open()) {
            while (!stopped) {
                Work w = paused ? null : nextWork(c);
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
            // assembler thread: the rows are in the batch being built, the progress follows them
            task.chunker.landed(chunk);
            task.rows.addAndGet(emitted);
            if (task.chunker.finished()) {
                task.phase.finish();
            }
        }, key -> {
            task.chunker.landedThrough(chunk, key); // assembler thread: a batch cut inside the chunk's rows
            watermarks.markDirty();
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
            // Locked before the snapshot is taken: DDL committed before is in it, later DDL waits for the chunk's end.
            s.execute("LOCK TABLE " + task.from() + " IN ACCESS SHARE MODE");
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
            if (task.target.relation().oid() != 0 && (!namedSo(c, task) || !sameColumns(c, task)
                    || !io.millrace.source.Catalog.keyColumns(c, task.target.relation().oid()).equals(task.target.keyColumns()))) {
                // The table changed shape (or key) since the task resolved it: this chunk is not read in the old shape, nor
                // cut on the old key, nor compared with the stream's changes by it in its window. Or it was renamed and
                // another table took its name: the chunk is read from the table, under its new name, not from that one.
                c.rollback();
                task.chunker.giveBack(chunk);
                watermarks.abandon(window);
                reshape(task); // or ends it, when the table was dropped
                return;
            }
            bytes = copy(c, task, chunk, rows);
            if (task.reconcile() && destinationKeys != null) {
                window.gone(gone(c, task, chunk, rows)); // in the chunk's snapshot, before the high watermark
            }
            c.commit();
        } catch (SQLException | RuntimeException e) {
            c.rollback();
            task.chunker.giveBack(chunk);
            throw e;
        } finally {
            c.setAutoCommit(true);
        }
        long readNanos = System.nanoTime() - started;
        io.millrace.core.fault.Faults.hit(io.millrace.core.fault.FaultPoint.ONLINE_CHUNK_READ);
        window.fill(rows, inProgress, xmax, bytes);
        peakBuffered.accumulateAndGet(watermarks.bufferedRows(), Math::max);
        emit(c, window.message(false));
        java.util.Optional<Watermarks.Window.Outcome> outcome;
        while ((outcome = window.await(200)).isEmpty()) {
            if (stopped) {
                return;
            }
        }
        chunksRead.incrementAndGet();
        if (!(outcome.get() instanceof Watermarks.Window.Outcome.Emitted done)) {
            chunksRetried.incrementAndGet();
            task.chunker.giveBack(chunk);
            LOG.debug("chunk {} of {} read again: its snapshot missed a transaction committed before its low watermark, or the table"
                    + " changed shape in its window", chunk.seq(),
                    task.table);
            return;
        }
        task.chunker.report(chunk, rows.size(), readNanos, bytes);
        if (task.reread()) {
            if (task.finished() && tasks.remove(task)) {
                LOG.debug("online snapshot of {}: {} row(s) read again where {}", task.table, done.rows(), task.filter);
                watermarks.markDirty();
            }
            return;
        }
        listener.rowsCopied(task.table, done.rows());
        if (task.finished() && tasks.remove(task)) {
            listener.tableDone(task.table, task.rows.get());
            LOG.info("online snapshot of {} landed: {} rows ({} chunks read, peak {} rows buffered)", task.table, task.rows.get(),
                    chunksRead.get(), peakBuffered.get());
            watermarks.markDirty();
        }
    }

    /**
     * Of a reconciling chunk: the rows the destinations hold in its key range that the source no longer has, as old images
     * (key columns only). The destinations' keys are read after the chunk and before its high watermark is written, so
     * they hold no change committed after it: a key they hold that the chunk did not read was deleted in the source
     * (while the slot was lost, or since), or inserted by the stream after the read — then the stream changed it in the
     * window, and the assembler keeps the stream's (INV: WATERMARK). Every candidate is looked up again in the chunk's own
     * snapshot, so a row the source has is never deleted, even where a destination orders keys otherwise (a collation).
     */
    private List<Object[]> gone(Connection c, Task task, KeysetChunker.Chunk chunk, List<Object[]> rows) throws SQLException {
        RelationInfo r = task.target.relation();
        List<String> keyColumns = task.target.keyColumns();
        int[] idx = new int[keyColumns.size()];
        for (int k = 0; k < idx.length; k++) {
            idx[k] = columnIndex(r, keyColumns.get(k));
            if (idx[k] < 0) {
                throw new MillraceException(Kind.INTERNAL, "key column " + keyColumns.get(k) + " of " + task.table + " is not among its columns");
            }
        }
        java.util.Set<ValueKey> read = new java.util.HashSet<>();
        for (Object[] row : rows) {
            read.add(ValueKey.of(row, idx));
        }
        java.util.Map<ValueKey, List<String>> candidates = new java.util.LinkedHashMap<>();
        int limit = Math.max(RECONCILE_MAX_KEYS, 4 * rows.size());
        List<List<String>> held = destinationKeys.keysIn(r.oid(), task.table, keyColumns, chunk.range(), limit + 1);
        if (held.size() > limit) {
            throw new MillraceException(Kind.SINK, "reconciling copy of " + task.table + " (after a lost slot, or the table back in the publication): a destination holds more than "
                    + limit + " rows in the key range of one chunk, where the source has " + rows.size() + "; the"
                    + " destinations are reconciled in bounded memory, so this copy stops. Remove the table's rows from the postgres and"
                    + " duckdb destinations (TRUNCATE the target table) and start again: the re-copy then brings the source's rows");
        }
        for (List<String> text : held) {
            if (text.size() != idx.length || text.contains(null)) {
                continue;
            }
            Object[] v = new Object[idx.length];
            for (int k = 0; k < idx.length; k++) {
                v[k] = r.codec(idx[k]).decodeText(text.get(k));
            }
            ValueKey key = new ValueKey(v);
            if (!read.contains(key)) {
                candidates.putIfAbsent(key, text);
            }
        }
        if (candidates.isEmpty()) {
            return List.of();
        }
        // Each candidate is looked up in the chunk's snapshot by the destination's text, cast to the key's type by the
        // source: a key the source has is never deleted, even where the destination prints it otherwise (numeric scale,
        // a type changed since); a key it lacks is deleted as the source prints it, so the delete names the key as the
        // stream would and the assembler's window sees a stream change of the same key (INV: WATERMARK).
        List<List<String>> all = new ArrayList<>(candidates.values());
        StringBuilder present = new StringBuilder();
        StringBuilder printed = new StringBuilder();
        StringBuilder names = new StringBuilder("i");
        for (int k = 0; k < idx.length; k++) {
            present.append(k == 0 ? "" : " AND ").append("r.").append(Ident.quote(keyColumns.get(k))).append(" = v.k").append(k);
            printed.append(", v.k").append(k).append("::text");
            names.append(", k").append(k);
        }
        List<Object[]> out = new ArrayList<>();
        for (int from = 0; from < all.size(); from += 1000) {
            List<List<String>> part = all.subList(from, Math.min(all.size(), from + 1000));
            StringBuilder values = new StringBuilder();
            for (int j = 0; j < part.size(); j++) {
                values.append(j == 0 ? "(" : ", (").append(j);
                for (int k = 0; k < idx.length; k++) {
                    io.millrace.core.schema.TypeInfo type = r.column(idx[k]).type();
                    values.append(", CAST(").append(Ident.literal(part.get(j).get(k))).append(" AS ")
                            .append(type.schema() == null ? "" : Ident.quote(type.schema()) + ".").append(Ident.quote(type.name())).append(')');
                }
                values.append(')');
            }
            // Under the table's row filter: a row the filter leaves out is not the source's for the destinations (a reload
            // that narrowed the filter deletes it there).
            String rowFilter = rowFilters.apply(task.table);
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT EXISTS (SELECT 1 FROM " + task.from()
                    + " r WHERE " + present + (rowFilter == null ? "" : " AND (" + rowFilter + ")") + ")" + printed + " FROM (VALUES "
                    + values + ") v(" + names + ")")) {
                while (rs.next()) {
                    if (rs.getBoolean(1)) {
                        continue; // the source has it: not gone
                    }
                    Object[] old = new Object[r.columnCount()];
                    for (int k = 0; k < idx.length; k++) {
                        old[idx[k]] = r.codec(idx[k]).decodeText(rs.getString(k + 2));
                    }
                    out.add(old);
                }
            }
        }
        return out;
    }

    /** Key values compared by value (arrays too: bytea keys). */
    private static final class ValueKey {
        final Object[] values;
        private final int hash;

        ValueKey(Object[] values) {
            this.values = values;
            this.hash = java.util.Arrays.deepHashCode(values);
        }

        static ValueKey of(Object[] row, int[] idx) {
            Object[] v = new Object[idx.length];
            for (int k = 0; k < idx.length; k++) {
                v[k] = row[idx[k]];
            }
            return new ValueKey(v);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof ValueKey k && hash == k.hash && java.util.Arrays.deepEquals(values, k.values);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    private static void emit(Connection c, String content) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_logical_emit_message(true, ?, ?)")) {
            ps.setString(1, Watermarks.PREFIX);
            ps.setString(2, content);
            ps.execute();
        }
    }

    /** Reads the chunk's rows into {@code out}; returns the bytes read (COPY, binary where the types allow: CopyRows). */
    private long copy(Connection c, Task task, KeysetChunker.Chunk chunk, List<Object[]> out) throws SQLException {
        RelationInfo r = task.target.relation();
        String cols = r.columns().stream().map(col -> Ident.quote(col.name())).collect(Collectors.joining(", "));
        // In key order: a batch cut inside the chunk records the rows up to its last key as landed (landedThrough).
        String select = "SELECT " + cols + " FROM " + task.from() + task.where(chunk.range()) + " ORDER BY " + task.keyList();
        try {
            return CopyRows.read(c, select, r, options.binary(), "in an online snapshot", (after, wireBytes) -> out.add(after));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // never thrown: the row callback does not wait
            throw new IllegalStateException(e);
        }
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
