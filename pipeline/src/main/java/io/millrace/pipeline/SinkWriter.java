package io.millrace.pipeline;

import io.millrace.core.ByteBudget;
import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.SourceTables;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.fault.Faults;
import io.millrace.core.sink.Sink;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Applies batches to every sink, each with its own checkpoint, then publishes the durable position:
 * the lowest flush LSN over all sinks (INV: DURABLE — the slot is never confirmed past what every
 * sink made durable). A sink gets only the streamed events after its own checkpoint (INV: RESUME),
 * so a destination that was ahead of another when the engine stopped is not written twice.
 *
 * <p>Single-threaded: owned by the writer thread, which owns the sinks.
 */
final class SinkWriter {
    private static final Logger LOG = LoggerFactory.getLogger(SinkWriter.class);

    private final List<Sink> sinks;
    private final Checkpoint[] checkpoints;
    private final ByteBudget held;
    private final Consumer<Lsn> onDurable;
    private final PipelineStats stats;
    /**
     * Per sink that {@link Sink#storesLater() stores later}: the flush LSN of the checkpoint it has stored, which the
     * durable position takes instead of the one written last (null for a sink that stores with each write).
     */
    private final Lsn[] stored;
    /** The durable position published last (null before the first). */
    private Lsn published;

    SinkWriter(List<Sink> sinks, List<Checkpoint> checkpoints, ByteBudget held, Consumer<Lsn> onDurable, PipelineStats stats) {
        this.held = held;
        this.sinks = List.copyOf(sinks);
        this.checkpoints = checkpoints.toArray(new Checkpoint[0]);
        this.onDurable = onDurable;
        this.stats = stats;
        this.stored = new Lsn[this.sinks.size()];
        for (int i = 0; i < stored.length; i++) {
            // until it says more: what it held at the start (INV: DURABLE — the slot stays where the sink resumes from)
            stored[i] = this.sinks.get(i).storesLater() ? this.checkpoints[i].flushLsn() : null;
        }
        if (!checkpoints.isEmpty()) {
            // durable from the start: what the destinations hold (a stop before the first batch reported 0/0, found by a user)
            stats.resumedAt(checkpoints.stream().map(Checkpoint::flushLsn).reduce(Lsn::min).orElseThrow());
        }
    }

    Checkpoint checkpoint(int sink) {
        return checkpoints[sink];
    }

    void write(Batch batch) {
        boolean written = false;
        try {
            writeToEach(batch);
            written = true;
        } finally {
            PipelineStats.Writing w = stats.writing();
            if (!written && w != null) {
                stats.undelivered(w.oldestCommitMicros()); // the lag the retry's status goes on from
            } else if (written) {
                stats.undelivered(0); // a write of the batch again succeeded
            }
            stats.writing(null);
        }
        stats.written(batch.events());
        held.release(batch.heldBytes()); // INV: BOUNDED — the rows are safe from loss (durable, or stored later): their room goes back
        Lsn durable = durable();
        stats.durable(durable);
        Faults.hit(FaultPoint.PIPELINE_BEFORE_DURABLE); // every sink wrote its checkpoint; the slot may not move yet
        publish(durable);
        if (LOG.isTraceEnabled()) {
            LOG.trace("batch of {} events written; durable position {}", batch.events().size(), durable);
        }
    }

    /** Whether a sink {@link Sink#storesLater() stores later}: then the writer asks it between batches too ({@link #storedMoved}). */
    boolean anyStoresLater() {
        for (Lsn s : stored) {
            if (s != null) {
                return true;
            }
        }
        return false;
    }

    /** Between batches (writer thread): publishes the durable position again when a sink that stores later stored more. */
    void storedMoved() {
        if (!anyStoresLater()) {
            return;
        }
        Lsn durable = durable();
        if (published == null || durable.isAfter(published)) {
            stats.durable(durable);
            publish(durable);
        }
    }

