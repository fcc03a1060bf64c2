package io.millrace.pipeline;

import io.millrace.core.ByteBudget;
import io.millrace.core.HeapCost;
import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.SchemaChange;
import io.millrace.core.schema.TypeResolver;
import io.millrace.pgoutput.PgOutputFramer;
import io.millrace.pgoutput.PgOutputMessage;
import io.millrace.pgoutput.PgOutputMessage.Begin;
import io.millrace.pgoutput.PgOutputMessage.Commit;
import io.millrace.pgoutput.PgOutputMessage.Delete;
import io.millrace.pgoutput.PgOutputMessage.Insert;
import io.millrace.pgoutput.PgOutputMessage.LogicalMessage;
import io.millrace.pgoutput.PgOutputMessage.StreamAbort;
import io.millrace.pgoutput.PgOutputMessage.StreamCommit;
import io.millrace.pgoutput.PgOutputMessage.Truncate;
import io.millrace.pgoutput.PgOutputMessage.Update;
import io.millrace.pgoutput.RawTuple;

import java.util.ArrayList;
import java.util.List;

/**
 * Turns pgoutput messages into change events with positions and cuts them into sink batches.
 *
 * <p>Positions: each row change gets {@code (commit_lsn of its transaction, ordinal)}, ordinals
 * counting from 1 in WAL order inside the transaction (INV: ORDER). A change at or before
 * {@code skipUpTo} (what every destination already holds) is dropped here (INV: RESUME).
 *
 * <p>Batches are cut after a commit once they hold {@code batchBytes} or are {@code lingerMillis}
 * old, and inside a transaction once they hold {@code maxBatchBytes}, so a large transaction never
 * sits whole in memory (INV: BOUNDED). A batch's size is what its rows take on the heap
 * ({@link HeapCost#row}), not the bytes that carried them, and every row is taken from the budget of
 * rows in flight before it joins a batch: when that budget is spent, the batch is handed on and the
 * assembler waits until the destinations have made earlier batches durable. A batch's {@code flushLsn}
 * is the end of the last transaction it completes: a destination that applied it may be confirmed there
 * and no further (INV: DURABLE).
 *
 * <p>Single-threaded: owned by the pipeline thread.
 */
final class Assembler {
    /** Where finished batches go. */
    interface Output {
        void accept(Staged batch) throws Channel.Stopped, InterruptedException;
    }

    private final PgOutputFramer framer;
    private final RelationKeys keys;
    private final Position skipUpTo;
    private final long batchBytes;
    private final long maxBatchBytes;
    private final long lingerNanos;
    private final Output output;
    private final WatermarkStream watermarks;
    /** The chunk whose rows are being emitted, and the last of them handed on (see {@link #cut()}). */
    private WatermarkStream.Chunk emitting;
    private Object[] emittingLast;
    /** Rows inserted into the signal table go here, not to the destinations (null: no signal table). */
    private Signals signals;

    /** Called on the assembler thread when a relation's shape changed within this run (columns added or retyped). */
    private java.util.function.BiConsumer<RelationInfo, RelationInfo> onShapeChange;
    /** The last shape seen of each relation, by oid. */
    private final java.util.Map<Integer, RelationInfo> shapes = new java.util.HashMap<>();
    /** The shapes the catalog showed at the start, by oid, until the relation's first Relation message ({@link #shapeSeen}). */
    private final java.util.Map<Integer, RelationInfo> startShapes = new java.util.HashMap<>();
    /** The WAL position read after {@link #startShapes}: a transaction committed at or after it was not in them. */
    private Lsn startShapesAt = Lsn.ZERO;
    /** Each destination's checkpoint: where it resumes and the shapes its copies were last written in ({@link #shapeSeen}). */
    private final java.util.List<Written> written = new java.util.ArrayList<>();

    /** See {@link Pipeline#shapesWritten}. */
    record Written(Position applied, java.util.Map<Integer, String> shapes) {
    }

    /** Receives the rows inserted into the signal table, in commit order, on the assembler thread. */
    interface Signals {
        io.millrace.core.schema.TableRef table();

        void inserted(RelationInfo relation, Object[] row);
    }

    // Current transaction.
    private boolean inTx;
    private Lsn txCommitLsn = Lsn.ZERO;
    private long txXid;
    private long txCommitMicros;
    private long ordinal;

    // Streamed transactions (protocol v2): the block being received, and the spill.
    private static final long NO_STREAM = -1;
    private long streamXid = NO_STREAM;
    private final Spill spill;
    private final TypeResolver types;

    // Current batch: its events in order, decoded here (no pool) or, with a decoder pool, in the pool's job.
    private List<ChangeEvent> events = new ArrayList<>();
    /** The decoder pool, or null: rows are then decoded on this thread. */
    private DecodePool pool;
    private DecodePool.Job job;
    /** What the batch's rows take on the heap ({@link HeapCost#row}): its size, for cutting it. */
    private long size;
    /** The budget of rows in flight until durable (null: unbounded, in unit tests), and the bytes of it this batch holds. */
    private ByteBudget held;
    private java.util.function.BooleanSupplier stopping = () -> false;
    private long heldBytes;
    private Lsn flushLsn;
    private Position last;
    private long batchStartNanos;

    private volatile long eventsOut; // written by the assembler thread only
    /** The newest flush position handed on. */
    private Lsn lastFlush = Lsn.ZERO;

    Assembler(TypeResolver types, Spill spill, RelationKeys keys, WatermarkStream watermarks, Position skipUpTo, long batchBytes,
              long maxBatchBytes, long lingerMillis, Output output) {
        this.types = types;
        this.watermarks = watermarks;
        this.spill = spill;
        this.framer = new PgOutputFramer(types);
        this.keys = keys;
        this.skipUpTo = skipUpTo;
        this.batchBytes = batchBytes;
        this.maxBatchBytes = maxBatchBytes;
        this.lingerNanos = lingerMillis * 1_000_000L;
        this.output = output;
    }

