package io.millrace.engine;

import io.millrace.core.MillraceException;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TableRef;
import io.millrace.pipeline.Pipeline;
import io.millrace.snapshot.online.OnlineSnapshotter;
import io.millrace.source.Catalog;
import io.millrace.source.PgErrors;
import io.millrace.source.Preflight;
import io.millrace.source.Publisher;
import io.millrace.source.SourceConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Tables that join a running pipeline: created (or renamed, or given a replica identity) while it streams, or added to
 * {@code source.tables} by a reload, when the selection takes them.
 *
 * <p>How a table is found: the DDL event trigger's message in the stream (the CREATE TABLE, in stream order) when the
 * trigger is installed; and, with or without it, a look at the catalog every {@code source.new_tables_poll_s}
 * ({@link #poll}, on the slot monitor's thread). Either way a {@link Pipeline#JOIN_PREFIX} message is written for the
 * table, and the table is handled where the stream reaches it ({@link #seen}, assembler thread): it joins the
 * publication and an online copy is submitted, recorded with the batch that holds the message. INV: RESUME — a crash
 * before that batch is durable replays the message, which joins the table again (it is a member already: the start
 * even counts it as captured) and submits the copy again; after it, the copy is in the checkpoint.
 *
 * <p>Why no row is lost: pgoutput publishes a table's changes from the position where it joined the publication on;
 * rows written before (between CREATE TABLE and the join) are in the table, and the online copy reads them. The copy
 * waits until every transaction open when the table joined has ended ({@link OnlineSnapshotter#submitJoined}), so no
 * row written before the join commits after a chunk's snapshot; later changes come from the stream under the
 * watermarks (INV: WATERMARK, HANDOVER).
 *
 * <p>The source's own writes come first: a table without a replica identity never joins the publication (its UPDATEs
 * and DELETEs would fail, see {@link Preflight#replicaIdentity}); it is logged and shown in the status
 * ({@code not_captured}) with the fix, and joins once fixed. A partition joins with its root, which publishes it; one
 * without a replica identity under a keyless root is shown with the fix ({@link #partitionsWithoutIdentity}).
 * A publication Millrace does not manage ({@code source.create_publication: false}) is not altered: the table is
 * shown with the ALTER PUBLICATION to run, and is copied once the publication has it. A publication FOR ALL TABLES
 * publishes a new table from its creation: the table is copied all the same (its rows arrive as reads after the
 * stream's, which a destination applies as upserts).
 *
 * <p>Threads: {@link #seen} on the assembler's, {@link #poll} on the slot monitor's, the rest from any; the maps are
 * concurrent. A failure here never stops the pipeline: it is logged, shown in the status, and the next poll tries again.
 */
final class TableJoiner {
    private static final Logger LOG = LoggerFactory.getLogger(TableJoiner.class);
    /** A join message written and not yet seen in the stream is written again after this long. */
    private static final long ASK_AGAIN_NANOS = TimeUnit.SECONDS.toNanos(60);
    /**
     * A table joined: in the publication, its copy submitted and not yet in any checkpoint (the assembler is still inside
     * the transaction of the join message). A crash here tests that the restart copies it (INV: RESUME).
     */
    static final io.millrace.core.fault.FaultPoint TABLE_JOINED = new io.millrace.core.fault.FaultPoint("engine.table-joined");

    /** How long ALTER PUBLICATION waits for a lock on the table before it gives up (the stream waits for it). */
    static final String LOCK_TIMEOUT = "5s";

    private final EngineContext ctx;
    private final SourceConfig src;
    /** Why a table the selection takes is not captured: what the poll waits for before it asks again. */
    private enum Why {
        /** No replica identity: asked again once it has one. */
        IDENTITY,
        /** No key (REPLICA IDENTITY FULL without a primary key or identity index): not copyable online; asked again once it has one. */
        KEY,
        /** Not in a publication Millrace does not manage: asked again once the publication has it. */
        PUBLICATION,
        /** A failure (a lock wait, a lost connection): asked again after {@link #ASK_AGAIN_NANOS}. */
        FAILED,
        /**
         * Its row filter cannot be applied (RowFilters#forJoiningTable): asked again once the table has REPLICA IDENTITY
         * FULL, or after {@link #ASK_AGAIN_NANOS}.
         */
        FILTER
    }

    private record Refusal(Why why, long atNanos, EngineStatus.NotCaptured shown) {
    }

    /** Tables the selection takes that are not captured, and why, by oid. */
    private final Map<Integer, Refusal> notCaptured = new ConcurrentHashMap<>();
    /** Captured tables and partitions of captured tables without a replica identity, by oid ({@link #partitionsWithoutIdentity}). */
    private final Map<Integer, EngineStatus.NotCaptured> exposed = new ConcurrentHashMap<>();
    /** Join messages written and not seen yet, by oid: when. */
    private final Map<Integer, Long> asked = new ConcurrentHashMap<>();
    private volatile long lastPoll;

    TableJoiner(EngineContext ctx) {
        this.ctx = ctx;
        this.src = ctx.config.source();
    }

    /** For the status: tables selected and not captured, by name. Any thread. */
    List<EngineStatus.NotCaptured> notCaptured() {
        List<EngineStatus.NotCaptured> out = new ArrayList<>(notCaptured.values().stream().map(Refusal::shown).toList());
        out.addAll(exposed.values());
        out.sort(Comparator.comparing(EngineStatus.NotCaptured::table));
        return out;
    }

    /**
     * A table left out of the selection by a reload is no longer reported as not captured; added again later, it joins
     * again with a reconciling copy ({@link #rejoin}): the destinations keep its rows as they were, and the ones deleted
     * in the source meanwhile would stay there (found by a user who moved a table out of the selection and back).
     */
    void forget(int oid) {
        notCaptured.remove(oid);
        asked.remove(oid);
        joined.remove(oid); // added again later, it joins again
        rejoin.add(oid);
    }

    /**
     * The stream reached a message about the table of {@code oid}: the event trigger's ({@code hint}: the table's name as
     * it wrote it), or a join message ({@code hint} null). Assembler thread, inside the message's transaction.
     *
     * <p>The event trigger's message about a table not captured asks, with a join message, for the table to join when
     * the selection takes it. A join message lets the table join: into the publication, and its copy submitted. INV:
     * RESUME — a join message is written only for a table not captured then, so one read again after a crash (the
     * destinations did not make the batch holding it durable, so no record of the copy either) copies the table again,
     * also when the start found it in the publication already; in one run, a table joins once.
     */
    synchronized void seen(int oid, TableRef hint) { // never while a reload changes the selection (Reloader.apply)
        SourceWatch watch = ctx.watch;
        OnlineSnapshotter online = ctx.online;
        if (watch == null || online == null) {
            return;
        }
        TableSelection sel = ctx.selection;
        if (hint != null) {
            if (!watch.captures(oid) && (sel.tables().isEmpty() || sel.selects(hint, false))) {
                askFromStream(oid, hint); // a DDL on a table the selection may take: a created table, renamed, given a key
            }
            return;
        }
        asked.remove(oid);
        boolean added = joined.add(oid); // false: joined in this run already (two messages asked; or attached since)
        boolean done = false;
        try {
            done = join(oid, sel, online, watch, !added);
        } finally {
            if (!done && added) {
                joined.remove(oid);
            }
        }
    }

    /**
     * A partition attached to a captured table while streaming, with the rows it held as a table of its own: those rows
     * are in the root from the ATTACH on, and no change in the stream brings them (pgoutput publishes changes, and they
     * were made before the table was a partition). They are copied online, as a copy of the root limited to the
     * partition's constraint ({@code pg_get_partition_constraintdef}: the copy's queries read that partition only). The
     * ATTACH held an ACCESS EXCLUSIVE lock on the table, so no transaction writing it directly is still open. INV:
     * HANDOVER — the rows before the attach come from the copy, the changes after it from the stream: no gap. Assembler
     * thread, in stream order (INV: RESUME: the copy is recorded with the batch that holds the message; a crash before
     * replays the message). During a copy of the root the whole root is copied again (a filtered copy would drop the
     * remaining chunks of the one under way).
     */
    private void attached(Connection c, int oid, TableRef part, OnlineSnapshotter online, SourceWatch watch) throws SQLException {
        int root;
        String constraint;
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_partition_root(?::oid)::oid::int, pg_get_partition_constraintdef(?::oid)")) {
            ps.setLong(1, Integer.toUnsignedLong(oid));
            ps.setLong(2, Integer.toUnsignedLong(oid));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                root = rs.getInt(1);
                constraint = rs.getString(2);
            }
        }
        if (attachDone.contains(oid) || !watch.captures(root) || constraint == null) {
            return; // copied in this run already; or not under a captured table (detached again meanwhile)
        }
        boolean keyed = !Catalog.keyColumns(c, root).isEmpty();
        // Keyed: any rows are copied (rows the stream has too come again as reads, which destinations apply as upserts).
        // Keyless: named as missing only when some are older than the attach (heldBeforeAttach), since none can be copied.
        if (keyed ? !holdsRows(c, part) : !heldBeforeAttach(c, part)) {
            attachDone.add(oid);
            return; // created as a partition (the DDL trigger tells every CREATE TABLE), or attached empty: its rows come from the stream
        }
        TableRef rootName = Catalog.tablesByOid(c, List.of(root)).get(root);
        if (!keyed) {
            attachDone.add(oid);
            LOG.error("partition {} was attached to captured table {} while streaming: the rows it held before are not in the stream,"
                    + " and a table without a key cannot be copied online, so the destinations do not have them. Fix: copy {} again"
                    + " (millrace snapshot CONFIG --table {} after giving it a primary key, or a new initial snapshot)", part, rootName,
                    rootName, rootName);
            return;
        }
        if (online.copying(root)) {
            // A filtered copy would replace the one under way and drop its remaining chunks: the whole table again instead,
            // recorded in the checkpoint like the other (a crash after this batch goes on with it).
            online.submit(root, null);
            LOG.info("partition {} was attached to captured table {} while streaming, during a copy of it: copying {} again whole",
                    part, rootName, rootName);
        } else {
            online.submit(root, constraint);
            LOG.info("partition {} was attached to captured table {} while streaming: copying the rows it held online ({})", part,
                    rootName, constraint);
        }
        attachDone.add(oid);
    }

    /** Partitions attached while streaming whose rows are copied (or cannot be), by oid. Any thread. */
    private final java.util.Set<Integer> attachDone = ConcurrentHashMap.newKeySet();

    /**
     * The leaf partitions of captured tables at the last poll, by oid; first those at the start's look at the source
     * (before the snapshot: one attached after it is new, also when the snapshot read it). Poll thread only, after that.
     */
    private volatile Map<Integer, Partition> partitions;

    /** The partitions of the captured tables as the start finds them ({@link SourceSurvey}); a failure is only logged. */
    void partitionsAtStart(Connection c, SourceWatch watch) {
        try {
            partitions = partitions(c, watch);
        } catch (SQLException e) {
            LOG.warn("could not read the partitions of the captured tables: {} (a partition attached before the first look at"
                    + " the catalog is not copied)", e.getMessage());
        }
    }

    /** A leaf partition of a captured table: its root, its partition constraint, whether it has a replica identity. */
    private record Partition(TableRef name, int rootOid, TableRef root, String constraint, boolean hasIdentity) {
    }

    /**
     * Each poll: a leaf partition of a captured table that was not one at the last poll (attached, or created) and holds
     * rows written before it was a partition ({@link #heldBeforeAttach}) gets a join message, which brings it to
     * {@link #attached} in stream order; one created as a partition has its rows in the stream. A partition gone (detached or dropped) is logged once: its rows stay in the
     * destinations, which no change in the stream removes. Compared with the partitions at the start: one attached while
     * Millrace was stopped is not seen (README, "Tables that appear and disappear while running").
     */
    private void partitionsChanged(Connection c, SourceWatch watch, Map<Integer, Partition> found, long now) throws SQLException {
        Map<Integer, Partition> before = partitions;
        if (before == null) {
            partitions = found; // no look at the start (it failed): as they are now
            return;
        }
        for (Map.Entry<Integer, Partition> e : before.entrySet()) {
            Partition p = e.getValue();
            if (!found.containsKey(e.getKey())) {
                attachDone.remove(e.getKey()); // attached again later, it is copied again
            }
            if (!found.containsKey(e.getKey()) && watch.captures(p.rootOid())) { // (not when the root itself left the pipeline)
                LOG.warn("partition {} of captured table {} was detached or dropped: the rows it held stay in the destinations"
                        + " (no change in the stream removes them). If they should go there too: DELETE FROM the destination's"
                        + " copy of {} WHERE {}", p.name(), p.root(), p.root(), p.constraint());
            }
        }
        Map<Integer, Partition> next = new java.util.HashMap<>(found);
        for (Map.Entry<Integer, Partition> e : found.entrySet()) {
            int oid = e.getKey();
            if (before.containsKey(oid) || attachDone.contains(oid)) {
                continue;
            }
            Long at = asked.get(oid);
            if (at == null && !holdsRows(c, e.getValue().name())) {
                continue; // attached empty, or created as a partition and not written yet: its rows come from the stream
            }
            next.remove(oid); // new until its rows are copied: looked at again by the next poll
            if (at == null || now - at >= ASK_AGAIN_NANOS) { // seen, the message is no longer asked: deferred ones ask again
                askJoin(c, oid, now); // INV: RESUME — handled where the stream reaches it, recorded with its batch
            }
        }
        partitions = next;
    }

    private static boolean holdsRows(Connection c, TableRef t) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT EXISTS (SELECT 1 FROM ONLY " + t.sql() + ")")) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    /**
     * Whether the partition {@code t} holds rows written before it became a partition (a table loaded, then attached):
     * rows whose {@code xmin} is older than the youngest {@code pg_inherits} row between it and its root, which the
     * ATTACH (or the CREATE ... PARTITION OF) that joined it to the root wrote. Rows written since went through the
     * root, and the stream has them. A row of the attaching transaction itself counts when its command came before the
     * one that wrote the {@code pg_inherits} row ({@code cmin}): written before the ATTACH, not after a CREATE ... PARTITION
     * OF in the same transaction (before, those were named as missing, with a fix that asked for a new initial snapshot,
     * though the stream had every one; found by a user). A guess (a row written in a subtransaction of the attaching
     * transaction, before it, looks newer; one updated in that transaction has a combined command id): used only to name
     * rows of a keyless table as missing.
     */
    private static boolean heldBeforeAttach(Connection c, TableRef t) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT EXISTS (SELECT 1 FROM ONLY " + t.sql()
                + " r, (SELECT i.xmin AS x, i.cmin AS cid, age(i.xmin) AS a FROM pg_inherits i WHERE i.inhrelid IN (SELECT relid"
                + " FROM pg_partition_ancestors(" + Ident.literal(t.sql()) + "::regclass)) ORDER BY age(i.xmin) LIMIT 1) j"
                + " WHERE age(r.xmin) > j.a OR (r.xmin = j.x AND r.cmin::text::bigint < j.cid::text::bigint))")) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    /** Tables that left the publication while captured and are to join again, by oid: their copy reconciles ({@link #left}). */
    private final java.util.Set<Integer> rejoin = ConcurrentHashMap.newKeySet();

    /**
     * Captured tables the publication no longer publishes: taken out behind Millrace's back ({@code ALTER PUBLICATION …
     * DROP TABLE}, or a {@code SET TABLE} without them), after which pgoutput sends nothing for them and the destinations
     * would silently stop following them. Each is logged, no longer counted as captured, and joins again like a new table
     * (back into the publication when Millrace manages it; otherwise shown in not_captured with the ALTER PUBLICATION to
     * run), with a reconciling copy ({@link #rejoin}): the rows changed and deleted while it was out are set right. A
     * dropped table is the watch's ({@link SourceWatch#tick}). INV: NO-SILENT-ERROR — the publication is the one place a
     * table can stop reaching the stream without any error. INV: RESUME holds from the join message on (the reconciling
     * copy is recorded with its batch); a crash before it makes the restart find the table unpublished, and a table a
     * destination holds is copied reconciling there too ({@code StartPlanner.withAdded}; NewTableIT). Returns the tables
     * the publication publishes, read under the lock, for the rest of the poll.
     */
    private synchronized List<TableRef> left(Connection c, SourceWatch watch) throws SQLException { // never while a reload takes tables out
        List<TableRef> published = Catalog.publicationTables(c, src.publication()); // read under the lock: see Reloader.remove
        Map<Integer, TableRef> captured = watch.captured();
        if (captured.isEmpty()) {
            return published;
        }
        Map<Integer, TableRef> now = Catalog.tablesByOid(c, captured.keySet());
        for (Map.Entry<Integer, TableRef> e : captured.entrySet()) {
            TableRef t = now.get(e.getKey());
            if (t == null || published.contains(t) || t.equals(ctx.config.online().signalTable())) {
                continue; // dropped (the watch's)
            }
            if (watch.isLeaving(e.getKey())) {
                continue; // a reload took it out of the publication; it leaves where the stream reaches that (Reloader)
            }
            Found f = lookUp(c, e.getKey());
            if (f == null || f.partition()) {
                continue; // attached to a root since, which publishes it (attached())
            }
            int oid = e.getKey();
            watch.release(oid);
            ctx.release(e.getValue());
            ctx.release(t);
            joined.remove(oid); // it joins again in this run
            rejoin.add(oid);
            LOG.error("table {} left publication '{}' while captured (ALTER PUBLICATION … DROP TABLE, or SET TABLE without it):"
                    + " pgoutput sends nothing for it since, so the destinations missed its changes. It joins again{}, with a copy"
                    + " that also deletes what the source no longer has; to stop capturing it, leave it out of source.tables", t,
                    src.publication(), io.millrace.source.Publisher.manages(c, src) ? " (Millrace adds it back to the publication)" : " once the publication"
                            + " has it again: ALTER PUBLICATION " + Ident.quote(src.publication()) + " ADD TABLE " + t.sql() + ";");
        }
        return published;
    }

    /** The leaf partitions of the partitioned table of {@code oid} now, by oid. */
    private static List<Integer> leaves(Connection c, int oid) throws SQLException {
        List<Integer> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT relid::oid::int FROM pg_partition_tree(?::oid::regclass) WHERE isleaf")) {
            ps.setLong(1, Integer.toUnsignedLong(oid));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getInt(1));
                }
            }
        }
        return out;
    }

    /** The tables that joined in this run, by oid. */
    private final java.util.Set<Integer> joined = ConcurrentHashMap.newKeySet();

    private void askFromStream(int oid, TableRef hint) {
        try (Connection c = ctx.conns.open()) {
            askJoin(c, oid, System.nanoTime());
        } catch (SQLException e) {
            notCapture(oid, hint, Why.FAILED, "could not ask for it to join: " + PgErrors.translate("asking for table " + hint, e).getMessage(),
                    null, "table " + hint + " could not join the pipeline (a look at the catalog tries again within a minute): "
                            + e.getMessage());
        }
    }

    /** Lets the table of {@code oid} join when {@code sel} takes it; true when it joined. */
    private boolean join(int oid, TableSelection sel, OnlineSnapshotter online, SourceWatch watch, boolean joinedBefore) {
        TableRef name = null;
        try (Connection c = ctx.conns.open()) {
            Found f = lookUp(c, oid);
            if (f != null && f.partition()) {
                // also a table that joined on its own and was attached since: its rows are the root's now
                attached(c, oid, f.name(), online, watch);
                return joinedBefore; // a partition joins with its root, which publishes it
            }
            if (f == null || joinedBefore) {
                return joinedBefore; // dropped since; or joined in this run already
            }
            name = f.name();
            List<TableRef> published = Catalog.publicationTables(c, src.publication());
            boolean member = published.contains(name);
            if (!sel.selects(name, member) || name.equals(ctx.config.online().signalTable())) {
                return false;
            }
            return join(c, online, watch, oid, name, published, member);
        } catch (SQLException | MillraceException e) {
            String msg = e instanceof SQLException q ? PgErrors.translate("joining table " + name, q).getMessage() : e.getMessage();
            TableRef shown = name == null ? new TableRef("?", Integer.toUnsignedString(oid)) : name;
            // a role that may not alter the publication: the statement to run, as the status's fix (it was only in the reason)
            String fix = e instanceof MillraceException m && m.kind() == MillraceException.Kind.PERMISSION && name != null
                    ? "ALTER PUBLICATION " + Ident.quote(src.publication()) + " ADD TABLE " + name.sql() + "; (as the publication's owner"
                    + " or a superuser)" : null;
            notCapture(oid, shown, Why.FAILED, "could not join the pipeline: " + msg, fix, "table " + shown + " could not join the"
                    + " pipeline (a look at the catalog tries again within a minute): " + msg);
            return false;
        }
    }

    private boolean join(Connection c, OnlineSnapshotter online, SourceWatch watch, int oid, TableRef name, List<TableRef> published,
                         boolean member) throws SQLException {
        Catalog.TableInfo info = Catalog.table(c, name);
        if (info == null || info.oid() != oid) {
            return false; // renamed or dropped meanwhile: the next poll finds it
        }
        if (refused(c, oid, name, info, published)) {
            return false;
        }
        // INV: the source's writes first, and no row the filter leaves out reaches a destination: a table with a row filter
        // joins only with the filter in the publication (checked as at start: RowFilters).
        boolean allTables = allTables(c);
        io.millrace.core.schema.RelationInfo shape = Catalog.relation(c, name, ctx.survey.types());
        String filter;
        try {
            filter = io.millrace.engine.transform.RowFilters.forJoiningTable(c, ctx.transforms, shape, Catalog.serverVersion(c),
                    src.publication(), member, allTables);
        } catch (MillraceException e) {
            if (e.kind() != MillraceException.Kind.CONFIG) {
                throw e;
            }
            notCapture(oid, name, Why.FILTER, e.getMessage(), null, "table " + name + " is not captured: " + e.getMessage());
            return false;
        }
        if (!member && !allTables && !publish(c, oid, name, filter)) {
            return false;
        }
        if (info.relkind() == 'p') {
            // Its copy reads its partitions of now through it: they are not partitions attached with rows of their own,
            // which would have the root copied again (each of them, when it was created with them).
            attachDone.addAll(leaves(c, oid));
        }
        // After the join committed: the copy waits for the transactions open now (see OnlineSnapshotter.submitJoined).
        // INV: HANDOVER — rows before the join come from the copy, changes after it from the stream.
        boolean again = rejoin.contains(oid); // it left the publication: its copy in the destinations missed what changed since
        if (!online.submitJoined(oid, currentXmax(c), again)) {
            return false; // dropped meanwhile
        }
        rejoin.remove(oid);
        // Its shape now is the one its copy reads: DDL that rewrites its rows before its next change shows in the stream
        // as the new shape only, and is told by the comparison with this one (the table is copied again).
        io.millrace.pipeline.Pipeline p = ctx.pipeline;
        if (p != null) {
            p.joinedIn(shape);
        }
        watch.capture(oid, name);
        ctx.capture(name);
        notCaptured.remove(oid);
        LOG.info("table {} joined the pipeline while streaming (source.tables selects it){}: copying it online", name,
                member ? "" : ", added to publication '" + src.publication() + "'");
        io.millrace.core.fault.Faults.hit(TABLE_JOINED);
        return true;
    }

    /** Whether the table may not join, shown as not captured with the fix when so: no replica identity, or no key. */
    private boolean refused(Connection c, int oid, TableRef name, Catalog.TableInfo info, List<TableRef> published) throws SQLException {
        // The source's writes first: never publish a table whose UPDATEs and DELETEs would then fail.
        Preflight.Check identity = Preflight.replicaIdentity(c, info, src.publication(), published);
        if (identity != null && Catalog.keyColumns(c, oid).isEmpty()) {
            // the key first: REPLICA IDENTITY FULL, the identity's fix, keeps the source's writes working but does not let the
            // table join (its copy needs a key), and the next message asked for one (found by a user)
            String fix = "ALTER TABLE " + name.sql() + " ADD PRIMARY KEY (...); which also gives it a replica identity (REPLICA"
                    + " IDENTITY FULL alone keeps its UPDATEs working once published, but a table joining while streaming is copied in"
                    + " key order and needs a key; or capture it with a fresh initial snapshot)";
            String why = identity.detail().contains("no primary key") ? identity.detail() : identity.detail() + ", and no primary key";
            notCapture(oid, name, Why.IDENTITY, why, fix, "table " + name + " is not captured: " + why + ". Fix: " + fix
                    + " (it is captured once fixed)");
            return true;
        }
        if (identity != null) {
            notCapture(oid, name, Why.IDENTITY, identity.detail(), identity.fix(), "table " + name + " is not captured: " + identity.detail()
                    + ". Fix: " + identity.fix() + " (it is captured once fixed)");
            return true;
        }
        // INV: HANDOVER — the rows written before the join come from an online copy, which needs a key (chunks are cut in
        // key order): a table without one is not published (published, its later changes would stream into a table
        // missing its first rows, and a restart would count it as captured).
        if (Catalog.keyColumns(c, oid).isEmpty()) {
            String fix = "ALTER TABLE " + name.sql() + " ADD PRIMARY KEY (...); or a unique index on NOT NULL columns and ALTER TABLE "
                    + name.sql() + " REPLICA IDENTITY USING INDEX <index> (it joins once it has one); or capture it with a fresh initial"
                    + " snapshot, which copies tables without a key";
            String why = "it has no primary key (or replica identity index), so it cannot be copied while streaming: chunks are cut"
                    + " in key order";
            notCapture(oid, name, Why.KEY, why, fix, "table " + name + " is not captured: " + why + ". Fix: " + fix);
            return true;
        }
        return false;
    }

    /** Adds the table to the publication with its row filter; false (shown with the fix) when Millrace does not manage it. */
    private boolean publish(Connection c, int oid, TableRef name, String filter) throws SQLException {
        String alter = "ALTER PUBLICATION " + Ident.quote(src.publication()) + " ADD TABLE " + name.sql() + ";";
        if (!io.millrace.source.Publisher.manages(c, src)) {
            String why = io.millrace.source.Publisher.unmanagedWhy(src);
            notCapture(oid, name, Why.PUBLICATION, why, alter, "table " + name + " was created in the source and source.tables selects it,"
                    + " but " + why + ": run " + alter + " and it is copied while streaming");
            return false;
        }
        try (Statement s = c.createStatement()) {
            s.execute("SET lock_timeout = '" + LOCK_TIMEOUT + "'"); // the stream waits for it: never for long
        }
        try {
            new Publisher(src).rowFilters(t -> filter).add(c, List.of(name));
        } catch (MillraceException e) {
            if (!(e.getCause() instanceof SQLException q) || !"42710".equals(q.getSQLState())) { // 42710: a member already
                throw e;
            }
        }
        return true;
    }

    private void notCapture(int oid, TableRef name, Why why, String reason, String fix, String log) {
        EngineStatus.NotCaptured n = new EngineStatus.NotCaptured(String.valueOf(name), reason, fix);
        Refusal before = notCaptured.put(oid, new Refusal(why, System.nanoTime(), n));
        if (before == null || !n.equals(before.shown())) {
            LOG.error(log); // once per table and reason
        }
    }

    /** Whether the poll should ask about the table of {@code oid} again: never refused, or what it lacked may be there now. */
    private boolean askAgain(Connection c, int oid, TableRef t, List<TableRef> published, long now) throws SQLException {
        Refusal r = notCaptured.get(oid);
        if (r == null) {
            Long at = asked.get(oid);
            return at == null || now - at >= ASK_AGAIN_NANOS; // a message written and not seen yet: not again at once
        }
        return switch (r.why()) {
            case PUBLICATION -> published.contains(t);
            case FAILED -> now - r.atNanos() >= ASK_AGAIN_NANOS;
            case FILTER -> { // most often a filter column outside the replica identity: at once when the identity is FULL now
                Catalog.TableInfo info = Catalog.table(c, t);
                yield info != null && info.replicaIdentity() == 'f' || now - r.atNanos() >= ASK_AGAIN_NANOS;
            }
            case IDENTITY -> {
                Catalog.TableInfo info = Catalog.table(c, t);
                yield info != null && Preflight.replicaIdentity(c, info, src.publication(), published) == null;
            }
            case KEY -> !Catalog.keyColumns(c, oid).isEmpty();
        };
    }

    /**
     * One look at the catalog (slot monitor thread, on its connection), at most every {@code source.new_tables_poll_s}:
     * for each table the selection takes that is not captured, a {@link Pipeline#JOIN_PREFIX} message, which the stream
     * brings to {@link #seen}.
     */
    void poll(Connection c) throws SQLException {
        long every = src.newTablesPoll().toNanos();
        long now = System.nanoTime();
        SourceWatch watch = ctx.watch;
        if (every == 0 || watch == null || (lastPoll != 0 && now - lastPoll < every)) {
            return;
        }
        lastPoll = now;
        Map<Integer, Partition> captured = partitions(c, watch);
        partitionsWithoutIdentity(captured, lostIdentity(c, watch));
        if (ctx.online == null) {
            return;
        }
        partitionsChanged(c, watch, captured, now);
        TableSelection sel = ctx.selection;
        List<TableRef> published = left(c, watch); // before the look for tables to join: a table that left joins again below
        for (Map.Entry<Integer, TableRef> e : Catalog.userTablesByOid(c).entrySet()) {
            int oid = e.getKey();
            TableRef t = e.getValue();
            if (watch.captures(oid) || !sel.selects(t, published.contains(t)) || t.equals(ctx.config.online().signalTable())
                    || !askAgain(c, oid, t, published, now)) {
                continue;
            }
            askJoin(c, oid, now); // INV: RESUME — the table joins where the stream reaches this message, recorded with its batch
        }
    }

    /**
     * Writes a join message for the table of {@code oid}, noted in {@link #asked} first: the stream can bring the message
     * to {@link #seen} (which removes the note) before this thread runs on, and a note put after that stayed, holding back
     * the next message about the table for {@link #ASK_AGAIN_NANOS} (a table that joined, then was attached as a
     * partition, had its rows copied into the root a minute late; seen in CI under load). A note whose message could not
     * be written is removed.
     */
    private void askJoin(Connection c, int oid, long now) throws SQLException {
        asked.put(oid, now);
        boolean written = false;
        try {
            ask(c, oid, src.slot());
            written = true;
        } finally {
            if (!written) {
                asked.remove(oid, now);
            }
        }
    }

    /**
     * The partitions of captured tables that have no replica identity, found at each poll (a partition does not take its
     * root's REPLICA IDENTITY FULL, so one created or attached under a keyless root has none): its root publishes it, so
     * every UPDATE and DELETE of its rows fails on the source. Nothing here can prevent that (the DDL event trigger does,
     * in the CREATE's transaction: {@link io.millrace.source.DdlTrigger}); the partition is shown with the fix and logged
     * once, until it has one. Its inserts are captured all the same.
     */
    private void partitionsWithoutIdentity(Map<Integer, Partition> captured, Map<Integer, TableRef> lost) {
        Map<Integer, EngineStatus.NotCaptured> found = new java.util.HashMap<>();
        lost.forEach((oid, t) -> found.put(oid, new EngineStatus.NotCaptured(t.toString(), "it has no replica identity"
                + " now (its primary key dropped, or REPLICA IDENTITY set to DEFAULT without one, or to NOTHING): every UPDATE and"
                + " DELETE of its rows fails on the source (\"cannot update table ... because it does not have a replica identity"
                + " and publishes updates\"); its inserts are captured", "ALTER TABLE " + t.sql() + " REPLICA IDENTITY FULL; (or"
                + " give it its primary key back; the DDL event trigger, 'millrace setup CONFIG', gives it FULL when its primary key"
                + " is dropped)")));
        for (Map.Entry<Integer, Partition> e : captured.entrySet()) {
            Partition p = e.getValue();
            if (p.hasIdentity()) {
                continue;
            }
            EngineStatus.NotCaptured n = new EngineStatus.NotCaptured(p.name().toString(), "a partition of " + p.root() + ", which is"
                    + " captured, with no replica identity (no primary key; a partition does not take its root's REPLICA IDENTITY"
                    + " FULL): every UPDATE and DELETE of its rows fails on the source (\"cannot update table ... because it does not"
                    + " have a replica identity and publishes updates\"); its inserts are captured",
                    "ALTER TABLE " + p.name().sql() + " REPLICA IDENTITY FULL; (the DDL event trigger, 'millrace setup CONFIG', does"
                    + " this for each partition as it is created)");
            found.put(e.getKey(), n);
        }
        found.forEach((oid, n) -> {
            if (exposed.put(oid, n) == null) {
                LOG.error("table {}: {}. Fix: {}", n.table(), n.reason(), n.fix()); // once per table
            }
        });
        exposed.keySet().retainAll(found.keySet()); // given an identity since, or dropped
    }

    /**
     * The captured tables that are not partitions and have no replica identity now, by oid: it was taken away while
     * streaming (a user's {@code ALTER TABLE ... DROP CONSTRAINT ..._pkey}, or {@code REPLICA IDENTITY DEFAULT} on a
     * keyless table that had FULL), and the publication makes the source refuse their UPDATEs and DELETEs. Before, nothing
     * said so until the next start refused the table.
     */
    private static Map<Integer, TableRef> lostIdentity(Connection c, SourceWatch watch) throws SQLException {
        Map<Integer, TableRef> lost = new java.util.HashMap<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT c.oid, n.nspname, c.relname FROM pg_class c"
                + " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND NOT c.relispartition AND NOT "
                + Preflight.HAS_IDENTITY)) {
            while (rs.next()) {
                if (watch.captures(rs.getInt(1))) {
                    lost.put(rs.getInt(1), new TableRef(rs.getString(2), rs.getString(3)));
                }
            }
        }
        return lost;
    }

    /**
     * The leaf partitions of the captured partitioned tables now, by oid (none before PostgreSQL 12: no
     * {@code pg_partition_root}; and no partitioned table is captured before 13).
     */
    private static Map<Integer, Partition> partitions(Connection c, SourceWatch watch) throws SQLException {
        Map<Integer, Partition> found = new java.util.HashMap<>();
        if (Catalog.serverVersion(c) < 120000) {
            return found;
        }
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT c.oid, n.nspname, c.relname, r.oid, rn.nspname,"
                + " r.relname, pg_get_partition_constraintdef(c.oid), " + Preflight.HAS_IDENTITY + " FROM pg_class c"
                + " JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_class r ON r.oid = pg_partition_root(c.oid)"
                + " JOIN pg_namespace rn ON rn.oid = r.relnamespace WHERE c.relispartition AND c.relkind = 'r'")) {
            while (rs.next()) {
                if (watch.captures(rs.getInt(4))) {
                    found.put(rs.getInt(1), new Partition(new TableRef(rs.getString(2), rs.getString(3)), rs.getInt(4),
                            new TableRef(rs.getString(5), rs.getString(6)), rs.getString(7), rs.getBoolean(8)));
                }
            }
        }
        return found;
    }

    /** The xid every transaction running now is older than ({@code pg_snapshot_xmax(pg_current_snapshot())}, PostgreSQL 13+). */
    static long currentXmax(Connection c) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /**
     * Writes the message that brings the table of {@code oid} to {@link #seen} in stream order, for the pipeline reading
     * {@code slot} only (every slot of the database receives it).
     */
    static void ask(Connection c, int oid, String slot) throws SQLException {
        message(c, Pipeline.JOIN_PREFIX, oid, slot);
    }

    /**
     * Writes the message that takes the table of {@code oid} out of the pipeline reading {@code slot} where the stream
     * reaches it ({@link Pipeline#LEAVE_PREFIX}): its changes committed before it still reach the destinations.
     */
    static void leave(Connection c, int oid, String slot) throws SQLException {
        message(c, Pipeline.LEAVE_PREFIX, oid, slot);
    }

    private static void message(Connection c, String prefix, int oid, String slot) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_logical_emit_message(true, ?, ?)")) {
            ps.setString(1, prefix);
            ps.setString(2, Pipeline.joinMessage(oid, slot));
            ps.execute();
        }
    }

    private record Found(TableRef name, boolean partition) {
    }

    /** The table of {@code oid} (a permanent table or partitioned root), or null when there is none. */
    private static Found lookUp(Connection c, int oid) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT n.nspname, c.relname, c.relispartition FROM pg_class c"
                + " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = ?::oid AND c.relkind IN ('r', 'p') AND c.relpersistence = 'p'")) {
            ps.setLong(1, Integer.toUnsignedLong(oid));
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? new Found(new TableRef(rs.getString(1), rs.getString(2)), rs.getBoolean(3)) : null;
            }
        }
    }

    private boolean allTables(Connection c) throws SQLException {
        return Catalog.allTables(c, src.publication());
    }
}
