package io.millrace.pipeline;

import io.millrace.core.ByteBudget;
import io.millrace.core.HeapCost;
import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.sink.Sink;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.IntFunction;

/**
 * The pipeline between the replication reader (or the snapshot readers) and the sinks:
 * <pre>
 *   reader ──offer()──► [raw channel] ──► assembler thread ──► [batch channel] ──► writer thread ──► sinks
 *   snapshot readers ──submit()─────────────────────────────────┘                         └──► onDurable (slot feedback)
 * </pre>
 * The owner starts it, feeds it, and waits on {@link #failure()}: the first error of any stage stops
 * every stage and is rethrown by {@link #join()} (INV: NO-SILENT-ERROR). Threads are registered
 * (their failure handler set) before they start.
 */
public final class Pipeline implements AutoCloseable {

    /**
     * @param budgetBytes    bytes on the heap in flight between the reader and durable (INV: BOUNDED): a quarter for
     *                       messages the reader has read and the assembler not yet taken, the rest for rows in batches
     *                       until they are durable ({@link HeapCost})
     * @param batchBytes     a batch is cut after a commit once its rows take this many bytes on the heap
     * @param maxBatchBytes  a batch is cut inside a transaction at this size (at most half the rows' budget)
     * @param lingerMillis   a batch is cut after a commit once it is this old
     * @param decoders       threads of the decoder pool for streamed rows; 0 decodes on the assembler thread
     * @param decodeChunkRows rows handed to a decoder at a time (coordination per row would cost more than decoding it)
     */
    public record Options(long budgetBytes, long batchBytes, long maxBatchBytes, long lingerMillis, int decoders,
                          int decodeChunkRows) {
        /** Default number of rows a decoder takes at a time (docs/BENCHMARKS.md). */
        public static final int DEFAULT_DECODE_CHUNK_ROWS = 1024;

        public Options {
            if (decoders < 0) {
                throw new IllegalArgumentException("pipeline.decoders must not be negative, got " + decoders);
            }
            if (decodeChunkRows < 1) {
                throw new IllegalArgumentException("decode chunk rows must be positive, got " + decodeChunkRows);
            }
        }

        /** Rows decoded on the assembler thread (no decoder pool). */
        public Options(long budgetBytes, long batchBytes, long maxBatchBytes, long lingerMillis) {
            this(budgetBytes, batchBytes, maxBatchBytes, lingerMillis, 0, DEFAULT_DECODE_CHUNK_ROWS);
        }

        /**
         * A budget of 64 MB, or an eighth of the heap when that is less (at least 8 MB). The budget counts what the
         * rows in flight take on the heap ({@link HeapCost}); the destinations' own copies of a batch being applied
         * come on top, so the heap needs room for several times the budget (INV: BOUNDED; docs/BENCHMARKS.md).
         */
        public static Options defaults() {
            long budget = Math.max(8L << 20, Math.min(64L << 20, Runtime.getRuntime().maxMemory() / 8));
            return new Options(budget, 4L << 20, Math.min(16L << 20, budget / 2), 200);
        }

        public Options withDecoders(int n) {
            return new Options(budgetBytes, batchBytes, maxBatchBytes, lingerMillis, n, decodeChunkRows);
        }

        public Options withDecodeChunkRows(int n) {
            return new Options(budgetBytes, batchBytes, maxBatchBytes, lingerMillis, decoders, n);
        }
    }

    private record Raw(Lsn at, byte[] data, int off, int len) {
    }

    /** Messages read and not yet taken by the assembler get this share of the budget; rows in batches the rest. */
    static final int RAW_SHARE_DIVISOR = 4;

    private final Options options;
    private final Failure failure = new Failure();
    private final ByteBudget budget;
    private final ByteBudget held;
    /** Messages cross from the reader to the assembler in batches: one hand-off per batch, not per message. */
    private final Channel<List<Raw>> raw;
    /** Reader thread only: messages read since the last hand-off. */
    private List<Raw> pendingRaw = new ArrayList<>(RAW_BATCH);
    private static final int RAW_BATCH = 512;
    /** Batches to the writer in order; a streamed batch may still be in the decoder pool (it waits at the head). */
    private final Channel<Staged> batches;
    private final SinkWriter writer;
    private final PipelineStats stats = new PipelineStats();
    private final List<Thread> threads = new ArrayList<>();
    private final java.util.concurrent.atomic.AtomicLong submitted = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong applied = new java.util.concurrent.atomic.AtomicLong();
    private Assembler assembler;
    private volatile WatermarkStream watermarks = WatermarkStream.NONE;