    /** See {@link Pipeline#capture}; null: every table's changes pass. */
    private Pipeline.Capture capture;

    void capture(Pipeline.Capture c) {
        this.capture = c;
    }

    void signals(Signals s) {
        this.signals = s;
    }

    /**
     * Streamed rows are decoded by {@code p} instead of this thread (INV: ORDER is kept by the pool's
     * jobs). Rows whose values the assembler itself needs are still decoded here: rows of the signal
     * table, and rows of a table with an open watermark window (their keys decide which chunk rows are
     * stale, INV: WATERMARK). Call before the first message.
     */
    void decodePool(DecodePool p) {
        this.pool = p;
        this.job = p.newJob();
    }

    void onShapeChange(java.util.function.BiConsumer<RelationInfo, RelationInfo> callback) {
        this.onShapeChange = callback;
    }

    /** See {@link Pipeline#shapesAtStart}. Call before the first message. */
    void shapesAtStart(java.util.Collection<RelationInfo> atStart, Lsn readAt) {
        atStart.forEach(r -> startShapes.put(r.oid(), r));
        this.startShapesAt = readAt;
    }

    /** See {@link Pipeline#joinedIn}. Assembler thread, inside the transaction of the message the table joined at. */
    void joinedIn(RelationInfo shape) {
        if (!shapes.containsKey(shape.oid())) {
            startShapes.put(shape.oid(), shape); // INV: BOUNDED — one per table joined, kept until its first description
        }
    }

    /** See {@link Pipeline#shapesWritten}. Call before the first message. */
    void shapesWritten(java.util.Collection<Written> checkpoints) {
        written.addAll(checkpoints);
        // INV: RESUME — the DDL the trigger reported before the position the stream resumes from, of tables not described
        // since: their next Relation message carries it, as if its message had been read in this run. The checkpoint the
        // stream resumes for (the one furthest behind): every Relation message read from here on comes after its DDL.
        checkpoints.stream().min(java.util.Comparator.comparing(Written::applied)).ifPresent(w -> w.shapes().forEach((oid, entry) -> {
            SchemaChange pending = io.millrace.core.change.SourceShapes.pendingChange(entry);
            if (pending != null) {
                ddl.merge(oid, pending, SchemaChange::then);
            }
        }));
        for (Written w : checkpoints) {
            w.shapes().forEach((oid, entry) -> {
                List<String> whole = io.millrace.core.change.SourceShapes.withheldColumns(entry);
                if (whole != null) {
                    withheld.putIfAbsent(oid, whole); // INV: RESUME — a hold recorded before the restart goes on
                    if (io.millrace.core.change.SourceShapes.untilReconciled(entry)) {
                        untilReconciled.add(oid);
                    }
                }
            });
        }
    }

    /**
     * Tables whose changes are withheld from the destinations, by oid, with their columns before the hold: the stream shows
     * fewer columns than the table has ({@link Pipeline.Withholding}). INV: BOUNDED — one entry per captured table at most.
     * A hold is recorded with the batch after it ({@link #shapeMarks}), so a restart knows it.
     */
    private final java.util.Map<Integer, List<String>> withheld = new java.util.HashMap<>();
    /** Shape entries to record with the next batch ({@link Batch#shapes}): a hold begun, or ended. */
    private final java.util.Map<Integer, String> shapeMarks = new java.util.HashMap<>();
    /**
     * Withheld tables whose hold only a {@link Pipeline#RECONCILE_PREFIX} message ends (begun by a {@link
     * Pipeline#WITHHOLD_PREFIX} one: the publication stopped publishing some kinds of change, which no Relation message
     * shows, so one in the same shape says nothing of it). INV: BOUNDED — one per withheld table.
     */
    private final java.util.Set<Integer> untilReconciled = new java.util.HashSet<>();
    private Pipeline.Withholding withholding;

    /** See {@link Pipeline#withholding}. Call before the first message. */
    void withholding(Pipeline.Withholding w) {
        this.withholding = w;
    }

    /**
     * {@code rel} is the relation's shape from here on, in the transaction committing at {@link #txCommitLsn}: tells
     * {@link #onShapeChange} when it differs from the shape before. Before a relation's first Relation message of this
     * run, that is the start's shape from the catalog, when the transaction committed after it was read and a column was
     * added, renamed or retyped since — a table changed in shape before its first change of the run (pgoutput describes
     * a table at its first change of a session, in its shape then). Columns the catalog has and the stream does not (a
     * publication's column list) are not a change here. Otherwise, when a destination that has not applied this
     * transaction last wrote the table in a shape that is neither this one nor the catalog's at the start ({@link
     * io.millrace.core.change.SourceShapes}; the catalog's: its copy was written by a snapshot, which reads every column,
     * while the stream may carry fewer), the table was reshaped where the stream does not show it (while Millrace was
     * stopped): told with no shape before ({@code null}).
     */
    private void shapeSeen(RelationInfo rel) {
        RelationInfo before = shapes.put(rel.oid(), rel);
        RelationInfo atStart = startShapes.remove(rel.oid()); // INV: BOUNDED — kept until the table's first description
        if (withheldAt(rel, before, atStart)) {
            return;
        }
        boolean afterStart = atStart != null && inTx && txCommitLsn.compareTo(startShapesAt) >= 0;
        io.millrace.core.schema.ShapeChange c = afterStart ? io.millrace.core.schema.ShapeChange.between(atStart, rel) : null;
        if (before == null && afterStart && (!c.added().isEmpty() || !c.renamed().isEmpty() || !c.retyped().isEmpty())) {
            before = atStart;
        }
        if (before == null && inTx && onShapeChange != null && reshapedUnseen(rel, atStart)) {
            onShapeChange.accept(null, rel);
            return;
        }
        if (before == null && afterStart && c.dropped().isEmpty()) {
            // The same columns (perhaps in another order): told all the same, since a column dropped and added again under
            // its name looks the same here; the callee reads the catalog's attribute numbers. Not when columns are only
            // missing: a drop, which the destinations follow as it is (a column list: withheldAt).
            before = atStart;
        }
        if (before != null && onShapeChange != null) {
            // also in the same shape: a column dropped and added again under its name shows no difference here
            onShapeChange.accept(before, rel);
        }
    }

