package io.millrace.engine;

import io.millrace.core.sink.Sink;
import io.millrace.pipeline.Pipeline;
import io.millrace.snapshot.online.OnlineSnapshotter;
import io.millrace.source.PipelineLock;
import io.millrace.source.ReplicationReader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;

/**
 * The end of every run, however it ended: stops what the run started, in the order data flows (monitor, online
 * snapshotter, reader, pipeline), closes the destinations, and releases the pipeline lock last (INV: IDENTITY — one
 * engine per pipeline until all destinations are closed). Failures here are logged: the run's own error is the one
 * to report. Run thread.
 */
final class Teardown {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class); // the engine's log: one category for a run's stages

    private final EngineContext ctx;
    private final List<Sink> sinks;
    PipelineLock lock;
    Thread monitor;
    Streaming streaming;

    Teardown(EngineContext ctx, List<Sink> sinks) {
        this.ctx = ctx;
        this.sinks = sinks;
    }

    void run() throws InterruptedException {
        if (monitor != null) {
            monitor.interrupt();
        }
        OnlineSnapshotter o = ctx.online;
        if (o != null) {
            o.close();
        }
        ReplicationReader r = ctx.reader;
        if (r != null) {
            r.stop();
        }
        Pipeline p = ctx.pipeline;
        if (p != null) {
            p.stop();
            try {
                p.join();
            } catch (RuntimeException ignored) {
                // already reported by the main path
            }
        }
        ctx.assemblerCatalog.close(); // the assembler has stopped
        Thread readerThread = streaming == null ? null : streaming.readerThread();
        if (readerThread != null) {
            readerThread.join(10_000);
        }
        if (streaming != null) {
            streaming.close();
        }
        for (Sink s : sinks) {
            try {
                s.close();
            } catch (RuntimeException e) {
                LOG.warn("closing destination '{}' failed: {}", s.name(), e.getMessage());
            }
        }
        if (lock != null) {
            lock.close();
        }
    }
}
