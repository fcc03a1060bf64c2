package io.millrace.pipeline;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A bounded hand-off between two stages whose blocking calls also wait on the pipeline's
 * {@link Failure}: a send or receive returns (with {@link Stopped}) once any stage failed or a stop
 * was asked, so cancellation never leaves a stage blocked (INV: NO-SILENT-ERROR).
 */
final class Channel<T> {
    /** Thrown out of {@link #send} / {@link #receive} when the pipeline is stopping. */
    static final class Stopped extends Exception {
        private static final long serialVersionUID = 1L;

        Stopped() {
            super("pipeline stopping", null, false, false);
        }
    }

    private final BlockingQueue<T> queue;
    private final Failure failure;

    Channel(int capacity, Failure failure) {
        this.queue = new ArrayBlockingQueue<>(capacity);
        this.failure = failure;
    }

    void send(T item) throws Stopped, InterruptedException {
        send(item, null);
    }

    /** As {@link #send(Object)}, running {@code whileWaiting} (if not null) every 20 ms while the channel is full. */
    void send(T item, Runnable whileWaiting) throws Stopped, InterruptedException {
        while (!queue.offer(item, 20, TimeUnit.MILLISECONDS)) {
            if (failure.isSet()) {
                throw new Stopped();
            }
            if (whileWaiting != null) {
                whileWaiting.run();
            }
        }
    }

    /** Waits for the next item; {@code null} after {@code maxWaitMillis} without one. */
    T receive(long maxWaitMillis) throws Stopped, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(maxWaitMillis);
        while (true) {
            T item = queue.poll(Math.min(20, Math.max(0, maxWaitMillis)), TimeUnit.MILLISECONDS);
            if (item != null) {
                return item;
            }
            if (failure.isSet()) {
                throw new Stopped();
            }
            if (System.nanoTime() >= deadline) {
                return null;
            }
        }
    }

    int size() {
        return queue.size();
    }
}