    /**
     * Whether {@code rel} begins or goes on withholding its table's changes from the destinations, or ends that ({@link
     * Pipeline.Withholding}); true: no shape change is told. The shape before is the stream's, or at the table's first
     * description of the run the start's catalog's when a destination that has not applied this transaction wrote the
     * table in a shape other than {@code rel} (a replay through a column list's time: the destination holds every column).
     */
    private boolean withheldAt(RelationInfo rel, RelationInfo before, RelationInfo atStart) {
        if (withholding == null) {
            return false;
        }
        List<String> whole = withheld.get(rel.oid());
        if (whole != null) {
            if (!untilReconciled.contains(rel.oid()) && withholding.whole(rel, whole)) {
                withheld.remove(rel.oid());
                if (!recopied.remove(rel.oid())) {
                    withholding.recopy(rel.oid());
                }
                shapeMarks.put(rel.oid(), io.millrace.core.change.SourceShapes.fingerprint(rel)); // with the copy that reconciles
            }
            return true;
        }
        RelationInfo ref = before != null ? before : atStart != null && writtenOtherwise(rel) ? atStart : null;
        if (ref == null) {
            return false;
        }
        List<String> had = ref.columns().stream().map(io.millrace.core.schema.ColumnInfo::name).toList();
        java.util.Set<String> has = new java.util.HashSet<>();
        rel.columns().forEach(c -> has.add(c.name()));
        List<String> missing = had.stream().filter(n -> !has.contains(n)).toList();
        if (missing.isEmpty() || !withholding.leftOut(rel, missing)) {
            return false;
        }
        withheld.put(rel.oid(), had);
        shapeMarks.put(rel.oid(), io.millrace.core.change.SourceShapes.withheld(had));
        return true;
    }

    /** The oids a {@link Pipeline#WITHHOLD_PREFIX} or {@link Pipeline#RECONCILE_PREFIX} message lists. */
    private static List<Integer> oids(LogicalMessage lm) {
        String text = new String(lm.content(), java.nio.charset.StandardCharsets.UTF_8).strip();
        List<Integer> out = new ArrayList<>();
        try {
            for (String s : text.split(",")) {
                if (!s.isBlank()) {
                    out.add((int) Long.parseLong(s.strip()));
                }
            }
        } catch (NumberFormatException e) {
            throw new MillraceException(Kind.DECODE, "cannot read a '" + lm.prefix() + "' logical message: '" + text + "' is not a list of oids");
        }
        return out;
    }

    /** Withholds the table of {@code oid} from here on ({@link Pipeline#WITHHOLD_PREFIX}), with the columns known of it. */
    private void hold(int oid) {
        if (untilReconciled.contains(oid)) {
            return;
        }
        RelationInfo known = shapes.containsKey(oid) ? shapes.get(oid) : startShapes.get(oid);
        List<String> had = withheld.containsKey(oid) ? withheld.get(oid) // withheld for a column list already: its whole columns
                : known == null ? List.of() : known.columns().stream().map(io.millrace.core.schema.ColumnInfo::name).toList();
        withheld.put(oid, had);
        recopied.remove(oid); // a copy submitted before this hold does not end it: the reconcile message copies it again
        untilReconciled.add(oid);
        shapeMarks.put(oid, io.millrace.core.change.SourceShapes.withheldUntilReconciled(had));
    }

    /** Withheld tables whose copy was submitted while their stream still showed them without some columns. */
    private final java.util.Set<Integer> recopied = new java.util.HashSet<>();

    /**
     * Ends the hold of the table of {@code oid} ({@link Pipeline#RECONCILE_PREFIX}): copied again; its changes flow from here,
     * or, while its stream shows it without some of its columns, from the Relation message that shows it whole.
     */
    private void reconcile(int oid) {
        List<String> whole = withheld.get(oid);
        if (whole == null || recopied.contains(oid)) {
            return;
        }
        untilReconciled.remove(oid);
        withholding.recopy(oid);
        RelationInfo rel = shapes.get(oid);
        if (rel != null && !withholding.whole(rel, whole)) {
            recopied.add(oid); // INV: BOUNDED — one per withheld table
            return;
        }
        withheld.remove(oid);
        shapeMarks.put(oid, rel == null ? Batch.NO_SHAPE : io.millrace.core.change.SourceShapes.fingerprint(rel));
    }

    /** Whether a destination that has not applied this transaction wrote {@code rel}'s table in another shape. */
    private boolean writtenOtherwise(RelationInfo rel) {
        String now = null;
        for (Written w : written) {
            String fp = io.millrace.core.change.SourceShapes.written(w.shapes().get(rel.oid()));
            if (fp == null || fp.isEmpty() || w.applied().commitLsn().compareTo(txCommitLsn) >= 0) {
                continue;
            }
            now = now == null ? io.millrace.core.change.SourceShapes.fingerprint(rel) : now;
            if (!fp.equals(now)) {
                return true;
            }
        }
        return false;
    }

    /** See {@link #shapeSeen}: a table's first description of the run, in the transaction committing at {@link #txCommitLsn}. */
    private boolean reshapedUnseen(RelationInfo rel, RelationInfo atStart) {
        String now = null;
        String catalog = null;
        for (Written w : written) {
            String fp = io.millrace.core.change.SourceShapes.written(w.shapes().get(rel.oid())); // also while a DDL waits
            if (fp == null || fp.isEmpty() || w.applied().commitLsn().compareTo(txCommitLsn) >= 0
                    || io.millrace.core.change.SourceShapes.withheldColumns(fp) != null) {
                continue; // the table not held there, or this transaction applied there already (it resumes further on), or withheld
            }
            if (now == null) {
                now = io.millrace.core.change.SourceShapes.fingerprint(rel);
                catalog = atStart == null ? "" : io.millrace.core.change.SourceShapes.fingerprint(atStart);
            }
            if (!fp.equals(now) && !fp.equals(catalog)) {
                return true;
            }
        }
        return false;
    }