    /**
     * The lowest flush LSN over all sinks of what each made durable (INV: DURABLE — the slot is never confirmed past it):
     * the checkpoint written last, or for a sink that stores later the one it says it stored (never past the written one).
     */
    private Lsn durable() {
        Lsn durable = null;
        for (int i = 0; i < checkpoints.length; i++) {
            Lsn at = checkpoints[i].flushLsn();
            if (stored[i] != null) {
                Lsn now = sinks.get(i).storedFlushLsn();
                if (now != null && now.isAfter(stored[i])) {
                    stored[i] = Lsn.min(now, at);
                }
                at = stored[i];
            }
            durable = durable == null ? at : Lsn.min(durable, at);
        }
        return durable;
    }

    private void publish(Lsn durable) {
        published = durable;
        onDurable.accept(durable);
    }

    private void writeToEach(Batch batch) {
        long oldestCommit = 0; // events are in commit order: the first streamed one is the oldest not yet delivered
        for (ChangeEvent e : batch.events()) {
            if (!e.snapshot()) {
                oldestCommit = e.commitTimeMicros();
                break;
            }
        }
        for (int i = 0; i < sinks.size(); i++) {
            Checkpoint cp = checkpoints[i];
            List<ChangeEvent> events = batch.events();
            if (batch.last() != null && !batch.last().isAfter(cp.applied())) {
                events = List.of(); // INV: RESUME — this sink holds all of it already.
            } else if (!events.isEmpty() && !events.get(0).snapshot() && !events.get(0).position().isAfter(cp.applied())) {
                List<ChangeEvent> newer = new ArrayList<>(events.size());
                for (ChangeEvent e : events) {
                    if (e.snapshot() || e.position().isAfter(cp.applied())) {
                        newer.add(e);
                    }
                }
                events = newer;
            }
            Lsn flush = batch.flushLsn() == null ? cp.flushLsn() : Lsn.max(cp.flushLsn(), batch.flushLsn());
            Position applied = batch.last() == null || !batch.last().isAfter(cp.applied()) ? cp.applied() : batch.last();
            Checkpoint next = cp.advance(flush, applied);
            if (batch.snapshot() != null) {
                next = next.withSnapshot(batch.snapshot());
            }
            if (batch.online() != null) {
                next = next.withOnline(batch.online()); // INV: RESUME — after the rows of the chunks it counts as landed
            }
            if (!events.isEmpty()) {
                next = next.withTables(SourceTables.follow(cp.tables(), events).held()); // renames followed by oid, also after a restart
                next = next.withShapes(io.millrace.core.change.SourceShapes.follow(cp.shapes(), events)); // a reshape while stopped is seen (INV: RESUME — recorded with the rows it describes)
            }
            if (!batch.shapes().isEmpty()) {
                java.util.TreeMap<Integer, String> shapes = new java.util.TreeMap<>(next.shapes());
                batch.shapes().forEach((oid, entry) -> { // a table withheld from here on, or flowing again (INV: RESUME)
                    String had = shapes.get(oid);
                    if (Batch.isPendingDdl(entry)) {
                        // this destination's entry keeps the shape it wrote; a withheld table's hold is not replaced
                        if (io.millrace.core.change.SourceShapes.withheldColumns(had) == null) {
                            shapes.put(oid, io.millrace.core.change.SourceShapes.withWritten(entry,
                                    io.millrace.core.change.SourceShapes.written(had)));
                        }
                    } else if (entry.equals(Batch.DDL_TOLD)) {
                        if (io.millrace.core.change.SourceShapes.pendingChange(had) != null) {
                            String written = io.millrace.core.change.SourceShapes.written(had);
                            if (written.isEmpty()) {
                                shapes.remove(oid);
                            } else {
                                shapes.put(oid, written);
                            }
                        }
                    } else if (entry.equals(Batch.NO_SHAPE)) {
                        shapes.remove(oid);
                    } else {
                        shapes.put(oid, entry);
                    }
                });
                next = next.withShapes(shapes);
            }
            if (events.isEmpty() && next.equals(cp)) {
                continue;
            }
            stats.writing(new PipelineStats.Writing(sinks.get(i).name(), System.currentTimeMillis(), oldestCommit)); // for status
            sinks.get(i).write(events, next); // durable on return
            checkpoints[i] = next;
        }
    }
}
