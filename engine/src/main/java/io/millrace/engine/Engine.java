package io.millrace.engine;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.OnlineTask;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.Sink;
import io.millrace.engine.config.EngineConfig;
import io.millrace.pipeline.Pipeline;
import io.millrace.pipeline.PipelineStats;
import io.millrace.snapshot.SnapshotRunner;
import io.millrace.snapshot.online.OnlineSnapshotter;
import io.millrace.source.PipelineLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Runs one pipeline: survey the source, open the destinations, start as planned, stream until stopped or failed.
 *
 * <p>{@link #run()} runs it on the calling thread, stage by stage: {@link SourceSurvey} (preflight, the tables'
 * shapes), the pipeline lock and the destinations, {@link StartUp} (the start as {@link StartPlanner} decides it from
 * the checkpoints, the slot and the configuration — INV: IDENTITY is checked first, before anything is written —
 * with {@link InitialSnapshot} when the tables are copied), {@link Streaming}, and {@link Teardown}.
 * {@link OnlineControls} serves the online-snapshot calls, {@link StatusReport} the status. {@link #stop()} may be
 * called from any thread (a signal handler) and makes {@code run()} return after the last durable checkpoint.
 */
public final class Engine {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class);

    /**
     * The engine's lifecycle. It changes only by compare-and-set (see {@code Lifecycle}); a move not drawn here throws
     * {@link IllegalStateException} naming both states.
     *
     * <pre>
     *  CREATED ─▶ STARTING ─┬───────────────────────────────▶ STREAMING ─▶ STOPPING ─▶ STOPPED
     *                 ▲     ├─▶ SNAPSHOTTING ─┬─────────────────▲              ▲
     *                 │     │                 ├─ stopped, or initial_only ─────┤
     *                 └─────┼─────────────────┘ (copy invalidated: again)      │
     *                       └─ initial_only, resumed ──────────────────────────┘
     *
     *  STARTING, SNAPSHOTTING, STREAMING ─▶ STOPPING ─▶ FAILED (a failure: STOPPING while the engine ends, FAILED once it
     *                                                          has, just before run() throws)
     * </pre>
     * STOPPED and FAILED are final: an engine runs once.
     */
    public enum State {
        CREATED, STARTING, SNAPSHOTTING, STREAMING, STOPPING, STOPPED, FAILED;

        /** Whether the diagram draws a move from this state to {@code next}. */
        boolean canMoveTo(State next) {
            return switch (this) {
                case CREATED -> next == STARTING;
                case STARTING -> next == SNAPSHOTTING || next == STREAMING || next == STOPPING || next == FAILED;
                case SNAPSHOTTING -> next == STREAMING || next == STOPPING || next == STARTING || next == FAILED;
                case STREAMING -> next == STOPPING || next == FAILED;
                case STOPPING -> next == STOPPED || next == FAILED;
                case STOPPED, FAILED -> false;
            };
        }
    }

    private final EngineConfig config;
    private final EngineContext ctx;
    private final Lifecycle state;
    private final OnlineControls controls;
    /** The destinations once opened (for {@link #copyDuckDb}); empty before. */
    private volatile List<Sink> opened = List.of();

    public Engine(EngineConfig config) {
        this(config, new SnapshotRunner.Listener() {
        });
    }

    public Engine(EngineConfig config, SnapshotRunner.Listener snapshotListener) {
        this.config = config;
        this.ctx = new EngineContext(config, new SnapshotProgressTracker(snapshotListener));
        this.state = ctx.state;
        this.controls = new OnlineControls(ctx);
    }

    public EngineConfig config() {
        return config;
    }

    /** A consistent-enough view for the status page and metrics. Any thread. */
    public EngineStatus status() {
        return StatusReport.of(ctx, controls);
    }

    public State state() {
        return state.get();
    }

    /** Counters of the running pipeline, or null before streaming or snapshotting starts. */
    public PipelineStats stats() {
        Pipeline p = ctx.pipeline;
        return p == null ? null : p.stats();
    }

    /**
     * True once the replication reader holds the slot (the server accepted START_REPLICATION). The engine reports
     * {@link State#STREAMING} a moment before that, when the reader starts. Any thread.
     */
    public boolean readerStarted() {
        return StatusReport.readerStarted(ctx);
    }

    /** Asks the engine to stop; {@link #run()} returns once the pipeline has stopped. Any thread. */
    public void stop() {
        ctx.requestStop();
    }

    /**
     * Runs until {@link #stop()} or a failure.
     *
     * @throws MillraceException naming what failed and how to fix it
     */
    public void run() throws InterruptedException {
        state.move(State.CREATED, State.STARTING);
        Exception failure = null;
        List<Sink> sinks = new ArrayList<>();
        Teardown teardown = new Teardown(ctx, sinks);
        try {
            SourceSurvey.Survey survey = new SourceSurvey(ctx).run();
            config.transforms().check(survey.relations()); // every column a transform names exists; keys stay keys
            // INV: IDENTITY — one engine per pipeline, from before any destination is opened until all are closed.
            teardown.lock = PipelineLock.acquire(ctx.conns);
            teardown.monitor = startSlotMonitor();

            sinks.addAll(Destinations.of(config));
            for (Sink s : sinks) {
                config.transforms().completeToast(s, () -> new SourceToastLookup(ctx.conns));
            }
            List<Optional<Checkpoint>> found = new ArrayList<>();
            for (Sink s : sinks) {
                found.add(s.open());
            }
            opened = List.copyOf(sinks);

            if (!new StartUp(ctx, survey, sinks, found).run()) {
                return; // stopped during the initial snapshot
            }
            if (config.snapshotMode() == EngineConfig.SnapshotMode.INITIAL_ONLY) {
                stopAfterSnapshot();
                return;
            }
            teardown.streaming = new Streaming(ctx, ctx.survey, controls); // a snapshot started over surveyed the tables again
            teardown.streaming.run();
        } catch (InterruptedException e) {
            failure = e;
            state.failing();
            throw e;
        } catch (RuntimeException e) {
            ctx.lastError = e.getMessage();
            failure = e;
            state.failing();
            throw e;
        } finally {
            endAfter(teardown, failure);
        }
    }

    /**
     * Runs the teardown. After a failure, what the teardown throws is added to it (the failure is what ended the engine, and
     * what the supervisor classifies), and the engine is FAILED once it has ended: FAILED is final, so it is not shown while
     * the destinations close (seconds, for some), during which a supervisor may still decide to retry (a library user read
     * "failed", then "retrying").
     */
    private void endAfter(Teardown teardown, Exception failure) throws InterruptedException {
        try {
            teardown.run();
        } catch (InterruptedException | RuntimeException t) {
            if (failure == null) {
                throw t;
            }
            failure.addSuppressed(t);
            if (t instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
        } finally {
            if (failure != null && state.get().canMoveTo(State.FAILED)) { // not after STOPPED: the failure is what run() throws
                state.fail();
            }
        }
    }

    /** The slot's monitor, whose look at the catalog also watches the tables, the publication and tables that may join. */
    private Thread startSlotMonitor() {
        return SlotMonitor.start(ctx.conns, config.source().slot(), config.operations(), sample -> ctx.slotSample = sample,
                c -> {
                    ctx.watch.tick(c); // the watch of the moment: a snapshot started again builds a new one
                    renamedOut();
                    try {
                        ctx.narrow.tick(c); // a publication narrowed: fewer kinds of change, partitions published as themselves
                    } catch (java.sql.SQLException | RuntimeException e) { // never keeps the poll below from running
                        LOG.warn("could not look at publication '{}' (tried again at the next look): {}", config.source().publication(),
                                e.toString());
                    }
                    ctx.joiner.poll(c); // after: a root published through its partitions is not a table that left
                });
    }

    private void stopAfterSnapshot() throws InterruptedException {
        String slot = config.source().slot();
        LOG.info("snapshot mode initial_only: the copy landed; stopping (the slot '{}' is kept: drop it with"
                + " SELECT pg_drop_replication_slot('{}') if no streaming will follow)", slot, slot);
        state.move(state.get(), State.STOPPING);
        ctx.pipeline.stop();
        ctx.pipeline.join();
        state.move(State.STOPPING, State.STOPPED);
    }

    /**
     * Copies {@code tables} again while streaming (an online snapshot), limited to rows matching {@code filter}
     * (an SQL condition, or null). Any thread; the engine must be streaming.
     */
    public void snapshot(List<TableRef> tables, String filter) {
        controls.snapshot(tables, filter);
    }

    /**
     * Writes a consistent copy of the duckdb destination {@code destination} (a {@link io.millrace.core.sink.CopyableSink}) — as of
     * its last committed batch — to {@code file}, a new file other processes can open while this engine holds the destination's own (DuckDB lets one
     * process open a file). Any thread; returns what the copy holds, for a message.
     */
    public String copyDuckDb(String destination, java.nio.file.Path file) {
        State st = state.get();
        Sink sink = opened.stream().filter(x -> x.name().equals(destination)).findFirst().orElse(null);
        if (!(sink instanceof io.millrace.core.sink.CopyableSink duck) || (st != State.STREAMING && st != State.SNAPSHOTTING)) {
            throw new MillraceException(Kind.CONFIG, sink == null || sink instanceof io.millrace.core.sink.CopyableSink
                    ? "no duckdb destination '" + destination + "' is open (the engine is " + st.name().toLowerCase(java.util.Locale.ROOT)
                    + "; duckdb destinations: " + opened.stream().filter(x -> x instanceof io.millrace.core.sink.CopyableSink)
                    .map(Sink::name).toList() + ")"
                    : "destination '" + destination + "' is not a duckdb destination");
        }
        Optional<Checkpoint> at = duck.copyTo(file);
        return "copied destination '" + destination + "' to " + file.toAbsolutePath() + at.map(c -> " (up to " + c.applied() + ")").orElse("");
    }

    /**
     * A captured table renamed to a name the selection does not take stops being captured, as at a start and a reload
     * (slot monitor's thread). Tried again at the next look when it fails, or while the engine is not streaming yet.
     */
    private void renamedOut() {
        SourceWatch watch = ctx.watch;
        if (watch == null || ctx.state.get() != State.STREAMING || ctx.online == null || !watch.takeRenamedOut()) {
            return;
        }
        try {
            // not a reload: the user sent none (a user read "source.tables reloaded" here as one they had not asked for)
            Reloader.apply(ctx, ctx.selection, "a captured table was renamed to a name source.tables does not select");
        } catch (MillraceException e) {
            if (e.kind() == Kind.CONFIG) {
                // a table source.tables names was renamed too: it stays captured until the next start, which stops with the fix
                LOG.warn("a table renamed out of source.tables stays captured until the next start: {}", e.getMessage());
                return;
            }
            watch.renamedOutAgain();
            LOG.warn("could not stop capturing a table renamed out of source.tables (tried again at the next look): {}", e.getMessage());
        } catch (RuntimeException e) { // never keeps the monitor's other looks from running
            watch.renamedOutAgain();
            LOG.warn("could not stop capturing a table renamed out of source.tables (tried again at the next look): {}", e.toString());
        }
    }

    /**
     * Applies the table selection of {@code next}, a configuration read again, to this streaming engine; returns what
     * changed. Refused, changing nothing, when a setting other than {@code source.tables} and
     * {@code source.exclude_tables} differs from the running configuration (it needs a restart). Any thread.
     *
     * @throws MillraceException (CONFIG) naming the setting, or why the selection cannot change now
     */
    public String reload(EngineConfig next) {
        String changed = Reloader.refusal(config, next);
        try {
            if (changed != null) {
                throw new MillraceException(Kind.CONFIG, "config: " + changed + " changed, which needs a restart (a reload changes only"
                        + " source.tables, source.exclude_tables and transforms); nothing was changed");
            }
            Reloader.TransformsPlan transforms = Reloader.planTransforms(ctx, next.transforms()); // checked before anything changes
            String done = Reloader.apply(ctx, TableSelection.of(next.source()));
            if (transforms != null) {
                done += "; " + Reloader.applyTransforms(ctx, transforms);
            }
            ctx.lastReload = new EngineStatus.Reload(java.time.Instant.now().toString(), true, done);
            return done;
        } catch (MillraceException e) {
            ctx.lastReload = new EngineStatus.Reload(java.time.Instant.now().toString(), false, e.getMessage());
            throw e;
        }
    }

    /** Pauses ({@code true}) or resumes online snapshots. */
    public void pauseSnapshots(boolean pause) {
        controls.pause(pause);
    }

    /** Tables {@code source.tables} names that this run saw renamed in the source, old name to new (see SourceWatch). */
    java.util.Map<TableRef, TableRef> namedTablesRenamed() {
        SourceWatch w = ctx.watch;
        return w == null ? java.util.Map.of() : w.namedRenamed();
    }

    /** The online snapshots under way (empty when none), for status and tests. */
    public List<OnlineTask> onlineSnapshots() {
        OnlineSnapshotter o = ctx.online;
        return o == null ? List.of() : o.progress();
    }

    /** The online snapshotter, or null before streaming. */
    public OnlineSnapshotter onlineSnapshotter() {
        return ctx.online;
    }
}