    public Pipeline(Options options, List<Sink> sinks, List<Checkpoint> checkpoints, Consumer<Lsn> onDurable) {
        this.options = options;
        // INV: BOUNDED — two budgets. The reader's covers messages until the assembler has taken them (it never waits
        // on anything but the assembler). The rows' covers every row in a batch until the batch is durable: streamed,
        // replayed from the spill, read by a snapshot. The assembler waits on it, never the reader, so a wait for room
        // never depends on messages only the waiting thread could consume.
        long rawBytes = Math.max(1, options.budgetBytes() / RAW_SHARE_DIVISOR);
        this.budget = new ByteBudget(rawBytes);
        this.held = new ByteBudget(Math.max(1, options.budgetBytes() - rawBytes));
        this.maxBatchBytes = Math.max(1, Math.min(options.maxBatchBytes(), held.limit() / 2));
        this.batchBytes = Math.min(options.batchBytes(), maxBatchBytes);
        this.raw = new Channel<>(256, failure);
        this.batches = new Channel<>(4, failure);
        this.writer = new SinkWriter(sinks, checkpoints, held, onDurable, stats);
    }

    private final long maxBatchBytes;
    private final long batchBytes;

    /** The reader's budget: messages read and not yet taken by the assembler. The reader waits while it is spent. */
    public ByteBudget budget() {
        return budget;
    }

    /** Bytes in flight now: messages not yet assembled and rows not yet durable (INV: BOUNDED). Any thread. */
    public long inflightBytes() {
        return budget.used() + held.used();
    }

    /** Events the assembler handed on so far (tests). */
    long eventsAssembled() {
        Assembler a = assembler;
        return a == null ? 0 : a.eventsOut();
    }

    /** The budget of rows in batches until they are durable. */
    public ByteBudget heldBudget() {
        return held;
    }

    public Failure failure() {
        return failure;
    }

    public PipelineStats stats() {
        return stats;
    }

    private volatile Assembler.Signals signals;
    private volatile DecodePool.Hook decodeHook = () -> {
    };

    /** Test seam: runs on a decoder before each chunk (stress tests inject delays). Call before {@link #startStreaming}. */
    void decodeHook(DecodePool.Hook hook) {
        this.decodeHook = hook;
    }
    private volatile java.util.function.BiConsumer<io.millrace.core.schema.RelationInfo, io.millrace.core.schema.RelationInfo> shapeChange;

    /**
     * Calls {@code callback(before, after)} on the assembler thread, in commit order, when a relation's shape
     * changes while streaming (pgoutput sends a Relation message with other columns), and when the stream describes a
     * relation again in the same shape (after DDL, a column dropped and added again under its name looks the same:
     * the callee tells by the catalog); {@code before} is null when the
     * change was made where the stream does not show it ({@link #shapesWritten}). Call before {@link #startStreaming}.
     */
    public void onShapeChange(java.util.function.BiConsumer<io.millrace.core.schema.RelationInfo, io.millrace.core.schema.RelationInfo> callback) {
        this.shapeChange = callback;
    }

    /**
     * Decides about a table whose stream shows fewer columns than it had: a column dropped, or left out by a publication's
     * column list ({@code ALTER PUBLICATION … SET TABLE t (a, b)} while Millrace runs). pgoutput then sends the listed
     * columns only, and a destination that followed that shape would drop the column left out, values and all, and
     * apply the changes' other columns as if it were gone. Called on the assembler thread, in stream order.
     */
    public interface Withholding {
        /**
         * {@code rel} lacks {@code missing}, columns of the shape before it (the stream's, or the start's catalog's at a
         * table's first Relation message of the run when a destination wrote the table in another shape). True when they
         * are still in the source (left out, not dropped): the table's changes are withheld from the destinations from
         * here on, and the hold is recorded with the next batch (INV: RESUME).
         */
        boolean leftOut(io.millrace.core.schema.RelationInfo rel, java.util.List<String> missing);

