package io.millrace.pipeline;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The first error of any stage, kept for the pipeline owner (INV: NO-SILENT-ERROR). Stages report
 * here from their loop boundary; every blocking wait in the pipeline also watches {@link #isSet()}
 * so no stage stays blocked on a send or receive after another one failed or a stop was asked.
 */
public final class Failure {
    private final AtomicReference<Throwable> first = new AtomicReference<>();
    private final CountDownLatch stopped = new CountDownLatch(1);

    /** Records {@code t} if it is the first error; later ones are attached as suppressed. */
    public void report(Throwable t) {
        if (!first.compareAndSet(null, t)) {
            Throwable f = first.get();
            if (f != t && f != null) {
                f.addSuppressed(t);
            }
        }
        stopped.countDown();
    }

    /** Asks every stage to stop without an error. */
    public void stop() {
        stopped.countDown();
    }

    /** True once an error was reported or a stop was asked. */
    public boolean isSet() {
        return stopped.getCount() == 0;
    }

    public Throwable error() {
        return first.get();
    }

    public boolean await(long millis) throws InterruptedException {
        return stopped.await(millis, TimeUnit.MILLISECONDS);
    }
}
