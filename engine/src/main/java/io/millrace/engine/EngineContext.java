package io.millrace.engine;

import io.millrace.core.change.Checkpoint;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.Sink;
import io.millrace.engine.config.EngineConfig;
import io.millrace.pipeline.Pipeline;
import io.millrace.snapshot.online.OnlineSnapshotter;
import io.millrace.source.PgConnections;
import io.millrace.source.ReplicationReader;

import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * What the stages of one engine share: the configuration, the lifecycle, the stop request, and the parts a running
 * engine shows to other threads (status, controls). The run thread sets the parts; any thread reads them.
 */
final class EngineContext {
    final EngineConfig config;
    final PgConnections conns;
    final Lifecycle state = new Lifecycle();
    final SnapshotProgressTracker progress;
    private final CountDownLatch stopRequested = new CountDownLatch(1);
    volatile Pipeline pipeline;
    volatile ReplicationReader reader;
    volatile OnlineSnapshotter online;
    /** The tables this pipeline captures, once the start read them; tables that join while streaming are added ({@link #capture}). */
    volatile List<TableRef> captured = List.of();
    /** Which tables the pipeline captures: the configuration's, then a reload's ({@link Reloader}). */
    volatile TableSelection selection;
    /** The transforms in force: the configuration's, then a reload's ({@link Reloader}; the sinks take them at their next write). */
    volatile io.millrace.engine.transform.Transforms transforms;
    /**
     * Tables the start added to the publication, by oid: the xid below which every transaction must have ended before
     * their copy reads a chunk ({@link OnlineSnapshotter#submitJoined}). Set by the start, read when streaming starts.
     */
    volatile java.util.Map<Integer, Long> joinedAtStart = java.util.Map.of();
    /** Tables that join while streaming. */
    final TableJoiner joiner;
    /** Tables whose stream leaves columns out (a publication's column list), their changes withheld. */
    final NarrowPublication narrow;
    /** The assembler thread's catalog connection (Relation messages). */
    final AssemblerCatalog assemblerCatalog;

    volatile String lastError;
    /** The slot's last replacement as the checkpoints record it ({@code source.on_slot_lost: resnapshot}), or null. */
    volatile io.millrace.core.change.Checkpoint.SlotLost slotLost;
    /** The last reload of the configuration, or null. */
    volatile EngineStatus.Reload lastReload;
    volatile SlotMonitor.Sample slotSample;
    /** DDL that pgoutput does not announce (drops, new tables, renames); set at start. */
    volatile SourceWatch watch;
    /** The source as the start last surveyed it: read again when an initial snapshot starts over (its binary decision too). */
    volatile SourceSurvey.Survey survey;

    EngineContext(EngineConfig config, SnapshotProgressTracker progress) {
        this.config = config;
        this.conns = new PgConnections(config.source());
        this.progress = progress;
        this.selection = TableSelection.of(config.source());
        this.transforms = config.transforms();
        this.joiner = new TableJoiner(this);
        this.narrow = new NarrowPublication(this);
        this.assemblerCatalog = new AssemblerCatalog(conns);
    }

    /** {@code t} is captured from now on (it joined while streaming). Any thread. */
    synchronized void capture(TableRef t) {
        if (!captured.contains(t)) {
            List<TableRef> next = new java.util.ArrayList<>(captured);
            next.add(t);
            captured = List.copyOf(next);
        }
    }

    /** {@code t} is no longer captured (a reload left it out). Any thread. */
    synchronized void release(TableRef t) {
        captured = captured.stream().filter(x -> !x.equals(t)).toList();
    }

    void requestStop() {
        stopRequested.countDown();
        Pipeline p = pipeline;
        if (p != null) {
            p.stop();
        }
    }

    boolean stopping() {
        return stopRequested.getCount() == 0;
    }

    /** A pipeline over {@code sinks} from {@code checkpoints}, feeding durable positions back to the reader. */
    /** The destinations the pipeline writes to (set with it): the lost slot's re-copy reads the keys of those that list them. */
    volatile List<Sink> sinks = List.of();

    Pipeline newPipeline(List<Sink> sinks, List<Checkpoint> checkpoints) {
        this.sinks = List.copyOf(sinks);
        Pipeline p = new Pipeline(config.pipeline(), sinks, checkpoints, lsn -> {
            ReplicationReader r = reader;
            if (r != null) {
                r.durable(lsn);
            }
        });
        this.pipeline = p;
        if (stopping()) {
            p.stop();
        }
        return p;
    }
}
