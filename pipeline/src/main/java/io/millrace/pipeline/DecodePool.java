package io.millrace.pipeline;

import io.millrace.core.change.ChangeEvent;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The decoder pool: N threads that turn framed tuple bytes ({@link RawRow}) into values, while the
 * assembler frames what follows and the writer applies what came before.
 *
 * <h2>Order (INV: ORDER)</h2>
 * The assembler fills a {@link Job} (one sink batch) in WAL order, in chunks of {@code chunkRows}
 * slots, and hands each full chunk to the pool at once; a worker decodes a chunk <em>in place</em>, slot
 * by slot, so no row ever changes position. Jobs reach the writer through the pipeline's FIFO batch
 * channel in the order the assembler cut them, and the writer waits for the job at the head
 * ({@link Job#await}) before it looks at the next: the channel is the re-sequencer, jobs are the
 * sequence, and a chunk finished early simply waits in its job.
 *
 * <h2>Progress never runs ahead (INV: DURABLE, RESUME)</h2>
 * A job's flush position, last position and online progress are set when it is sealed and reach the
 * writer only with the complete job, so no checkpoint can name a row that was not decoded and written.
 *
 * <h2>Errors and cancellation (INV: NO-SILENT-ERROR)</h2>
 * Workers are started through the pipeline's registrar (registered before they start). A decode error
 * leaves the worker's loop and is reported to the pipeline's {@link Failure}, which stops every stage;
 * the writer waiting on that job sees the stop and leaves. Every wait here (a worker's poll, the
 * writer's await) is bounded and checks the failure, so a stop never leaves a thread blocked; the
 * assembler's hand-off to the pool never blocks (the queue holds at most the chunks of the jobs in
 * flight, which the byte budget bounds).
 *
 * <h2>Threads and memory visibility</h2>
 * A job is filled by the assembler thread only. A chunk's slots are written by the one worker that
 * took it, then published by {@link Job#completed} under the job's lock; the writer reads them after
 * taking the same lock in {@link Job#await}.
 */
final class DecodePool {
    private final int workers;
    private final int chunkRows;
    private final Failure failure;
    private final BlockingQueue<Task> queue = new LinkedBlockingQueue<>();

    private record Task(Job job, Object[] slots, int count) {
    }

    /** Test seam: runs on the worker before it decodes a chunk (stress tests inject delays here). */
    interface Hook {
        void beforeChunk() throws InterruptedException;
    }

    private volatile Hook hook = () -> {
    };

    /** Sets the {@link Hook} (tests). Call before {@link #start}. */
    void hook(Hook h) {
        this.hook = h;
    }

    /** How long a waiting thread sleeps before it checks for a stop again. */
    private static final long POLL_MILLIS = 20;

    DecodePool(int workers, int chunkRows, Failure failure) {
        if (workers < 1) {
            throw new IllegalArgumentException("decoder pool needs at least one worker, got " + workers);
        }
        if (chunkRows < 1) {
            throw new IllegalArgumentException("decode chunk must hold at least one row, got " + chunkRows);
        }
        this.workers = workers;
        this.chunkRows = chunkRows;
        this.failure = failure;
    }

    /** Starts the workers; {@code starter} registers each thread with the pipeline before starting it. */
    void start(Starter starter) {
        for (int i = 0; i < workers; i++) {
            starter.start("millrace-decoder-" + i, this::work);
        }
    }

    /** How the pipeline starts a registered stage thread. */
    interface Starter {
        void start(String name, Pipeline.Loop loop);
    }

    /** A worker's loop: leaves with {@link Channel.Stopped} on a stop, with the error when a decode fails. */
    private void work() throws Channel.Stopped, InterruptedException {
        while (true) {
            if (failure.isSet()) {
                throw new Channel.Stopped(); // also with chunks queued: nobody will write them any more
            }
            Task t = queue.poll(POLL_MILLIS, TimeUnit.MILLISECONDS);
            if (t == null) {
                continue;
            }
            hook.beforeChunk();
            Object[] slots = t.slots();
            for (int i = 0; i < t.count(); i++) {
                if (slots[i] instanceof RawRow r) {
                    slots[i] = r.decode(); // a DECODE error leaves the loop and stops the pipeline
                }
            }
            t.job().completed();
        }
    }

    /** Chunks waiting for a worker (for tests and stats). */
    int queued() {
        return queue.size();
    }

    Job newJob() {
        return new Job();
    }

    /** One sink batch whose rows are being decoded. */
    final class Job implements Staged {
        /** Assembler thread until {@link #seal}: the chunks in order, the last one possibly partly filled. */
        private final List<Object[]> chunks = new ArrayList<>();
        private Object[] current;
        private int fill;
        private boolean currentNeedsDecode;
        private int size;

        private final Object lock = new Object();
        // @GuardedBy("lock")
        private int dispatched;
        private int done;
        private Batch shell;

        private Job() {
        }

        /** Appends a decoded {@link ChangeEvent} or a {@link RawRow} to decode. Assembler thread. */
        void add(Object item) {
            if (current == null) {
                current = new Object[chunkRows];
                fill = 0;
                currentNeedsDecode = false;
            }
            current[fill++] = item;
            size++;
            if (item instanceof RawRow) {
                currentNeedsDecode = true;
            }
            if (fill == chunkRows) {
                dispatch();
            }
        }

        private void dispatch() {
            chunks.add(current);
            if (currentNeedsDecode) {
                synchronized (lock) {
                    dispatched++;
                }
                queue.add(new Task(this, current, fill));
            }
            current = null;
        }

        int size() {
            return size;
        }

        /**
         * No more rows: hands the last chunk to the pool. {@code meta} carries the batch's positions and
         * progress (its events are ignored). Assembler thread.
         */
        void seal(Batch meta) {
            if (current != null) {
                dispatch();
            }
            synchronized (lock) {
                shell = meta;
                lock.notifyAll();
            }
        }

        /** A worker finished one chunk of this job. */
        private void completed() {
            synchronized (lock) {
                done++;
                if (shell != null && done == dispatched) {
                    lock.notifyAll();
                }
            }
        }

        @Override
        public Batch await() throws Channel.Stopped, InterruptedException {
            synchronized (lock) {
                while (shell == null || done < dispatched) {
                    if (failure.isSet()) {
                        throw new Channel.Stopped(); // a decoder failed (its error is in Failure) or a stop was asked
                    }
                    lock.wait(POLL_MILLIS);
                }
            }
            List<ChangeEvent> events = new ArrayList<>(size);
            int left = size;
            for (Object[] chunk : chunks) {
                for (int i = 0; i < chunk.length && left > 0; i++, left--) {
                    events.add((ChangeEvent) chunk[i]);
                }
            }
            return new Batch(events, shell.flushLsn(), shell.last(), shell.snapshot(), shell.online(),
                    shell.heldBytes(), shell.shapes());
        }
    }
}