    /** Called on the assembler thread, inside the transaction, for a table the stream has not described; see {@link Pipeline#onTableSeen}. */
    private TableSeen tableSeen;

    /** See {@link Pipeline#onTableSeen}. */
    interface TableSeen {
        void seen(int oid, io.millrace.core.schema.TableRef name);
    }

    /** The slot of this pipeline, which its join messages name ({@link #JOIN_PREFIX}). */
    private String joinSlot;

    void onTableSeen(TableSeen callback, String slot) {
        this.tableSeen = callback;
        this.joinSlot = slot;
    }

    long eventsOut() {
        return eventsOut;
    }

    /** Handles one message from the reader. */
    void onMessage(Lsn walStart, byte[] data, int off, int len) throws Channel.Stopped, InterruptedException {
        if (size == 0 && eventCount() == 0 && flushLsn == null) {
            batchStartNanos = System.nanoTime();
        }
        byte type = data[off];
        if (streamXid != NO_STREAM) {
            // Inside a block of a streamed (in-progress) transaction: hold it on disk until its commit.
            if (type == 'E') {
                streamXid = NO_STREAM;
            } else if (type == 'S') {
                throw new MillraceException(Kind.DECODE, "pgoutput started a stream block at " + walStart
                        + " inside the block of streamed transaction " + streamXid);
            } else {
                spill.append(streamXid, walStart, subXid(data, off, len), data, off, len);
            }
            return;
        }
        if (type == 'S' && len >= 6) {
            long xid = u32(data, off + 1);
            if (data[off + 5] == 1 && !spill.has(xid)) {
                spill.begin(xid);
            }
            streamXid = xid;
            return;
        }
        PgOutputMessage m = framer.frame(data, off, len);
        if (m instanceof Begin b) {
            if (inTx) {
                throw new MillraceException(Kind.DECODE, "pgoutput sent BEGIN of transaction " + b.xid() + " at " + walStart
                        + " while transaction " + txXid + " was still open");
            }
            begin(b.finalLsn(), b.xid(), b.commitTimeMicros());
        } else if (m instanceof Commit c) {
            requireTx(walStart, "COMMIT");
            if (!c.commitLsn().equals(txCommitLsn)) {
                throw new MillraceException(Kind.DECODE, "pgoutput COMMIT at " + c.commitLsn() + " does not match BEGIN's final LSN "
                        + txCommitLsn + " (transaction " + txXid + ")");
            }
            commit(c.endLsn());
            return;
        } else if (m instanceof StreamCommit sc) {
            replay(sc);
            return;
        } else if (m instanceof PgOutputMessage.RelationMessage rm) {
            RelationInfo rel = described(framer, rm.relation());
            watermarks.described(rel); // a chunk read in another shape is read again (INV: WATERMARK)
            shapeSeen(rel);
        } else if (m instanceof LogicalMessage lm) {
            if (lm.transactional() && inTx && WatermarkStream.PREFIX.equals(lm.prefix())) {
                watermark(lm, walStart);
            } else if (lm.transactional() && inTx && SchemaChange.PREFIX.equals(lm.prefix())) {
                ddl(lm, walStart);
            } else if (lm.transactional() && inTx && JOIN_PREFIX.equals(lm.prefix())) {
                join(lm);
            } else if (lm.transactional() && inTx && LEAVE_PREFIX.equals(lm.prefix())) {
                leave(lm);
            } else if (lm.transactional() && inTx && withholding != null && Pipeline.WITHHOLD_PREFIX.equals(lm.prefix())) {
                oids(lm).forEach(this::hold);
            } else if (lm.transactional() && inTx && withholding != null && Pipeline.RECONCILE_PREFIX.equals(lm.prefix())) {
                oids(lm).forEach(this::reconcile);
            }
        } else if (m instanceof StreamAbort sa) {
            if (sa.subXid() == sa.xid()) {
                spill.discard(sa.xid()); // an aborted streamed transaction leaves no trace
            } else {
                spill.abortSub(sa.xid(), sa.subXid());
            }
        } else {
            change(m, walStart, len);
        }
        // Relation, Type, Origin and logical messages change framer state only.
        cutForSize();
    }

    private void begin(Lsn commitLsn, long xid, long commitMicros) {
        inTx = true;
        txCommitLsn = commitLsn;
        txXid = xid;
        txCommitMicros = commitMicros;
        ordinal = 0;
    }

    private void commit(Lsn endLsn) throws Channel.Stopped, InterruptedException {
        inTx = false;
        watermarks.committed(txXid);
        flushLsn = endLsn;
        if (size >= batchBytes || writerIdle.getAsBoolean() || System.nanoTime() - batchStartNanos >= lingerNanos) {
            cut(); // group commit: an idle writer takes what is complete at once; a busy one gets it when it is done
        }
    }

    /** Sets the budget of rows in flight until durable; {@code stopping} tells a wait for it to give up. */
    void holdBudget(ByteBudget budget, java.util.function.BooleanSupplier stopping) {
        this.held = budget;
        this.stopping = stopping;
    }

    /**
     * Counts a row of {@code n} bytes on the heap toward the batch, and takes them from the budget of rows in flight: when
     * it is spent, hands on the batch being built (its rows hold part of it) and waits until the writer gave some back
     * (INV: BOUNDED — a 5M-row transaction, streamed or not, is assembled no faster than the destinations take it).
     */
    private void hold(long n) throws Channel.Stopped, InterruptedException {
        if (held == null) {
            size += n;
            return;
        }
        if (held.exhausted()) {
            if (heldBytes > 0) {
                cut();
            }
            while (!held.awaitRoom(100)) {
                if (stopping.getAsBoolean()) {
                    throw new Channel.Stopped();
                }
            }
        }
        held.take(n);
        heldBytes += n;
        size += n;
    }

