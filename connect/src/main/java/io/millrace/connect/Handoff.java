package io.millrace.connect;

import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.source.SourceRecord;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The hand-off between the engine thread, which delivers batches, and Connect's task thread, which polls them, and the
 * record of what Connect has committed.
 *
 * <p><b>INV: BOUNDED.</b> At most one batch is between the two: {@link #deliver} blocks the engine thread until Connect
 * has committed the batch's offset, so the engine never runs ahead of Kafka by more than one batch (the engine bounds
 * the batch itself, {@code millrace.pipeline.batch.kb}).
 *
 * <p><b>INV: DURABLE.</b> {@link #deliver} returns, and the engine may then confirm the slot up to the batch's checkpoint,
 * only once Connect has committed the offset of the batch's last record (which carries that checkpoint; the records
 * before it carry the previous one, so that a commit in the middle of a batch resumes before it):
 * <ul>
 *   <li>with connector-defined transaction boundaries (exactly-once source support, {@code transaction.boundary=connector}):
 *       when {@link org.apache.kafka.connect.source.SourceTask#commitRecord} has been called for every record of the
 *       batch; the exactly-once worker calls it only after the Kafka transaction holding the records and the offset
 *       committed;</li>
 *   <li>otherwise (at least once, or exactly once with poll or interval boundaries, which the task cannot tell apart):
 *       when, after every record has been acknowledged ({@code commitRecord}), an offset commit ({@code commit()}) came
 *       and Connect's offset store holds the batch's offset (read through the task's {@code OffsetStorageReader}: Connect's
 *       own record of what it committed); or, whatever the store says, when a poll began after the acknowledgements (the
 *       worker makes acknowledged offsets committable before each poll) and then two offset commits completed: the
 *       second one's flush started after the first returned, so after the offsets were committable.</li>
 * </ul>
 *
 * <p>Threads: {@link #deliver} and {@link #quiesce} on the engine thread; {@link #take}, {@link #acked},
 * {@link #committed} on Connect's threads; {@link #close} on any. All state is guarded by {@code this}.
 */
final class Handoff {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Handoff.class);
    /** A batch whose offset Connect committed this long after its records were acknowledged is told (see {@link #slowCommit}). */
    static final long SLOW_COMMIT_MS = 10_000;
    /** When {@link #slowCommit} was last logged (not more than once in ten minutes). Guarded by this. */
    private long slowToldAt = Long.MIN_VALUE / 2;
    private final boolean connectorBoundaries;
    private final long timeoutMs;
    /**
     * Whether Connect's offset store holds this offset now (the task's {@code OffsetStorageReader}: a read of the offsets
     * topic, with read_committed on an exactly-once worker). Asked after an offset commit that followed the batch's
     * acknowledgements, so that worker-defined boundaries need not wait for the rule's poll and second commit.
     */
    private final java.util.function.Predicate<Map<String, ?>> stored;

    /** Delivered by the engine, not yet polled. Guarded by this. */
    private Batch pending;
    /** Polled, not yet durable. Guarded by this. */
    private Batch inFlight;
    private boolean closed;

    Handoff(boolean connectorBoundaries, long timeoutMs) {
        this(connectorBoundaries, timeoutMs, offset -> false);
    }

    Handoff(boolean connectorBoundaries, long timeoutMs, java.util.function.Predicate<Map<String, ?>> stored) {
        this.connectorBoundaries = connectorBoundaries;
        this.timeoutMs = timeoutMs;
        this.stored = stored;
    }

    /** One engine batch as records; the last record carries the batch's checkpoint. */
    static final class Batch {
        final List<SourceRecord> records;
        final SourceRecord last;
        private final int distinct;
        private final Set<SourceRecord> acked = new HashSet<>();
        private boolean allAcked;
        /** When every record had been acknowledged. */
        private long allAckedAt;
        private boolean polledSinceAck;
        private int commitsSinceAck;
        /** An offset commit came after every record was acknowledged: the store may hold the batch's offset. */
        private boolean lookInStore;
        private boolean durable;

        Batch(List<SourceRecord> records) {
            if (records.isEmpty()) {
                throw new IllegalArgumentException("a batch carries at least one record (its checkpoint's)");
            }
            this.records = List.copyOf(records);
            this.last = records.get(records.size() - 1);
            // The exactly-once worker keys committed records by equality: equal records are acknowledged once.
            this.distinct = new HashSet<>(records).size();
        }
    }

    /**
     * Hands {@code batch} to Connect and waits until its offset is committed (engine thread).
     *
     * @throws ConnectException when the task stops first, or Connect did not commit within the commit timeout
     */
    void deliver(Batch batch) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        synchronized (this) {
            if (pending != null || inFlight != null) {
                throw new IllegalStateException("a batch is already between the engine and Connect (one at a time: INV: BOUNDED)");
            }
            pending = batch;
            notifyAll();
        }
        while (true) {
            synchronized (this) {
                while (!batch.durable) { // a stop or the deadline wins over a look in the store
                    if (closed) {
                        throw new ConnectException("the task is stopping: the batch's offset was not committed (it is delivered again)");
                    }
                    long left = deadline - System.currentTimeMillis();
                    if (left <= 0) {
                        throw new ConnectException("Connect did not commit the batch's offset within " + timeoutMs + " ms ("
                                + ConnectorSettings.M_HANDOFF_TIMEOUT + ")" + (connectorBoundaries ? "" : "; without connector-defined"
                                + " transaction boundaries a batch waits for an offset flush: check offset.flush.interval.ms"));
                    }
                    if (batch.lookInStore) {
                        break;
                    }
                    wait(left);
                }
                if (batch.durable) {
                    inFlight = null;
                    return;
                }
                batch.lookInStore = false;
            }
            // Outside the lock (a read of the offsets topic): Connect's own record of what it committed. On an exactly-once
            // worker with poll boundaries the commit right after the acknowledgements is the batch's transaction; before,
            // the batch waited for two more polls (a second each: about 110 changes/s, found by a user).
            if (stored.test(batch.last.sourceOffset())) {
                synchronized (this) {
                    durable(batch);
                    inFlight = null;
                    return;
                }
            }
        }
    }

    /** The records of the batch waiting to be polled, or null after {@code maxWaitMs} without one (Connect's thread). */
    synchronized List<SourceRecord> take(long maxWaitMs) throws InterruptedException {
        if (inFlight != null && inFlight.allAcked) {
            inFlight.polledSinceAck = true;
        }
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
            b.allAckedAt = System.currentTimeMillis();
            if (connectorBoundaries) {
                durable(b); // the exactly-once worker acknowledges records only after their transaction committed
            }
        }
    }

    /** Connect committed offsets ({@code SourceTask.commit}). */
    synchronized void committed() {
        Batch b = inFlight;
        if (b == null || !b.allAcked || b.durable) {
            return;
        }
        if (b.polledSinceAck && ++b.commitsSinceAck >= 2) {
            durable(b);
        } else {
            b.lookInStore = true; // this commit's flush may hold the batch's offset: the engine thread reads the store
            notifyAll();
        }
    }

    private void durable(Batch b) {
        b.durable = true;
        long now = System.currentTimeMillis();
        String slow = slowCommit(now - b.allAckedAt, connectorBoundaries);
        if (slow != null && now - slowToldAt >= 600_000) {
            slowToldAt = now;
            LOG.warn(slow);
        }
        notifyAll();
    }

    /**
     * What to tell when Connect committed a batch's offset {@code waitedMs} after Kafka acknowledged its records, or null.
     * The engine confirms the slot only up to committed offsets and hands Connect one batch at a time (INV: DURABLE,
     * BOUNDED), so without connector-defined boundaries it delivers one batch per offset flush: a Debezium standalone
     * worker's configuration, left at {@code offset.flush.interval.ms} 60 s, fell behind without limit (found by a user:
     * about 17 records/s).
     */
    static String slowCommit(long waitedMs, boolean connectorBoundaries) {
        if (connectorBoundaries || waitedMs < SLOW_COMMIT_MS) {
            return null;
        }
        return "Connect committed the offset of a batch " + waitedMs / 1000 + " s after Kafka acknowledged its records: the connector"
                + " delivers one batch per offset commit (the slot is confirmed only up to committed offsets), so it falls behind"
                + " the source. Set offset.flush.interval.ms=1000 on the worker (its default is 60000), or run it with exactly-once"
                + " source support (exactly.once.source.support=enabled), whose transactions commit each batch at once";
    }

    /**
     * Before the engine reads the committed offset again (a restart inside the task): drops a batch not yet polled and
     * waits for one polled to be committed, so that the offset read is the last one Connect will commit. Engine thread.
     */
    void quiesce() throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        synchronized (this) {
            pending = null;
            while (inFlight != null && !inFlight.durable && !closed) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    throw new RetriableException("a batch handed to Connect before the engine restarted was not committed within "
                            + timeoutMs + " ms");
                }
                wait(left);
            }
            inFlight = null;
        }
    }

    /** Wakes both sides for good: the task stops. */
    synchronized void close() {
        closed = true;
        notifyAll();
    }
}
