package io.millrace.core;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Bytes in flight between the replication reader and the sinks (INV: BOUNDED). The reader takes
 * bytes for each message it reads; the sink writer gives them back once the message's batch is
 * durable. When the budget is spent the reader stops reading (but keeps talking to the server).
 *
 * <p>Thread-safe and lock-free on the hot path (take, release, exhausted); the lock is only for
 * waiting. One message may overshoot the budget (a message is never split), so the bound is budget +
 * largest message.
 */
public final class ByteBudget {
    private final long limit;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition released = lock.newCondition();
    private final AtomicLong used = new AtomicLong();
    private final AtomicLong peak = new AtomicLong();

    public ByteBudget(long limit) {
        if (limit <= 0) {
            throw new IllegalArgumentException("byte budget must be positive: " + limit);
        }
        this.limit = limit;
    }

    public long limit() {
        return limit;
    }

    /** Takes {@code bytes} without waiting (the caller checked {@link #exhausted()} first). */
    public void take(long bytes) {
        long now = used.addAndGet(bytes);
        peak.accumulateAndGet(now, Math::max);
    }

    public void release(long bytes) {
        if (bytes == 0) {
            return;
        }
        if (used.addAndGet(-bytes) < 0) {
            throw new IllegalStateException("byte budget released more than was taken");
        }
        lock.lock();
        try {
            released.signalAll();
        } finally {
            lock.unlock();
        }
    }

    public boolean exhausted() {
        return used.get() >= limit;
    }

    /** Waits up to {@code millis} for the budget to have room; returns whether it has. */
    public boolean awaitRoom(long millis) throws InterruptedException {
        lock.lock();
        try {
            long nanos = TimeUnit.MILLISECONDS.toNanos(millis);
            while (used.get() >= limit && nanos > 0) {
                nanos = released.awaitNanos(nanos);
            }
            return used.get() < limit;
        } finally {
            lock.unlock();
        }
    }

    public long used() {
        return used.get();
    }

    public long peak() {
        return peak.get();
    }
}