    private void cutForSize() throws Channel.Stopped, InterruptedException {
        if (size >= maxBatchBytes) {
            // INV: BOUNDED — a large transaction is cut inside (flushLsn stays at the last complete one).
            cut();
        }
    }

    /** A row change or truncate of {@code len} bytes, from the stream or from a replayed spill. */
    private void change(PgOutputMessage m, Lsn walStart, int len) throws Channel.Stopped, InterruptedException {
        if (m instanceof Insert i) {
            row(Op.CREATE, i.relation(), null, i.newTuple(), walStart, len);
        } else if (m instanceof Update u) {
            row(Op.UPDATE, u.relation(), u.oldKind() == 0 ? null : u.oldTuple(), u.newTuple(), walStart, len);
        } else if (m instanceof Delete d) {
            row(Op.DELETE, d.relation(), d.oldTuple(), null, walStart, len);
        } else if (m instanceof Truncate t) {
            requireTx(walStart, "TRUNCATE");
            for (RelationInfo r : t.relations()) {
                watermarks.truncated(r.table());
                Position p = new Position(txCommitLsn, ++ordinal);
                if (p.isAfter(skipUpTo) && !withheld.containsKey(r.oid()) // withheld: the copy that ends the hold reconciles
                        && (capture == null || capture.captures(r.oid(), r.table()))) {
                    add(new ChangeEvent(Op.TRUNCATE, keys.of(r), null, null, walStart, p, txXid, txCommitMicros, false));
                }
            }
        }
    }

    /**
     * A streamed transaction committed: its spilled messages are framed again in order, by a framer
     * of their own (every streamed transaction carries the Relation messages it needs), and become
     * one transaction at its commit position, exactly as if it had been sent whole. Changes of
     * aborted sub-transactions are skipped. Memory stays bounded: batches are cut as it is read.
     */
    private void replay(StreamCommit sc) throws Channel.Stopped, InterruptedException {
        if (inTx) {
            throw new MillraceException(Kind.DECODE, "pgoutput committed streamed transaction " + sc.xid() + " inside transaction " + txXid);
        }
        begin(sc.commitLsn(), sc.xid(), sc.commitTimeMicros());
        PgOutputFramer f = new PgOutputFramer(types);
        replaying = f;
        byte[] start = {'S', (byte) (sc.xid() >>> 24), (byte) (sc.xid() >>> 16), (byte) (sc.xid() >>> 8), (byte) sc.xid(), 1};
        f.frame(start, 0, start.length);
        try (Spill.Reader r = spill.replay(sc.xid())) {
            for (Spill.Record rec = r.next(); rec != null; rec = r.next()) {
                byte t = rec.data()[0];
                boolean row = t == 'I' || t == 'U' || t == 'D' || t == 'T' || t == 'M'; // 'M': a DDL rolled back with its subtransaction
                if (row && spill.aborted(sc.xid(), rec.subXid())) {
                    continue;
                }
                PgOutputMessage m = f.frame(rec.data(), 0, rec.data().length);
                if (m instanceof PgOutputMessage.RelationMessage rm) {
                    RelationInfo rel = described(f, rm.relation());
                    watermarks.described(rel);
                    shapeSeen(rel); // here, not at the commit: the batches cut below may land the new shape first
                } else if (m instanceof LogicalMessage lm && lm.transactional() && SchemaChange.PREFIX.equals(lm.prefix())) {
                    ddl(lm, rec.walStart());
                } else if (m instanceof LogicalMessage lm && lm.transactional() && JOIN_PREFIX.equals(lm.prefix())) {
                    join(lm);
                } else if (m instanceof LogicalMessage lm && lm.transactional() && LEAVE_PREFIX.equals(lm.prefix())) {
                    leave(lm);
                }
                change(m, rec.walStart(), rec.data().length);
                cutForSize();
            }
        }
        spill.discard(sc.xid());
        replaying = null;
        // pgoutput counts a relation described inside a committed streamed transaction as described for the session:
        // the transactions after it use it without a new Relation message, so the main framer must know it too.
        // (An aborted streamed transaction's descriptions are not taken: the server describes those relations again.)
        for (RelationInfo rel : f.relations()) {
            framer.learn(rel);
            shapeSeen(rel);
        }
        commit(sc.endLsn());
    }

