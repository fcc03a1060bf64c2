package io.millrace.connect;

/**
 * {@link ConnectClusterTests} on workers without exactly-once source support (the worker's periodic offset flushes,
 * {@code offset.flush.interval.ms=100}): nothing is lost across a failover, repeats carry the positions they had and
 * are dropped by them, and the slot is never confirmed past the offsets Connect flushed (the hand-off's rule for
 * worker-defined boundaries: acknowledged, a poll, two offset commits).
 */
class ConnectAtLeastOnceIT extends ConnectClusterTests {
    @Override
    boolean exactlyOnce() {
        return false;
    }
}
