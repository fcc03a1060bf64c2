package io.millrace.pipeline;

import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.SchemaChange;
import io.millrace.core.schema.TypeResolver;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * Gives every relation of the stream the key Millrace uses for it: the primary key (or replica identity index).
 * pgoutput flags every column as "key" under REPLICA IDENTITY FULL; keyed by all columns, an update would look like a new
 * row to a destination. So for such relations the key flags are taken from the catalog instead.
 *
 * <p>The key is read when the Relation message arrives ({@link #described}), before the rows it describes are framed,
 * and it is versioned with the relation: pgoutput describes a table again after its primary key changed, so a key
 * changed while streaming takes effect at the Relation message after the change, for the rows after it. With the DDL
 * event trigger the key comes with the DDL, in stream order ({@link SchemaChange#key}): exact at any lag. Otherwise it
 * is read from the catalog, which holds the key of now, not of the message's position: a stream behind a key change of
 * a REPLICA IDENTITY FULL table keys the rows before the change by the new key (docs/ARCHITECTURE.md). What the catalog says is checked against the
 * message: a key naming a column the message does not have (added since) is not used; the relation is keyless then,
 * which REPLICA IDENTITY FULL allows (its old rows are whole).
 *
 * <p>Pipeline-thread only (the assembler's).
 */
final class RelationKeys {
    private static final Logger LOG = LoggerFactory.getLogger(RelationKeys.class);
    private final IntFunction<List<String>> keyLookup;
    private final TypeResolver types;
    /**
     * The relation this gave out last, by oid, so that the rows it describes are not looked up again (INV: BOUNDED: one
     * per table of REPLICA IDENTITY FULL).
     */
    private final Map<Integer, RelationInfo> given = new HashMap<>();

    /** @param keyLookup relation oid → key column names from the catalog now (empty when the table has no key) */
    RelationKeys(IntFunction<List<String>> keyLookup, TypeResolver types) {
        this.keyLookup = keyLookup;
        this.types = types;
    }

    /** The relation of a Relation message, with its key read now (REPLICA IDENTITY FULL); others as they are. */
    RelationInfo described(RelationInfo streamed) {
        if (streamed.replicaIdentity() != 'f' || given.get(streamed.oid()) == streamed) {
            return streamed;
        }
        SchemaChange told = streamed.ddl();
        List<String> keys = told != null && told.key() != null ? told.key() : keyLookup.apply(streamed.oid());
        List<String> missing = keys.stream().filter(k -> streamed.columns().stream().noneMatch(c -> c.name().equals(k))).toList();
        if (!missing.isEmpty()) {
            LOG.warn("{}: the catalog's key ({}) names column(s) {} the stream does not show yet (added since): its rows are"
                    + " keyed by no column until the stream reaches the change", streamed.table(), String.join(", ", keys), missing);
            keys = List.of();
        }
        List<ColumnInfo> cols = new ArrayList<>(streamed.columnCount());
        for (ColumnInfo c : streamed.columns()) {
            cols.add(new ColumnInfo(c.name(), c.type(), c.typeMod(), keys.contains(c.name())));
        }
        RelationInfo keyed = new RelationInfo(streamed.oid(), streamed.table(), streamed.replicaIdentity(), cols, types, streamed.ddl());
        given.put(keyed.oid(), keyed);
        return keyed;
    }

    /**
     * The relation a row or truncate refers to: one from a Relation message was keyed already ({@link #described}); one
     * the framer knew otherwise is keyed now.
     */
    RelationInfo of(RelationInfo streamed) {
        return described(streamed);
    }
}