    /**
     * A message of Millrace's event trigger (INV: ORDER — it is part of the DDL's transaction, so it comes before the
     * Relation message that shows the new shape, and after every change made in the old one): kept for the table until
     * that Relation message, which then carries it ({@link #described}).
     */
    private void ddl(LogicalMessage lm, Lsn at) {
        SchemaChange c = SchemaChange.parse(lm.content());
        if (!c.dropped() && c.rewritten() && onShapeChange != null) {
            RelationInfo known = shapes.containsKey(c.oid()) ? shapes.get(c.oid()) : startShapes.get(c.oid());
            if (known != null) {
                // Rows rewritten in the same shape: told now, in the DDL's transaction, not at the table's next change — which
                // may never come, or come after a restart that no longer reads this message (a user's destinations kept the
                // old values of a table retyped USING to its own type, then unchanged, or restarted before it changed).
                // INV: RESUME — the copy is recorded with the batch after this transaction.
                onShapeChange.accept(known, known.withDdl(c));
                c = c.withoutRewrite(); // its next Relation message does not copy it again
            }
        }
        if (!c.dropped()) {
            SchemaChange pending = ddl.merge(c.oid(), c, SchemaChange::then); // INV: BOUNDED — at most MAX_PENDING_DDL tables, the oldest given up
            if ((shapes.containsKey(c.oid()) || startShapes.containsKey(c.oid())) && !withheld.containsKey(c.oid())) {
                // INV: RESUME — recorded with the batch after this transaction until the table's next Relation message takes
                // it: a restart past this message before then would not read it again (shapesWritten)
                shapeMarks.put(c.oid(), Batch.pendingDdl(pending));
            }
            if (renamedOnly(c) != null) {
                renamedUndescribed.add(c.oid()); // see renamedSinceDescribed
            }
            if (tableSeen != null && framer.relation(c.oid()) == null && (replaying == null || replaying.relation(c.oid()) == null)) {
                tableSeen.seen(c.oid(), c.table()); // a table created, or renamed, that the pipeline may capture from now on
            }
            return;
        }
        // A table dropped: no Relation message follows. The trigger reports every table of the database: a table this
        // stream never described and that was not captured at the start or joined since (not the pipeline's) is not passed
        // on, so that no destination acts on a table that is not the pipeline's. One captured but not changed in this run is
        // (a user's Kafka and jsonl consumers got no drop of a table unchanged since a restart, and kept its rows).
        if (framer.relation(c.oid()) == null && (replaying == null || replaying.relation(c.oid()) == null)
                && !startShapes.containsKey(c.oid())) {
            ddl.remove(c.oid());
            return;
        }
        startShapes.remove(c.oid());
        if (Batch.isPendingDdl(shapeMarks.get(c.oid()))) {
            shapeMarks.remove(c.oid()); // the drop's event takes the entry away
        }
        // To the destinations it is a truncate that carries the drop (RelationInfo.ddl): a table destination drops or keeps its copy (drop_tables), an event destination writes the
        // schema-change event and the truncate; one that knows no DDL sees its rows gone.
        ddl.remove(c.oid());
        RelationInfo gone = new RelationInfo(c.oid(), c.table(), 'd', List.of(), types).withDdl(c);
        if (withheld.remove(c.oid()) != null) {
            shapeMarks.remove(c.oid()); // dropped: its entry goes with it
            recopied.remove(c.oid());
            untilReconciled.remove(c.oid());
        }
        watermarks.truncated(c.table());
        Position p = new Position(txCommitLsn, ++ordinal);
        if (p.isAfter(skipUpTo)) {
            add(new ChangeEvent(Op.TRUNCATE, gone, null, null, at, p, txXid, txCommitMicros, false));
        }
    }

    /**
     * The prefix of the message Millrace writes when it finds, by looking at the catalog, a table it may capture from now
     * on (content: the table's oid, a space and the slot of the pipeline that wrote it). Handled in stream order like the
     * event trigger's CREATE TABLE, so a crash before the batch holding it is durable replays it (INV: RESUME). Every slot
     * of the database receives it: another pipeline's is not this one's (before the slot was in it, a pipeline restarting
     * on the same database had the others copy their tables again, or list a keyless one as not captured: found by a
     * user running four). A message of the oid alone (an earlier release) is taken as this pipeline's.
     */
    static final String JOIN_PREFIX = "millrace.join";

    /**
     * Tables the trigger's message showed renamed (nothing else changed) that no Relation message described since. A plain
     * table's next Relation message comes before its next change and takes the rename with the DDL; a partitioned root's
     * does not come: pgoutput describes a root again only when one of its partitions' own cache entries is invalidated,
     * which the root's rename leaves as they are, so the destinations kept its old name until a restart (found by a user).
     * INV: BOUNDED — at most one entry per table the stream described, each gone at the table's next row or Relation message.
     */
    private final java.util.Set<Integer> renamedUndescribed = new java.util.HashSet<>();

    /**
     * {@code streamed}, the description a row came with, or, when the trigger's message renamed its table since and no
     * Relation message followed ({@link #renamedUndescribed}), its description under the new name, taken here as a Relation
     * message would be, with the DDL: told before the row, in stream order.
     */
    private RelationInfo renamedSinceDescribed(RelationInfo streamed) {
        if (!renamedUndescribed.remove(streamed.oid())) {
            return streamed;
        }
        SchemaChange c = ddl.get(streamed.oid());
        RelationInfo renamed = c == null ? null : renamedOnly(c);
        if (renamed == null) {
            return streamed;
        }
        PgOutputFramer f = replaying != null ? replaying : framer;
        RelationInfo rel = described(f, renamed);
        f.learn(rel);
        watermarks.described(rel);
        shapeSeen(rel);
        return rel;
    }

    /**
     * The stream's description of the table of {@code c} under the name {@code c} gives it, when {@code c} renamed it and
     * changed nothing else (the same columns in the same order); null otherwise, or when the stream has not described it.
     */
    private RelationInfo renamedOnly(SchemaChange c) {
        RelationInfo known = replaying != null && replaying.relation(c.oid()) != null ? replaying.relation(c.oid()) : framer.relation(c.oid());
        if (known == null || c.table() == null || known.table().equals(c.table()) || c.columns().size() != known.columnCount()) {
            return null;
        }
        for (int i = 0; i < known.columnCount(); i++) {
            if (!known.column(i).name().equals(c.columns().get(i).name())) {
                return null;
            }
        }
        return new RelationInfo(known.oid(), c.table(), known.replicaIdentity(), known.columns(), types);
    }

    /** See {@link Pipeline#LEAVE_PREFIX}. */
    static final String LEAVE_PREFIX = "millrace.leave";

    private void join(LogicalMessage lm) {
        int oid = tableSeen == null ? 0 : ownOid(lm);
        if (oid != 0) {
            tableSeen.seen(oid, null);
        }
    }

    private void leave(LogicalMessage lm) {
        int oid = capture == null ? 0 : ownOid(lm);
        if (oid != 0) {
            capture.left(oid);
        }
    }

    /** The table oid of a join or leave message of this pipeline's slot; 0 for another pipeline's. */
    private int ownOid(LogicalMessage lm) {
        String text = new String(lm.content(), java.nio.charset.StandardCharsets.UTF_8).strip();
        int space = text.indexOf(' ');
        if (space >= 0 && !text.substring(space + 1).equals(joinSlot)) {
            return 0; // another pipeline's
        }
        try {
            return (int) Long.parseLong(space < 0 ? text : text.substring(0, space));
        } catch (NumberFormatException e) {
            throw new MillraceException(Kind.DECODE, "cannot read a '" + lm.prefix() + "' logical message: '" + text + "' is not an oid");
        }
    }

