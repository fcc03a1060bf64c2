package io.millrace.api;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.event.EnvelopeWriter;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.sink.Sink;
import io.millrace.core.sink.SinkLifecycle;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The destinations behind {@link ChangeConsumer} and {@link TransactionalConsumer}: each write hands the batch to the
 * consumer as {@link Change}s. One writer thread owns a sink (see {@link Sink}); its lifecycle is the shared
 * {@link SinkLifecycle} ({@code NEW → OPEN → CLOSED}, an illegal move throws).
 */
abstract class ConsumerSink implements Sink {
    /**
     * Set on the engine's writer thread while a consumer's {@code accept} runs, to the owner (the {@link Millrace}
     * builder's token) of the pipeline it belongs to: that pipeline's {@link Millrace#close} and {@link Millrace#await}
     * called from there would wait for the very thread that calls them; another pipeline's would not.
     */
    private static final ThreadLocal<Object> IN_CALLBACK = new ThreadLocal<>();

    /** Whether the calling thread is inside the {@code accept} of a consumer of the pipeline {@code owner} made. */
    static boolean inCallback(Object owner) {
        return owner != null && IN_CALLBACK.get() == owner;
    }

    /** The pipeline this consumer belongs to ({@link #inCallback}); null when made outside a builder (tests). */
    Object owner;

    /** This consumer, belonging to the pipeline of {@code owner}. */
    ConsumerSink ownedBy(Object owner) {
        this.owner = owner;
        return this;
    }

    private final String name;
    private final EnvelopeWriter envelope;
    final SinkLifecycle lifecycle;

    ConsumerSink(String name, SourceMeta meta) {
        this.name = name;
        this.envelope = new EnvelopeWriter(meta);
        this.lifecycle = new SinkLifecycle(name);
    }

    @Override
    public String name() {
        return name;
    }

    List<Change> changes(List<ChangeEvent> events) {
        List<Change> out = new ArrayList<>(events.size());
        for (ChangeEvent e : events) {
            out.add(new Change(e, envelope));
        }
        return java.util.Collections.unmodifiableList(out);
    }

    MillraceException failed(String what, Exception e) {
        if (e instanceof MillraceException m) {
            return m;
        }
        if (e instanceof InterruptedException) {
            Thread.currentThread().interrupt();
        }
        return new MillraceException(Kind.SINK, "destination '" + name + "': the consumer's " + what + " failed: " + e, e);
    }

    /** At least once: the batch goes to the callback; once it returns, the checkpoint is stored in its file. */
    static final class AtLeastOnce extends ConsumerSink {
        private final ChangeConsumer consumer;
        private final CheckpointFile file;

        AtLeastOnce(String name, SourceMeta meta, ChangeConsumer consumer, java.nio.file.Path checkpointFile) {
            super(name, meta);
            this.consumer = consumer;
            this.file = new CheckpointFile(name, checkpointFile);
        }

        @Override
        public boolean transactional() {
            return false;
        }

        @Override
        public Optional<Checkpoint> open() {
            lifecycle.open();
            return file.read();
        }

        @Override
        public void write(List<ChangeEvent> events, Checkpoint checkpoint) {
            lifecycle.requireOpen();
            if (!events.isEmpty()) {
                IN_CALLBACK.set(owner);
                try {
                    consumer.accept(changes(events));
                } catch (Exception e) {
                    throw failed("accept", e);
                } finally {
                    IN_CALLBACK.remove();
                }
            }
            file.write(checkpoint); // INV: DURABLE: only after the consumer has the batch
        }

        @Override
        public void close() {
            lifecycle.close();
        }
    }

    /** Exactly once: the consumer stores the checkpoint with the batch, and gives it back on open. */
    static final class Transactional extends ConsumerSink {
        private final TransactionalConsumer consumer;

        Transactional(String name, SourceMeta meta, TransactionalConsumer consumer) {
            super(name, meta);
            this.consumer = consumer;
        }

        @Override
        public boolean transactional() {
            return true;
        }

        @Override
        public Optional<Checkpoint> open() {
            lifecycle.open();
            try {
                Optional<Checkpoint> cp = consumer.open();
                if (cp == null) {
                    throw new MillraceException(Kind.SINK, "destination '" + name() + "': the consumer's open returned null;"
                            + " return Optional.empty() when no checkpoint was stored yet");
                }
                return cp;
            } catch (Exception e) {
                lifecycle.openFailed(); // an open that failed is the consumer's to clean up; close() does not call it
                throw failed("open", e);
            }
        }

        @Override
        public void write(List<ChangeEvent> events, Checkpoint checkpoint) {
            lifecycle.requireOpen();
            IN_CALLBACK.set(owner);
            try {
                consumer.accept(changes(events), checkpoint); // INV: RESUME: the checkpoint in the same transaction as the data
            } catch (Exception e) {
                throw failed("accept", e);
            } finally {
                IN_CALLBACK.remove();
            }
        }

        @Override
        public boolean storesLater() {
            return consumer.storesLater();
        }

        @Override
        public io.millrace.core.Lsn storedFlushLsn() {
            try {
                Optional<Checkpoint> cp = consumer.stored();
                return cp == null || cp.isEmpty() ? null : cp.get().flushLsn();
            } catch (Exception e) {
                throw failed("stored", e);
            }
        }

        @Override
        public void close() {
            if (!lifecycle.close()) {
                return;
            }
            try {
                consumer.close();
            } catch (Exception e) {
                throw failed("close", e);
            }
        }
    }
}