        /**
         * Whether {@code rel}, the shape a withheld table's stream shows, has every one of {@code whole} (its columns when
         * the hold began) that the source still has: its changes may flow again from here.
         */
        boolean whole(io.millrace.core.schema.RelationInfo rel, java.util.List<String> whole);

        /**
         * The hold of the table of {@code oid} ends (or, at a {@link #RECONCILE_PREFIX} message, will end once the stream
         * shows it whole): the callee submits the copy that reconciles the destinations with the changes withheld, recorded
         * with the batch that ends the hold (INV: RESUME).
         */
        void recopy(int oid);
    }

    /**
     * The prefix of the logical message that withholds tables' changes from here on (content: their oids, comma-separated):
     * written when the publication stopped publishing some kinds of change ({@code SET (publish = 'insert')}), which no
     * Relation message shows. Handled in stream order, recorded with the batch after it (INV: RESUME).
     */
    public static final String WITHHOLD_PREFIX = "millrace.withhold";

    /**
     * The prefix of the logical message that ends the hold of tables (content: their oids), written once the publication
     * publishes them whole again: each one is copied again, reconciling ({@link Withholding#recopy}), and its changes flow
     * again from here; one whose stream still shows it without some of its columns (changes made before the publication
     * was set right, committed after this message) stays withheld until a Relation message shows it whole — its copy
     * waits for those transactions, so it brings them.
     */
    public static final String RECONCILE_PREFIX = "millrace.reconcile";

    private volatile Withholding withholding;

    /** See {@link Withholding}. Call before {@link #startStreaming}; with {@link #onShapeChange}. */
    public void withholding(Withholding w) {
        this.withholding = w;
    }

    /**
     * Which tables' changes reach the destinations. pgoutput sends the changes of every table the publication publishes,
     * and a publication may publish more than the pipeline captures: one another consumer shares, one {@code FOR ALL
     * TABLES}, one Millrace does not alter (found by a user: the other consumer's tables arrived in Millrace's destinations
     * too). Asked on the assembler thread for each row change and truncated table, in stream order, after the signal
     * table's rows are taken; a table it refuses has its change dropped.
     */
    @FunctionalInterface
    public interface Capture {
        boolean captures(int oid, io.millrace.core.schema.TableRef table);

        /**
         * The stream reached this pipeline's {@link #LEAVE_PREFIX} message of the table of {@code oid}: its changes before
         * the message were passed on, and from here on it is no longer captured. Assembler thread, inside the message's
         * transaction.
         */
        default void left(int oid) {
        }
    }

    /**
     * The prefix of the logical message that takes a table out of the pipeline where the stream reaches it (content as
     * {@link #joinMessage}): a reload that leaves a table out writes it, so that the table's changes committed before the
     * reload reach the destinations whole, however far behind the stream runs (they were dropped from the reload on, the
     * rest of a transaction with them: found by a user removing a table while the pipeline caught up).
     */
    public static final String LEAVE_PREFIX = Assembler.LEAVE_PREFIX;

    private volatile Capture capture;

    /** See {@link Capture}; none: every table's changes pass. Call before {@link #startStreaming}. */
    public void capture(Capture c) {
        this.capture = c;
    }

    private volatile java.util.Collection<io.millrace.core.schema.RelationInfo> startShapes = java.util.List.of();
    private volatile Lsn startShapesAt = Lsn.ZERO;

    /**
     * The captured tables' shapes as the source catalog showed them at the start, before the server's WAL was at
     * {@code readAt}. pgoutput describes a table before its first change of a session only, so a table changed in shape
     * before its first change of this run shows the new shape in its first Relation message and no shape change; that
     * message, in a transaction committed at or after {@code readAt}, is compared with the shape here, and a column added,
     * renamed or retyped since is a shape change ({@link #onShapeChange}). Call before {@link #startStreaming}.
     */
    public void shapesAtStart(java.util.Collection<io.millrace.core.schema.RelationInfo> shapes, Lsn readAt) {
        this.startShapes = java.util.List.copyOf(shapes);
        this.startShapesAt = readAt;
    }

