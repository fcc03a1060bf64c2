package io.millrace.engine;

import io.millrace.core.Lsn;
import io.millrace.core.schema.TableRef;
import io.millrace.engine.Engine.State;
import io.millrace.pipeline.Pipeline;
import io.millrace.pipeline.PipelineStats;
import io.millrace.source.ReplicationReader;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;

/** Builds {@link EngineStatus}, a consistent-enough view of a running engine for the status page and metrics. Any thread. */
final class StatusReport {
    private StatusReport() {
    }

    static EngineStatus of(EngineContext ctx, OnlineControls controls) {
        Pipeline p = ctx.pipeline;
        PipelineStats st = p == null ? null : p.stats();
        SlotMonitor.Sample m = ctx.slotSample;
        String durable = st == null ? null : st.durable().toString();
        long lagBytes = -1;
        if (m != null && st != null && !st.durable().equals(Lsn.ZERO)) {
            lagBytes = Math.max(0, m.serverLsn().value() - st.durable().value());
        }
        State s = ctx.state.get();
        // "streaming" once the reader holds the slot: the state changes a moment before START_REPLICATION is answered
        String shown = s == State.STREAMING && !readerStarted(ctx) ? "starting" : s.name().toLowerCase(Locale.ROOT);
        long now = System.currentTimeMillis();
        PipelineStats.Writing w = st == null ? null : st.writing();
        EngineStatus.Slow slow = w != null && now - w.sinceMillis() >= 1000 ? new EngineStatus.Slow(w.sink(), now - w.sinceMillis()) : null;
        var src = ctx.config.source();
        // with several source.hosts: the one this engine found the primary (all of them until it has looked)
        return new EngineStatus(ctx.config.name(), shown, ctx.conns.captureWhere(), src.slot(), src.publication(), durable,
                m == null ? null : m.serverLsn().toString(), m == null || m.confirmedLsn() == null ? null : m.confirmedLsn().toString(),
                m == null ? -1 : m.retainedBytes(), lagBytes, lagMillis(st, lagBytes, w, now), st == null ? 0 : st.eventsWritten(),
                p == null ? 0 : p.inflightBytes(), ctx.config.pipeline().budgetBytes(), tables(ctx, st, s), ctx.lastError,
                controls.status(), slow, values(ctx), slotLost(ctx), notCaptured(ctx), ctx.lastReload);
    }

    /**
     * The pipeline's lag in time; 0 when the destinations hold all the WAL the server has and nothing is being written
     * (on an idle server no batch comes to say so: the lag stayed at the last change's latency, minutes after a
     * catch-up, and a lag alert kept firing; found by a user).
     */
    private static long lagMillis(PipelineStats st, long lagBytes, PipelineStats.Writing w, long now) {
        if (st == null) {
            return -1;
        }
        return lagBytes == 0 && w == null ? 0 : st.lagMillis(now);
    }

    private static List<EngineStatus.NotCaptured> notCaptured(EngineContext ctx) {
        List<EngineStatus.NotCaptured> out = new java.util.ArrayList<>(ctx.joiner.notCaptured());
        out.addAll(ctx.narrow.withheld());
        return out;
    }

    /** The slot's last replacement, and the reconciling copies the durable checkpoints still hold (any destination's). */
    private static EngineStatus.SlotLost slotLost(EngineContext ctx) {
        io.millrace.core.change.Checkpoint.SlotLost l = ctx.slotLost;
        Pipeline p = ctx.pipeline;
        io.millrace.snapshot.online.OnlineSnapshotter online = ctx.online;
        if (l == null || p == null) {
            return l == null ? null : new EngineStatus.SlotLost(l.count(), l.reason(), l.lostAt().toString(), l.newSlotAt().toString(),
                    "reconciling", List.of(), 0);
        }
        Set<String> reconciling = new TreeSet<>();
        for (int i = 0; i < ctx.config.destinations().size(); i++) {
            io.millrace.core.change.Checkpoint cp = p.checkpoint(i);
            if (cp != null) {
                cp.online().stream().filter(io.millrace.core.change.OnlineTask::reconcile).forEach(t -> reconciling.add(t.table().toString()));
            }
        }
        return new EngineStatus.SlotLost(l.count(), l.reason(), l.lostAt().toString(), l.newSlotAt().toString(),
                reconciling.isEmpty() ? "reconciled" : "reconciling", List.copyOf(reconciling), online == null ? 0 : online.reconcileDeletes());
    }

    private static EngineStatus.Values values(EngineContext ctx) {
        SourceSurvey.Survey survey = ctx.survey;
        return survey == null ? null : new EngineStatus.Values(survey.binary() ? "binary" : "text", survey.textReason());
    }

    static boolean readerStarted(EngineContext ctx) {
        ReplicationReader r = ctx.reader;
        return r != null && r.started();
    }

    private static boolean copying(EngineContext ctx, TableRef t) {
        SnapshotProgressTracker.Row r = ctx.progress.row(t);
        return r != null && !r.done();
    }

    private static List<EngineStatus.Table> tables(EngineContext ctx, PipelineStats st, State s) {
        List<EngineStatus.Table> tables = new ArrayList<>();
        Set<TableRef> all = new TreeSet<>(ctx.progress.tables());
        if (st != null) {
            all.addAll(st.tables().keySet());
        }
        SourceWatch watch = ctx.watch;
        if (watch != null) {
            // The captured tables, each under its name now: one idle since a restart is listed too (it was missing until its
            // first change), one a reload released no longer is (it stayed "streaming"), found by a user.
            Set<TableRef> captured = new java.util.HashSet<>(watch.captured().values());
            all.addAll(captured);
            all.removeIf(t -> !captured.contains(t) && !copying(ctx, t)); // a copy renamed meanwhile keeps its row until it lands
        }
        for (TableRef t : all) {
            SnapshotProgressTracker.Row sp = ctx.progress.row(t);
            long copied = sp == null ? 0 : sp.copied();
            long est = sp == null ? -1 : sp.estimated();
            boolean done = sp == null || sp.done();
            PipelineStats.TableCounters c = st == null ? null : st.tables().get(t);
            String phase = !done ? (copied > 0 ? "snapshot" : "waiting") : (s == State.STREAMING ? "streaming" : s.name().toLowerCase(Locale.ROOT));
            tables.add(new EngineStatus.Table(t.toString(), phase, copied, est, c == null ? 0 : c.events()));
        }
        return tables;
    }
}
