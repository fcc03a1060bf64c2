package io.millrace.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.ShapeChange;
import io.millrace.core.schema.TableRef;
import io.millrace.engine.Engine.State;
import io.millrace.snapshot.online.OnlineSnapshotter;
import io.millrace.source.Catalog;
import io.millrace.source.PgErrors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The online snapshot's controls while streaming: copy tables again on request, on a signal row, or when a table
 * changed its rows without change events; pause and resume. Any thread unless a method says otherwise.
 */
final class OnlineControls {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class); // the engine's log: one category for a run's stages
    private static final ObjectMapper JSON = new ObjectMapper();

    private final EngineContext ctx;

    OnlineControls(EngineContext ctx) {
        this.ctx = ctx;
    }

    /** See {@link Engine#snapshot}. */
    void snapshot(List<TableRef> tables, String filter) {
        OnlineSnapshotter o = ctx.online;
        State st = ctx.state.get();
        if (o == null || (st != State.STREAMING && st != State.STARTING)) {
            throw new MillraceException(Kind.CONFIG, "the engine is " + st.name().toLowerCase(Locale.ROOT)
                    + (o == null && st == State.STREAMING ? " from PostgreSQL older than 14, which cannot run online snapshots" : "")
                    + "; a table can be copied again only while it streams");
        }
        List<TableRef> captured = ctx.captured;
        for (TableRef t : tables) {
            if (!captured.contains(t)) {
                throw new MillraceException(Kind.CONFIG, "table " + t + " is not captured by this pipeline (captured: " + captured
                        + "); add it to source.tables and reload (SIGHUP, or POST /reload), and it is copied while streaming");
            }
        }
        for (TableRef t : tables) {
            o.submit(t, filter);
        }
    }

    /** See {@link Engine#pauseSnapshots}. */
    void pause(boolean pause) {
        OnlineSnapshotter o = ctx.online;
        if (o == null) {
            throw new MillraceException(Kind.CONFIG, "no online snapshot can run: the engine is not streaming");
        }
        if (pause) {
            o.pause();
        } else {
            o.resume();
        }
    }

    EngineStatus.Online status() {
        OnlineSnapshotter o = ctx.online;
        if (o == null) {
            return null;
        }
        return new EngineStatus.Online(o.paused(), o.progress().stream().map(t -> new EngineStatus.Task(t.table().toString(),
                t.kind().name().toLowerCase(java.util.Locale.ROOT), t.filter(), t.rowsDone(),
                t.remaining().size())).toList(), o.chunksRead(), o.chunksRetried(), o.peakBufferedRows());
    }

    /**
     * A row inserted into the signal table ({@code snapshot.signal_table}), in Debezium's format: {@code type}
     * {@code execute-snapshot} with {@code data} {@code {"data-collections": ["public.t"], "additional-conditions":
     * [{"data-collection": "public.t", "filter": "id > 10"}]}}, or {@code pause-snapshot} / {@code resume-snapshot}.
     * A signal that cannot be carried out is logged and skipped: a wrong row must not stop the pipeline.
     * Assembler thread; the task is recorded with the batch that holds the signal's transaction (INV: RESUME).
     */
    void onSignal(Map<String, Object> row) {
        Object id = row.get("id");
        String type = String.valueOf(row.get("type"));
        try {
            switch (type) {
                case "execute-snapshot" -> executeSnapshot(id, JSON.readTree(String.valueOf(row.get("data"))));
                case "pause-snapshot" -> pause(true);
                case "resume-snapshot" -> pause(false);
                default -> LOG.warn("signal {} of type '{}' ignored: Millrace knows execute-snapshot, pause-snapshot, resume-snapshot", id, type);
            }
        } catch (MillraceException | IOException e) {
            LOG.error("signal {} ({}) not carried out: {}", id, type, e.getMessage());
        }
    }

    private void executeSnapshot(Object id, JsonNode data) {
        List<TableRef> tables = new ArrayList<>();
        data.path("data-collections").forEach(n -> tables.add(TableRef.parse(n.asText())));
        if (tables.isEmpty()) {
            throw new MillraceException(Kind.CONFIG, "data names no table: {\"data-collections\": [\"public.orders\"]}");
        }
        Map<TableRef, String> filters = new HashMap<>();
        for (JsonNode c : data.path("additional-conditions")) {
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

    /**
     * A captured table changed shape while streaming. When the source rewrote existing rows without change
     * events — a column added with a default (its value appears in the old rows), a column retyped (its
     * values converted, perhaps by a USING expression) — the destinations cannot follow from the stream
     * alone, so the table is copied again online. Renames and drops need no copy; but a Relation message has no
     * attribute numbers, so where the catalog's do not confirm how the destinations read a rename (or a drop and an
     * add) the table is copied again too. {@code before} null: the table's shape changed where the stream does not show
     * it (while Millrace was stopped: the destinations' copies were last written in another shape), so what changed is
     * not known, and the table is copied again. Assembler thread; the task is recorded with the batch after the change
     * (INV: RESUME).
     */
    void onShapeChange(RelationInfo before, RelationInfo after) {
        if (partitionOfACapturedRoot(after)) {
            return;
        }
        if (before != null) {
            ctx.watch.renamed(before, after);
        }
        if (ctx.config.online().signalTable() != null && after.table().equals(ctx.config.online().signalTable())) {
            return;
        }
        Rewrite rewrite = before == null ? toldSinceWritten(after) : rewrittenWithoutEvents(before, after);
        if (rewrite == null) {
            return;
        }
        String why = rewrite.why();
        if (ctx.online == null) {
            LOG.warn("{} changed without change events ({}): online snapshots need PostgreSQL 14+, so the destinations keep the old"
                    + " values of existing rows until they change; re-copy the table with a fresh pipeline", after.table(), why);
            return;
        }
        LOG.warn("{} changed its existing rows without change events ({}): copying it again while streaming", after.table(), why);
        try {
            // By oid: the table may have been renamed since the shape the stream shows (the copy reads it under its name now)
            if (!ctx.online.submit(after.oid(), null)) {
                LOG.warn("{} (oid {}) is not copied again: it was dropped in the source since", after.table(),
                        Integer.toUnsignedString(after.oid()));
            }
        } catch (MillraceException e) {
            if (!after.hasKey() && rewrite.constantDefaultsOnly()) {
                // told by the trigger: postgres and DuckDB give their rows the value themselves; an event destination's
                // consumer has it in the schema-change event (existingRowsValue), and each old row with it at its next change
                LOG.warn("{} has no key, so it cannot be copied again for {}: the postgres and DuckDB destinations give its existing rows"
                        + " the value themselves; jsonl, Kafka and destinations of your own get each existing row with the value only"
                        + " when it next changes (the schema-change event's existingRowsValue says what it is)", after.table(), why);
                return;
            }
            LOG.error("cannot copy {} again: {}. Until it is, the destinations keep the old values of its existing rows{}", after.table(),
                    e.getMessage(), after.hasKey() ? "" : ", and since its rows are found by their whole old image, the later updates and"
                            + " deletes of those rows find no row there; or start the pipeline over (millrace reset, then run: an initial"
                            + " snapshot copies tables without a key). The DDL event trigger (millrace setup) spares such a copy for a"
                            + " column added with a constant default, in the postgres and DuckDB destinations");
        }
    }

    /**
     * A table whose copies were written in another shape, first described in this run ({@code before} unknown): what asks
     * for a copy. When the event trigger told every DDL since (its account carried into this run by the checkpoint, or
     * read again) and none rewrote the rows, the destinations follow the account (FirstSight): renames, drops and columns
     * added without a value for existing rows need no copy, and columns added with a constant one only for a destination
     * that does not give its rows the value itself (the catalog says which columns hold a value, as while streaming).
     * Otherwise, and for a statement that retypes (a trigger installed before it told rewrites says none), the rows may
     * have been rewritten: copied again. A keyless
     * table logged "cannot copy it again" for a rename made while running and followed after a restart.
     */
    private Rewrite toldSinceWritten(RelationInfo after) {
        io.millrace.core.schema.SchemaChange ddl = after.ddl();
        if (ddl == null || !ddl.exact() || ddl.rewritten() || ddl.before() == null || ddl.ddl() == null
                || RETYPE.matcher(ddl.ddl()).find()) {
            // not told, or told by a trigger that may not say a rewrite (installed before table_rewrite was told): a
            // column retyped may have had its values rewritten (USING)
            return new Rewrite("its columns changed while Millrace was stopped (the destinations' copies were written in another"
                    + " shape), which may have rewritten its rows", false);
        }
        List<String> added = ddl.columns().stream().filter(c -> !ddl.before().containsKey(c.attnum()))
                .map(io.millrace.core.schema.SchemaChange.Column::name).toList();
        List<String> copy;
        try {
            copy = filledForACopy(after, added, ddl); // as while streaming
        } catch (SQLException e) {
            throw PgErrors.translate("reading the columns of " + after.table(), e);
        }
        if (copy.isEmpty()) {
            return null;
        }
        return new Rewrite("column(s) " + copy + " added with a value for existing rows", copy.stream().allMatch(n -> constant(ddl, n)));
    }

    /**
     * Of the columns {@code added} to {@code rel}, those the catalog says hold a value for the rows there (a volatile default
     * rewrote them) that the destinations do not all give their rows themselves: a constant default (PostgreSQL's "missing"
     * value) the event trigger told ({@code told}, null when it did not) is left out when every destination fills it
     * (Sink#fillsAddedColumnDefaults); jsonl, Kafka and a user's destination get the old rows again with it.
     */
    private List<String> filledForACopy(RelationInfo rel, List<String> added, io.millrace.core.schema.SchemaChange told)
            throws SQLException {
        List<String> filled = added.isEmpty() ? List.of() : ctx.assemblerCatalog.read(c -> Catalog.filledColumns(c, rel.oid(), added));
        if (told == null || !everyDestinationFillsDefaults()) {
            return filled;
        }
        return filled.stream().filter(n -> !constant(told, n)).toList();
    }

    /** Whether the trigger's account {@code ddl} says column {@code name} was added with a constant default. */
    private static boolean constant(io.millrace.core.schema.SchemaChange ddl, String name) {
        io.millrace.core.schema.SchemaChange.Column col = ddl.column(name);
        return col != null && col.missing();
    }

    /** A statement that may retype a column ({@code ALTER COLUMN … TYPE}, {@code SET DATA TYPE}). */
    private static final java.util.regex.Pattern RETYPE = java.util.regex.Pattern.compile("(?i)\\bTYPE\\b");

    /**
     * Whether {@code rel} describes a partition, not a captured table: pgoutput describes a partition published through its
     * root (publish_via_partition_root) after the root, in each transaction that changes it after a schema change of the
     * root, though its changes come as the root's. Taken for a table of its own, a column added to the root copied the
     * partition again as a table of its own into every destination (found by a user: {@code public.ev_2023_b} created
     * beside {@code public.ev}, and never updated after). Assembler thread.
     */
    private boolean partitionOfACapturedRoot(RelationInfo rel) {
        if (ctx.watch.captures(rel.oid())) {
            return false;
        }
        try {
            return ctx.assemblerCatalog.read(c -> Catalog.isPartition(c, rel.oid()));
        } catch (java.sql.SQLException e) {
            throw PgErrors.translate("looking up table " + rel.table(), e);
        }
    }

    /**
     * The columns of {@code after} that have another attribute number {@code now} than {@code old}: dropped and added again
     * under the same name, which a Relation message cannot show (the same names and types). Their values are gone in the
     * source (NULL, or the new column's default), while the destinations keep the old ones: found by a DBA, both
     * destinations silently kept them. Empty when the numbers before are not known.
     */
    private static List<String> replaced(Map<String, Integer> old, Map<String, Integer> now, RelationInfo after) {
        if (old == null || now == null) {
            return List.of();
        }
        return after.columns().stream().map(ColumnInfo::name)
                .filter(n -> old.containsKey(n) && now.containsKey(n) && !old.get(n).equals(now.get(n))).toList();
    }

    private static String abbreviated(String ddl) {
        String one = ddl.strip().replaceAll("\\s+", " ");
        return one.length() <= 200 ? one : one.substring(0, 200) + "…";
    }

    /** Why the change from {@code before} to {@code after} rewrote existing rows without change events, or null. */
    /**
     * Why a table's existing rows changed without change events, for the log; and whether that is only columns added with a
     * constant default, as the event trigger told them (the postgres and DuckDB destinations give their rows the value
     * themselves).
     */
    private record Rewrite(String why, boolean constantDefaultsOnly) {
    }

    private boolean everyDestinationFillsDefaults() {
        List<io.millrace.core.sink.Sink> sinks = ctx.sinks;
        return !sinks.isEmpty() && sinks.stream().allMatch(io.millrace.core.sink.Sink::fillsAddedColumnDefaults);
    }

    private Rewrite rewrittenWithoutEvents(RelationInfo before, RelationInfo after) {
        ShapeChange change = ShapeChange.between(before, after);
        List<String> retyped = change.retyped();
        List<String> added = change.added().stream().map(ColumnInfo::name).toList();
        boolean misread;
        List<String> filled;
        List<String> replaced;
        try {
            Map<String, Integer> old = ctx.watch.attributeNumbers(after.oid());
            // a column renamed, or dropped and another added in its place?
            misread = ctx.assemblerCatalog.read(c -> ctx.watch.misread(c, before, after, change));
            // the event trigger told each rename, drop and add: the destinations follow them exactly (a column dropped and added
            // again under its name loses its values there too), so other attribute numbers under a name ask for no copy (a
            // user's RENAME COLUMN k2 TO k2old; ADD COLUMN k2 had a keyless table named as one that could not be copied again)
            replaced = change.exact() ? List.of() : replaced(old, ctx.watch.attributeNumbers(after.oid()), after);
            filled = filledForACopy(after, added, change.exact() ? change.ddl() : null);
        } catch (SQLException e) {
            throw PgErrors.translate("reading the columns of " + after.table(), e);
        }
        List<String> reasons = new ArrayList<>();
        if (!replaced.isEmpty()) {
            reasons.add("column(s) " + replaced + " at other attribute numbers under the same names: dropped and added again (their old"
                    + " values gone in the source), or names swapped by renames");
        }
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
        if (reasons.isEmpty() && change.exact() && change.ddl().rewritten()) {
            // told by the trigger's table_rewrite: e.g. ALTER COLUMN n TYPE numeric(14,4) USING n * 2 to the type it had, which
            // no Relation message shows (a user's destinations kept every old value, with no log line)
            reasons.add("its rows rewritten by " + (change.ddl().ddl() == null ? change.ddl().command() : "'" + abbreviated(change.ddl().ddl()) + "'"));
        }
        boolean constantOnly = reasons.size() == 1 && !filled.isEmpty() && change.exact()
                && filled.stream().allMatch(n -> constant(change.ddl(), n));
        return reasons.isEmpty() ? null : new Rewrite(String.join(" and ", reasons), constantOnly);
    }
}