    /**
     * A table joined the pipeline while streaming, in {@code shape} as the catalog showed it then (before its copy read
     * it): its first Relation message from here on is compared with it as with the start's shapes ({@link
     * #shapesAtStart}), so DDL that rewrote its rows before its next change is a shape change (the table is copied again),
     * though the stream shows the new shape only. Assembler thread only (the {@link #onTableSeen} callback), inside the
     * transaction of the message the table joined at.
     */
    public void joinedIn(io.millrace.core.schema.RelationInfo shape) {
        Assembler a = assembler;
        if (a != null && shapeChange != null) {
            a.joinedIn(shape);
        }
    }

    private volatile java.util.List<Assembler.Written> shapesWritten = java.util.List.of();

    /**
     * The destinations' checkpoints, for the shapes each one's copies of the tables were last written in ({@link
     * Checkpoint#shapes}): a table whose first Relation message of this run, in a transaction a destination has not
     * applied, shows a shape other than the one that destination wrote it in (and than the start's catalog shape), where
     * the start's shapes ({@link #shapesAtStart}) show no change, was reshaped where the stream does not show it — while
     * Millrace was stopped — and {@link #onShapeChange} is told with {@code before} null. Call before
     * {@link #startStreaming}.
     */
    public void shapesWritten(java.util.List<Checkpoint> checkpoints) {
        this.shapesWritten = checkpoints.stream().map(c -> new Assembler.Written(c.applied(), c.shapes())).toList();
    }

    private volatile Assembler.TableSeen tableSeen;
    private volatile String joinSlot;

    /**
     * The prefix of the logical message that asks the stream to look at a table the pipeline may capture (content: its oid,
     * a space, the pipeline's slot: {@link #joinMessage}).
     */
    public static final String JOIN_PREFIX = Assembler.JOIN_PREFIX;

    /**
     * Calls {@code callback(oid, name)} on the assembler thread, in stream order, for a table the stream has not described
     * when the event trigger's message shows it created or changed ({@code name} as the message has it), and for each
     * {@link #JOIN_PREFIX} message of this pipeline's {@code slot} ({@code name} null). Whatever the callback records for
     * the online snapshot is recorded with the batch holding that message (INV: RESUME). Call before {@link #startStreaming}.
     */
    public void onTableSeen(java.util.function.BiConsumer<Integer, io.millrace.core.schema.TableRef> callback, String slot) {
        this.tableSeen = callback::accept;
        this.joinSlot = slot;
    }

    /** The content of the {@link #JOIN_PREFIX} message that asks the pipeline reading {@code slot} to look at table {@code oid}. */
    public static String joinMessage(int oid, String slot) {
        return Integer.toUnsignedString(oid) + " " + slot;
    }

    /**
     * Routes rows inserted into {@code table} to {@code onInsert} (column name → value) instead of the
     * destinations. Call before {@link #startStreaming}. The callback runs on the assembler thread, in
     * commit order, once per row: a row at or before the resume position is not seen again.
     */
    public void signalTable(io.millrace.core.schema.TableRef table, java.util.function.Consumer<java.util.Map<String, Object>> onInsert) {
        this.signals = new Assembler.Signals() {
            @Override
            public io.millrace.core.schema.TableRef table() {
                return table;
            }

            @Override
            public void inserted(io.millrace.core.schema.RelationInfo r, Object[] row) {
                java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
                for (int i = 0; i < r.columnCount(); i++) {
                    m.put(r.column(i).name(), row[i]);
                }
                onInsert.accept(m);
            }
        };
    }

    private volatile long idleAdvanceMillis;

    /**
     * An idle slot advances at most once per {@code millis} (the reader's status interval): each advance stores a
     * checkpoint, and a destination on the source's own server turns that into WAL the next keepalive reports, so
     * advancing on every keepalive wrote to it in a loop. Call before {@link #startStreaming}.
     */
    public void idleAdvanceInterval(long millis) {
        this.idleAdvanceMillis = millis;
    }

    private volatile java.util.function.LongSupplier serverAsked = () -> 0;

    /**
     * The reader's count of keepalives that asked for a reply at once ({@code ReplicationReader.serverAsked}): a new one
     * lets the idle slot advance without waiting for {@link #idleAdvanceInterval} — a server shutting down waits for that
     * confirmation (a fast shutdown took up to the status interval, 10 s by default, with Millrace connected; 115 ms with
     * pg_recvlogical). Call before {@link #startStreaming}.
     */
    public void serverAsked(java.util.function.LongSupplier asked) {
        this.serverAsked = asked;
    }

