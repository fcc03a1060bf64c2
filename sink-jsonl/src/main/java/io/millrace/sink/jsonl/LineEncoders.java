package io.millrace.sink.jsonl;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.StreamWriteFeature;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.event.EnvelopeWriter;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Encodes a write's events into JSON lines on a few threads of their own, so that the sink's writer thread only writes
 * bytes (docs/BENCHMARKS.md, issue 16: the one writer thread encoding JSON was the limit of the jsonl snapshot).
 *
 * <p>The events are cut into chunks of consecutive events; each chunk is encoded by one thread, with its own
 * {@link EnvelopeWriter} (a {@link EnvelopeWriter#copy()}), into a buffer of its own, and the writer takes the chunks
 * back in the order they were cut, each line at its place (INV: ORDER: the lines of a file are in the order of the
 * events, as if one thread wrote them). The bytes are those the writer thread would write: the same envelope writer
 * (the same meta, clock and version) into a generator of the same factory ({@code LineEncodersTest}).
 *
 * <p>INV: BOUNDED: at most {@link #window} chunks are encoded or waiting at a time, each cut to about
 * {@link #CHUNK_BYTES} of lines (from the lines' mean size so far), so the encoded bytes in flight stay near
 * {@code window × CHUNK_BYTES} (1 MiB with two threads) whatever the size of the write. The rows they encode are
 * counted in the pipeline's budget until they are durable; a buffer that grew past {@link #KEEP_BYTES} for a chunk
 * of large rows is let go, not kept.
 *
 * <p>Writer thread only (the encoding threads touch a chunk only between its hand-off and its result). A failure of
 * an encoding thread is rethrown by {@link Chunk#await} on the writer thread (INV: NO-SILENT-ERROR).
 */
final class LineEncoders implements AutoCloseable {
    /** Lines per chunk are chosen so that a chunk holds about this many bytes. */
    static final int CHUNK_BYTES = 256 * 1024;
    static final int MIN_CHUNK_EVENTS = 16;
    static final int MAX_CHUNK_EVENTS = 2048;
    /** A chunk's buffer that grew past this is not reused. */
    static final int KEEP_BYTES = 4 * CHUNK_BYTES;

    private final ExecutorService pool;
    private final int window;
    private final ThreadLocal<Encoder> encoders;
    private final ArrayDeque<Chunk> free = new ArrayDeque<>();
    /** Mean bytes per line so far (writer thread). */
    private double meanLine = 512;

    /**
     * @param threads  encoding threads (at least 1)
     * @param envelope the writer thread's envelope writer: each thread encodes with a copy of it
     * @param factory  the writer thread's generator factory
     */
    LineEncoders(int threads, EnvelopeWriter envelope, JsonFactory factory, String sinkName) {
        if (threads < 1) {
            throw new IllegalArgumentException("encoder threads must be at least 1, got " + threads);
        }
        this.window = 2 * threads;
        AtomicInteger n = new AtomicInteger();
        this.pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "millrace-jsonl-encoder-" + sinkName + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.encoders = ThreadLocal.withInitial(() -> new Encoder(envelope.copy(), factory));
    }

    /** How many events a chunk takes now. */
    int chunkEvents() {
        return (int) Math.max(MIN_CHUNK_EVENTS, Math.min(MAX_CHUNK_EVENTS, CHUNK_BYTES / Math.max(1.0, meanLine)));
    }

    /** Chunks encoded or waiting at most. */
    int window() {
        return window;
    }

    /** Hands {@code events[from, to)} to an encoding thread; the result is the chunk's {@link Chunk#await}. */
    Chunk submit(List<ChangeEvent> events, int from, int to) {
        Chunk c = free.poll();
        if (c == null) {
            c = new Chunk();
        }
        c.reset(to - from);
        Chunk chunk = c;
        List<ChangeEvent> part = events.subList(from, to);
        chunk.future = pool.submit(() -> {
            try {
                encoders.get().encode(part, chunk);
            } catch (RuntimeException | Error | IOException e) {
                encoders.remove(); // its generator stopped inside an event: the next chunk starts with a new one
                throw e;
            }
            return null;
        });
        return chunk;
    }

    /** Gives a written chunk's buffer back for reuse, and learns its lines' mean size. */
    void recycle(Chunk c) {
        if (c.lines > 0) {
            meanLine = 0.8 * meanLine + 0.2 * ((double) c.len / c.lines);
        }
        c.future = null;
        if (c.buf.length <= KEEP_BYTES && free.size() < window) {
            free.add(c);
        }
    }

    @Override
    public void close() {
        pool.shutdownNow();
    }

    /** Encoded lines of consecutive events: line {@code i} is {@code buf[i == 0 ? 0 : ends[i - 1], ends[i])}. */
    static final class Chunk extends OutputStream {
        byte[] buf = new byte[64 * 1024];
        int len;
        int[] ends = new int[MIN_CHUNK_EVENTS];
        int lines;
        private Future<?> future;

        void reset(int events) {
            len = 0;
            lines = 0;
            if (ends.length < events) {
                ends = new int[events];
            }
        }

        int start(int line) {
            return line == 0 ? 0 : ends[line - 1];
        }

        /** Waits until the chunk is encoded; rethrows the encoding thread's error as it was thrown. */
        Chunk await() throws IOException {
            try {
                future.get();
                return this;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while waiting for encoded events", e);
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (cause instanceof RuntimeException r) {
                    throw r;
                }
                if (cause instanceof Error err) {
                    throw err;
                }
                throw new UncheckedIOException(new IOException(cause));
            }
        }

        void cancel() {
            if (future != null) {
                future.cancel(false);
            }
        }

        @Override
        public void write(int b) {
            ensure(1);
            buf[len++] = (byte) b;
        }

        @Override
        public void write(byte[] b, int off, int n) {
            ensure(n);
            System.arraycopy(b, off, buf, len, n);
            len += n;
        }

        private void ensure(int n) {
            if (len + n > buf.length) {
                buf = java.util.Arrays.copyOf(buf, Math.max(len + n, buf.length * 2));
            }
        }
    }

    /** One encoding thread's envelope writer and generator; the generator writes into the chunk being encoded. */
    private static final class Encoder extends OutputStream {
        private final EnvelopeWriter envelope;
        private final JsonGenerator gen;
        private Chunk target;

        Encoder(EnvelopeWriter envelope, JsonFactory factory) {
            this.envelope = envelope;
            try {
                this.gen = factory.createGenerator(this);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            gen.setRootValueSeparator(null); // as the writer thread's generator: lines end with the '\n' written after each
        }

        void encode(List<ChangeEvent> events, Chunk chunk) throws IOException {
            target = chunk;
            try {
                for (ChangeEvent e : events) {
                    envelope.writeValue(gen, e);
                    gen.writeRaw('\n');
                    chunk.ends[chunk.lines++] = chunk.len + gen.getOutputBuffered();
                }
                gen.flush();
            } finally {
                target = null;
            }
        }

        @Override
        public void write(int b) {
            target.write(b);
        }

        @Override
        public void write(byte[] b, int off, int n) {
            target.write(b, off, n);
        }
    }

    /** The generator factory the sink uses (the same settings for the writer thread and the encoding threads). */
    static JsonFactory factory() {
        return JsonFactory.builder()
                .disable(StreamWriteFeature.AUTO_CLOSE_TARGET)
                .disable(StreamWriteFeature.AUTO_CLOSE_CONTENT)
                .build();
    }
}
