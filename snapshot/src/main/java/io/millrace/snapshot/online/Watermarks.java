package io.millrace.snapshot.online;

import io.millrace.core.change.OnlineTask;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.types.UnchangedToast;
import io.millrace.pipeline.WatermarkStream;

import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The meeting point of online snapshot readers and the stream (DBLog's watermark algorithm).
 *
 * <p>A reader {@link #open opens} a window, writes the low watermark (a transactional logical
 * message {@code L <id>} with prefix {@link #PREFIX}), reads one chunk of rows in key order,
 * {@link Window#fill fills} the window with them, and writes the high watermark {@code H <id>}.
 * The assembler sees both messages in commit order: from {@code L} on it records every key the
 * stream changes in that table; at {@code H} it emits the chunk's rows whose key the stream did not
 * change (a truncate drops them all), at the high watermark's position, before any later change —
 * INV: WATERMARK. A row the stream changed is stale in the chunk, and the stream's own event
 * carries its newer state; every other row is exactly as the stream left it at {@code H}.
 *
 * <p>Visibility is not WAL order: a transaction's commit record is written before it becomes visible,
 * so one committed just before the low watermark may still be invisible to the chunk's read, and the
 * stream would emit its change before the stale row. The reader therefore reads in a snapshot whose
 * in-progress transactions it hands over ({@link Window#fill}); the assembler remembers the last
 * {@value #RECENT} committed transaction ids, and a chunk whose snapshot missed a transaction the
 * stream had already passed before the low watermark is not emitted but read again
 * ({@link Window.Outcome.ReadAgain}).
 *
 * <p>A watermark whose id is not registered (written by an earlier run, replayed after a restart)
 * is ignored: that run's chunk did not land, and the chunk is read again.
 *
 * <p>The pipeline's assembler calls it through {@link WatermarkStream} (the stream's side); the online snapshot's
 * readers through the public methods here.
 *
 * <p>Thread-safe: readers open and fill windows; the assembler thread alone reads their key sets.
 */
public final class Watermarks implements WatermarkStream {
    /** Prefix of Millrace's logical messages; messages with other prefixes are ignored. */
    public static final String PREFIX = WatermarkStream.PREFIX;

    private final Map<String, Window> windows = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicBoolean dirty = new java.util.concurrent.atomic.AtomicBoolean();
    private volatile Supplier<List<OnlineTask>> progress = List::of;
    /** Assembler thread only: windows between their low and high watermark, by table. */
    private final Map<TableRef, List<Window>> open = new HashMap<>();
    private int openCount;

    /** How many recent commits the assembler remembers to check chunk snapshots against. */
    static final int RECENT = 1 << 16;
    private volatile boolean active;
    // Assembler thread only: the ids (low 32 bits) of the last RECENT commits, and their sequence numbers.
    private final long[] recent = new long[RECENT];
    private final Map<Long, Long> recentSeq = new HashMap<>();
    private long commits;
    /** Assembler thread only: the highest transaction id committed so far (low 32 bits, modulo 2^32), -1 none. */
    private long maxXid = -1;

    /**
     * The online snapshot's side of updates that keep unchanged TOAST values and move a row's key while its table is
     * being copied. Such an update cannot be applied where the old row is not in the destination yet, and when the new
     * key lies in a part of the table already copied no chunk would bring the row: the snapshot reads it again by key.
     */
    public interface Moves {
        /** Whether an online snapshot is still copying {@code table}. Assembler thread. */
        boolean copying(TableRef table);

        /**
         * An update of {@code r} that kept unchanged TOAST values and carried an old key ({@code before}); the
         * snapshot reads the row of the new key again if the key changed. Assembler thread: recorded with the batch
         * holding the update (INV: RESUME).
         */
        void moved(RelationInfo r, Object[] before, Object[] after);
    }

    private volatile Moves moves;

    /** Deletes emitted by reconciling chunks ({@link Window#gone}) since start. */
    private final java.util.concurrent.atomic.AtomicLong reconciled = new java.util.concurrent.atomic.AtomicLong();

    /** Rows that reconciling chunks deleted because the source no longer had them (see {@link Window#gone}). Any thread. */
    public long reconcileDeletes() {
        return reconciled.get();
    }

    void reconciled(long n) {
        reconciled.addAndGet(n);
    }

    /** Where updates that move a row while its table is copied go (see {@link Moves}). */
    public void moves(Moves m) {
        this.moves = m;
    }

    /** Whether a partial update of {@code table} with an old key must go to {@link #moved}. Assembler thread. */
    @Override
    public boolean copying(TableRef table) {
        Moves m = moves;
        return m != null && m.copying(table);
    }

    /** An update {@link #copying} let through, its {@code after} holding unchanged TOAST values (the caller checked). */
    @Override
    public void moved(RelationInfo r, Object[] before, Object[] after) {
        Moves m = moves;
        if (m != null) {
            m.moved(r, before, after);
        }
    }

    /** Where the online snapshot progress comes from; read by the assembler when it is {@link #markDirty() dirty}. */
    public void progressSource(Supplier<List<OnlineTask>> source) {
        this.progress = source;
    }

    /**
     * The online snapshot progress changed (a task was added, or a chunk emitted): the assembler records
     * it with its next batch. INV: RESUME — it is read on the assembler thread, so it counts as landed only
     * chunks whose rows the assembler already emitted into this or an earlier batch.
     */
    public void markDirty() {
        dirty.set(true);
    }

    @Override
    public boolean dirty() {
        return dirty.get();
    }

    /** The progress to record with the batch being cut, or null when unchanged. Assembler thread. */
    @Override
    public List<OnlineTask> takeProgress() {
        return dirty.getAndSet(false) ? progress.get() : null;
    }

    /**
     * Registers a window for one chunk of {@code relation}, keyed by {@code keyColumns}.
     *
     * @param onEmitted called on the assembler thread right after the chunk's rows were emitted (before the
     *                  progress is taken), with the number of rows emitted
     */
    public Window open(RelationInfo relation, List<String> keyColumns, java.util.function.LongConsumer onEmitted) {
        return open(relation, keyColumns, onEmitted, null);
    }

    /**
     * As {@link #open(RelationInfo, List, java.util.function.LongConsumer)}, and {@code onLandedThrough} is called on
     * the assembler thread when a batch is cut inside the chunk's rows, with the key (as PostgreSQL text) of the last
     * row in that batch: the chunk's rows are handed in key order, so those up to it land with the batch.
     */
    public Window open(RelationInfo relation, List<String> keyColumns, java.util.function.LongConsumer onEmitted,
                       java.util.function.Consumer<List<String>> onLandedThrough) {
        Window w = new Window(UUID.randomUUID().toString(), relation, keyColumns, onEmitted, onLandedThrough);
        windows.put(w.id, w);
        return w;
    }

    /** Number of rows held by windows (read and not yet emitted), for the peak-buffer figure. */
    public long bufferedRows() {
        long n = 0;
        for (Window w : windows.values()) {
            List<Object[]> rows = w.rows;
            n += rows == null ? 0 : rows.size();
        }
        return n;
    }

    /** Whether online snapshots are under way: the assembler then remembers recent commits (see class comment). */
    public void active(boolean on) {
        this.active = on;
    }

    /**
     * The reader gave the window up (its read failed before the high watermark was written): the assembler stops
     * recording keys for it, and its watermarks, if they still come, are ignored. Any thread.
     */
    public void abandon(Window w) {
        windows.remove(w.id);
        w.move(Window.Phase.ABANDONED);
    }

    // ---- assembler side -------------------------------------------------------------------------

    /** A transaction committed in the stream. */
    @Override
    public void committed(long xid) {
        if (!active) {
            return;
        }
        int slot = (int) (commits % RECENT);
        if (commits >= RECENT) {
            Long old = recent[slot];
            Long seq = recentSeq.get(old);
            if (seq != null && seq == commits - RECENT) {
                recentSeq.remove(old);
            }
        }
        long x = xid & 0xFFFF_FFFFL;
        if (maxXid < 0 || (int) (x - maxXid) > 0) {
            maxXid = x;
        }
        recent[slot] = x;
        recentSeq.put(x, commits);
        commits++;
    }

    /**
     * True when the chunk's snapshot did not see a transaction that the stream passed before the low
     * watermark: its change would be emitted before the chunk's stale row, so the chunk must be read again.
     */
    boolean missedBeforeLow(Window w) {
        // A transaction with an id from the snapshot's xmax on is invisible to it but not in its in-progress list
        // (xmax is the newest completed id + 1 when the snapshot is taken): one committed before the low watermark
        // with such an id is missed as surely as one in the list.
        if (w.maxXidBeforeLow >= 0 && (int) (w.maxXidBeforeLow - w.xmax) >= 0) {
            return true;
        }
        for (long x : w.invisible) {
            Long seq = recentSeq.get(x & 0xFFFF_FFFFL);
            if (seq != null && seq < w.commitsAtLow) {
                return true;
            }
        }
        return false;
    }

    /**
     * A watermark message (INV: WATERMARK). Low: the stream starts recording the keys it changes in the chunk's table.
     * High: the chunk leaves the open windows and is given to the assembler to emit, unless it must be read again — its
     * low watermark was not seen (no key was recorded), its snapshot missed a transaction the stream passed before the
     * low watermark, an update with unchanged TOAST values cannot be laid over it, or its table changed shape.
     */
    @Override
    public Window watermark(byte[] content) {
        Window low = byMessage(content, 'L');
        if (low != null) {
            low(low);
            return null;
        }
        Window w = byMessage(content, 'H');
        if (w == null) {
            return null; // not ours, or an earlier run's: that chunk is read again
        }
        List<Object[]> rows = w.rows;
        high(w);
        if (rows == null) {
            throw new io.millrace.core.MillraceException(io.millrace.core.MillraceException.Kind.INTERNAL, "online snapshot chunk "
                    + w.id() + " of " + w.relation().table() + " reached its high watermark without its rows");
        }
        if (w.phase() == Window.Phase.REGISTERED || missedBeforeLow(w) || missedPartial(w) || w.reshaped()) {
            w.readAgain();
            return null;
        }
        return w;
    }

    @Override
    public void emitted(Chunk chunk, long rows, long deleted) {
        reconciled(deleted);
        ((Window) chunk).emitted(rows);
        markDirty(); // its progress is recorded with the batch holding the chunk's last row, or a later one
    }

    /** The window a watermark message names, or null (not ours, or from an earlier run). */
    Window byMessage(byte[] content, char kind) {
        if (content.length < 3 || content[0] != kind || content[1] != ' ') {
            return null;
        }
        return windows.get(new String(content, 2, content.length - 2, java.nio.charset.StandardCharsets.US_ASCII));
    }

    void low(Window w) {
        if (!w.move(Window.Phase.OPEN)) {
            return; // its low watermark again (the stream replayed it after a reconnect), or a reader gave it up meanwhile
        }
        w.commitsAtLow = commits;
        w.maxXidBeforeLow = maxXid;
        open.computeIfAbsent(w.relation.table(), t -> new java.util.ArrayList<>()).add(w);
        openCount++;
    }

    /**
     * A Relation message described {@code r}: an open window (past its low watermark) on that table whose chunk was read
     * under another name or in other columns is read again at its high watermark. Its rows would come after changes in
     * the new shape, and a change of the table under its new name does not find the window (INV: WATERMARK).
     * Assembler thread.
     */
    @Override
    public void described(RelationInfo r) {
        if (openCount == 0) {
            return;
        }
        for (List<Window> ws : open.values()) {
            for (Window w : ws) {
                if (w.relation.oid() == r.oid() && !sameTable(w.relation, r)) {
                    w.reshaped = true;
                }
            }
        }
    }

    /** Same name, same columns (names, types, modifiers) in the same order; key flags aside. */
    private static boolean sameTable(RelationInfo a, RelationInfo b) {
        if (!a.table().equals(b.table()) || a.columnCount() != b.columnCount()) {
            return false;
        }
        for (int i = 0; i < a.columnCount(); i++) {
            io.millrace.core.schema.ColumnInfo x = a.column(i);
            io.millrace.core.schema.ColumnInfo y = b.column(i);
            if (!x.name().equals(y.name()) || x.typeMod() != y.typeMod() || x.type() == null || y.type() == null
                    || x.type().oid() != y.type().oid()) {
                return false;
            }
        }
        return true;
    }

    /** The window's high watermark arrived: it leaves the open set; its surviving rows are emitted by the caller. */
    void high(Window w) {
        List<Window> ws = open.get(w.relation.table());
        if (ws != null && ws.remove(w)) {
            openCount--;
            if (ws.isEmpty()) {
                open.remove(w.relation.table());
            }
        }
        windows.remove(w.id);
    }

    /**
     * A streamed change of {@code r} by transaction {@code xid}: every open window on its table forgets the
     * rows with these keys. An update that keeps unchanged TOAST values ({@code after} holds
     * {@link UnchangedToast}) is not a whole row: the destination may not have the row yet to take them from,
     * so it does not make the chunk's row stale. The chunk's row is emitted instead: as read when the chunk's
     * snapshot saw the update (it is then the newer image), else with the update's values laid over it
     * ({@link Window#current}); a key change the snapshot did not see has the chunk read again
     * ({@link #missedPartial}).
     */
    @Override
    public void changed(RelationInfo r, Object[] before, Object[] after, long xid) {
        if (openCount == 0) {
            return;
        }
        List<Window> ws = open.get(r.table());
        if (ws == null) {
            return;
        }
        boolean part = UnchangedToast.in(after);
        for (java.util.Iterator<Window> it = ws.iterator(); it.hasNext(); ) {
            Window w = it.next();
            if (w.phase() == Window.Phase.ABANDONED) {
                it.remove(); // its high watermark will never come
                openCount--;
                continue;
            }
            int[] idx = w.indexesIn(r);
            Key a = after == null ? null : Key.of(after, idx);
            Key b = before == null ? null : Key.of(before, idx);
            if (b != null && (!part || !b.equals(a))) {
                w.changed.add(b);
            }
            if (a != null) {
                if (part) {
                    boolean rekey = b != null && !b.equals(a);
                    boolean sameShape = r == w.relation || r.sameShape(w.relation);
                    w.partials.add(new Partial(a, after, xid, rekey, !sameShape));
                } else {
                    w.changed.add(a);
                }
            }
        }
    }

    /**
     * Sorts out the updates with unchanged TOAST values the stream passed in {@code w}'s window, at its high
     * watermark. Keys a whole change made stale are dropped as usual (the stream rebuilds them); updates the
     * chunk's snapshot saw are already in its rows. Each other update is laid over its key's chunk row
     * ({@link Window#current}): its unchanged columns kept their values since the chunk's read, or a change in
     * between carried them. A key change is left to the read of its new key ({@link Moves}). Returns true when
     * none of that can be done — a key change with no online snapshot to read it, or an update of a row of this
     * chunk in a shape other than the chunk's — and the chunk must be read again.
     */
    boolean missedPartial(Window w) {
        Set<Key> chunkKeys = null;
        for (Partial p : w.partials) {
            if (w.changed.contains(p.key) || w.sees(p.xid)) {
                continue;
            }
            if (p.rekey) {
                if (moves == null) {
                    return true; // the row moved to this key after the read: only a new read finds it
                }
                // The online snapshot reads the new key again by itself (Moves): reading the whole chunk again for
                // it would never end while rows keep moving into its range.
                continue;
            }
            if (p.otherShape) {
                // Columns moved since the chunk was read: the update cannot be laid over a row of this chunk.
                if (chunkKeys == null) {
                    chunkKeys = new HashSet<>();
                    for (Object[] row : w.rows) {
                        chunkKeys.add(Key.of(row, w.keyIndexes));
                    }
                }
                if (chunkKeys.contains(p.key)) {
                    return true;
                }
                continue;
            }
            w.overlays.computeIfAbsent(p.key, k -> new java.util.ArrayList<>()).add(p.after);
        }
        return false;
    }

    /** A streamed update of a window's table that kept unchanged TOAST values. */
    private record Partial(Key key, Object[] after, long xid, boolean rekey, boolean otherShape) {
    }

    /** True when a window is open on {@code table}: its streamed changes must reach {@link #changed} decoded. */
    @Override
    public boolean watches(TableRef table) {
        return openCount > 0 && open.containsKey(table);
    }

    @Override
    public void truncated(TableRef table) {
        List<Window> ws = open.get(table);
        if (ws != null) {
            ws.forEach(w -> w.truncated = true);
        }
    }

    /**
     * One chunk between its two watermarks.
     *
     * <p>Threads: the reader that {@link Watermarks#open opened} it fills it, waits for its {@link #await outcome} and
     * may {@link Watermarks#abandon abandon} it; the assembler thread moves it at its watermarks and alone reads the key
     * sets. Its {@link Phase} is moved by both, atomically; the fields the reader hands over are volatile, those marked
     * "assembler thread only" are confined to that thread.
     */
    public static final class Window implements WatermarkStream.Chunk {
        /**
         * Where a window is. It lives in one run only and is never stored: a watermark written by an earlier run finds
         * no window, and its chunk is read again (the chunker's progress, which is stored, did not count it).
         *
         * <pre>
         *   REGISTERED ──low watermark──▶ OPEN ──high watermark──▶ EMITTED
         *       │  └──high watermark, low unseen──┐  ├──────────────▶ READ_AGAIN
         *       └──────abandon──▶ ABANDONED ◀─abandon┘
         * </pre>
         * A move not drawn throws, but for three that races and replays make ordinary, which leave the phase as it is:
         * a low watermark seen again (the stream replays from the durable position after a reconnect), a low or high
         * watermark reaching a window its reader abandoned meanwhile, and an abandon after the outcome.
         */
        public enum Phase {
            /** Opened by a reader ({@link Watermarks#open}); the stream has not reached its low watermark yet. */
            REGISTERED,
            /** Set by the assembler at the low watermark: from here on it records the keys the stream changes in the table. */
            OPEN,
            /** Set by the assembler at the high watermark: the chunk's surviving rows were emitted. Final. */
            EMITTED,
            /**
             * Set by the assembler at the high watermark: the chunk must be read again (its snapshot missed a transaction
             * the stream passed, or the table changed shape in the window, or the low watermark was not seen). Final.
             */
            READ_AGAIN,
            /** Set by the reader ({@link Watermarks#abandon}): its read failed; its watermarks are ignored. Final. */
            ABANDONED;

            boolean isFinal() {
                return this == EMITTED || this == READ_AGAIN || this == ABANDONED;
            }
        }

        /** What became of a chunk at its high watermark ({@link #await}). */
        public sealed interface Outcome {
            /** Its rows the stream did not change meanwhile were emitted: {@code rows} of them. */
            record Emitted(long rows) implements Outcome {
            }

            /** It was not emitted: the reader reads it again. */
            record ReadAgain() implements Outcome {
            }
        }

        private final String id;
        private final RelationInfo relation;
        private final List<String> keyColumns;
        private final int[] keyIndexes;
        private final java.util.function.LongConsumer onEmitted;
        private final java.util.function.Consumer<List<String>> onLandedThrough;
        private final CountDownLatch emitted = new CountDownLatch(1);
        private volatile List<Object[]> rows;
        /** Old images (key columns only) of rows the destinations hold in the chunk's range and the source no longer has. */
        private volatile List<Object[]> gone = List.of();
        private volatile int textBytesPerRow;
        private volatile long[] invisible = new long[0];
        /** The chunk snapshot's xmax (low 32 bits): transactions from it on were not seen. */
        private volatile long xmax;
        private final java.util.concurrent.atomic.AtomicReference<Phase> phase =
                new java.util.concurrent.atomic.AtomicReference<>(Phase.REGISTERED);
        /** Set before {@link #emitted} is counted down (which publishes it). */
        private volatile Outcome outcome;
        // Assembler thread only.
        private long commitsAtLow;
        private long maxXidBeforeLow = -1;
        private boolean truncated;
        private final Set<Key> changed = new HashSet<>();
        private final List<Partial> partials = new java.util.ArrayList<>();
        private final Map<Key, List<Object[]>> overlays = new HashMap<>();
        private RelationInfo lastShape;
        private int[] lastIndexes;
        /** The table was described in another shape after the low watermark ({@link Watermarks#described}). */
        private boolean reshaped;

        private Window(String id, RelationInfo relation, List<String> keyColumns, java.util.function.LongConsumer onEmitted,
                       java.util.function.Consumer<List<String>> onLandedThrough) {
            this.id = id;
            this.relation = relation;
            this.keyColumns = List.copyOf(keyColumns);
            this.keyIndexes = indexes(relation, keyColumns);
            this.onEmitted = onEmitted;
            this.onLandedThrough = onLandedThrough;
        }

        /** Whether the chunk must be read again because its table changed shape meanwhile (assembler thread). */
        boolean reshaped() {
            return reshaped;
        }

        /** A batch is cut after {@code row} of this chunk (assembler thread, before the batch's progress is taken). */
        @Override
        public void landedThrough(Object[] row) {
            if (onLandedThrough == null) {
                return;
            }
            List<String> key = new java.util.ArrayList<>(keyIndexes.length);
            for (int i : keyIndexes) {
                key.add(relation.codec(i).toPgText(row[i]));
            }
            onLandedThrough.accept(key);
        }

        /** The id written in both watermarks. */
        public String id() {
            return id;
        }

        /** The low or high watermark message's content. */
        public String message(boolean low) {
            return (low ? "L " : "H ") + id;
        }

        /**
         * Hands over the chunk's rows (in the relation's column order) and, of the snapshot that read them, the
         * ids of the transactions in progress and its xmax; call before writing the high watermark.
         */
        public void fill(List<Object[]> chunkRows, long[] inProgress, long snapshotXmax) {
            fill(chunkRows, inProgress, snapshotXmax, 0);
        }

        /** As {@link #fill(List, long[], long)}, with the size of the rows as read ({@code COPY} text), for the memory budget. */
        public void fill(List<Object[]> chunkRows, long[] inProgress, long snapshotXmax, long textBytes) {
            this.invisible = inProgress.clone();
            this.xmax = snapshotXmax & 0xFFFF_FFFFL;
            this.textBytesPerRow = chunkRows.isEmpty() ? 0 : (int) Math.min(Integer.MAX_VALUE, textBytes / chunkRows.size());
            this.rows = chunkRows;
        }

        /**
         * Hands over, of a reconciling chunk, the rows the destinations hold in its key range that its read did not find
         * (old images: the key columns set, the others null); call before {@link #fill}. At the high watermark each is
         * emitted as a delete unless the stream changed its key since the low watermark (INV: WATERMARK — the key may
         * have been inserted again after the read: the stream's event is the newer state, the delete would undo it).
         */
        public void gone(List<Object[]> oldImages) {
            this.gone = List.copyOf(oldImages);
        }

        @Override
        public List<Object[]> gone() {
            return gone;
        }

        /** The average size of the chunk's rows as read (0: unknown): their heap cost is estimated from it (INV: BOUNDED). */
        @Override
        public int encodedBytesPerRow() {
            return textBytesPerRow;
        }

        /** Whether the chunk's snapshot saw committed transaction {@code xid} (32-bit, compared modulo 2^32). */
        boolean sees(long xid) {
            long x = xid & 0xFFFF_FFFFL;
            if ((int) (x - xmax) >= 0) {
                return false;
            }
            for (long v : invisible) {
                if ((v & 0xFFFF_FFFFL) == x) {
                    return false;
                }
            }
            return true;
        }

        /** Waits until the assembler reached the chunk's high watermark; empty on timeout. Reader thread. */
        public java.util.Optional<Outcome> await(long millis) throws InterruptedException {
            return emitted.await(millis, TimeUnit.MILLISECONDS) ? java.util.Optional.of(outcome) : java.util.Optional.empty();
        }

        /** Where the window is now. Any thread. */
        public Phase phase() {
            return phase.get();
        }

        /**
         * Moves the window to {@code to} (see {@link Phase}); false when the move leaves it where it is (a replayed low
         * watermark, a watermark after an abandon, an abandon after the outcome). A move not in the diagram throws.
         */
        boolean move(Phase to) {
            while (true) {
                Phase from = phase.get();
                boolean legal = switch (to) {
                    case REGISTERED -> false;
                    case OPEN -> from == Phase.REGISTERED;
                    case EMITTED -> from == Phase.OPEN;
                    case READ_AGAIN -> from == Phase.OPEN || from == Phase.REGISTERED;
                    case ABANDONED -> from == Phase.REGISTERED || from == Phase.OPEN;
                };
                if (!legal) {
                    boolean stays = to == Phase.OPEN && (from == Phase.OPEN || from == Phase.ABANDONED)
                            || (to == Phase.EMITTED || to == Phase.READ_AGAIN) && from == Phase.ABANDONED
                            || to == Phase.ABANDONED && from.isFinal();
                    if (stays) {
                        return false;
                    }
                    throw new IllegalStateException("online snapshot window " + id + " of " + relation.table() + ": no move from "
                            + from + " to " + to);
                }
                if (phase.compareAndSet(from, to)) {
                    return true;
                }
            }
        }

        @Override
        public RelationInfo relation() {
            return relation;
        }

        @Override
        public List<Object[]> rows() {
            return rows;
        }

        @Override
        public boolean isStale(Object[] row) {
            return truncated || changed.contains(Key.of(row, keyIndexes));
        }

        /**
         * The chunk row as the stream left it at the high watermark: the row as read, with the values of the
         * updates the snapshot did not see laid over it in commit order (each update's unchanged TOAST values
         * keep the row's). Call after {@link Watermarks#missedPartial}.
         */
        @Override
        public Object[] current(Object[] row) {
            if (overlays.isEmpty()) {
                return row;
            }
            List<Object[]> over = overlays.get(Key.of(row, keyIndexes));
            if (over == null) {
                return row;
            }
            Object[] out = row.clone();
            for (Object[] after : over) {
                for (int i = 0; i < out.length && i < after.length; i++) {
                    if (after[i] != UnchangedToast.INSTANCE) {
                        out[i] = after[i];
                    }
                }
            }
            return out;
        }

        /** The chunk's rows were emitted at its high watermark: {@code rowsEmitted} of them. Assembler thread. */
        void emitted(long rowsEmitted) {
            move(Phase.EMITTED); // an abandoned window stays so (its rows went out all the same); its reader no longer waits
            if (onEmitted != null) {
                onEmitted.accept(rowsEmitted);
            }
            finish(new Outcome.Emitted(rowsEmitted));
        }

        /** The chunk was not emitted at its high watermark: it is read again. Assembler thread. */
        void readAgain() {
            move(Phase.READ_AGAIN);
            finish(new Outcome.ReadAgain());
        }

        private void finish(Outcome o) {
            outcome = o;
            rows = null;
            gone = List.of();
            emitted.countDown();
        }

        /** Key column positions in a streamed relation of the same table (columns may have moved since the chunk was read). */
        private int[] indexesIn(RelationInfo r) {
            if (r != lastShape) {
                lastIndexes = r == relation ? keyIndexes : indexes(r, keyColumns);
                lastShape = r;
            }
            return lastIndexes;
        }

        private static int[] indexes(RelationInfo r, List<String> names) {
            int[] idx = new int[names.size()];
            for (int k = 0; k < idx.length; k++) {
                idx[k] = -1;
                for (int i = 0; i < r.columnCount(); i++) {
                    if (r.column(i).name().equals(names.get(k))) {
                        idx[k] = i;
                        break;
                    }
                }
            }
            return idx;
        }
    }

    /** Key values compared by value (arrays too: bytea keys). */
    static final class Key {
        private final Object[] values;
        private final int hash;

        private Key(Object[] values) {
            this.values = values;
            this.hash = Arrays.deepHashCode(values);
        }

        static Key of(Object[] row, int[] idx) {
            Object[] v = new Object[idx.length];
            for (int k = 0; k < idx.length; k++) {
                v[k] = idx[k] < 0 || idx[k] >= row.length ? null : row[idx[k]];
            }
            return new Key(v);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && hash == k.hash && Arrays.deepEquals(values, k.values);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }
}