    /**
     * Where online snapshot readers meet the stream (the online snapshot's {@link WatermarkStream}); none:
     * {@link WatermarkStream#NONE}, every watermark ignored. Call before {@link #startStreaming}.
     */
    public void watermarks(WatermarkStream w) {
        this.watermarks = java.util.Objects.requireNonNull(w, "watermarks");
    }

    /** The current checkpoint of sink {@code i} (as the writer last made it durable). Writer-consistent only after {@link #join()}. */
    public Checkpoint checkpoint(int i) {
        return writer.checkpoint(i);
    }

    /** How often the writer asks a destination that stores later ({@link Sink#storesLater}) how far it stored, while idle. */
    static final long STORED_POLL_MS = 100;

    /** Starts the writer thread: the pipeline then accepts {@link #submit} (snapshot batches). */
    public void startWriter() {
        // A destination that stores its checkpoint after the write (Sink#storesLater) is asked between batches too, so that
        // the slot follows what it stored while no batch comes (INV: DURABLE: never further).
        long wait = writer.anyStoresLater() ? STORED_POLL_MS : Long.MAX_VALUE / 2_000_000;
        start("millrace-writer", () -> {
            while (true) {
                Staged s = batches.receive(wait);
                if (s != null) {
                    writer.write(s.await()); // INV: ORDER — the head of the channel, complete, before anything after it
                    applied.incrementAndGet();
                } else {
                    writer.storedMoved();
                }
            }
        });
    }

    /**
     * Starts the assembler: {@link #offer} then takes the replication stream.
     *
     * @param skipUpTo       changes at or before this position are already in every destination
     * @param serverCaughtUp the reader's {@code serverCaughtUp()}: lets an idle slot advance
     * @param spillDir       where streamed (large, in-progress) transactions wait for their commit
     */
    public void startStreaming(TypeResolver types, IntFunction<List<String>> keyLookup, Position skipUpTo,
                               java.util.function.Supplier<Lsn> serverCaughtUp, java.nio.file.Path spillDir) {
        Spill spill = new Spill(spillDir, stats);
        DecodePool pool = options.decoders() > 0 ? new DecodePool(options.decoders(), options.decodeChunkRows(), failure) : null;
        Assembler a = new Assembler(types, spill, new RelationKeys(keyLookup, types), watermarks, skipUpTo,
                batchBytes, maxBatchBytes, options.lingerMillis(), b -> {
                    submitted.incrementAndGet();
                    batches.send(b);
                });
        this.assembler = a;
        a.holdBudget(held, failure::isSet);
        a.writerIdle(() -> applied.get() == submitted.get()); // every batch handed on is durable
        a.idleAdvanceInterval(idleAdvanceMillis);
        if (pool != null) {
            pool.hook(decodeHook);
            a.decodePool(pool);
            pool.start(this::start); // INV: NO-SILENT-ERROR — each worker registered before it starts
        }
        if (signals != null) {
            a.signals(signals);
        }
        if (capture != null) {
            a.capture(capture);
        }
        if (shapeChange != null) {
            a.onShapeChange(shapeChange);
            a.shapesAtStart(startShapes, startShapesAt);
            a.shapesWritten(shapesWritten);
            a.withholding(withholding);
        }
        if (tableSeen != null) {
            a.onTableSeen(tableSeen, joinSlot);
        }
        java.util.function.LongSupplier asked = serverAsked;
        long[] seenAsks = {asked.getAsLong()}; // assembler thread only
        start("millrace-assembler", () -> {
            try (spill) {
                while (true) {
                    // A batch waiting for the writer to be done is checked for every millisecond (group commit).
                    List<Raw> ms = raw.receive(a.pending() ? 1 : Math.max(1, options.lingerMillis() / 4));
                    if (ms != null) {
                        long taken = 0;
                        for (Raw m : ms) {
                            a.onMessage(m.at(), m.data(), m.off(), m.len());
                            taken += HeapCost.message(m.len());
                        }
                        budget.release(taken); // the messages are rows in batches now (on the rows' budget) or gone
                    } else if (a.due()) {
                        a.cut();
                    } else {
                        // Read the server's position first, then check that nothing is queued: everything
                        // before that position was queued before it was published, so it has been consumed.
                        // The count first: the reader publishes it after the position its keepalive moved.
                        long asks = asked.getAsLong();
                        Lsn caughtUp = serverCaughtUp.get();
                        if (raw.size() == 0) {
                            a.idle(caughtUp, asks != seenAsks[0]);
                            seenAsks[0] = asks;
                        }
                    }
                }
            }
        });
    }

