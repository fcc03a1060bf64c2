package io.millrace.connect;

import io.millrace.api.Checkpoints;
import io.millrace.core.change.Checkpoint;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.source.SourceRecord;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The hand-off between the engine thread, which delivers batches, and Connect's task thread, which polls them, and the
 * record of what Connect has stored.
 *
 * <p><b>INV: BOUNDED.</b> At most one batch is between the engine and Kafka: {@link #deliver} blocks the engine thread
 * until Kafka has acknowledged every record of the batch ({@link org.apache.kafka.connect.source.SourceTask#commitRecord};
 * on an exactly-once worker with connector-defined boundaries, once its transaction committed), so the engine never runs
 * further ahead (the engine bounds the batch itself, {@code millrace.pipeline.batch.kb}). Letting the engine build the
 * next batch while Connect sent the one before gained nothing measured (docs/BENCHMARKS.md, "Kafka Connect"): the
 * engine's batches came out smaller, one Kafka transaction each, and the JVM used more CPU for the same records.
 *
 * <p><b>INV: DURABLE.</b> {@link #deliver} returns once the batch is in Kafka, before its offset is stored; the engine
 * confirms the slot only up to {@link #stored()} (the task is a consumer that {@code storesLater}):
 * <ul>
 *   <li>with connector-defined transaction boundaries (exactly-once source support, {@code transaction.boundary=connector}):
 *       the checkpoint of the last batch whose every record Connect acknowledged; the exactly-once worker acknowledges
 *       records only after the Kafka transaction holding them and the batch's offset committed;</li>
 *   <li>otherwise (at least once, or exactly once with poll or interval boundaries, which the task cannot tell apart):
 *       the checkpoint in Connect's offset store, read through the task's {@code OffsetStorageReader} (Connect's own record
 *       of what it committed) after each offset commit ({@link #committed}). A worker without exactly-once support stores
 *       offsets only at its offset flush, every {@code offset.flush.interval.ms} (60 s by default): the slot trails by that
 *       much while the records flow on. Before, each batch waited for the flush, and a Debezium user's worker at its
 *       defaults delivered one batch a minute (found by a user: about 17 records/s).</li>
 * </ul>
 *
 * <p>Threads: {@link #deliver}, {@link #stored} and {@link #quiesce} on the engine thread; {@link #take}, {@link #acked},
 * {@link #committed} on Connect's threads; {@link #close} on any. All state is guarded by {@code this}.
 */
final class Handoff {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Handoff.class);
    private final boolean connectorBoundaries;
    private final long timeoutMs;
    /** Connect's offset store's offset of this connector now (a read of the offsets topic), or null; may throw. */
    private final Supplier<Map<String, ?>> store;

    /** Delivered by the engine, not yet polled. Guarded by this. */
    private Batch pending;
    /** Polled; its records not all acknowledged yet, or the last one polled. Guarded by this. */
    private Batch inFlight;
    /** The checkpoint stored last as far as this hand-off knows, or null. Guarded by this. */
    private Checkpoint stored;
    /** An offset commit came since the store was last read (worker-defined boundaries). Guarded by this. */
    private boolean commitSeen;
    private boolean closed;

    Handoff(boolean connectorBoundaries, long timeoutMs) {
        this(connectorBoundaries, timeoutMs, () -> null);
    }

    Handoff(boolean connectorBoundaries, long timeoutMs, Supplier<Map<String, ?>> store) {
        this.connectorBoundaries = connectorBoundaries;
        this.timeoutMs = timeoutMs;
        this.store = store;
    }

    /** One engine batch as records; the last record carries the batch's checkpoint. */
    static final class Batch {
        final List<SourceRecord> records;
        final Checkpoint checkpoint;
        private final int distinct;
        private final Set<SourceRecord> acked = new HashSet<>();
        private boolean allAcked;

        Batch(List<SourceRecord> records, Checkpoint checkpoint) {
            if (records.isEmpty()) {
                throw new IllegalArgumentException("a batch carries at least one record (its checkpoint's)");
            }
            this.records = List.copyOf(records);
            this.checkpoint = checkpoint;
            // The exactly-once worker keys committed records by equality: equal records are acknowledged once.
            this.distinct = new HashSet<>(records).size();
        }
    }

    /**
     * Hands {@code batch} to Connect and waits until Kafka acknowledged its every record (engine thread); does not wait
     * for its offset to be stored.
     *
     * @throws ConnectException when the task stops first, or Kafka did not acknowledge the records within the commit timeout
     */
    synchronized void deliver(Batch batch) throws InterruptedException {
        if (pending != null || (inFlight != null && !inFlight.allAcked)) {
            throw new IllegalStateException("a batch is already between the engine and Kafka (one at a time: INV: BOUNDED)");
        }
        long deadline = System.currentTimeMillis() + timeoutMs;
        pending = batch;
        notifyAll();
        while (!batch.allAcked) {
            if (closed) {
                throw new ConnectException("the task is stopping: the batch is not in Kafka yet (it is delivered again)");
            }
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                throw new ConnectException("Kafka did not acknowledge the batch's records within " + timeoutMs + " ms ("
                        + ConnectorSettings.M_HANDOFF_TIMEOUT + "): is the broker reachable?");
            }
            wait(left);
        }
    }

    /** The records of the batch waiting to be polled, or null after {@code maxWaitMs} without one (Connect's thread). */
    synchronized List<SourceRecord> take(long maxWaitMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + maxWaitMs;
        while (pending == null && !closed) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                return null;
            }
            wait(left);
        }
        if (pending == null) {
            return null;
        }
        inFlight = pending;
        pending = null;
        return inFlight.records;
    }

    /** Connect acknowledged {@code record} ({@code SourceTask.commitRecord}). */
    synchronized void acked(SourceRecord record) {
        Batch b = inFlight;
        if (b == null || b.allAcked) {
            return;
        }
        b.acked.add(record);
        if (b.acked.size() >= b.distinct) {
            b.allAcked = true;
            b.acked.clear();
            if (connectorBoundaries && b.checkpoint != null) {
                stored = b.checkpoint; // the exactly-once worker acknowledges records only after their transaction committed
            }
            notifyAll();
        }
    }

    /** Connect committed offsets ({@code SourceTask.commit}). */
    synchronized void committed() {
        commitSeen = true;
    }

    /**
     * The checkpoint stored last, or empty while none is known (engine thread). With worker-defined boundaries, reads
     * Connect's offset store after an offset commit; otherwise answers from what it knows.
     */
    Optional<Checkpoint> stored() {
        synchronized (this) {
            if (connectorBoundaries || !commitSeen) {
                return Optional.ofNullable(stored);
            }
            commitSeen = false;
        }
        Map<String, ?> offset;
        try {
            offset = store.get(); // outside the lock: a read of the offsets topic
        } catch (RuntimeException e) {
            LOG.debug("reading the stored offset failed; read again at the next call", e);
            synchronized (this) {
                commitSeen = true; // read again at the next call
                return Optional.ofNullable(stored);
            }
        }
        Object json = offset == null ? null : offset.get(MillraceSourceTask.OFFSET_KEY);
        Checkpoint read = json == null ? null : Checkpoints.fromJson(json.toString());
        synchronized (this) {
            if (read != null && (stored == null || read.flushLsn().isAfter(stored.flushLsn()))) {
                stored = read;
            }
            return Optional.ofNullable(stored);
        }
    }

    /**
     * Before the engine reads the stored offset again (a restart inside the task): drops a batch not yet polled, waits
     * until Kafka acknowledged the records of one polled (with connector-defined boundaries: its transaction committed),
     * and with worker-defined boundaries until Connect's offset store holds the offset of the last batch in Kafka. Engine
     * thread.
     *
     * <p>Why the store: the engine resumes from what it reads there. An older offset (a worker flushing every 60 s) would
     * have it deliver again what Kafka holds, and Connect, which stores the offset of the record acknowledged last, would
     * then store the older positions after the newer ones: below what the slot was confirmed up to (INV: DURABLE), so that
     * the next task's start would find the slot past its offset; before the first flush there is no offset at all, and
     * the engine would take the slot for one it did not make.
     */
    void quiesce() throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        Batch last;
        synchronized (this) {
            pending = null;
            while (inFlight != null && !inFlight.allAcked && !closed) {
                wait(left(deadline, "acknowledged"));
            }
            last = inFlight;
        }
        if (!connectorBoundaries && last != null && last.allAcked) {
            Map<String, ?> want = last.records.get(last.records.size() - 1).sourceOffset();
            while (!want.equals(readStore())) {
                synchronized (this) {
                    while (!commitSeen && !closed) {
                        wait(Math.min(100, left(deadline, "stored by Connect (offset.flush.interval.ms)")));
                    }
                    if (closed) {
                        break;
                    }
                    commitSeen = false;
                }
            }
        }
        synchronized (this) {
            inFlight = null;
            stored = null; // the engine reads the offset store itself now
            commitSeen = false;
        }
    }

    private long left(long deadline, String what) {
        long left = deadline - System.currentTimeMillis();
        if (left <= 0) {
            throw new RetriableException("a batch handed to Connect before the engine restarted was not " + what + " within "
                    + timeoutMs + " ms (" + ConnectorSettings.M_HANDOFF_TIMEOUT + ")");
        }
        return left;
    }

    /** Connect's offset store's offset of this connector now, or null when it cannot be read. */
    private Map<String, ?> readStore() {
        try {
            return store.get(); // a read of the offsets topic: never under the lock
        } catch (RuntimeException e) {
            LOG.debug("reading the stored offset failed; read again after the next offset commit", e);
            return null;
        }
    }

    /** Wakes both sides for good: the task stops. */
    synchronized void close() {
        closed = true;
        notifyAll();
    }
}
