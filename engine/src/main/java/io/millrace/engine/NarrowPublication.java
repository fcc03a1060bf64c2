package io.millrace.engine;

import io.millrace.core.MillraceException;
import io.millrace.core.schema.Ident;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.pipeline.Pipeline;
import io.millrace.snapshot.online.OnlineSnapshotter;
import io.millrace.source.Catalog;
import io.millrace.source.PgErrors;
import io.millrace.source.Preflight;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A publication that publishes less than the captured tables while Millrace runs, behind its back. pgoutput then sends
 * less, and nothing in the stream says why; the start refuses both kinds ({@code Preflight.columnLists},
 * {@code Preflight.operations}), and this is the running pipeline's side ({@link Pipeline.Withholding}).
 *
 * <ul>
 *   <li><b>A column list</b> ({@code ALTER PUBLICATION p SET TABLE t (id, name)}): pgoutput sends the listed columns only,
 *       and a destination following that shape would drop the columns left out, values and all (found trying a user's
 *       publication on PostgreSQL 17: the postgres destination dropped a column, status streaming, no error). A Relation
 *       message lacking columns the source still has (by the catalog's attribute numbers: not dropped) withholds the
 *       table's changes from the destinations, which keep every column and row as they were. The first Relation message
 *       showing the table whole again ends the hold.</li>
 *   <li><b>Kinds of change</b> ({@code SET (publish = 'insert')}): pgoutput sends no update or delete, and no Relation
 *       message shows it. {@link #tick} sees it in the catalog and withholds every captured table in stream order ({@link
 *       Pipeline#WITHHOLD_PREFIX}); a publication Millrace manages is set right at once, one it does not is shown with the
 *       fix. Once it publishes every kind again, a {@link Pipeline#RECONCILE_PREFIX} message ends the holds.</li>
 * </ul>
 *
 * <p>A hold ends with a copy of the table online that reconciles: the changes withheld (and the changes pgoutput never
 * sent) reach the destinations through it, and the rows deleted meanwhile are deleted. INV: RESUME — a hold is recorded in
 * the checkpoints ({@link io.millrace.core.change.SourceShapes#withheld}) with the batch after it, and its end with the
 * copy's task, so a restart inside it holds on ({@link #atStart} asks for its end in stream order, since the start found
 * the publication whole), however far the checkpoints moved past the changes withheld. INV: NO-SILENT-ERROR — the
 * destinations never silently follow a publication that leaves out what they hold.
 *
 * <p>Threads: {@link #leftOut}, {@link #whole}, {@link #recopy} on the assembler's; {@link #tick} on the slot monitor's;
 * {@link #atStart} before streaming; the status's map is concurrent.
 */
final class NarrowPublication implements Pipeline.Withholding {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class); // the engine's log: one category for a run's stages

    private final EngineContext ctx;

    /** The tables withheld, for the status ({@code not_captured}). */
    private final Map<Integer, EngineStatus.NotCaptured> withheld = new java.util.concurrent.ConcurrentHashMap<>();

    NarrowPublication(EngineContext ctx) {
        this.ctx = ctx;
    }

    /**
     * Tables withheld because their stream left columns out (a column list), until a look at the catalog finds them
     * published whole again and asks for their reconciling copy in stream order ({@link #columnListsLifted}): a table that
     * is not changed again would otherwise wait for its next change.
     */
    private final java.util.Set<Integer> columnListHeld = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** For the status: the tables whose changes are withheld since this run saw their stream leave columns out. Any thread. */
    List<EngineStatus.NotCaptured> withheld() {
        return List.copyOf(withheld.values());
    }

    @Override
    public boolean leftOut(RelationInfo rel, List<String> missing) {
        if (ctx.survey != null && ctx.survey.report().serverVersion() < 150000) {
            return false; // no column lists before PostgreSQL 15: a column missing was dropped
        }
        Map<String, Integer> live = live(rel);
        if (live == null) {
            return false; // dropped since: nothing to hold
        }
        if (rel.columns().stream().anyMatch(col -> !live.containsKey(col.name()))) {
            // The description is older than DDL since (a replay after a stop): it names columns the table no longer has
            // under those names (renamed or dropped since), so the columns it lacks were renamed or added since, not left
            // out by a column list (a list only leaves columns out). Held, the table's changes were withheld, with a
            // wrong fix, until a copy (found by two users: a column renamed and another added while Millrace was stopped).
            return false;
        }
        Map<String, Integer> known = ctx.watch == null ? null : ctx.watch.attributeNumbers(rel.oid());
        // Still in the source under the same attribute number: left out, not dropped (a column dropped and added again
        // under its name has another number)
        List<String> left = missing.stream().filter(n -> live.containsKey(n)
                && (known == null || !known.containsKey(n) || known.get(n).equals(live.get(n)))).toList();
        if (left.isEmpty()) {
            return false;
        }
        String pub = Ident.quote(ctx.config.source().publication());
        String fix = "BEGIN; ALTER PUBLICATION " + pub + " DROP TABLE " + rel.table().sql() + "; ALTER PUBLICATION " + pub + " ADD TABLE "
                + rel.table().sql() + "; COMMIT;";
        columnListHeld.add(rel.oid());
        withheld.put(rel.oid(), new EngineStatus.NotCaptured(rel.table().toString(), "publication " + pub + " leaves out its columns "
                + left + " (a column list): its changes are withheld from the destinations until the stream carries the whole table,"
                + " which is then copied again, reconciling", fix));
        LOG.error("table {}: the stream carries only some of its columns and leaves out {}, which the source still has:"
                        + " publication {} publishes it with a column list. Its changes are withheld from the destinations, which"
                        + " keep every column and row as they were, until the stream carries the whole table again; it is then"
                        + " copied again online, reconciling. Fix, as the publication's owner: {} (to keep columns out of the"
                        + " destinations, use the transforms: {match: {}, columns: {exclude: {}}})", rel.table(), left, pub, fix,
                rel.table(), left);
        return true;
    }

    /** Whether the publication lacks kinds of change as last seen ({@link #tick}); slot monitor thread. */
    private List<String> narrowedTo = List.of();

    /**
     * One look at the publication's kinds of change (slot monitor thread): when it stopped publishing some, every captured
     * table is withheld in stream order, and the publication set right if Millrace manages it; when it publishes them all
     * again, the holds end in stream order.
     */
    void tick(Connection c) throws SQLException {
        SourceWatch watch = ctx.watch;
        if (watch == null || ctx.pipeline == null) {
            return;
        }
        var src = ctx.config.source();
        boolean messages = io.millrace.source.Catalog.serverVersion(c) >= 140000; // logical messages in the stream: 14+
        viaRoot(c, watch, messages);
        columnListsLifted(c);
        List<String> left = Preflight.unpublished(c, src.publication());
        if (left.isEmpty() == narrowedTo.isEmpty()) {
            return;
        }
        Map<Integer, TableRef> captured = watch.captured();
        String oids = captured.keySet().stream().map(Integer::toUnsignedString).collect(java.util.stream.Collectors.joining(","));
        String pub = Ident.quote(src.publication());
        String fix = "ALTER PUBLICATION " + pub + " SET (publish = '" + Preflight.allKinds(c) + "');";
        if (!left.isEmpty()) {
            if (!messages) { // no way to withhold in stream order before 14: said, as at every start (Preflight.operations)
                narrowedTo = left;
                LOG.error("publication {} no longer publishes {} (its publish option was changed while Millrace ran): the destinations"
                        + " miss those changes, and the next start refuses the publication. Fix, as its owner: {}", pub, left, fix);
                return;
            }
            message(c, Pipeline.WITHHOLD_PREFIX, oids); // first: from here on nothing of theirs reaches a destination
            narrowedTo = left;
            String reason = "publication " + pub + " no longer publishes " + String.join(", ", left) + " (its publish option was"
                    + " changed while Millrace ran): the changes of the captured tables are withheld from the destinations until it"
                    + " publishes every kind again; they are then copied again, reconciling";
            if (io.millrace.source.Publisher.manages(c, src)) {
                try (Statement s = c.createStatement()) {
                    s.execute(fix);
                    LOG.error("{}. Millrace manages it and set it right ({})", reason, fix);
                    return;
                } catch (SQLException e) { // e.g. a role that does not own it: the user's fix, as for one Millrace does not manage
                    LOG.error("could not set publication {} right ({}): {}", pub, fix, e.getMessage());
                }
            }
            captured.forEach((oid, t) -> withheld.put(oid, new EngineStatus.NotCaptured(t.toString(), reason, fix)));
            LOG.error("{}. Fix, as the publication's owner: {}", reason, fix);
            return;
        }
        if (!messages) {
            narrowedTo = List.of();
            return;
        }
        message(c, Pipeline.RECONCILE_PREFIX, oids);
        narrowedTo = List.of();
        LOG.info("publication {} publishes every kind of change again: the captured tables' changes flow again from here, each"
                + " table copied again online, reconciling", pub);
    }

    /** Whether the last look found publish_via_partition_root off and told it (slot monitor thread). */
    private boolean viaPartitionsTold;

    /**
     * {@code publish_via_partition_root} turned off while captured partitioned tables stream: pgoutput then sends their
     * partitions' changes as tables of their own, and the root no longer appears published. Found by a DBA: every poll
     * found the root gone from the publication and copied it again whole (five copies in 40 s, for as long as it lasted),
     * and the destinations got tables named after the partitions holding the changed rows. A publication Millrace manages
     * is set right at once and each captured root copied again, reconciling, in stream order (the changes made meanwhile
     * reached the destinations under the partitions' names, logged); otherwise it is logged with the fix.
     */
    private void viaRoot(Connection c, SourceWatch watch, boolean messages) throws SQLException {
        var src = ctx.config.source();
        if (io.millrace.source.Catalog.serverVersion(c) < 130000) {
            return;
        }
        boolean via;
        try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT pubviaroot FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, src.publication());
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                via = !rs.next() || rs.getBoolean(1);
            }
        }
        if (via) {
            viaPartitionsTold = false;
            return;
        }
        Map<Integer, TableRef> captured = watch.captured();
        List<Integer> roots = partitioned(c, captured.keySet());
        if (roots.isEmpty() || viaPartitionsTold) {
            return;
        }
        List<TableRef> names = roots.stream().map(captured::get).toList();
        String pub = Ident.quote(src.publication());
        String fix = "ALTER PUBLICATION " + pub + " SET (publish_via_partition_root = true);";
        if (io.millrace.source.Publisher.manages(c, src)) {
            try (Statement s = c.createStatement()) {
                s.execute(fix);
            } catch (SQLException e) { // e.g. a role that does not own it
                LOG.error("could not set publication {} right ({}): {}", pub, fix, e.getMessage());
                viaPartitionsTold = true;
                LOG.error("publication {} no longer has publish_via_partition_root: the changes of the partitions of {} reach the"
                        + " destinations as tables of their own, not as their root's. Fix, as the publication's owner: {}", pub, names, fix);
                return;
            }
            if (messages) { // the roots copied again, reconciling, where the stream reaches the fix (one transaction: in order)
                String oids = roots.stream().map(Integer::toUnsignedString).collect(java.util.stream.Collectors.joining(","));
                boolean auto = c.getAutoCommit();
                c.setAutoCommit(false);
                try {
                    message(c, Pipeline.WITHHOLD_PREFIX, oids);
                    message(c, Pipeline.RECONCILE_PREFIX, oids);
                    c.commit();
                } finally {
                    c.setAutoCommit(auto);
                }
            }
            LOG.error("publication {} had publish_via_partition_root turned off while Millrace ran: Millrace manages it and set it"
                    + " right ({}){}. Changes made to their partitions meanwhile reached the destinations under the partitions' names"
                    + " (tables there that can be dropped)", pub, fix, messages ? "; " + names + " are copied again online, reconciling"
                    : "");
            return;
        }
        viaPartitionsTold = true;
        LOG.error("publication {} no longer has publish_via_partition_root: the changes of the partitions of {} reach the"
                + " destinations as tables of their own, not as their root's. Fix, as the publication's owner: {}", pub, names, fix);
    }

    /**
     * The tables withheld for a column list that the publication now publishes whole (or no longer has: the joiner's): their
     * holds end where the stream reaches a reconcile message written now (slot monitor thread).
     */
    private void columnListsLifted(Connection c) throws SQLException {
        if (columnListHeld.isEmpty()) {
            return;
        }
        java.util.Set<Integer> lifted = new java.util.TreeSet<>(columnListHeld);
        try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT pr.prrelid::int8 FROM pg_publication_rel pr JOIN pg_publication p"
                + " ON p.oid = pr.prpubid WHERE p.pubname = ? AND pr.prattrs IS NOT NULL")) {
            ps.setString(1, ctx.config.source().publication());
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    lifted.remove((int) rs.getLong(1));
                }
            }
        }
        if (!lifted.isEmpty()) {
            message(c, Pipeline.RECONCILE_PREFIX, lifted.stream().map(Integer::toUnsignedString)
                    .collect(java.util.stream.Collectors.joining(",")));
            columnListHeld.removeAll(lifted);
        }
    }

    /** Of the tables of {@code oids}, the partitioned ones, by one catalog query. */
    private static List<Integer> partitioned(Connection c, java.util.Collection<Integer> oids) throws SQLException {
        List<Integer> roots = new java.util.ArrayList<>();
        try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT oid::int8 FROM pg_class WHERE relkind = 'p' AND oid::int8 = ANY (?)")) {
            ps.setArray(1, c.createArrayOf("int8", oids.stream().map(Integer::toUnsignedLong).toArray()));
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    roots.add((int) rs.getLong(1));
                }
            }
        }
        return roots;
    }

    /**
     * Before streaming, with the destinations' checkpoints: tables withheld when the last run stopped have their holds ended in
     * stream order (the start found the publication whole), so that one the stream does not describe again is copied all
     * the same.
     */
    void atStart(Connection c, List<Checkpoint> checkpoints) throws SQLException {
        java.util.Set<Integer> held = new java.util.TreeSet<>();
        for (Checkpoint cp : checkpoints) {
            cp.shapes().forEach((oid, entry) -> {
                if (io.millrace.core.change.SourceShapes.withheldColumns(entry) != null) {
                    held.add(oid);
                }
            });
        }
        if (!held.isEmpty()) {
            message(c, Pipeline.RECONCILE_PREFIX, held.stream().map(Integer::toUnsignedString).collect(java.util.stream.Collectors.joining(",")));
            LOG.info("tables withheld when Millrace stopped (oids {}) flow again where the stream reaches this start, each copied"
                    + " again online, reconciling", held);
        }
    }

    private static void message(Connection c, String prefix, String content) throws SQLException {
        try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT pg_logical_emit_message(true, ?, ?)")) {
            ps.setString(1, prefix);
            ps.setString(2, content);
            ps.execute();
        }
    }

    @Override
    public void recopy(int oid) {
        withheld.remove(oid);
        columnListHeld.remove(oid);
        copyAgain(oid);
    }

    @Override
    public boolean whole(RelationInfo rel, List<String> whole) {
        Map<String, Integer> live = live(rel);
        if (live == null) {
            return true; // dropped since: its drop follows
        }
        Set<String> has = new HashSet<>();
        rel.columns().forEach(c -> has.add(c.name()));
        return whole.stream().noneMatch(n -> live.containsKey(n) && !has.contains(n));
    }

    /** Submits the copy that ends a hold, reconciling (assembler thread: recorded with the batch that ends the hold). */
    private void copyAgain(int oid) {
        TableRef table = ctx.watch == null ? null : ctx.watch.captured().get(oid);
        table = table == null ? new TableRef("?", Integer.toUnsignedString(oid)) : table;
        OnlineSnapshotter online = ctx.online;
        if (online == null) {
            LOG.error("table {}: its changes flow again; the changes withheld are not in the destinations, and online snapshots"
                    + " need PostgreSQL 14+: copy it again with a fresh pipeline", table);
            return;
        }
        try (Connection c = ctx.conns.open()) {
            // After the transactions open now: one that changed the table while it was withheld may commit after this point
            online.cancel(oid); // a copy under way missed the changes withheld (its chunks' windows did not see them)
            if (online.submitJoined(oid, TableJoiner.currentXmax(c), true)) {
                LOG.info("table {}: its changes flow again, and it is copied again online, reconciling the changes withheld", table);
            }
        } catch (SQLException e) {
            throw PgErrors.translate("copying " + table + " again after its changes were withheld", e); // retried: the hold is durable
        } catch (MillraceException e) {
            LOG.error("table {}: its changes flow again, but it cannot be copied again online ({}), so the changes withheld are not"
                    + " in the destinations; start the pipeline over to copy it (millrace reset, then run)", table, e.getMessage());
        }
    }

    /** The table's live columns by name, with their attribute numbers; null when it is gone. */
    private Map<String, Integer> live(RelationInfo rel) {
        try {
            return ctx.assemblerCatalog.read(c -> Catalog.attributeNumbers(c, List.of(rel.oid())).get(rel.oid()));
        } catch (SQLException e) {
            throw PgErrors.translate("reading the columns of " + rel.table(), e);
        }
    }
}