    /**
     * Hands the pipeline one replication message (reader thread only), taking its heap cost from the reader's
     * {@link #budget()}: the reader waits for room before it reads more (INV: BOUNDED). Blocks only while the pipeline runs.
     */
    public void offer(Lsn at, byte[] data, int off, int len) throws InterruptedException {
        budget.take(HeapCost.message(len));
        pendingRaw.add(new Raw(at, data, off, len));
        if (pendingRaw.size() >= RAW_BATCH) {
            flush();
        }
    }

    /** Run by the reader thread while it waits for room in the channel to the assembler ({@link #whileReaderWaits}). */
    private Runnable readerWaiting;

    /**
     * What the reader thread does while {@link #offer} or {@link #flush} waits for the assembler (a destination blocked
     * holds everything behind it): the reader's keepalive, so the server does not end the replication connection.
     */
    public void whileReaderWaits(Runnable keepAlive) {
        this.readerWaiting = keepAlive;
    }

    /** Hands on the messages offered so far (reader thread only; called when nothing more is pending to read). */
    public void flush() throws InterruptedException {
        if (pendingRaw.isEmpty()) {
            return;
        }
        try {
            raw.send(pendingRaw, readerWaiting);
            pendingRaw = new ArrayList<>(RAW_BATCH);
        } catch (Channel.Stopped s) {
            Thread.currentThread().interrupt(); // the reader sees the stop and leaves its loop
        }
    }

    /**
     * Hands the writer a batch (snapshot readers; any thread), first waiting until the rows' budget has room for its
     * {@link Batch#heldBytes()} (INV: BOUNDED: a snapshot reads no faster than the destinations take it). Returns false
     * when the pipeline is stopping.
     */
    public boolean submit(Batch batch) throws InterruptedException {
        if (batch.heldBytes() > 0) {
            while (held.exhausted() && !held.awaitRoom(100)) {
                if (failure.isSet()) {
                    return false;
                }
            }
            held.take(batch.heldBytes());
        }
        try {
            submitted.incrementAndGet();
            batches.send(Staged.ready(batch));
            return true;
        } catch (Channel.Stopped s) {
            return false;
        }
    }

    /**
     * Waits until every batch submitted so far is durable in every sink. Returns false when the
     * pipeline stopped (or failed) first, or the time ran out.
     */
    public boolean awaitDrained(long millis) throws InterruptedException {
        long deadline = System.currentTimeMillis() + millis;
        while (applied.get() < submitted.get()) {
            if (failure.isSet() || System.currentTimeMillis() >= deadline) {
                return false;
            }
            Thread.sleep(5);
        }
        return true;
    }

    /** Number of batches waiting for the writer. */
    public int pendingBatches() {
        return batches.size();
    }

    interface Loop {
        void run() throws Exception;
    }

    private void start(String name, Loop loop) {
        Thread t = new Thread(() -> {
            try {
                loop.run();
            } catch (Channel.Stopped s) {
                // another stage failed or a stop was asked
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                failure.stop();
            } catch (Throwable e) {
                failure.report(e);
            }
        }, name);
        t.setDaemon(true);
        synchronized (threads) {
            threads.add(t); // INV: NO-SILENT-ERROR — registered before it starts
        }
        t.start();
    }

    /** Asks every stage to stop at its next boundary; a sink write under way completes first. */
    public void stop() {
        failure.stop();
    }

    /** Waits for every stage to end; rethrows the first error, if any. */
    public void join() throws InterruptedException {
        List<Thread> ts;
        synchronized (threads) {
            ts = List.copyOf(threads);
        }
        for (Thread t : ts) {
            t.join();
        }
        Throwable e = failure.error();
        if (e instanceof RuntimeException re) {
            throw re;
        }
        if (e instanceof Error err) {
            throw err;
        }
        if (e != null) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        stop();
        try {
            join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
