package io.millrace.engine;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.change.SnapshotProgress;
import io.millrace.core.sink.Sink;
import io.millrace.engine.Engine.State;
import io.millrace.engine.SourceSurvey.Survey;
import io.millrace.pipeline.Pipeline;
import io.millrace.snapshot.SnapshotRunner;
import io.millrace.source.SlotManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The start of a pipeline without a slot to resume from: {@link StartPlan.Fresh}, {@link StartPlan.RestartSnapshot}
 * and {@link StartPlan.AdoptSlot}. Claims the slot in every destination, creates it with an exported snapshot, writes
 * the first checkpoints and copies the tables; a copy a table rewrite invalidated starts over on a new slot (eight
 * times: one found before any row is copied costs only the slot, SnapshotRunner.rewrittenSince). Run thread; {@code repl}, the connection that exported the snapshot, stays open until every chunk is read.
 */
final class InitialSnapshot {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class); // the engine's log: one category for a run's stages
    private static final int ATTEMPTS = 8;

    private final EngineContext ctx;
    /** Read again when a snapshot starts over because a table changed under it. */
    private Survey survey;
    private final List<Sink> sinks;
    private final List<Identity> ids;
    private final Connection repl;
    private final SlotManager slots;

    InitialSnapshot(EngineContext ctx, Survey survey, List<Sink> sinks, List<Identity> ids, Connection repl) {
        this.ctx = ctx;
        this.survey = survey;
        this.sinks = sinks;
        this.ids = ids;
        this.repl = repl;
        this.slots = new SlotManager(ctx.config.source());
    }

    /**
     * Carries out {@code plan}; false when {@link Engine#stop()} ended the snapshot before it landed (then a stop, not a
     * failure: the checkpoints still say the snapshot is running, so the next start copies the tables again, INV: RESUME).
     */
    boolean run(StartPlan.Go plan, List<Optional<Checkpoint>> found) throws SQLException, InterruptedException {
        if (plan instanceof StartPlan.AdoptSlot adopt) {
            adopt(adopt.from());
            return true;
        }
        List<Optional<Checkpoint>> current = found;
        StartPlan.OnNewSlot next = (StartPlan.OnNewSlot) plan;
        for (int attempt = 1; ; attempt++) {
            try {
                if (!start(next, current)) {
                    ctx.state.move(State.SNAPSHOTTING, State.STOPPING);
                    ctx.state.move(State.STOPPING, State.STOPPED);
                    LOG.info("stopped during the snapshot; the next start continues it (on PostgreSQL 14+ the tables that landed stay)");
                    return false;
                }
                return true;
            } catch (SnapshotRunner.Invalidated e) {
                if (attempt >= ATTEMPTS) {
                    throw new MillraceException(Kind.SOURCE_SETUP, e.getMessage() + " (" + attempt + " times in a row)."
                            + " Avoid TRUNCATE and table rewrites (ALTER TABLE ... TYPE, VACUUM FULL, CLUSTER) on the captured"
                            + " tables while the initial snapshot starts, then start again", e);
                }
                // INV: HANDOVER — a copy that missed rows never stands: start over on a new slot.
                LOG.warn("{}; starting the snapshot again on a new slot (attempt {})", e.getMessage(), attempt + 1);
                current = stopForRetry();
                survey = new SourceSurvey(ctx).rereadTables(survey); // the new copy reads each table in its current shape
                next = new StartPlan.RestartSnapshot(StartPlan.Publication.NONE, true, true, null);
                ctx.state.move(State.SNAPSHOTTING, State.STARTING);
            }
        }
    }

    /** Stops the pipeline of an invalidated copy; returns its checkpoints (still RUNNING). */
    private List<Optional<Checkpoint>> stopForRetry() throws InterruptedException {
        Pipeline old = ctx.pipeline;
        old.stop();
        try {
            old.join();
        } catch (RuntimeException ignored) {
            // the writer stopped on request
        }
        List<Optional<Checkpoint>> current = new ArrayList<>();
        for (int i = 0; i < sinks.size(); i++) {
            current.add(Optional.of(old.checkpoint(i)));
        }
        return current;
    }

    /** Snapshot mode never: take the slot as it is, from its confirmed position. */
    private void adopt(Lsn from) {
        LOG.info("snapshot mode never: streaming from existing slot '{}' at {}", ctx.config.source().slot(), from);
        List<Checkpoint> initial = new ArrayList<>();
        for (int i = 0; i < sinks.size(); i++) {
            Checkpoint c = new Checkpoint(Checkpoint.VERSION, ids.get(i), from, Position.START, SnapshotProgress.skipped(from));
            sinks.get(i).write(List.of(), c);
            initial.add(c);
        }
        ctx.newPipeline(sinks, initial).startWriter();
    }

    private boolean start(StartPlan.OnNewSlot plan, List<Optional<Checkpoint>> found) throws SQLException, InterruptedException {
        boolean snapshot = plan.snapshot();
        if (plan instanceof StartPlan.RestartSnapshot r) {
            restart(r);
        }
        claim(found);
        SlotManager.CreatedSlot created;
        try (var nudge = ctx.conns.standbySnapshots()) { // on a standby the creation waits for the primary's running xacts
            created = slots.createSlot(repl, snapshot);
        }
        Lsn cp = created.consistentPoint();
        LOG.info("created slot '{}' at {}{}{}", created.name(), cp, ctx.config.source().failover() ? " (a failover slot)" : "",
                snapshot ? " with exported snapshot " + created.snapshotName() : "");
        Pipeline p = ctx.newPipeline(sinks, firstCheckpoints(found, cp, snapshot));
        p.startWriter();
        return !snapshot || copy(p, created);
    }

    private void restart(StartPlan.RestartSnapshot r) throws SQLException {
        if (r.notOnline() != null) {
            LOG.info("{}", r.notOnline());
        }
        if (!r.dropSlot()) {
            return;
        }
        LOG.warn("the initial snapshot was interrupted before it landed; restarting it from the beginning:"
                + " dropping slot '{}', re-creating it and copying every table again (destination tables are truncated first)",
                ctx.config.source().slot());
        try (Connection c = ctx.conns.openCapture()) {
            slots.dropSlot(c);
        }
    }

    /**
     * Claims the slot before it exists: a checkpoint "setting up" (RUNNING at 0/0) in every destination without one, so
     * a crash between creating the slot and recording its position leaves proof that the slot is this pipeline's.
     */
    private void claim(List<Optional<Checkpoint>> found) {
        for (int i = 0; i < sinks.size(); i++) {
            if (found.get(i).isEmpty()) {
                sinks.get(i).write(List.of(), new Checkpoint(Checkpoint.VERSION, ids.get(i), Lsn.ZERO, Position.START,
                        new SnapshotProgress(SnapshotProgress.State.RUNNING, Lsn.ZERO, List.of())));
            }
        }
    }

    /** The checkpoints at the new slot's consistent point; a destination that held one truncates the tables first. */
    private List<Checkpoint> firstCheckpoints(List<Optional<Checkpoint>> found, Lsn cp, boolean snapshot) {
        SnapshotProgress progress = snapshot ? new SnapshotProgress(SnapshotProgress.State.RUNNING, cp, List.of())
                : SnapshotProgress.skipped(cp);
        List<Checkpoint> initial = new ArrayList<>();
        for (int i = 0; i < sinks.size(); i++) {
            Checkpoint c = new Checkpoint(Checkpoint.VERSION, ids.get(i), cp, Position.START, progress);
            List<ChangeEvent> truncates = new ArrayList<>();
            if (found.get(i).isPresent() && snapshot) {
                for (SnapshotRunner.Table t : survey.tables()) {
                    truncates.add(ChangeEvent.reopening(t.relation(), cp));
                }
            }
            sinks.get(i).write(truncates, c); // the pipeline writer has not started: this thread owns the sinks
            initial.add(c);
        }
        return initial;
    }

    /** Copies the tables from the exported snapshot; false when stopped before the copy landed. */
    private boolean copy(Pipeline p, SlotManager.CreatedSlot created) throws InterruptedException {
        ctx.state.move(State.STARTING, State.SNAPSHOTTING);
        SnapshotRunner runner = new SnapshotRunner(ctx.conns, created.snapshotName(), created.consistentPoint(), survey.tables(),
                ctx.config.snapshot(), p::submit, ctx.progress)
                .rowFilters(ctx.config.transforms().filters(survey.report().tables())); // as the publication's row filters
        try {
            runner.run(); // the exporting connection (repl) stays open until every chunk is read
        } catch (InterruptedException e) {
            // The readers end with "pipeline stopping" when the pipeline stops: on stop(), or because a stage (a
            // destination) failed. INV: NO-SILENT-ERROR — that failure is the error to report, not the readers'.
            p.stop();
            p.join(); // rethrows the first failure of any stage
            if (ctx.stopping()) {
                return false;
            }
            throw e;
        }
        if (!p.awaitDrained(Long.MAX_VALUE / 4)) {
            p.join(); // rethrows the writer's failure
            if (ctx.stopping()) {
                return false;
            }
            throw new InterruptedException("stopped during the snapshot");
        }
        return true;
    }
}
