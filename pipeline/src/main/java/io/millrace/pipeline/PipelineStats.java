package io.millrace.pipeline;

import io.millrace.core.Lsn;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/** Counters the status page and metrics read. Written by the pipeline threads, read by any. */
public final class PipelineStats {
    private final AtomicLong eventsWritten = new AtomicLong();
    private final AtomicLong batchesWritten = new AtomicLong();
    private final AtomicReference<Lsn> durable = new AtomicReference<>(Lsn.ZERO);
    private volatile long lastCommitMicros;
    private volatile long lastDurableAtMillis;

    void written(int events, long lastCommitMicros) {
        eventsWritten.addAndGet(events);
        batchesWritten.incrementAndGet();
        if (lastCommitMicros > 0) {
            this.lastCommitMicros = lastCommitMicros;
        }
    }

    void durable(Lsn lsn) {
        durable.set(lsn);
        lastDurableAtMillis = System.currentTimeMillis();
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

    /** Commit time (Unix micros) of the newest source transaction made durable, 0 when none yet. */
    public long lastCommitMicros() {
        return lastCommitMicros;
    }

    public long lastDurableAtMillis() {
        return lastDurableAtMillis;
    }
}
