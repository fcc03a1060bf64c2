package io.millrace.engine;

import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.Sink;
import io.millrace.engine.SourceSurvey.Survey;
import io.millrace.engine.transform.RowFilters;
import io.millrace.pipeline.Pipeline;
import io.millrace.source.Catalog;
import io.millrace.source.PgErrors;
import io.millrace.source.Publisher;
import io.millrace.source.SlotManager;
import io.millrace.source.SourceConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Carries out a start: gathers what {@link StartPlanner} needs (the source system's identity, the slot, the
 * publication), lets it decide, and does what the {@link StartPlan} says — refuse, or write the publication's part and
 * start the pipeline, through {@link InitialSnapshot} when the tables are copied. Run thread; it owns the destinations
 * until the pipeline's writer starts.
 */
final class StartUp {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class); // the engine's log: one category for a run's stages

    private final EngineContext ctx;
    private final SourceConfig src;
    private final Survey survey;
    private final List<Sink> sinks;
    private final List<Optional<Checkpoint>> found;

    StartUp(EngineContext ctx, Survey survey, List<Sink> sinks, List<Optional<Checkpoint>> found) {
        this.ctx = ctx;
        this.src = ctx.config.source();
        this.survey = survey;
        this.sinks = sinks;
        this.found = found;
    }

    /** Starts the pipeline's writer as planned; false when {@link Engine#stop()} ended the initial snapshot first. */
    boolean run() throws InterruptedException {
        try (Connection repl = ctx.conns.openReplication()) {
            SlotManager.SystemInfo sys = SlotManager.identify(repl);
            checkFailoverSlot(sys);
            List<Identity> ids = sinks.stream().map(s -> new Identity(sys.systemId(), src.database(), src.slot(), src.publication(),
                    s.name())).toList();
            StartPlanner.Facts facts = facts(ids);
            StartPlan plan = StartPlanner.plan(facts);
            if (plan instanceof StartPlan.Refuse refuse) {
                throw refuse.error(); // INV: IDENTITY — before anything is written
            }
            rulesAtStart(facts, plan);
            tablesAtStart();
            Map<TableRef, String> filters;
            Map<TableRef, String> refilter = new java.util.LinkedHashMap<>();
            try (Connection c = ctx.conns.open()) { // INV: NO-SILENT-ERROR — a filter PostgreSQL cannot apply stops the start, writing nothing
                filters = RowFilters.check(c, ctx.config.transforms(), survey.relations(), survey.report().serverVersion(), src.publication(),
                        survey.report().publicationExists(), mayRefilter(c, facts, plan), refilter);
            }
            if (plan instanceof StartPlan.ReplaceSlot replace) {
                List<Checkpoint> next = SlotReplacement.run(ctx, repl, replace, sinks, found);
                publish(replace.publication(), filters);
                ctx.captured = survey.report().tables();
                repl.close();
                resume(next);
                return true;
            }
            StartPlan.Go go = (StartPlan.Go) plan;
            record(go);
            publish(go.publication(), filters); // only now, after the checks: a start refused writes nothing to the source
            refilter(refilter);
            makeFailoverSlot(repl);
            ctx.captured = survey.report().tables();
            if (go instanceof StartPlan.FromCheckpoints from) {
                repl.close();
                resume(from.checkpoints());
                return true;
            }
            return new InitialSnapshot(ctx, survey, sinks, ids, repl).run(go, found);
        } catch (SQLException e) {
            throw PgErrors.translate("replication connection", e);
        }
    }

    /** source.failover: the slot this server has can continue the destinations' checkpoints (after a failover); reads only. */
    private void checkFailoverSlot(SlotManager.SystemInfo sys) throws SQLException {
        if (src.failover()) {
            try (Connection c = ctx.conns.open()) {
                FailoverSlot.check(src, ctx.conns.where(), sys, FailoverSlot.read(c, src.slot()), found);
            }
        }
    }

    /** source.failover on a slot made before it was set: altered, so that standbys synchronise it from now on. */
    private void makeFailoverSlot(Connection repl) throws SQLException {
        if (src.failover() && survey.report().slotExists()) {
            try (Connection c = ctx.conns.open()) {
                if (new SlotManager(src).makeFailover(repl, c)) {
                    LOG.info("slot '{}' is now a failover slot (source.failover): standbys with sync_replication_slots copy it", src.slot());
                }
            }
        }
    }

    private StartPlanner.Facts facts(List<Identity> ids) throws SQLException {
        List<StartPlanner.Destination> destinations = new ArrayList<>();
        for (int i = 0; i < sinks.size(); i++) {
            destinations.add(new StartPlanner.Destination(sinks.get(i).name(), ids.get(i), found.get(i)));
        }
        TableRef signal = ctx.config.online().signalTable();
        SlotManager.SlotState slot;
        boolean signalPublished;
        boolean lost;
        try (Connection at = ctx.conns.openCapture()) { // the server the slot is on: the primary, or the standby
            slot = new SlotManager(src).state(at);
            lost = slot.exists() && SlotReplacement.lost(at, src.slot(), survey.report().serverVersion());
        }
        try (Connection c = ctx.conns.open()) {
            signalPublished = signal != null && survey.report().publicationExists()
                    && Catalog.publicationTables(c, src.publication()).contains(signal);
        }
        return new StartPlanner.Facts(destinations, new StartPlanner.Slot(src.slot(), survey.report().slotExists(), slot.confirmed(),
                slot.activePid(), lost), survey.report().serverVersion(), ctx.config.snapshotMode(), survey.relations(),
                survey.report().publicationExists(), survey.report().unpublished(), signal, signalPublished, src.onSlotLost(),
                rules(), ctx.transforms::fingerprint, keyMasked());
    }

    /** The rule each captured table reaches the destinations under now, by oid ({@link Checkpoint#rules}). */
    private Map<Integer, String> rules() {
        Map<Integer, String> rules = new java.util.HashMap<>();
        for (RelationInfo r : survey.relations()) {
            rules.put(r.oid(), ctx.transforms.fingerprint(r.table()));
        }
        return rules;
    }

    /**
     * The tables whose row filter in the publication this start may change: those every destination copies again,
     * reconciling (their rules changed while Millrace was stopped; their copy deletes the rows a new filter leaves out), in
     * a publication Millrace manages. Any other table whose filter differs is refused by RowFilters, naming the fix.
     */
    private java.util.Set<TableRef> mayRefilter(Connection c, StartPlanner.Facts facts, StartPlan plan) throws SQLException {
        if (!(plan instanceof StartPlan.Resume resume) || !io.millrace.source.Publisher.manages(c, src) || ctx.selection.tables().isEmpty()
                || Reloader.allTables(c, src.publication())) {
            return java.util.Set.of();
        }
        java.util.Set<TableRef> tables = new java.util.HashSet<>();
        // every table a reconciling copy covers in every destination: the rules changed now, or at a start that recorded the
        // copy and then stopped before it changed the filter (a crash, a lock timeout): its copy deletes what the filter leaves out
        for (RelationInfo r : survey.relations()) {
            if (resume.checkpoints().stream().allMatch(cp -> cp.online().stream().anyMatch(t -> t.oid() == r.oid() && t.reconcile()
                    && t.filter() == null))) {
                tables.add(r.table());
            }
        }
        return tables;
    }

    /** Gives each table of {@code refilter} its row filter in the publication: one transaction, as a reload does. */
    private void refilter(Map<TableRef, String> refilter) throws SQLException {
        if (refilter.isEmpty()) {
            return;
        }
        try (Connection c = ctx.conns.open(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            s.execute("SET LOCAL lock_timeout = '" + TableJoiner.LOCK_TIMEOUT + "'");
            for (Map.Entry<TableRef, String> e : refilter.entrySet()) {
                s.execute("ALTER PUBLICATION " + Ident.quote(src.publication()) + " DROP TABLE " + e.getKey().sql());
                s.execute("ALTER PUBLICATION " + Ident.quote(src.publication()) + " ADD TABLE " + e.getKey().sql()
                        + (e.getValue() == null ? "" : " WHERE (" + e.getValue() + ")"));
            }
            c.commit();
        }
        LOG.info("the row filters of {} changed while Millrace was stopped: publication '{}' now passes their changes under the new ones,"
                + " and their copies delete the rows the new filters leave out", refilter.keySet(), src.publication());
    }

    /** The captured tables whose rule masks a key column now, by oid, each with that column. */
    private Map<Integer, String> keyMasked() {
        Map<Integer, String> masked = new java.util.HashMap<>();
        for (RelationInfo r : survey.relations()) {
            String key = io.millrace.engine.transform.Transforms.keyMaskChanged(io.millrace.engine.transform.Transforms.NONE,
                    ctx.transforms, r);
            if (key != null) {
                masked.put(r.oid(), key);
            }
        }
        return masked;
    }

    /** Says which tables' transforms changed while Millrace was stopped, and whether they are copied again. */
    private void rulesAtStart(StartPlanner.Facts facts, StartPlan plan) {
        if (!(plan instanceof StartPlan.Resume resume)) {
            return;
        }
        List<TableRef> changed = StartPlanner.rulesChanged(facts).stream().map(RelationInfo::table).toList();
        if (changed.isEmpty()) {
            return;
        }
        boolean copied = resume.checkpoints().stream().allMatch(c -> changed.stream().allMatch(t -> c.online().stream()
                .anyMatch(o -> o.table().equals(t))));
        if (copied) {
            LOG.info("the transforms of {} changed while Millrace was stopped: copying them again online, so that the rows the destinations"
                    + " hold are masked, filtered and named under the new rules too", changed);
        } else {
            LOG.warn("the transforms of {} changed while Millrace was stopped, and the rows the destinations hold keep the old rules"
                    + " (online copies need PostgreSQL 14+ and snapshot.mode other than never): copy them again with millrace"
                    + " snapshot CONFIG --table <table>", changed);
        }
    }

    /** Logs the tables the destinations hold that were dropped or renamed in the source while Millrace was stopped. */
    private void tablesAtStart() {
        try (Connection c = ctx.conns.open()) {
            ctx.watch.atStart(c, found.stream().flatMap(Optional::stream).map(Checkpoint::tables).toList());
        } catch (SQLException | RuntimeException e) {
            LOG.warn("could not compare the tables the destinations hold with the source catalog: {}", e.getMessage());
        }
    }

    /**
     * Writes the checkpoints a resumed start plans: an interrupted snapshot's landed tables and its online tasks, or
     * tasks for tables added to the configuration. INV: RESUME — recorded in every destination before a table joins the
     * publication: a crash in between must not leave a published table that nobody copies.
     */
    private void record(StartPlan.Go go) {
        List<ChangeEvent> truncates = new ArrayList<>();
        if (go instanceof StartPlan.ResumeOnline r) {
            LOG.warn("the initial snapshot was interrupted: {} table(s) landed and stay; the other {} ({}) are truncated in the"
                    + " destinations and copied online while streaming from the consistent point {}, chunk by chunk (landed chunks"
                    + " are not read again)", r.landed(), r.left().size(), r.left(), r.consistentPoint());
            // INV: RESUME — the rows the interrupted copy delivered of an unfinished table come again with the online copy:
            // a truncate first, in the same write as the checkpoint that records the copy, so a consumer that appends (or
            // counts) ends with each row once, as one that upserts by key does (found by a user: 166,112 rows twice in a
            // TransactionalConsumer). Written once: the next start finds the snapshot DONE and the copy recorded.
            for (io.millrace.core.schema.RelationInfo rel : survey.relations()) {
                if (r.left().contains(rel.table())) {
                    truncates.add(ChangeEvent.reopening(rel, r.consistentPoint()));
                }
            }
        }
        List<Checkpoint> next = go instanceof StartPlan.FromCheckpoints from ? from.checkpoints() : List.of();
        for (int i = 0; i < next.size(); i++) {
            if (!truncates.isEmpty() || !Optional.of(next.get(i)).equals(found.get(i))) {
                sinks.get(i).write(truncates, next.get(i)); // the writer has not started: this thread owns the sinks
                found.set(i, Optional.of(next.get(i)));
            }
        }
    }

    private void publish(StartPlan.Publication p, Map<TableRef, String> filters) throws SQLException {
        Publisher publisher = new Publisher(src).rowFilters(filters::get); // the transforms' row filters, on PostgreSQL 15+
        if (p.create() != null) {
            try (Connection c = ctx.conns.open()) {
                publisher.create(c, p.create());
            }
            LOG.info("created publication '{}' for {} table(s)", src.publication(), survey.report().tables().size());
        } else if (!p.add().isEmpty()) {
            try (Connection c = ctx.conns.open()) {
                LOG.info("added {} to publication '{}'", publisher.addByCurrentName(c, p.add()), src.publication());
                // INV: HANDOVER — a transaction open now may have written rows to them that the stream does not carry:
                // their copies wait for it to end (OnlineSnapshotter.submitJoined).
                if (survey.report().serverVersion() >= StartPlanner.ONLINE_VERSION) {
                    long notBefore = TableJoiner.currentXmax(c);
                    java.util.Map<Integer, Long> gates = new java.util.HashMap<>();
                    p.add().forEach(r -> gates.put(r.oid(), notBefore));
                    ctx.joinedAtStart = java.util.Map.copyOf(gates);
                }
            }
        }
        unselected();
        if (p.addSignal()) {
            TableRef signal = ctx.config.online().signalTable();
            try (Connection c = ctx.conns.open()) {
                if (!io.millrace.source.Publisher.manages(c, src)) { // its signals would never arrive: said, not left silent
                    throw new MillraceException(Kind.SOURCE_SETUP, "publication '" + src.publication() + "' does not publish the signal"
                            + " table " + signal + " (snapshot.signal_table), and " + io.millrace.source.Publisher.unmanagedWhy(src)
                            + ". Fix: ALTER PUBLICATION " + Ident.quote(src.publication()) + " ADD TABLE " + signal.sql()
                            + "; or remove snapshot.signal_table");
                }
                publisher.add(c, List.of(signal));
            }
            LOG.info("added the signal table {} to publication '{}'", signal, src.publication());
        }
    }

    /**
     * Tables the publication publishes that the selection no longer takes: taken out of {@code source.tables}, or put in
     * {@code exclude_tables}, while Millrace was stopped. pgoutput sends the changes of every table the publication has, so
     * they would go on reaching the destinations (found by a DBA who excluded a table while stopped: its inserts still
     * arrived, and a reload then said "no table removed"). Taken out of a publication Millrace manages, as a reload does
     * while running (the destinations keep the rows they have); otherwise logged with the statement to run. The signal
     * table and partitions (published through their root) stay.
     */
    private void unselected() throws SQLException {
        if (!survey.report().publicationExists()) {
            return;
        }
        TableRef signal = ctx.config.online().signalTable();
        try (Connection c = ctx.conns.open()) {
            List<TableRef> out = new ArrayList<>();
            for (TableRef t : Catalog.publicationTables(c, src.publication())) {
                if (ctx.selection.selects(t, true) || t.equals(signal)) {
                    continue; // the catalog is read only for the few tables left: not twice per captured table at every start
                }
                Catalog.TableInfo info = Catalog.table(c, t);
                if (info != null && !Catalog.isPartition(c, info.oid())) {
                    out.add(t);
                }
            }
            if (out.isEmpty()) {
                return;
            }
            String pub = Ident.quote(src.publication());
            List<String> drops = out.stream().map(t -> "ALTER PUBLICATION " + pub + " DROP TABLE " + t.sql() + ";").toList();
            String drop = String.join(" ", drops);
            // As a reload: with source.tables empty the publication is the selection, the user's, and is not altered
            boolean managed = io.millrace.source.Publisher.manages(c, src);
            if (!managed || src.tables().isEmpty() || Catalog.allTables(c, src.publication())) {
                LOG.warn("publication {} publishes {}, which source.tables does not select (or exclude_tables leaves out): their changes"
                        + " are dropped, not passed to the destinations, though the server decodes and sends them. {}; to stop that,"
                        + " run {}", pub, out, managed
                        ? "Millrace does not alter the publication (source.tables is empty, or it is FOR ALL TABLES)"
                        : io.millrace.source.Publisher.unmanagedWhy(src), drop);
                return;
            }
            try (Statement st = c.createStatement()) {
                st.execute("SET lock_timeout = '" + TableJoiner.LOCK_TIMEOUT + "'");
                for (String sql : drops) {
                    st.execute(sql);
                }
            }
            LOG.info("took {} out of publication {}: source.tables no longer selects them (or exclude_tables leaves them out), so"
                    + " they are no longer captured; the destinations keep the rows they have", out, pub);
        }
    }

    /** Streaming resumes at the lowest durable position over the destinations (INV: RESUME). */
    private void resume(List<Checkpoint> cps) {
        if (ctx.slotLost == null) {
            ctx.slotLost = cps.stream().map(Checkpoint::slotLost).filter(java.util.Objects::nonNull).findFirst().orElse(null);
        }
        Pipeline p = ctx.newPipeline(sinks, cps);
        p.startWriter();
        LOG.info("resuming at {} (destinations: {})", StartPlanner.lowest(cps).flushLsn(),
                cps.stream().map(c -> c.identity().destination() + "@" + c.flushLsn() + "#" + c.applied().ordinal()).toList());
    }
}
