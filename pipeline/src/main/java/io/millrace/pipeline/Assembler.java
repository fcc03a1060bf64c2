package io.millrace.pipeline;

import io.millrace.core.ByteBudget;
import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.RelationInfo;
import io.millrace.pgoutput.PgOutputFramer;
import io.millrace.pgoutput.PgOutputMessage;
import io.millrace.pgoutput.PgOutputMessage.Begin;
import io.millrace.pgoutput.PgOutputMessage.Commit;
import io.millrace.pgoutput.PgOutputMessage.Delete;
import io.millrace.pgoutput.PgOutputMessage.Insert;
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
 * sits whole in memory (INV: BOUNDED). A batch's {@code flushLsn} is the end of the last transaction
 * it completes: a destination that applied it may be confirmed there and no further (INV: DURABLE).
 *
 * <p>Single-threaded: owned by the pipeline thread.
 */
final class Assembler {
    /** Where finished batches go. */
    interface Output {
        void accept(Batch batch) throws Channel.Stopped, InterruptedException;
    }

    private final PgOutputFramer framer;
    private final RelationKeys keys;
    private final Position skipUpTo;
    private final long batchBytes;
    private final long maxBatchBytes;
    private final long lingerNanos;
    private final Output output;

    // Current transaction.
    private boolean inTx;
    private Lsn txCommitLsn = Lsn.ZERO;
    private long txXid;
    private long txCommitMicros;
    private long ordinal;

    // Current batch.
    private List<ChangeEvent> events = new ArrayList<>();
    private long bytes;
    private Lsn flushLsn;
    private Position last;
    private long batchStartNanos;

    private long eventsOut;
    /** The newest flush position handed on. */
    private Lsn lastFlush = Lsn.ZERO;

    Assembler(PgOutputFramer framer, RelationKeys keys, Position skipUpTo, long batchBytes, long maxBatchBytes,
              long lingerMillis, Output output) {
        this.framer = framer;
        this.keys = keys;
        this.skipUpTo = skipUpTo;
        this.batchBytes = batchBytes;
        this.maxBatchBytes = maxBatchBytes;
        this.lingerNanos = lingerMillis * 1_000_000L;
        this.output = output;
    }

    long eventsOut() {
        return eventsOut;
    }

    /** Handles one message from the reader; {@code len} bytes were taken from the budget for it. */
    void onMessage(Lsn walStart, byte[] data, int off, int len) throws Channel.Stopped, InterruptedException {
        if (bytes == 0 && events.isEmpty() && flushLsn == null) {
            batchStartNanos = System.nanoTime();
        }
        bytes += len;
        PgOutputMessage m = framer.frame(data, off, len);
        if (m instanceof Begin b) {
            if (inTx) {
                throw new MillraceException(Kind.DECODE, "pgoutput sent BEGIN of transaction " + b.xid() + " at " + walStart
                        + " while transaction " + txXid + " was still open");
            }
            inTx = true;
            txCommitLsn = b.finalLsn();
            txXid = b.xid();
            txCommitMicros = b.commitTimeMicros();
            ordinal = 0;
        } else if (m instanceof Insert i) {
            row(Op.CREATE, i.relation(), null, i.newTuple(), walStart);
        } else if (m instanceof Update u) {
            row(Op.UPDATE, u.relation(), u.oldKind() == 0 ? null : u.oldTuple(), u.newTuple(), walStart);
        } else if (m instanceof Delete d) {
            row(Op.DELETE, d.relation(), d.oldTuple(), null, walStart);
        } else if (m instanceof Truncate t) {
            requireTx(walStart, "TRUNCATE");
            for (RelationInfo r : t.relations()) {
                Position p = new Position(txCommitLsn, ++ordinal);
                if (p.isAfter(skipUpTo)) {
                    add(new ChangeEvent(Op.TRUNCATE, keys.of(r), null, null, walStart, p, txXid, txCommitMicros, false));
                }
            }
        } else if (m instanceof Commit c) {
            requireTx(walStart, "COMMIT");
            if (!c.commitLsn().equals(txCommitLsn)) {
                throw new MillraceException(Kind.DECODE, "pgoutput COMMIT at " + c.commitLsn() + " does not match BEGIN's final LSN "
                        + txCommitLsn + " (transaction " + txXid + ")");
            }
            inTx = false;
            flushLsn = c.endLsn();
            if (bytes >= batchBytes || System.nanoTime() - batchStartNanos >= lingerNanos) {
                cut();
            }
            return;
        }
        // Relation, Type, Origin and logical messages change framer state only.
        if (bytes >= maxBatchBytes) {
            // INV: BOUNDED — a large transaction is cut inside (flushLsn stays at the last complete one);
            // bytes of skipped changes are handed on too, so the reader's budget comes back.
            cut();
        }
    }

    private void requireTx(Lsn at, String what) {
        if (!inTx) {
            throw new MillraceException(Kind.DECODE, "pgoutput sent " + what + " at " + at + " outside a transaction");
        }
    }

    private void row(Op op, RelationInfo streamed, RawTuple beforeTuple, RawTuple newTuple, Lsn at) {
        requireTx(at, op.name());
        Position p = new Position(txCommitLsn, ++ordinal);
        if (!p.isAfter(skipUpTo)) {
            return; // INV: RESUME — every destination holds it already.
        }
        RelationInfo r = keys.of(streamed);
        Object[] before = beforeTuple == null ? null : beforeTuple.decode(r);
        Object[] after = newTuple == null ? null : newTuple.decode(r);
        add(new ChangeEvent(op, r, before, after, at, p, txXid, txCommitMicros, false));
    }

    private void add(ChangeEvent e) {
        events.add(e);
        last = e.position();
    }

    /** Hands the batch over when it holds anything; also called on a timer when the stream is idle. */
    void cut() throws Channel.Stopped, InterruptedException {
        if (events.isEmpty() && flushLsn == null && bytes == 0) {
            return;
        }
        if (flushLsn != null) {
            lastFlush = flushLsn;
        }
        Batch b = new Batch(events, flushLsn, last, bytes, null);
        eventsOut += events.size();
        events = new ArrayList<>();
        bytes = 0;
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
        if (inTx || caughtUp == null || !caughtUp.isAfter(lastFlush)) {
            return;
        }
        flushLsn = caughtUp;
        cut();
    }

    /** True when a batch has waited its linger time and no transaction is open. */
    boolean due() {
        return !inTx && (bytes > 0 || flushLsn != null) && System.nanoTime() - batchStartNanos >= lingerNanos;
    }

    /** Bytes held since the last cut that the budget must get back: used when the pipeline stops. */
    long heldBytes() {
        return bytes;
    }
}
