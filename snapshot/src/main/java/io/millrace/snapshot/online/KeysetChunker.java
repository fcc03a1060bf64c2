package io.millrace.snapshot.online;

import io.millrace.core.change.KeyBound;
import io.millrace.core.change.OnlineTask.KeyRange;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Cuts one table's key space into chunks for an online snapshot, in key order, and keeps track of
 * what has landed.
 *
 * <p>INV: COVER — the ranges to copy start as a list that tiles the key space (the whole space
 * {@code (-∞, +∞)} for a new task; what a checkpoint says remains after a restart). Each cut takes
 * the front of the first range: {@code (lo, b]} where {@code b} is the {@code size}-th key after
 * {@code lo}, or the whole range when fewer keys follow. So chunks are disjoint, leave no gap, the
 * first is open below and the last open above; together with the chunks that landed they tile the
 * key space, and the rows read sum to the table's rows.
 *
 * <p>Several readers may cut from one chunker. Cuts are serialised, but the figures read while a cut
 * waits on its query ({@link #frontier()}, {@link #remaining()}) never wait on it. A cut whose query
 * fails leaves the ranges as they were. A chunk given back (its read failed) is cut again first.
 *
 * <p>Size feedback: each read reports its duration; the next size is the size that chunk was cut with,
 * scaled toward the target time by at most ×0.5…×2, within bounds. Reports size from the chunk they
 * measured, so concurrent reports do not compound. With a byte limit, a chunk holds at most as many rows
 * as fit in it at the rows' size: first estimated ({@link Boundaries#rowBytes()}), then as measured.
 */
public final class KeysetChunker {

    /** Finds chunk boundaries in the source. */
    @FunctionalInterface
    public interface Boundaries {
        /**
         * The {@code n}-th key of {@code range} ({@code (lo, hi]}), in key order, provided at least one more key follows it
         * in the range; empty otherwise (the range holds at most {@code n} keys).
         */
        Optional<KeyBound.Key> nth(KeyRange range, long n) throws Exception;

        /** An estimate of a row's size as read (bytes), before the first cut; 0 when unknown. */
        default long rowBytes() throws Exception {
            return 0;
        }
    }

    /**
     * Chunk sizes in rows, the time a chunk read should take, and the most bytes a chunk may hold (0: no
     * limit). The byte limit wins over the row bounds (INV: BOUNDED — a chunk is held in memory until its
     * high watermark): wide rows get chunks of fewer rows than {@code minRows}, down to one.
     */
    public record Sizing(long initialRows, long minRows, long maxRows, long targetNanos, long maxBytes) {
        public Sizing {
            if (minRows < 1 || maxRows < minRows || initialRows < minRows || initialRows > maxRows || targetNanos <= 0 || maxBytes < 0) {
                throw new IllegalArgumentException("chunk sizes need 1 <= min <= initial <= max, a positive target time and a"
                        + " byte limit >= 0; got " + this);
            }
        }

        public Sizing(long initialRows, long minRows, long maxRows, long targetNanos) {
            this(initialRows, minRows, maxRows, targetNanos, 0);
        }
    }

    /** One cut: read the rows in {@code range}; {@code size} is the row count it was cut for. */
    public record Chunk(long seq, KeyRange range, long size) {
    }

    private final Boundaries boundaries;
    private final Sizing sizing;
    private final Object cutLock = new Object();
    /** Ranges not cut yet, in key order. @GuardedBy("cutLock"), published to {@link #uncut} under {@code this}. */
    private final Deque<KeyRange> todo;
    /** Chunks given back for another read. @GuardedBy("this") */
    private final Deque<Chunk> retry = new ArrayDeque<>();
    /** Cut and not landed, by sequence (= key order). @GuardedBy("this") */
    private final Map<Long, Chunk> inFlight = new TreeMap<>();
    /** A copy of {@link #todo} for readers of the progress. @GuardedBy("this") */
    private List<KeyRange> uncut;
    private long seq;
    private volatile long size;
    /** The upper end of the last chunk cut; empty before the first cut. */
    private volatile Optional<KeyBound> frontier = Optional.empty();
    /** Bytes per row: the estimate, then the last chunk's measure; 0 unknown. */
    private volatile long rowBytes;
    private boolean estimated; // @GuardedBy("cutLock")

    public KeysetChunker(List<KeyRange> remaining, Sizing sizing, Boundaries boundaries) {
        this.todo = new ArrayDeque<>(remaining);
        this.uncut = List.copyOf(remaining);
        this.sizing = sizing;
        this.size = sizing.initialRows();
        this.boundaries = boundaries;
    }

    /**
     * The next chunk to read, or null when every range is cut (the task is finished once the chunks in
     * flight land). A failed boundary query throws and leaves the ranges as they were.
     */
    public Chunk next() throws Exception {
        synchronized (this) {
            Chunk again = retry.pollFirst();
            if (again != null) {
                inFlight.put(again.seq(), again);
                return again;
            }
        }
        synchronized (cutLock) {
            KeyRange first = todo.peekFirst();
            if (first == null) {
                return null;
            }
            if (!estimated && sizing.maxBytes() > 0) {
                rowBytes = Math.max(rowBytes, boundaries.rowBytes()); // may throw: nothing changed yet
                estimated = true;
            }
            long n = Math.min(size, byteCap());
            Optional<KeyBound.Key> b = boundaries.nth(first, n); // may throw: nothing changed yet
            KeyRange cut;
            KeyRange rest;
            if (b.isEmpty() || b.get().equals(first.hi())) {
                cut = first;
                rest = null;
            } else {
                cut = new KeyRange(first.lo(), b.get());
                rest = new KeyRange(b.get(), first.hi());
            }
            synchronized (this) {
                todo.pollFirst();
                if (rest != null) {
                    todo.addFirst(rest);
                }
                uncut = List.copyOf(todo);
                Chunk c = new Chunk(seq++, cut, n);
                inFlight.put(c.seq(), c);
                frontier = Optional.of(cut.hi());
                return c;
            }
        }
    }

    /** The upper end of the last chunk cut ({@link KeyBound#OPEN} once the last, open-above chunk is cut); empty before the first cut. */
    public Optional<KeyBound> frontier() {
        return frontier;
    }

    /** The chunk's rows were emitted into the stream: it no longer counts as remaining. */
    public synchronized void landed(Chunk c) {
        inFlight.remove(c.seq());
    }

    /**
     * The chunk's rows up to {@code key} (in key order) were emitted into a batch: until the rest lands, only
     * {@code (key, hi]} of it counts as remaining.
     */
    public synchronized void landedThrough(Chunk c, List<String> key) {
        Chunk now = inFlight.get(c.seq());
        if (now != null) {
            inFlight.put(c.seq(), new Chunk(c.seq(), new KeyRange(new KeyBound.Key(key), now.range().hi()), c.size()));
        }
    }

    /** The chunk's read failed: it is cut again (first) by the next {@link #next()}. */
    public synchronized void giveBack(Chunk c) {
        if (inFlight.remove(c.seq()) != null) {
            retry.addFirst(c);
        }
    }

    /** Reports that reading {@code c} took {@code nanos}; sets the size of the chunks cut next. */
    public void report(Chunk c, long rows, long nanos) {
        report(c, rows, nanos, 0);
    }

    /**
     * Reports that reading {@code c} took {@code nanos} and {@code bytes} (as read); sets the size of the chunks
     * cut next: toward the target time, and within the byte limit at the rows' measured size.
     */
    public void report(Chunk c, long rows, long nanos, long bytes) {
        if (rows > 0 && bytes > 0) {
            rowBytes = Math.max(1, bytes / rows);
        }
        if (rows < c.size() / 2 || nanos <= 0) {
            return; // a short chunk (the last) says little about the rate
        }
        double factor = Math.max(0.5, Math.min(2.0, (double) sizing.targetNanos() / nanos));
        size = Math.max(sizing.minRows(), Math.min(sizing.maxRows(), Math.round(c.size() * factor)));
    }

    /** The most rows a chunk may hold under the byte limit at the rows' known size. */
    private long byteCap() {
        long rb = rowBytes;
        return sizing.maxBytes() > 0 && rb > 0 ? Math.max(1, sizing.maxBytes() / rb) : Long.MAX_VALUE;
    }

    /** The size the next chunk is cut with. */
    public long size() {
        return Math.min(size, byteCap());
    }

    /** Ranges not landed, in key order: chunks in flight or given back, then the uncut ranges. */
    public synchronized List<KeyRange> remaining() {
        TreeMap<Long, KeyRange> bySeq = new TreeMap<>();
        inFlight.values().forEach(c -> bySeq.put(c.seq(), c.range()));
        retry.forEach(c -> bySeq.put(c.seq(), c.range()));
        List<KeyRange> out = new ArrayList<>(bySeq.values());
        out.addAll(uncut);
        return out;
    }

    /**
     * True when no chunk was cut yet and the whole key space is still to be read: every row, whatever its key, is
     * read by a chunk whose low watermark is written from now on.
     */
    public synchronized boolean untouched() {
        return seq == 0 && retry.isEmpty() && todo.size() == 1 && KeyRange.ALL.equals(todo.peekFirst());
    }

    /** True when everything was cut and every chunk landed. */
    public synchronized boolean finished() {
        return uncut.isEmpty() && inFlight.isEmpty() && retry.isEmpty();
    }
}
