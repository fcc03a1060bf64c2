package io.millrace.pipeline;

import io.millrace.core.Lsn;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.schema.TableRef;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counters the status page and metrics read. Written by the writer thread, read by any thread.
 */
public final class PipelineStats {
    /** Told of each durable batch: how many streamed events, and commit-to-durable latency of its newest one. */
    @FunctionalInterface
    public interface DurableListener {
        void durable(int events, long latencyMicros);
    }

    /** Per-table counters. */
    public static final class TableCounters {
        private final LongAdder events = new LongAdder();
        private final LongAdder snapshotRows = new LongAdder();

        /** Streamed changes (c, u, d, t) delivered. */
        public long events() {
            return events.sum();
        }

        /** Snapshot rows (r) delivered. */
        public long snapshotRows() {
            return snapshotRows.sum();
        }
    }

    /**
     * A sink write under way: the sink, since when (epoch millis), and the commit time (Unix micros) of the oldest
     * streamed change of the batch, the oldest change not yet delivered (0 when the batch holds none).
     */
    public record Writing(String sink, long sinceMillis, long oldestCommitMicros) {
    }

    private final AtomicLong eventsWritten = new AtomicLong();
    private volatile Writing writing;
    /** See {@link #undelivered}; 0 when no write failed. */
    private volatile long undeliveredCommitMicros;
    private final AtomicLong batchesWritten = new AtomicLong();
    private final LongAdder spilledBytes = new LongAdder();
    private final AtomicReference<Lsn> durable = new AtomicReference<>(Lsn.ZERO);
    private final Map<TableRef, TableCounters> tables = new ConcurrentHashMap<>();
    private volatile long lastCommitMicros;
    private volatile long lastDurableAtMillis;
    private volatile long lastLatencyMicros;
    private volatile DurableListener listener = (n, l) -> {
    };
    /** Told the commit-to-durable latency of every streamed event (benchmarks); null: nobody asked. */
    private volatile java.util.function.LongConsumer eachLatency;

    void written(List<ChangeEvent> events) {
        eventsWritten.addAndGet(events.size());
        batchesWritten.incrementAndGet();
        TableRef lastTable = null;
        TableCounters counters = null;
        long newestCommit = 0;
        int streamed = 0;
        int runRows = 0; // of lastTable since it began, added at once (one add per run of a table, not per row)
        int runEvents = 0;
        for (ChangeEvent e : events) {
            TableRef t = e.relation().table();
            if (t != lastTable) {
                if (counters != null) {
                    counters.snapshotRows.add(runRows);
                    counters.events.add(runEvents);
                }
                runRows = 0;
                runEvents = 0;
                counters = tables.computeIfAbsent(t, k -> new TableCounters());
                lastTable = t;
            }
            if (e.snapshot()) {
                runRows++;
            } else {
                runEvents++;
                newestCommit = e.commitTimeMicros();
                streamed++;
            }
        }
        if (counters != null) {
            counters.snapshotRows.add(runRows);
            counters.events.add(runEvents);
        }
        long now = System.currentTimeMillis();
        java.util.function.LongConsumer each = eachLatency;
        if (each != null) {
            java.time.Instant t = java.time.Instant.now(); // microsecond resolution on Linux
            long nowMicros = t.getEpochSecond() * 1_000_000L + t.getNano() / 1000;
            for (ChangeEvent e : events) {
                if (!e.snapshot()) {
                    each.accept(nowMicros - e.commitTimeMicros());
                }
            }
        }
        if (newestCommit > 0) {
            lastCommitMicros = newestCommit;
            lastLatencyMicros = Math.max(0, now * 1000 - newestCommit);
            listener.durable(streamed, lastLatencyMicros);
        } else if (events.isEmpty()) {
            // a batch of no change (the idle slot's advance): the destinations hold everything the server sent, nothing is
            // behind. Before, the lag stayed at the last change's latency while idle (a catch-up's minutes: found by a user)
            lastLatencyMicros = 0;
        }
    }

    void writing(Writing w) {
        writing = w;
    }

    /** The sink write under way, or null between writes. */
    public Writing writing() {
        return writing;
    }

    /**
     * How far behind the source delivery is at {@code nowMillis}, in milliseconds: the age of the oldest change of the
     * write under way, so it grows while a destination is blocked, else the commit-to-durable latency of the newest
     * durable change; -1 before any.
     */
    public long lagMillis(long nowMillis) {
        long lag = lastCommitMicros == 0 ? -1 : lastLatencyMicros / 1000;
        Writing w = writing;
        if (w != null && w.oldestCommitMicros() > 0) {
            lag = Math.max(lag, nowMillis - w.oldestCommitMicros() / 1000);
        }
        long failed = undeliveredCommitMicros;
        if (failed > 0) {
            lag = Math.max(lag, nowMillis - failed / 1000);
        }
        return lag;
    }

    /**
     * The commit time of the oldest change of a batch whose write failed: nothing of it is durable, and this run writes
     * no more (the engine ends; a retry starts another), so its lag goes on from there. Before, the status after the
     * failure showed the last durable batch's latency, a second where the change had waited 86 (found by a user: a
     * broker stopped for a minute and a half, and a lag alert a minute late).
     */
    void undelivered(long commitMicros) {
        undeliveredCommitMicros = Math.max(0, commitMicros); // 0: delivered (a batch written since)
    }

    /** The durable position the run starts from: the lowest over the destinations' checkpoints (no batch written yet). */
    void resumedAt(Lsn lsn) {
        durable.compareAndSet(Lsn.ZERO, lsn);
    }

    void durable(Lsn lsn) {
        durable.set(lsn);
        lastDurableAtMillis = System.currentTimeMillis();
    }

    void spilled(long bytes) {
        spilledBytes.add(bytes);
    }

    /** Bytes of streamed (in-progress) transactions written to the spill so far. */
    public long spilledBytes() {
        return spilledBytes.sum();
    }

    public void listener(DurableListener l) {
        this.listener = l;
    }

    /**
     * Receives, on the writer thread right after each batch is durable in every sink, the latency from
     * source commit to durable of each streamed event in it, in microseconds (source and Millrace
     * clocks; on one machine, one clock). For benchmarks: it runs once per event.
     */
    public void eachLatency(java.util.function.LongConsumer latencyMicros) {
        this.eachLatency = latencyMicros;
    }

    public long eventsWritten() {
        return eventsWritten.get();
    }

    public long batchesWritten() {
        return batchesWritten.get();
    }

    public Lsn durable() {
        return durable.get();
    }

    public Map<TableRef, TableCounters> tables() {
        return tables;
    }

    /** Commit time (Unix micros) of the newest source transaction made durable, 0 when none yet. */
    public long lastCommitMicros() {
        return lastCommitMicros;
    }

    /** Commit-to-durable latency of the newest durable change, in microseconds. */
    public long lastLatencyMicros() {
        return lastLatencyMicros;
    }

    public long lastDurableAtMillis() {
        return lastDurableAtMillis;
    }
}
