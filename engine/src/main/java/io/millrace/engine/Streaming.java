package io.millrace.engine;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.OnlineTask;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.KeyedSink;
import io.millrace.engine.Engine.State;
import io.millrace.engine.SourceSurvey.Survey;
import io.millrace.pipeline.Pipeline;
import io.millrace.snapshot.online.OnlineSnapshotter;
import io.millrace.source.Catalog;
import io.millrace.source.PgErrors;
import io.millrace.source.ReplicationReader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The streaming stage: starts the online snapshotter (tasks a checkpoint left), then the replication reader from the
 * lowest durable position over the destinations (INV: RESUME), and waits for a stop or a failure. Run thread.
 */
final class Streaming {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class); // the engine's log: one category for a run's stages
    private static final int V14 = StartPlanner.ONLINE_VERSION; // protocol v2: streamed transactions, messages, binary

    private final EngineContext ctx;
    private final Survey survey;
    private final OnlineControls controls;
    private volatile Thread readerThread;

    Streaming(EngineContext ctx, Survey survey, OnlineControls controls) {
        this.ctx = ctx;
        this.survey = survey;
        this.controls = controls;
    }

    /** The reader's thread, or null before it started. */
    Thread readerThread() {
        return readerThread;
    }

    /** Streams until {@link Engine#stop()} or a failure; returns once the reader and the pipeline stopped. */
    void run() throws InterruptedException {
        startOnline(); // before the stream: a signal replayed at once finds it
        startReader();
        Pipeline p = ctx.pipeline;
        while (!ctx.stopping() && !p.failure().await(200)) {
            // wait for a stop or a failure
        }
        ctx.state.move(State.STREAMING, State.STOPPING);
        ctx.reader.stop();
        p.stop();
        readerThread.join();
        p.join(); // rethrows the first failure of any stage
        ctx.state.move(State.STOPPING, State.STOPPED);
        LOG.info("stopped; durable position {}", p.stats().durable());
    }

    /** Starts the online snapshot readers when a checkpoint left tasks or tables wait to be copied. */
    private void startOnline() {
        Pipeline p = ctx.pipeline;
        List<Checkpoint> cps = checkpoints(p);
        // the tasks of the destination furthest behind have the most left: a chunk another destination holds is read again
        List<OnlineTask> resumed = StartPlanner.lowest(cps).online();
        if (survey.report().serverVersion() < V14) {
            return; // no online snapshots: the planner refused a start that left tasks
        }
        io.millrace.snapshot.online.Watermarks watermarks = new io.millrace.snapshot.online.Watermarks();
        p.watermarks(watermarks); // the stream's side of the chunks' windows (before the stream starts)
        OnlineSnapshotter o = new OnlineSnapshotter(ctx.conns, watermarks, new OnlineCatalog(ctx.conns, survey.types()),
                ctx.config.online(), ctx.progress, p.failure()::report);
        o.rowFilters(t -> {
            io.millrace.engine.transform.TableRule r = ctx.transforms.forTable(t); // a reload's from then on
            return r == null ? null : r.filter(); // the rows the publication's row filter passes on
        });
        ctx.online = o;
        o.destinationKeys(destinationKeys());
        o.start(resumed, ctx.joinedAtStart);
    }

    /**
     * The keys the destinations hold, for a lost slot's re-copy: the union over those that can list theirs
     * ({@link KeyedSink}: postgres, DuckDB). A key one destination lacks is deleted in all (a no-op where it is missing);
     * a destination that cannot list its keys (jsonl, Kafka) gets the deletes the others' keys show. Null when none can.
     */
    private OnlineSnapshotter.DestinationKeys destinationKeys() {
        // Behind the transforms' wrapper. Keys are compared where the table's transforms leave them as they are (a row
        // filter, masks of other columns); a destination whose keys a hash mask changed keeps them to itself (the re-copy
        // deletes nothing there).
        if (ctx.sinks.stream().noneMatch(s -> io.millrace.engine.transform.Transforms.keyed(s) != null)) {
            return null;
        }
        return (oid, table, keyColumns, range, limit) -> {
            List<KeyedSink> keyed = ctx.sinks.stream().map(s -> ctx.transforms.keysAsTheSourceHas(s, table, keyColumns))
                    .filter(java.util.Objects::nonNull).toList();
            java.util.Set<List<String>> out = new java.util.LinkedHashSet<>(); // the destinations mostly hold the same keys
            for (KeyedSink k : keyed) {
                // under the name a rename gave it (KeyedSink looks it up by oid first, under the name it holds it as)
                List<List<String>> keys = k.keysIn(oid, ctx.transforms.destinationName(table), keyColumns, range, limit);
                if (keys.size() >= limit) {
                    return keys; // a destination over the bound: the caller refuses the chunk (INV: BOUNDED)
                }
                out.addAll(keys);
            }
            return new ArrayList<>(out);
        };
    }

    private List<Checkpoint> checkpoints(Pipeline p) {
        List<Checkpoint> cps = new ArrayList<>();
        for (int i = 0; i < ctx.config.destinations().size(); i++) {
            cps.add(p.checkpoint(i));
        }
        return cps;
    }

    private void startReader() {
        Pipeline p = ctx.pipeline;
        List<Checkpoint> cps = checkpoints(p);
        Lsn start = cps.stream().map(Checkpoint::flushLsn).reduce(Lsn::min).orElseThrow();
        Position skip = cps.stream().map(Checkpoint::applied).reduce((a, b) -> a.compareTo(b) <= 0 ? a : b).orElseThrow();
        TableRef signal = ctx.config.online().signalTable();
        if (signal != null) {
            p.signalTable(signal, controls::onSignal);
        }
        p.onShapeChange(controls::onShapeChange);
        p.withholding(ctx.narrow); // a publication narrowed while streaming: a column list, or fewer kinds of change
        p.capture(capture()); // a publication that publishes more than the selection: only the selection's changes pass
        try (java.sql.Connection c = ctx.conns.open()) {
            ctx.narrow.atStart(c, cps); // holds recorded before this start end where the stream reaches it
        } catch (java.sql.SQLException e) {
            throw io.millrace.source.PgErrors.translate("asking for the end of the holds recorded before this start", e);
        }
        p.shapesAtStart(survey.relations(), survey.readAt()); // a table reshaped before its first change of the run
        p.shapesWritten(cps); // ... or while stopped
        p.onTableSeen(ctx.joiner::seen, ctx.config.source().slot());
        p.idleAdvanceInterval(ctx.config.source().statusInterval().toMillis());
        p.serverAsked(() -> {
            ReplicationReader rr = ctx.reader;
            return rr == null ? 0 : rr.serverAsked();
        });
        p.startStreaming(survey.types(), keyLookup(), skip, () -> {
            ReplicationReader rr = ctx.reader;
            return rr == null ? Lsn.ZERO : rr.serverCaughtUp();
        }, ctx.config.spillDir());
        boolean v14 = survey.report().serverVersion() >= V14;
        ReplicationReader r = new ReplicationReader(ctx.conns, new ReplicationReader.Options(start, v14 ? 2 : 1, survey.binary(), v14,
                v14, ctx.config.source().statusInterval().toMillis()), p.budget(), start, new ReplicationReader.Handler() {
                    @Override
                    public void onMessage(Lsn walStart, byte[] data, int offset, int length) throws InterruptedException {
                        p.offer(walStart, data, offset, length);
                    }

                    @Override
                    public void flush() throws InterruptedException {
                        p.flush();
                    }
                }, p.failure()::report);
        p.whileReaderWaits(r::keepAlive); // a destination blocked for long: the walsender keeps the connection
        ctx.reader = r;
        Thread t = new Thread(r, "millrace-reader");
        t.setDaemon(true);
        t.start();
        readerThread = t;
        State from = ctx.state.get() == State.SNAPSHOTTING ? State.SNAPSHOTTING : State.STARTING;
        ctx.state.move(from, State.STREAMING);
        LOG.info("streaming from {} ({} values{})", start, survey.binary() ? "binary" : "text", survey.binary() ? "" : ": " + survey.textReason());
    }

    /**
     * {@link Pipeline.Capture}: a table captured (selected at the start or joined since, and followed by its oid through a
     * rename), or one the selection takes by its name now (a table added to the publication by hand streams from then on,
     * as before). Any other table the publication publishes is another consumer's, or one exclude_tables leaves out.
     * Assembler thread.
     */
    private boolean captures(int oid, TableRef table) {
        SourceWatch w = ctx.watch;
        return w == null || w.captures(oid) || ctx.selection.selects(table, true);
    }

    /** {@link #captures} and {@link #left} as the pipeline asks them. */
    private Pipeline.Capture capture() {
        return new Pipeline.Capture() {
            @Override
            public boolean captures(int oid, TableRef table) {
                return Streaming.this.captures(oid, table);
            }

            @Override
            public void left(int oid) {
                Streaming.this.left(oid);
            }
        };
    }

    /** The stream reached the leave message of a table a reload left out (Reloader): it is captured no more. Assembler thread. */
    private void left(int oid) {
        SourceWatch w = ctx.watch;
        TableRef t = w == null ? null : w.captured().get(oid);
        if (t == null) {
            return;
        }
        w.release(oid);
        ctx.release(t);
        LOG.info("{} is no longer captured: the stream reached the reload that left it out", t);
    }

    /**
     * The key columns of a relation by oid, for relations the stream announces without a key (REPLICA IDENTITY FULL): read
     * from the catalog at each Relation message of such a table (RelationKeys), on one connection, so that a key changed
     * while streaming is followed. Closed by the teardown ({@link #close}).
     */
    private java.util.function.IntFunction<List<String>> keyLookup() {
        return oid -> {
            try {
                if (keyConn.get() == null || keyConn.get().isClosed()) {
                    keyConn.set(ctx.conns.open());
                }
                return Catalog.keyColumns(keyConn.get(), oid);
            } catch (SQLException e) {
                throw PgErrors.translate("reading the key of relation " + Integer.toUnsignedString(oid), e);
            }
        };
    }

    /** The connection the key lookup opened, if any; set on the assembler thread, closed by the teardown. */
    private final AtomicReference<Connection> keyConn = new AtomicReference<>();

    /** Closes what streaming opened for itself; after the pipeline's threads ended (Teardown). */
    void close() {
        Connection c = keyConn.getAndSet(null);
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // closing: nothing is left to do with it
            }
        }
    }
}
