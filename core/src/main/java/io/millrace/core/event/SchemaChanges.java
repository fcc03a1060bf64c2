package io.millrace.core.event;

import io.millrace.core.change.ChangeEvent;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.SchemaChange;

import java.util.HashMap;
import java.util.Map;

/**
 * Which schema-change events an event destination (Kafka, jsonl) writes, and before which change: one before the first
 * change of a table in each new shape (docs/EVENTS.md). With the DDL event trigger a new shape carries its
 * {@link SchemaChange} ({@link RelationInfo#ddl()}, exact, with the DDL), a table dropped too; without it, a streamed
 * change whose table's columns (or name) differ from the last streamed change of that table in this run is announced as
 * the two Relation messages show it ({@link SchemaChange#guessed}, not exact); the shape a snapshot read counts as the
 * earlier one for the table's first streamed change. Snapshot rows announce nothing without the trigger, and neither
 * does the first change of a table this run had not seen (after a restart: the shape may have changed while stopped).
 *
 * <p>Owned by the sink's writer thread; a sink made anew after a failure starts afresh (at least once, like the events).
 */
public final class SchemaChanges {
    /** The told change written last per table (INV: BOUNDED: one per table, not one per DDL ever written). */
    private final Map<Integer, SchemaChange> written = new HashMap<>();
    private final Map<Integer, RelationInfo> streamed = new HashMap<>();

    /** The relation and kind (snapshot or streamed) of the event before: the same again is never due (no lookup per row). */
    private RelationInfo lastRelation;
    private boolean lastSnapshot;

    /** The schema change to write before {@code e}, or null. */
    public SchemaChange due(ChangeEvent e) {
        RelationInfo rel = e.relation();
        if (rel == lastRelation && e.snapshot() == lastSnapshot) {
            return null; // the maps below already hold rel (and its told change) for this kind of event
        }
        lastRelation = rel;
        lastSnapshot = e.snapshot();
        SchemaChange told = rel.ddl();
        if (told != null) {
            if (!e.snapshot()) {
                streamed.put(rel.oid(), rel);
            }
            return written.put(rel.oid(), told) != told ? told : null;
        }
        if (e.snapshot()) {
            streamed.putIfAbsent(rel.oid(), rel); // the shape a copy read is where the stream's first change starts from
            return null;
        }
        RelationInfo last = streamed.put(rel.oid(), rel);
        if (last == null || last == rel || sameColumns(last, rel)) {
            return null;
        }
        if (streamed.size() > 4096) {
            streamed.clear(); // relations replaced by schema changes would otherwise stay reachable
            streamed.put(rel.oid(), rel);
        }
        return SchemaChange.guessed(last, rel);
    }

    /** Same name, and the same columns by name, type and modifier (key flags aside: a copy reads them from the catalog). */
    private static boolean sameColumns(RelationInfo a, RelationInfo b) {
        if (!a.table().equals(b.table()) || a.columnCount() != b.columnCount()) {
            return false;
        }
        for (int i = 0; i < a.columnCount(); i++) {
            var x = a.column(i);
            var y = b.column(i);
            if (!x.name().equals(y.name()) || x.typeMod() != y.typeMod() || (x.type() == null ? y.type() != null
                    : y.type() == null || x.type().oid() != y.type().oid())) {
                return false;
            }
        }
        return true;
    }
}