    /**
     * The relation a Relation message described, with the key Millrace uses for it ({@link RelationKeys}) and carrying the
     * event trigger's account of the DDL since the table's last Relation message when there is one; {@code f}'s relation
     * cache then holds that (the relation cache follows the DDL and the key).
     */
    private RelationInfo described(PgOutputFramer f, RelationInfo rel) {
        renamedUndescribed.remove(rel.oid());
        SchemaChange c = ddl.remove(rel.oid());
        String mark = shapeMarks.get(rel.oid());
        if (c != null && (mark == null || Batch.isPendingDdl(mark))) { // a hold's mark stays
            // told now: a checkpoint entry that still keeps the account goes back to the shape written (the table's change
            // then records its new shape; a destination that gets no change of it would keep the account for good)
            shapeMarks.put(rel.oid(), Batch.DDL_TOLD);
        }
        // its key read now, before its rows are framed (REPLICA IDENTITY FULL), from the DDL's message when it tells it
        RelationInfo out = keys.described(c == null ? rel : rel.withDdl(c));
        if (out != rel) {
            f.learn(out);
        }
        return out;
    }

    /**
     * The event trigger's messages of each table since its last Relation message, by oid. The trigger reports tables the
     * pipeline does not capture too, and those never get a Relation message: the map keeps the {@value #MAX_PENDING_DDL}
     * tables changed last (INV: BOUNDED); a captured table given up shows its change as without the trigger.
     */
    private final java.util.Map<Integer, SchemaChange> ddl = new java.util.LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(java.util.Map.Entry<Integer, SchemaChange> eldest) {
            return size() > MAX_PENDING_DDL;
        }
    };
    static final int MAX_PENDING_DDL = 1024;
    /** The framer of the streamed transaction being replayed, or null. */
    private PgOutputFramer replaying;

    private static long subXid(byte[] data, int off, int len) {
        byte t = data[off];
        boolean carriesXid = t == 'I' || t == 'U' || t == 'D' || t == 'T' || t == 'R' || t == 'Y' || t == 'M';
        return carriesXid && len >= 5 ? u32(data, off + 1) : 0;
    }

    private static long u32(byte[] b, int at) {
        return ((b[at] & 0xFFL) << 24) | ((b[at + 1] & 0xFFL) << 16) | ((b[at + 2] & 0xFFL) << 8) | (b[at + 3] & 0xFFL);
    }

    private void requireTx(Lsn at, String what) {
        if (!inTx) {
            throw new MillraceException(Kind.DECODE, "pgoutput sent " + what + " at " + at + " outside a transaction");
        }
    }

    private void row(Op op, RelationInfo streamed, RawTuple beforeTuple, RawTuple newTuple, Lsn at, int len)
            throws Channel.Stopped, InterruptedException {
        requireTx(at, op.name());
        Position p = new Position(txCommitLsn, ++ordinal);
        if (!p.isAfter(skipUpTo)) {
            return; // INV: RESUME — every destination holds it already.
        }
        if (withheld.containsKey(streamed.oid())) {
            return; // its stream lacks columns the table has: the copy that ends the hold brings this change (Pipeline.Withholding)
        }
        RelationInfo r = keys.of(renamedUndescribed.isEmpty() ? streamed : renamedSinceDescribed(streamed));
        if (signals != null && r.table().equals(signals.table())) {
            if (op == Op.CREATE) {
                signals.inserted(r, newTuple.decode(r)); // its effect is recorded with this or a later batch (INV: RESUME)
            }
            return;
        }
        if (capture != null && !capture.captures(r.oid(), r.table())) {
            return; // published, not captured: another consumer's table (Pipeline.Capture)
        }
        // INV: BOUNDED — the row's heap cost is taken before it joins the batch (this may hand the batch on and wait).
        hold(HeapCost.row(len, r.columnCount(), (beforeTuple == null ? 0 : 1) + (newTuple == null ? 0 : 1)));
        // An update that kept unchanged TOAST values and carried an old key, of a table being copied online: the
        // snapshot may have to read its new key again (WatermarkStream.copying). Rare: decoded here.
        boolean moves = op == Op.UPDATE && beforeTuple != null && newTuple != null && hasUnchanged(newTuple)
                && watermarks.copying(r.table());
        if (pool != null && !moves && !watermarks.watches(r.table())) {
            // Decoded later by the pool, in its slot (INV: ORDER). No open window on this table, so
            // WatermarkStream.changed would do nothing with its keys (INV: WATERMARK).
            job.add(new RawRow(op, r, beforeTuple, newTuple, at, p, txXid, txCommitMicros));
            last = p;
            return;
        }
        Object[] before = beforeTuple == null ? null : beforeTuple.decode(r);
        Object[] after = newTuple == null ? null : newTuple.decode(r);
        if (moves) {
            watermarks.moved(r, before, after);
        }
        watermarks.changed(r, before, after, txXid);
        add(new ChangeEvent(op, r, before, after, at, p, txXid, txCommitMicros, false));
    }

    private static boolean hasUnchanged(RawTuple t) {
        for (int i = 0; i < t.columnCount(); i++) {
            if (t.kind(i) == 'u') {
                return true;
            }
        }
        return false;
    }

    /**
     * A watermark of an online snapshot chunk (INV: WATERMARK). Low: the stream starts recording the
     * keys it changes in the chunk's table. High: the chunk's rows whose key the stream did not change
     * since the low watermark are emitted here, inside the high watermark's transaction (positions
     * {@code (commit, ordinal)} as for its own changes), before any change committed after it; the
     * chunk's progress is recorded with them.
     */
    private void watermark(LogicalMessage lm, Lsn at) throws Channel.Stopped, InterruptedException {
        WatermarkStream.Chunk w = watermarks.watermark(lm.content());
        if (w == null) {
            return; // a low watermark, one not ours, or a chunk to read again
        }
        long emitted = 0;
        RelationInfo r = w.relation();
        long deleted = 0;
        for (Object[] old : w.gone()) {
            // A reconciling chunk (a lost slot's re-copy): what the destinations hold in its range and the source no longer
            // has, deleted here, at the high watermark, before any later change; a key the stream changed in the window is
            // the stream's (INV: WATERMARK). Not in the chunk's rows: a batch cut among them records them landed by key.
            if (w.isStale(old)) {
                continue;
            }
            add(new ChangeEvent(Op.DELETE, r, old, null, at, new Position(txCommitLsn, ++ordinal), txXid, txCommitMicros, true));
            deleted++;
        }
        emitting = w;
        try {
            for (Object[] row : w.rows()) { // in key order
                emittingLast = row;
                if (w.isStale(row)) {
                    continue;
                }
                row = w.current(row);
                add(new ChangeEvent(Op.READ, r, null, row, at, new Position(txCommitLsn, ++ordinal), txXid, txCommitMicros, true));
                emitted++;
                hold(HeapCost.row(w.encodedBytesPerRow(), row.length, 1)); // lets the batch be cut inside a large chunk
                cutForSize();
            }
        } finally {
            emitting = null;
            emittingLast = null;
        }
        watermarks.emitted(w, emitted, deleted); // its progress is recorded with the batch holding its last row, or a later one
    }

    private void add(ChangeEvent e) {
        if (pool != null) {
            job.add(e);
        } else {
            events.add(e);
        }
        last = e.position();
    }

    private java.util.Map<Integer, String> takeMarks() {
        java.util.Map<Integer, String> m = java.util.Map.copyOf(shapeMarks);
        shapeMarks.clear();
        return m;
    }

    private int eventCount() {
        return pool != null ? job.size() : events.size();
    }

    /** Hands the batch over when it holds anything; also called on a timer when the stream is idle. */
    void cut() throws Channel.Stopped, InterruptedException {
        if (emitting != null && emittingLast != null) {
            // A batch cut inside a chunk's rows: the rows up to this one land with it, and so does the progress
            // that says so (INV: RESUME — after a crash the chunk is read again from the next key, not from its start).
            emitting.landedThrough(emittingLast);
        }
        if (eventCount() == 0 && flushLsn == null && !watermarks.dirty() && shapeMarks.isEmpty()) {
            size = 0;
            if (held != null) {
                held.release(heldBytes);
            }
            heldBytes = 0;
            return;
        }
        if (flushLsn != null) {
            lastFlush = flushLsn;
        }
        Staged b;
        if (pool != null) {
            // INV: DURABLE — positions and progress travel with the job and reach the writer only once it is decoded.
            DecodePool.Job j = job;
            j.seal(new Batch(List.of(), flushLsn, last, null, watermarks.takeProgress(), heldBytes, takeMarks()));
            eventsOut += j.size();
            job = pool.newJob();
            b = j;
        } else {
            b = Staged.ready(new Batch(events, flushLsn, last, null, watermarks.takeProgress(), heldBytes, takeMarks()));
            eventsOut += events.size();
            events = new ArrayList<>();
        }
        size = 0;
        heldBytes = 0;
        flushLsn = null;
        last = null;
        batchStartNanos = System.nanoTime();
        output.accept(b);
    }

    /**
     * The stream is idle and the server reports it has sent everything before {@code caughtUp}:
     * when no transaction is open, the flush position may move there, so an idle slot advances
     * (its retained WAL stays bounded while other databases write). INV: DURABLE — the batch carrying
     * it is applied after every earlier one, so the position is confirmed only once all changes
     * before it are durable.
     */
    void idle(Lsn caughtUp) throws Channel.Stopped, InterruptedException {
        idle(caughtUp, false);
    }

    /**
     * As {@link #idle(Lsn)}; {@code serverWaits}: the server asked for our position since the last call (a keepalive
     * asking for a reply: a shutdown waits until the client confirmed the WAL up to its shutdown checkpoint), so the
     * throttle does not hold the advance back. The server asks at most once per half {@code wal_sender_timeout} otherwise,
     * which bounds the loop the throttle is there for.
     */
    void idle(Lsn caughtUp, boolean serverWaits) throws Channel.Stopped, InterruptedException {
        if (inTx || streamXid != NO_STREAM || spill.openTransactions() > 0 || caughtUp == null || !caughtUp.isAfter(lastFlush)) {
            return;
        }
        long now = System.nanoTime();
        if (!serverWaits && now - lastIdleAdvanceNanos < idleAdvanceNanos) {
            return; // at most one idle checkpoint per interval: storing it may itself be WAL the next keepalive reports
        }
        lastIdleAdvanceNanos = now;
        flushLsn = caughtUp;
        cut();
    }

    private long idleAdvanceNanos;
    private long lastIdleAdvanceNanos = System.nanoTime() - Long.MAX_VALUE / 2;

    /** The idle slot advances at most once per {@code millis}. */
    void idleAdvanceInterval(long millis) {
        this.idleAdvanceNanos = millis * 1_000_000L;
    }

    /**
     * True when no transaction is open and the batch holds something: once the writer is idle (group commit: the batch
     * grew while the writer applied the one before), or once it has waited its linger time.
     */
    boolean due() {
        return pending() && (writerIdle.getAsBoolean() || System.nanoTime() - batchStartNanos >= lingerNanos);
    }

    /** Whether the batch holds something to hand on and no transaction is open. */
    boolean pending() {
        return !inTx && (eventCount() > 0 || flushLsn != null || watermarks.dirty());
    }

    private java.util.function.BooleanSupplier writerIdle = () -> false;

    /** Tells whether the writer has nothing to apply: a batch is then handed on as soon as a transaction completes. */
    void writerIdle(java.util.function.BooleanSupplier idle) {
        this.writerIdle = idle;
    }
}
