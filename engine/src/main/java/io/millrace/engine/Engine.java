package io.millrace.engine;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.change.Op;
import io.millrace.core.change.SnapshotProgress;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.Sink;
import io.millrace.engine.config.EngineConfig;
import io.millrace.pipeline.Pipeline;
import io.millrace.pipeline.PipelineStats;
import io.millrace.snapshot.SnapshotRunner;
import io.millrace.source.Catalog;
import io.millrace.source.CatalogTypeResolver;
import io.millrace.source.PgConnections;
import io.millrace.source.PgErrors;
import io.millrace.source.PipelineLock;
import io.millrace.source.Preflight;
import io.millrace.source.ReplicationReader;
import io.millrace.source.SlotManager;
import io.millrace.source.SourceConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs one pipeline: preflight, slot, optional snapshot, then streaming until stopped or failed.
 *
 * <p>Lifecycle (changed only by compare-and-set; an illegal move throws):
 * {@code CREATED → STARTING → [SNAPSHOTTING →] STREAMING → STOPPING → STOPPED}, or {@code → FAILED}
 * from any running state ({@code SNAPSHOTTING → STOPPING} when stopped during the snapshot). {@link #run()}
 * runs it on the calling thread; {@link #stop()} may be called from any thread (a signal handler) and
 * makes {@code run()} return after the last durable checkpoint.
 *
 * <p>Start decisions, from the destinations' checkpoints (INV: IDENTITY is checked first, before
 * anything is written):
 * <ul>
 *   <li>no destination has a checkpoint: a fresh start — the destinations first record a claim
 *       (a checkpoint in state RUNNING at 0/0), then the slot is created with an exported snapshot.
 *       An existing slot nobody claimed is refused (it may be another pipeline's), except in snapshot
 *       mode {@code never}, which streams from it as it is;</li>
 *   <li>a checkpoint says the snapshot was interrupted: the snapshot restarts from the beginning on a
 *       new slot, each table truncated in the destinations first (logged as a warning);</li>
 *   <li>otherwise streaming resumes at the lowest durable position over the destinations
 *       (INV: RESUME); a missing slot then stops with instructions, never a silent re-snapshot.</li>
 * </ul>
 */
public final class Engine {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class);

    public enum State { CREATED, STARTING, SNAPSHOTTING, STREAMING, STOPPING, STOPPED, FAILED }

    private final EngineConfig config;
    private final AtomicReference<State> state = new AtomicReference<>(State.CREATED);
    private final CountDownLatch stopRequested = new CountDownLatch(1);
    private final SnapshotRunner.Listener snapshotListener;
    private volatile Pipeline pipeline;
    private volatile ReplicationReader reader;
    private volatile io.millrace.snapshot.online.OnlineSnapshotter online;
    private volatile List<TableRef> captured = List.of();
    /** The destinations once opened (for {@link #copyDuckDb}); empty before. */
    private volatile List<Sink> opened = List.of();
    private volatile String lastError;
    private volatile SlotMonitor.Sample slotSample;
    /** DDL that pgoutput does not announce (drops, new tables, renames); set at start. */
    private volatile SourceWatch watch;
    /** Snapshot progress per table, for the status page: [rows copied, rows estimated, done 0/1]. */
    private final Map<TableRef, long[]> snapshotProgress = new ConcurrentHashMap<>();

    public Engine(EngineConfig config) {
        this(config, new SnapshotRunner.Listener() {
        });
    }

    public Engine(EngineConfig config, SnapshotRunner.Listener snapshotListener) {
        this.config = config;
        this.snapshotListener = new SnapshotRunner.Listener() {
            @Override
            public void tableStarted(TableRef table, long estimatedRows) {
                snapshotProgress.put(table, new long[] {0, estimatedRows, 0});
                snapshotListener.tableStarted(table, estimatedRows);
            }

            @Override
            public void rowsCopied(TableRef table, long rows) {
                long[] p = snapshotProgress.get(table);
                if (p != null) {
                    synchronized (p) {
                        p[0] += rows;
                    }
                }
                snapshotListener.rowsCopied(table, rows);
            }

            @Override
            public void tableDone(TableRef table, long rows) {
                long[] p = snapshotProgress.get(table);
                if (p != null) {
                    synchronized (p) {
                        p[0] = rows;
                        p[2] = 1;
                    }
                }
                snapshotListener.tableDone(table, rows);
            }
        };
    }

    public EngineConfig config() {
        return config;
    }

    /** A consistent-enough view for the status page and metrics. Any thread. */
    public EngineStatus status() {
        Pipeline p = pipeline;
        PipelineStats st = p == null ? null : p.stats();
        SlotMonitor.Sample m = slotSample;
        String durable = st == null ? null : st.durable().toString();
        long lagBytes = -1;
        if (m != null && st != null && !st.durable().equals(Lsn.ZERO)) {
            lagBytes = Math.max(0, m.serverLsn().value() - st.durable().value());
        }
        List<EngineStatus.Table> tables = new ArrayList<>();
        java.util.Set<TableRef> all = new java.util.TreeSet<>(snapshotProgress.keySet());
        if (st != null) {
            all.addAll(st.tables().keySet());
        }
        State s = state.get();
        for (TableRef t : all) {
            long[] sp = snapshotProgress.get(t);
            long copied = 0;
            long est = -1;
            boolean done = true;
            if (sp != null) {
                synchronized (sp) {
                    copied = sp[0];
                    est = sp[1];
                    done = sp[2] == 1;
                }
            }
            PipelineStats.TableCounters c = st == null ? null : st.tables().get(t);
            String phase = !done ? (copied > 0 ? "snapshot" : "waiting") : (s == State.STREAMING ? "streaming" : s.name().toLowerCase(java.util.Locale.ROOT));
            tables.add(new EngineStatus.Table(t.toString(), phase, copied, est, c == null ? 0 : c.events()));
        }
        // "streaming" once the reader holds the slot: the state changes a moment before START_REPLICATION is answered
        String shown = s == State.STREAMING && !readerStarted() ? "starting" : s.name().toLowerCase(java.util.Locale.ROOT);
        long now = System.currentTimeMillis();
        PipelineStats.Writing w = st == null ? null : st.writing();
        EngineStatus.Slow slow = w != null && now - w.sinceMillis() >= 1000 ? new EngineStatus.Slow(w.sink(), now - w.sinceMillis()) : null;
        return new EngineStatus(config.name(), shown, config.source().where(), config.source().slot(),
                config.source().publication(), durable, m == null ? null : m.serverLsn().toString(),
                m == null || m.confirmedLsn() == null ? null : m.confirmedLsn().toString(), m == null ? -1 : m.retainedBytes(), lagBytes,
                st == null ? -1 : st.lagMillis(now), st == null ? 0 : st.eventsWritten(),
                p == null ? 0 : p.inflightBytes(), config.pipeline().budgetBytes(), tables, lastError, onlineStatus(), slow);
    }

    public State state() {
        return state.get();
    }

    /** Counters of the running pipeline, or null before streaming or snapshotting starts. */
    public PipelineStats stats() {
        Pipeline p = pipeline;
        return p == null ? null : p.stats();
    }

    private void transition(State from, State to) {
        if (!state.compareAndSet(from, to)) {
            throw new IllegalStateException(String.format("Cannot change engine state to '%s' as the engine is not in expected state '%s',"
                    + " current engine state is '%s'", to, from, state.get()));
        }
        LOG.debug("engine {} -> {}", from, to);
    }

    /**
     * True once the replication reader holds the slot (the server accepted START_REPLICATION). The engine reports
     * {@link State#STREAMING} a moment before that, when the reader starts. Any thread.
     */
    public boolean readerStarted() {
        ReplicationReader r = reader;
        return r != null && r.started();
    }

    /** Asks the engine to stop; {@link #run()} returns once the pipeline has stopped. Any thread. */
    public void stop() {
        stopRequested.countDown();
        Pipeline p = pipeline;
        if (p != null) {
            p.stop();
        }
    }

    private boolean stopping() {
        return stopRequested.getCount() == 0;
    }

    /**
     * Runs until {@link #stop()} or a failure.
     *
     * @throws MillraceException naming what failed and how to fix it
     */
    public void run() throws InterruptedException {
        transition(State.CREATED, State.STARTING);
        List<Sink> sinks = new ArrayList<>();
        Thread readerThread = null;
        Thread monitor = null;
        PipelineLock lock = null;
        try {
            SourceConfig src = config.source();
            PgConnections conns = new PgConnections(src);
            SlotManager slots = new SlotManager(src);
            CatalogTypeResolver types = new CatalogTypeResolver(conns::open);
            List<SnapshotRunner.Table> tables = new ArrayList<>();
            Preflight.Report report;
            try (Connection meta = conns.open()) {
                for (int attempt = 1; ; attempt++) {
                    report = Preflight.run(src, meta);
                    for (Preflight.Check c : report.checks()) {
                        if (c.status() == Preflight.Status.WARN) {
                            LOG.warn("preflight: {} — {}{}", c.name(), c.detail(), c.fix() == null ? "" : " (fix: " + c.fix() + ")");
                        }
                    }
                    if (attempt < 3 && !report.ok() && report.failures().stream().allMatch(f -> f.kind() == Kind.CONFIG
                            && f.name().startsWith("table ") && src.tables().stream().noneMatch(x -> f.name().equals("table " + x)))) {
                        LOG.info("a table source.tables matches was renamed or dropped while Millrace started: checking the source again");
                        continue; // listed by a pattern, gone a moment later
                    }
                    report.throwIfFailed();
                    types.load(meta);
                    TableRef signalTable = config.online().signalTable();
                    if (signalTable != null && Catalog.table(meta, signalTable) == null) {
                        throw new MillraceException(Kind.CONFIG, "config: snapshot.signal_table names " + signalTable + ", which does not exist."
                                + " Create it: CREATE TABLE " + signalTable.sql() + " (id text PRIMARY KEY, type text NOT NULL, data text);"
                                + " or remove snapshot.signal_table");
                    }
                    Preflight.Check signalIdentity = signalTable == null ? null
                            : Preflight.replicaIdentity(meta, Catalog.table(meta, signalTable), src.publication(), List.of());
                    if (signalIdentity != null) { // it joins the publication: never at the cost of the source's writes
                        throw new MillraceException(signalIdentity.kind(), "snapshot.signal_table: " + signalIdentity.detail()
                                + ". Fix: " + signalIdentity.fix());
                    }
                    tables.clear();
                    TableRef gone = readTables(meta, report.tables(), types, tables);
                    if (gone == null) {
                        break;
                    }
                    if (attempt == 3) {
                        throw new MillraceException(Kind.CONFIG, "table " + gone.sql() + " does not exist in the source database");
                    }
                    LOG.info("table {} was renamed or dropped while Millrace started: checking the source again", gone);
                }
                watch = new SourceWatch(src, tables.stream().map(SnapshotRunner.Table::relation).toList());
                watch.loadColumns(meta);
            } catch (SQLException e) {
                throw PgErrors.translate("reading the source catalog", e);
            }
            boolean binary = binary(src, report.serverVersion(), tables);
            // INV: IDENTITY — one engine per pipeline, from before any destination is opened until all are closed.
            lock = PipelineLock.acquire(conns);
            monitor = SlotMonitor.start(conns, src.slot(), config.operations(), sample -> slotSample = sample, watch::tick);

            sinks.addAll(Destinations.of(config));
            List<Optional<Checkpoint>> found = new ArrayList<>();
            for (Sink s : sinks) {
                found.add(s.open());
            }
            opened = List.copyOf(sinks);

            try (Connection repl = conns.openReplication()) {
                SlotManager.SystemInfo sys = SlotManager.identify(repl);
                List<Identity> ids = new ArrayList<>();
                for (int i = 0; i < sinks.size(); i++) {
                    Identity id = new Identity(sys.systemId(), src.database(), src.slot(), src.publication(), sinks.get(i).name());
                    ids.add(id);
                    Optional<Checkpoint> cp = found.get(i);
                    String diff = cp.isPresent() ? id.difference(cp.get().identity()) : null;
                    if (diff != null) {
                        // INV: IDENTITY — fail before anything is written.
                        throw new MillraceException(Kind.IDENTITY, "destination '" + sinks.get(i).name()
                                + "' holds a checkpoint of another pipeline: " + diff + ". Resuming from it would skip or repeat changes."
                                + " Point this pipeline at an empty destination, or remove that destination's checkpoint to start over.");
                    }
                }
                tablesAtStart(conns, found);
                long withCheckpoint = found.stream().filter(Optional::isPresent).count();
                boolean interrupted = found.stream().anyMatch(c -> c.isPresent() && c.get().snapshot().state() == SnapshotProgress.State.RUNNING);
                // A crash while the first checkpoints are written one destination after the other leaves some with a
                // RUNNING checkpoint and some with none. A RUNNING snapshot starts over for every destination on a new
                // slot, so a destination without a checkpoint misses nothing then: that is an interrupted start (INV: RESUME).
                boolean allRunning = found.stream().allMatch(c -> c.isEmpty() || c.get().snapshot().state() == SnapshotProgress.State.RUNNING);
                if (withCheckpoint != 0 && withCheckpoint != sinks.size() && !allRunning) {
                    throw new MillraceException(Kind.CONFIG, "some destinations have a checkpoint and some do not ("
                            + describe(sinks, found) + "). A destination added to a running pipeline would miss the changes before it;"
                            + " give the new destination a pipeline (and slot) of its own, or start all destinations afresh");
                }
                TableRef signal = config.online().signalTable();
                if (!report.publicationExists()) {
                    // Only now, after the identity check: a start that fails it writes nothing to the source.
                    try (Connection c = conns.open()) {
                        List<TableRef> published = new ArrayList<>(report.tables());
                        if (signal != null && !published.contains(signal)) {
                            published.add(signal);
                        }
                        slots.createPublication(c, published);
                    }
                    LOG.info("created publication '{}' for {} table(s)", src.publication(), report.tables().size());
                } else if (!report.unpublished().isEmpty()) {
                    if (withCheckpoint == sinks.size() && !interrupted && config.snapshotMode() != EngineConfig.SnapshotMode.NEVER) {
                        // Tables added to a pipeline that streams are copied while it streams. INV: RESUME — the copy is recorded
                        // in every destination before the table joins the publication: a crash in between must not leave a
                        // published table that nobody copies (the next start would find it published and copy nothing).
                        for (int i = 0; i < sinks.size(); i++) {
                            Checkpoint cp = found.get(i).orElseThrow();
                            List<io.millrace.core.change.OnlineTask> tasks = new ArrayList<>(cp.online());
                            for (TableRef t : report.unpublished()) {
                                if (tasks.stream().noneMatch(x -> x.table().equals(t.toString()))) {
                                    tasks.add(io.millrace.core.change.OnlineTask.whole(relation(tables, t)));
                                }
                            }
                            Checkpoint next = cp.withOnline(tasks);
                            if (!next.equals(cp)) {
                                sinks.get(i).write(List.of(), next); // the writer has not started: this thread owns the sinks
                                found.set(i, Optional.of(next));
                            }
                        }
                    }
                    try (Connection c = conns.open()) {
                        publish(c, slots, report.unpublished().stream().map(t -> relation(tables, t)).toList());
                    }
                }
                captured = report.tables();
                if (signal != null && report.publicationExists()) {
                    try (Connection c = conns.open()) {
                        if (!Catalog.publicationTables(c, src.publication()).contains(signal)) {
                            slots.addToPublication(c, List.of(signal));
                            LOG.info("added the signal table {} to publication '{}'", signal, src.publication());
                        }
                    }
                }
                if (interrupted && resumeOnline(report, tables, sinks, found)) {
                    interrupted = false;
                    withCheckpoint = sinks.size();
                }
                if (withCheckpoint == 0 || interrupted) {
                    boolean slotExists = report.slotExists();
                    List<Optional<Checkpoint>> current = found;
                    for (int attempt = 1; ; attempt++) {
                        try {
                            if (!freshStart(conns, slots, repl, slotExists, interrupted, sinks, ids, tables, current)) {
                                // stop() during the snapshot: a stop, not a failure. The checkpoints still say the snapshot
                                // is running, so the next start copies the tables again (INV: RESUME).
                                transition(State.SNAPSHOTTING, State.STOPPING);
                                transition(State.STOPPING, State.STOPPED);
                                LOG.info("stopped during the snapshot; the next start continues it (on PostgreSQL 14+ the tables that landed stay)");
                                return;
                            }
                            break;
                        } catch (SnapshotRunner.Invalidated e) {
                            if (attempt >= 3) {
                                throw new MillraceException(Kind.SOURCE_SETUP, e.getMessage() + " (" + attempt + " times in a row)."
                                        + " Avoid TRUNCATE and table rewrites (ALTER TABLE ... TYPE, VACUUM FULL, CLUSTER) on the captured"
                                        + " tables while the initial snapshot starts, then start again", e);
                            }
                            // INV: HANDOVER — a copy that missed rows never stands: start over on a new slot.
                            LOG.warn("{}; starting the snapshot again on a new slot (attempt {})", e.getMessage(), attempt + 1);
                            Pipeline old = pipeline;
                            old.stop();
                            try {
                                old.join();
                            } catch (RuntimeException ignored) {
                                // the writer stopped on request
                            }
                            current = new ArrayList<>();
                            for (int i = 0; i < sinks.size(); i++) {
                                current.add(Optional.of(old.checkpoint(i)));
                            }
                            slotExists = true;
                            interrupted = true;
                            transition(State.SNAPSHOTTING, State.STARTING);
                        }
                    }
                } else {
                    repl.close();
                    resume(conns, slots, report.slotExists(), sinks, found);
                }
            } catch (SQLException e) {
                throw PgErrors.translate("replication connection", e);
            }
            if (config.snapshotMode() == EngineConfig.SnapshotMode.INITIAL_ONLY) {
                LOG.info("snapshot mode initial_only: the copy landed; stopping (the slot '{}' is kept: drop it with"
                        + " SELECT pg_drop_replication_slot('{}') if no streaming will follow)", src.slot(), src.slot());
                transition(state.get(), State.STOPPING);
                pipeline.stop();
                pipeline.join();
                transition(State.STOPPING, State.STOPPED);
                return;
            }
            startOnline(conns, types, report.serverVersion()); // before the stream: a signal replayed at once finds it
            readerThread = stream(conns, types, binary, report.serverVersion());
            Pipeline p = pipeline;
            while (!stopping() && !p.failure().await(200)) {
                // wait for a stop or a failure
            }
            transition(State.STREAMING, State.STOPPING);
            reader.stop();
            p.stop();
            readerThread.join();
            p.join(); // rethrows the first failure of any stage
            transition(State.STOPPING, State.STOPPED);
            LOG.info("stopped; durable position {}", p.stats().durable());
        } catch (InterruptedException e) {
            state.set(State.FAILED);
            throw e;
        } catch (RuntimeException e) {
            lastError = e.getMessage();
            state.set(State.FAILED);
            throw e;
        } finally {
            if (monitor != null) {
                monitor.interrupt();
            }
            io.millrace.snapshot.online.OnlineSnapshotter o = online;
            if (o != null) {
                o.close();
            }
            ReplicationReader r = reader;
            if (r != null) {
                r.stop();
            }
            Pipeline p = pipeline;
            if (p != null) {
                p.stop();
                try {
                    p.join();
                } catch (RuntimeException ignored) {
                    // already reported by the main path
                }
            }
            if (readerThread != null) {
                readerThread.join(10_000);
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

    /**
     * An initial snapshot was interrupted while its slot (and so its consistent point) survives: instead of
     * starting over on a new slot, the tables that landed stay, and the others are copied online while the
     * stream replays from the consistent point (INV: RESUME, WATERMARK). Needs PostgreSQL 14+ (logical
     * messages) and a key on every unfinished table; otherwise returns false and the snapshot starts over.
     * The destinations' checkpoints are rewritten first (snapshot done, the tables as online tasks).
     */
    private boolean resumeOnline(Preflight.Report report, List<SnapshotRunner.Table> tables, List<Sink> sinks,
                                 List<Optional<Checkpoint>> found) {
        if (!report.slotExists() || report.serverVersion() < 140000 || config.snapshotMode() == EngineConfig.SnapshotMode.NEVER
                || found.stream().anyMatch(Optional::isEmpty)) {
            return false;
        }
        List<Checkpoint> cps = found.stream().map(Optional::get).toList();
        Lsn cp = cps.get(0).snapshot().consistentPoint();
        if (cp.equals(Lsn.ZERO) || cps.stream().anyMatch(c -> c.snapshot().state() != SnapshotProgress.State.RUNNING
                || !c.snapshot().consistentPoint().equals(cp) || !c.flushLsn().equals(cp))) {
            return false; // a claim without a slot position, or destinations that disagree: start over
        }
        java.util.Set<String> done = new java.util.HashSet<>(cps.get(0).snapshot().tablesDone());
        cps.forEach(c -> done.retainAll(c.snapshot().tablesDone()));
        List<TableRef> left = new ArrayList<>();
        for (SnapshotRunner.Table t : tables) {
            if (!done.contains(t.relation().table().toString())) {
                if (!t.relation().hasKey()) {
                    LOG.info("table {} has no key, so it cannot be copied online: the snapshot starts over", t.relation().table());
                    return false;
                }
                left.add(t.relation().table());
            }
        }
        LOG.warn("the initial snapshot was interrupted: {} table(s) landed and stay; the other {} ({}) are copied online while"
                + " streaming from the consistent point {}, chunk by chunk (landed chunks are not read again)", done.size(), left.size(),
                left, cp);
        for (int i = 0; i < sinks.size(); i++) {
            Checkpoint next = cps.get(i).withSnapshot(new SnapshotProgress(SnapshotProgress.State.DONE, cp, List.copyOf(done)))
                    .withOnline(left.stream().map(t -> io.millrace.core.change.OnlineTask.whole(relation(tables, t))).toList());
            sinks.get(i).write(List.of(), next); // the writer has not started: this thread owns the sinks
            found.set(i, Optional.of(next));
        }
        return true;
    }

    /** Starts the online snapshot readers when a checkpoint left tasks or tables wait to be copied. */
    private void startOnline(PgConnections conns, CatalogTypeResolver types, int serverVersion) {
        Pipeline p = pipeline;
        Checkpoint low = p.checkpoint(0);
        for (int i = 1; i < config.destinations().size(); i++) {
            if (p.checkpoint(i).applied().compareTo(low.applied()) < 0) {
                low = p.checkpoint(i); // its tasks have the most left: a chunk another destination holds is read again
            }
        }
        List<io.millrace.core.change.OnlineTask> resumed = low.online();
        if (serverVersion < 140000) {
            if (!resumed.isEmpty()) {
                throw new MillraceException(Kind.SOURCE_SETUP, "online snapshots need PostgreSQL 14 or newer (logical messages in"
                        + " pgoutput); this server is " + serverVersion + ". Copy the tables with a fresh pipeline instead");
            }
            return;
        }
        io.millrace.snapshot.online.OnlineSnapshotter o = new io.millrace.snapshot.online.OnlineSnapshotter(conns, p.watermarks(),
                new OnlineCatalog(conns, types), config.online(), snapshotListener, p.failure()::report);
        online = o;
        o.start(resumed);
    }

    /**
     * Copies {@code tables} again while streaming (an online snapshot), limited to rows matching {@code filter}
     * (an SQL condition, or null). Any thread; the engine must be streaming.
     */
    public void snapshot(List<TableRef> tables, String filter) {
        io.millrace.snapshot.online.OnlineSnapshotter o = online;
        State st = state.get();
        if (o == null || (st != State.STREAMING && st != State.STARTING)) {
            throw new MillraceException(Kind.CONFIG, "the engine is " + st.name().toLowerCase(java.util.Locale.ROOT)
                    + (o == null && st == State.STREAMING ? " from PostgreSQL older than 14, which cannot run online snapshots" : "")
                    + "; a table can be copied again only while it streams");
        }
        for (TableRef t : tables) {
            if (!captured.contains(t)) {
                throw new MillraceException(Kind.CONFIG, "table " + t + " is not captured by this pipeline (captured: " + captured
                        + "); add it to source.tables and restart, and it is copied while streaming");
            }
        }
        for (TableRef t : tables) {
            o.submit(t, filter);
        }
    }

    /**
     * A row inserted into the signal table ({@code snapshot.signal_table}), in Debezium's format: {@code type}
     * {@code execute-snapshot} with {@code data} {@code {"data-collections": ["public.t"], "additional-conditions":
     * [{"data-collection": "public.t", "filter": "id > 10"}]}}, or {@code pause-snapshot} / {@code resume-snapshot}.
     * A signal that cannot be carried out is logged and skipped: a wrong row must not stop the pipeline.
     * Assembler thread; the task is recorded with the batch that holds the signal's transaction (INV: RESUME).
     */
    private void onSignal(Map<String, Object> row) {
        Object id = row.get("id");
        String type = String.valueOf(row.get("type"));
        try {
            switch (type) {
                case "execute-snapshot" -> {
                    com.fasterxml.jackson.databind.JsonNode data = new com.fasterxml.jackson.databind.ObjectMapper()
                            .readTree(String.valueOf(row.get("data")));
                    List<TableRef> tables = new ArrayList<>();
                    data.path("data-collections").forEach(n -> tables.add(TableRef.parse(n.asText())));
                    if (tables.isEmpty()) {
                        throw new MillraceException(Kind.CONFIG, "data names no table: {\"data-collections\": [\"public.orders\"]}");
                    }
                    Map<TableRef, String> filters = new java.util.HashMap<>();
                    for (com.fasterxml.jackson.databind.JsonNode c : data.path("additional-conditions")) {
                        filters.put(TableRef.parse(c.path("data-collection").asText()), c.path("filter").asText(null));
                    }
                    if (data.hasNonNull("additional-condition")) {
                        tables.forEach(t -> filters.put(t, data.get("additional-condition").asText()));
                    }
                    for (TableRef t : tables) {
                        snapshot(List.of(t), filters.get(t));
                    }
                    LOG.info("signal {}: online snapshot of {}{}", id, tables, filters.isEmpty() ? "" : " where " + filters);
                }
                case "pause-snapshot" -> pauseSnapshots(true);
                case "resume-snapshot" -> pauseSnapshots(false);
                default -> LOG.warn("signal {} of type '{}' ignored: Millrace knows execute-snapshot, pause-snapshot, resume-snapshot", id, type);
            }
        } catch (MillraceException | java.io.IOException e) {
            LOG.error("signal {} ({}) not carried out: {}", id, type, e.getMessage());
        }
    }

    /**
     * A captured table changed shape while streaming. When the source rewrote existing rows without change
     * events — a column added with a default (its value appears in the old rows), a column retyped (its
     * values converted, perhaps by a USING expression) — the destinations cannot follow from the stream
     * alone, so the table is copied again online. Renames and drops need no copy; but a Relation message has no
     * attribute numbers, so where the catalog's do not confirm how the destinations read a rename (or a drop and an
     * add) the table is copied again too. Assembler thread; the task is recorded with the batch after the change
     * (INV: RESUME).
     */
    private void onShapeChange(PgConnections conns, RelationInfo before, RelationInfo after) {
        watch.renamed(before, after);
        if (config.online().signalTable() != null && after.table().equals(config.online().signalTable())) {
            return;
        }
        io.millrace.core.schema.ShapeChange change = io.millrace.core.schema.ShapeChange.between(before, after);
        List<String> retyped = change.retyped();
        List<String> added = change.added().stream().map(io.millrace.core.schema.ColumnInfo::name).toList();
        boolean misread;
        List<String> filled = new ArrayList<>();
        try (Connection c = conns.open()) {
            misread = watch.misread(c, before, after, change); // a column renamed, or dropped and another added in its place?
            if (!added.isEmpty()) {
                try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT a.attname FROM pg_attribute a"
                        + " WHERE a.attrelid = ? AND a.attname = ANY (?) AND (a.atthasmissing OR a.attgenerated <> ''"
                        + " OR EXISTS (SELECT 1 FROM pg_attrdef d WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum))")) {
                    ps.setInt(1, after.oid());
                    ps.setArray(2, c.createArrayOf("text", added.toArray()));
                    try (java.sql.ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            filled.add(rs.getString(1));
                        }
                    }
                }
            }
        } catch (SQLException e) {
            throw PgErrors.translate("reading the columns of " + after.table(), e);
        }
        if (retyped.isEmpty() && filled.isEmpty() && !misread) {
            return;
        }
        List<String> reasons = new ArrayList<>();
        if (!filled.isEmpty()) {
            reasons.add("column(s) " + filled + " added with a value for existing rows");
        }
        if (!retyped.isEmpty()) {
            reasons.add("column(s) " + retyped + " retyped");
        }
        if (misread) {
            reasons.add(change.describe() + " as the stream shows it, which the catalog's attribute numbers do not confirm:"
                    + " a column renamed, or dropped and another added in its place");
        }
        String why = String.join(" and ", reasons);
        if (online == null) {
            LOG.warn("{} changed without change events ({}): online snapshots need PostgreSQL 14+, so the destinations keep the old"
                    + " values of existing rows until they change; re-copy the table with a fresh pipeline", after.table(), why);
            return;
        }
        LOG.warn("{} changed its existing rows without change events ({}): copying it again while streaming", after.table(), why);
        try {
            snapshot(List.of(after.table()), null);
        } catch (MillraceException e) {
            LOG.error("cannot copy {} again: {}", after.table(), e.getMessage());
        }
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

    /** Pauses ({@code true}) or resumes online snapshots. */
    public void pauseSnapshots(boolean pause) {
        io.millrace.snapshot.online.OnlineSnapshotter o = online;
        if (o == null) {
            throw new MillraceException(Kind.CONFIG, "no online snapshot can run: the engine is not streaming");
        }
        if (pause) {
            o.pause();
        } else {
            o.resume();
        }
    }

    private EngineStatus.Online onlineStatus() {
        io.millrace.snapshot.online.OnlineSnapshotter o = online;
        if (o == null) {
            return null;
        }
        return new EngineStatus.Online(o.paused(), o.progress().stream().map(t -> new EngineStatus.Task(t.table(), t.filter(), t.rowsDone(),
                t.remaining().size())).toList(), o.chunksRead(), o.chunksRetried(), o.peakBufferedRows());
    }

    /** The online snapshots under way (empty when none), for status and tests. */
    public List<io.millrace.core.change.OnlineTask> onlineSnapshots() {
        io.millrace.snapshot.online.OnlineSnapshotter o = online;
        return o == null ? List.of() : o.progress();
    }

    /** The online snapshotter, or null before streaming. */
    public io.millrace.snapshot.online.OnlineSnapshotter onlineSnapshotter() {
        return online;
    }

    /**
     * Adds tables to the publication by their current names: a table renamed since the catalog was read keeps its oid,
     * and is added under its new name (its copy, recorded with the oid, follows); one dropped meanwhile is left out.
     */
    private void publish(Connection c, SlotManager slots, List<RelationInfo> rels) throws SQLException {
        for (int attempt = 1; ; attempt++) {
            Map<Integer, TableRef> now = Catalog.tablesByOid(c, rels.stream().map(RelationInfo::oid).toList());
            List<TableRef> names = rels.stream().map(r -> now.get(r.oid())).filter(java.util.Objects::nonNull).toList();
            try {
                if (!names.isEmpty()) {
                    slots.addToPublication(c, names);
                }
                LOG.info("added {} to publication '{}'", names, config.source().publication());
                return;
            } catch (MillraceException e) {
                if (attempt == 3 || !(e.getCause() instanceof SQLException q) || !"42P01".equals(q.getSQLState())) {
                    throw e;
                }
                // renamed or dropped between the look-up and ALTER PUBLICATION: look again
            }
        }
    }

    /** Reads the shape of each of {@code names} into {@code out}; returns one that no longer exists (DDL meanwhile), or null. */
    private static TableRef readTables(Connection meta, List<TableRef> names, CatalogTypeResolver types, List<SnapshotRunner.Table> out)
            throws SQLException {
        for (TableRef t : names) {
            Catalog.TableInfo info = Catalog.table(meta, t);
            if (info == null) {
                return t;
            }
            try {
                out.add(new SnapshotRunner.Table(Catalog.relation(meta, t, types), info.partitioned(), info.estimatedRows()));
            } catch (MillraceException e) {
                if (e.kind() != Kind.CONFIG) {
                    throw e;
                }
                return t; // gone between the two look-ups
            }
        }
        return null;
    }

    private static RelationInfo relation(List<SnapshotRunner.Table> tables, TableRef t) {
        return tables.stream().map(SnapshotRunner.Table::relation).filter(r -> r.table().equals(t)).findFirst().orElseThrow();
    }

    /** Logs the tables the destinations hold that were dropped or renamed in the source while Millrace was stopped. */
    private void tablesAtStart(PgConnections conns, List<Optional<Checkpoint>> found) {
        try (Connection c = conns.open()) {
            watch.atStart(c, found.stream().flatMap(Optional::stream).map(Checkpoint::tables).toList());
        } catch (SQLException | RuntimeException e) {
            LOG.warn("could not compare the tables the destinations hold with the source catalog: {}", e.getMessage());
        }
    }

    private static String describe(List<Sink> sinks, List<Optional<Checkpoint>> found) {
        List<String> parts = new ArrayList<>();
        for (int i = 0; i < sinks.size(); i++) {
            parts.add(sinks.get(i).name() + ": " + (found.get(i).isPresent() ? "checkpoint" : "none"));
        }
        return String.join(", ", parts);
    }

    private boolean binary(SourceConfig src, int serverVersion, List<SnapshotRunner.Table> tables) {
        boolean supported = serverVersion >= 140000;
        String unsupportedColumn = null;
        for (SnapshotRunner.Table t : tables) {
            RelationInfo r = t.relation();
            for (int i = 0; i < r.columnCount() && unsupportedColumn == null; i++) {
                if (!r.codec(i).supportsBinary()) {
                    unsupportedColumn = r.table() + "." + r.column(i).name() + " (" + r.codec(i).typeName() + ")";
                }
            }
        }
        return switch (src.binary()) {
            case OFF -> false;
            case AUTO -> supported && unsupportedColumn == null;
            case ON -> {
                if (!supported) {
                    throw new MillraceException(Kind.CONFIG, "config: source.binary is on, but binary values need PostgreSQL 14 or newer;"
                            + " set source.binary: auto");
                }
                if (unsupportedColumn != null) {
                    throw new MillraceException(Kind.CONFIG, "config: source.binary is on, but column " + unsupportedColumn
                            + " has a type Millrace reads only as text; set source.binary: auto");
                }
                yield true;
            }
        };
    }

    /** Returns false when {@link #stop()} ended the snapshot before it landed (the pipeline has stopped then). */
    private boolean freshStart(PgConnections conns, SlotManager slots, Connection repl, boolean slotExists, boolean interrupted,
                               List<Sink> sinks, List<Identity> ids, List<SnapshotRunner.Table> tables,
                               List<Optional<Checkpoint>> found) throws SQLException, InterruptedException {
        boolean snapshot = config.snapshotMode() != EngineConfig.SnapshotMode.NEVER;
        if (slotExists && !snapshot && !interrupted) {
            // Stream only: take the slot as it is, from its confirmed position.
            Lsn from;
            try (Connection c = conns.open()) {
                from = slots.confirmedFlush(c);
            }
            LOG.info("snapshot mode never: streaming from existing slot '{}' at {}", config.source().slot(), from);
            List<Checkpoint> initial = new ArrayList<>();
            for (int i = 0; i < sinks.size(); i++) {
                Checkpoint c = new Checkpoint(Checkpoint.VERSION, ids.get(i), from, Position.START, SnapshotProgress.skipped(from));
                sinks.get(i).write(List.of(), c);
                initial.add(c);
            }
            newPipeline(sinks, initial).startWriter();
            return true;
        }
        if (slotExists) {
            if (!interrupted) {
                // INV: IDENTITY — a slot no destination has claimed may belong to another pipeline: never drop it.
                throw new MillraceException(Kind.SOURCE_SETUP, "replication slot '" + config.source().slot() + "' exists, but no"
                        + " destination holds a checkpoint of it, so it may belong to another pipeline. If it is left over from an earlier"
                        + " attempt of this one, drop it: SELECT pg_drop_replication_slot(" + Ident.literal(config.source().slot())
                        + "); to stream from it without copying the tables, set snapshot.mode: never; otherwise choose another source.slot");
            }
            LOG.warn("the initial snapshot was interrupted before it landed; restarting it from the beginning:"
                    + " dropping slot '{}', re-creating it and copying every table again (destination tables are truncated first)",
                    config.source().slot());
            try (Connection c = conns.open()) {
                slots.dropSlot(c);
            }
        }
        // Claim the slot before it exists: a checkpoint "setting up" (RUNNING at 0/0) in every destination, so a crash
        // between creating the slot and recording its position leaves proof that the slot is this pipeline's.
        for (int i = 0; i < sinks.size(); i++) {
            if (found.get(i).isEmpty()) {
                sinks.get(i).write(List.of(), new Checkpoint(Checkpoint.VERSION, ids.get(i), Lsn.ZERO, Position.START,
                        new SnapshotProgress(SnapshotProgress.State.RUNNING, Lsn.ZERO, List.of())));
            }
        }
        SlotManager.CreatedSlot created = slots.createSlot(repl, snapshot);
        Lsn cp = created.consistentPoint();
        LOG.info("created slot '{}' at {}{}", created.name(), cp, snapshot ? " with exported snapshot " + created.snapshotName() : "");
        SnapshotProgress progress = snapshot ? new SnapshotProgress(SnapshotProgress.State.RUNNING, cp, List.of())
                : SnapshotProgress.skipped(cp);
        List<Checkpoint> initial = new ArrayList<>();
        long now = System.currentTimeMillis() * 1000;
        for (int i = 0; i < sinks.size(); i++) {
            Checkpoint c = new Checkpoint(Checkpoint.VERSION, ids.get(i), cp, Position.START, progress);
            List<ChangeEvent> truncates = new ArrayList<>();
            if (found.get(i).isPresent() && snapshot) {
                for (SnapshotRunner.Table t : tables) {
                    truncates.add(new ChangeEvent(Op.TRUNCATE, t.relation(), null, null, cp, Position.START, 0, now, true));
                }
            }
            sinks.get(i).write(truncates, c); // the pipeline writer has not started: this thread owns the sinks
            initial.add(c);
        }
        Pipeline p = newPipeline(sinks, initial);
        p.startWriter();
        if (snapshot) {
            transition(State.STARTING, State.SNAPSHOTTING);
            SnapshotRunner runner = new SnapshotRunner(conns, created.snapshotName(), cp, tables, config.snapshot(), p::submit,
                    snapshotListener);
            try {
                runner.run(); // the exporting connection (repl) stays open until every chunk is read
            } catch (InterruptedException e) {
                // The readers end with "pipeline stopping" when the pipeline stops: on stop(), or because a stage (a
                // destination) failed. INV: NO-SILENT-ERROR — that failure is the error to report, not the readers'.
                p.stop();
                p.join(); // rethrows the first failure of any stage
                if (stopping()) {
                    return false;
                }
                throw e;
            }
            if (!p.awaitDrained(Long.MAX_VALUE / 4)) {
                p.join(); // rethrows the writer's failure
                if (stopping()) {
                    return false;
                }
                throw new InterruptedException("stopped during the snapshot");
            }
        }
        return true;
    }

    private void resume(PgConnections conns, SlotManager slots, boolean slotExists, List<Sink> sinks, List<Optional<Checkpoint>> found)
            throws SQLException {
        if (!slotExists) {
            throw new MillraceException(Kind.SOURCE_SETUP, "replication slot '" + config.source().slot()
                    + "' does not exist, but the destinations hold checkpoints: it was dropped (or the server was replaced) while"
                    + " Millrace was stopped, and changes since may be lost. Millrace does not re-copy silently: start again with empty"
                    + " destinations (remove their checkpoints and tables) to take a new snapshot");
        }
        List<Checkpoint> cps = found.stream().map(Optional::get).toList();
        Lsn resumeAt = cps.stream().map(Checkpoint::flushLsn).reduce(Lsn::min).orElseThrow();
        Lsn confirmed;
        try (Connection c = conns.open()) {
            confirmed = slots.confirmedFlush(c);
            if (confirmed != null && confirmed.isAfter(resumeAt)) {
                slots.requireFree(c); // held and moved by a pipeline running beside this one: SLOT_IN_USE, not IDENTITY
            }
        }
        if (confirmed != null && confirmed.isAfter(resumeAt)) {
            // INV: IDENTITY (and DURABLE) — this pipeline never confirms past what every destination holds, so a slot
            // confirmed further is not the one these checkpoints were written against: the server would silently
            // start at its confirmed position and the changes in between would be skipped.
            throw new MillraceException(Kind.IDENTITY, "replication slot '" + config.source().slot() + "' is confirmed up to "
                    + confirmed + ", past the destinations' checkpoint " + resumeAt + ": the slot was re-created or advanced by"
                    + " another process (another pipeline with the same source.slot?) while Millrace was stopped, and the changes"
                    + " between the two are no longer in it. Millrace does not skip them silently: give each pipeline its own"
                    + " source.slot, and start this one again with empty destinations (remove their checkpoints and tables)"
                    + " to take a new snapshot");
        }
        Pipeline p = newPipeline(sinks, cps);
        p.startWriter();
        LOG.info("resuming at {} (destinations: {})", lowest(cps).flushLsn(),
                cps.stream().map(c -> c.identity().destination() + "@" + c.flushLsn() + "#" + c.applied().ordinal()).toList());
    }

    private Pipeline newPipeline(List<Sink> sinks, List<Checkpoint> checkpoints) {
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

    private static Checkpoint lowest(List<Checkpoint> cps) {
        Checkpoint low = cps.get(0);
        for (Checkpoint c : cps) {
            if (c.applied().compareTo(low.applied()) < 0) {
                low = c;
            }
        }
        return low;
    }

    private Thread stream(PgConnections conns, CatalogTypeResolver types, boolean binary, int serverVersion) {
        Pipeline p = pipeline;
        List<Checkpoint> cps = new ArrayList<>();
        for (int i = 0; i < config.destinations().size(); i++) {
            cps.add(p.checkpoint(i));
        }
        Lsn start = cps.stream().map(Checkpoint::flushLsn).reduce(Lsn::min).orElseThrow();
        Position skip = cps.stream().map(Checkpoint::applied).reduce((a, b) -> a.compareTo(b) <= 0 ? a : b).orElseThrow();
        TableRef signal = config.online().signalTable();
        if (signal != null) {
            p.signalTable(signal, this::onSignal);
        }
        p.onShapeChange((before, after) -> onShapeChange(conns, before, after));
        p.idleAdvanceInterval(config.source().statusInterval().toMillis());
        Map<Integer, List<String>> keyCache = new ConcurrentHashMap<>();
        AtomicReference<Connection> keyConn = new AtomicReference<>();
        p.startStreaming(types, oid -> keyCache.computeIfAbsent(oid, o -> {
            try {
                if (keyConn.get() == null) {
                    keyConn.set(conns.open());
                }
                return Catalog.keyColumns(keyConn.get(), o);
            } catch (SQLException e) {
                throw PgErrors.translate("reading the key of relation " + o, e);
            }
        }), skip, () -> {
            ReplicationReader rr = reader;
            return rr == null ? Lsn.ZERO : rr.serverCaughtUp();
        }, config.spillDir());
        boolean v14 = serverVersion >= 140000; // protocol v2: streamed in-progress transactions, messages, binary
        ReplicationReader r = new ReplicationReader(conns, new ReplicationReader.Options(start, v14 ? 2 : 1, binary, v14, v14,
                config.source().statusInterval().toMillis()), p.budget(), start, new ReplicationReader.Handler() {
                    @Override
                    public void onMessage(Lsn walStart, byte[] data, int offset, int length) throws InterruptedException {
                        p.offer(walStart, data, offset, length);
                    }

                    @Override
                    public void flush() throws InterruptedException {
                        p.flush();
                    }
                }, p.failure()::report);
        this.reader = r;
        Thread t = new Thread(r, "millrace-reader");
        t.setDaemon(true);
        t.start();
        transition(state.get() == State.SNAPSHOTTING ? State.SNAPSHOTTING : State.STARTING, State.STREAMING);
        LOG.info("streaming from {} ({} values)", start, binary ? "binary" : "text");
        return t;
    }
}
