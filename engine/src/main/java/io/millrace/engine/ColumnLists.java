package io.millrace.engine;

import io.millrace.core.MillraceException;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.pipeline.Pipeline;
import io.millrace.snapshot.online.OnlineSnapshotter;
import io.millrace.source.Catalog;
import io.millrace.source.PgErrors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A captured table whose stream shows fewer columns than it has: a publication's column list made while Millrace runs
 * ({@code ALTER PUBLICATION p SET TABLE t (id, name)}), or met again in a replay after a restart. pgoutput then sends
 * the listed columns only, and the destinations, following that shape, would drop the columns left out with all their
 * values (found trying a user's publication on PostgreSQL 17: the postgres destination dropped a column, status
 * streaming, no error) and miss every change of them. The start refuses such a publication ({@code
 * Preflight.columnLists}); this is the stream's side ({@link Pipeline.Withholding}):
 *
 * <ul>
 *   <li>a Relation message lacking columns the source still has (by the catalog's attribute numbers: not dropped) holds
 *       the table's changes back from the destinations, which keep every column and row as they were; logged with the
 *       fix;</li>
 *   <li>the first Relation message showing the table whole again ends the hold, and the table is copied again online,
 *       reconciling: the changes withheld (and what the stream left out of them) reach the destinations through the copy,
 *       the rows deleted meanwhile are deleted.</li>
 * </ul>
 *
 * <p>INV: RESUME — the hold is recorded in the checkpoints ({@link io.millrace.core.change.SourceShapes#withheld}) with
 * the batch after it, and its end with the copy's task, so a restart inside the hold goes on holding, however far the
 * checkpoints moved past the changes withheld. INV: NO-SILENT-ERROR — never a column dropped in a destination because
 * a publication left it out.
 *
 * <p>Threads: the assembler's only (the pipeline's callbacks).
 */
final class ColumnLists implements Pipeline.Withholding {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class); // the engine's log: one category for a run's stages

    private final EngineContext ctx;

    /** The tables withheld, for the status ({@code not_captured}). */
    private final Map<Integer, EngineStatus.NotCaptured> withheld = new java.util.concurrent.ConcurrentHashMap<>();

    ColumnLists(EngineContext ctx) {
        this.ctx = ctx;
    }

    /** For the status: the tables whose changes are withheld since this run saw their stream leave columns out. Any thread. */
    List<EngineStatus.NotCaptured> withheld() {
        return List.copyOf(withheld.values());
    }

    @Override
    public boolean leftOut(RelationInfo rel, List<String> missing) {
        Map<String, Integer> live = live(rel);
        if (live == null) {
            return false; // dropped since: nothing to hold
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

    @Override
    public boolean whole(RelationInfo rel, List<String> whole) {
        Map<String, Integer> live = live(rel);
        if (live == null) {
            withheld.remove(rel.oid());
            return true; // dropped since: its drop follows
        }
        Set<String> has = new HashSet<>();
        rel.columns().forEach(c -> has.add(c.name()));
        if (whole.stream().anyMatch(n -> live.containsKey(n) && !has.contains(n))) {
            return false;
        }
        withheld.remove(rel.oid());
        OnlineSnapshotter online = ctx.online;
        if (online == null) {
            LOG.error("table {}: the stream carries all its columns again, and its changes flow again; the changes withheld while"
                    + " it did not are not in the destinations, and online snapshots need PostgreSQL 14+: copy it again with a"
                    + " fresh pipeline", rel.table());
            return true;
        }
        try (Connection c = ctx.conns.open()) {
            // After the transactions open now: one that changed the table under the column list commits after this message
            if (online.submitJoined(rel.oid(), TableJoiner.currentXmax(c), true)) {
                LOG.info("table {}: the stream carries all its columns again: its changes flow again, and it is copied again online,"
                        + " reconciling the changes withheld", rel.table());
            }
        } catch (SQLException e) {
            throw PgErrors.translate("copying " + rel.table() + " again after its column list", e); // retried: the hold is durable
        } catch (MillraceException e) {
            LOG.error("table {}: the stream carries all its columns again and its changes flow again, but it cannot be copied again"
                    + " online ({}), so the changes withheld while the publication left columns out are not in the destinations;"
                    + " start the pipeline over to copy it (millrace reset, then run)", rel.table(), e.getMessage());
        }
        return true;
    }

    /** The table's live columns by name, with their attribute numbers; null when it is gone. */
    private Map<String, Integer> live(RelationInfo rel) {
        try (Connection c = ctx.conns.open()) {
            return Catalog.attributeNumbers(c, List.of(rel.oid())).get(rel.oid());
        } catch (SQLException e) {
            throw PgErrors.translate("reading the columns of " + rel.table(), e);
        }
    }
}
