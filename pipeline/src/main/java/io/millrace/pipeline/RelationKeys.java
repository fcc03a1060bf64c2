package io.millrace.pipeline;

import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TypeResolver;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * Gives every relation of the stream the key Millrace uses for it: the primary key (or replica
 * identity index). pgoutput flags every column as "key" under REPLICA IDENTITY FULL; keyed by all
 * columns, an update would look like a new row to a destination. So for such relations the key
 * flags are taken from the catalog instead. Pipeline-thread only.
 */
final class RelationKeys {
    private final IntFunction<List<String>> keyLookup;
    private final TypeResolver types;
    private final Map<RelationInfo, RelationInfo> fixed = new IdentityHashMap<>();

    /** @param keyLookup relation oid → key column names from the catalog (empty when the table has no key) */
    RelationKeys(IntFunction<List<String>> keyLookup, TypeResolver types) {
        this.keyLookup = keyLookup;
        this.types = types;
    }

    RelationInfo of(RelationInfo streamed) {
        if (streamed.replicaIdentity() != 'f') {
            return streamed;
        }
        return fixed.computeIfAbsent(streamed, r -> {
            List<String> keys = keyLookup.apply(r.oid());
            List<ColumnInfo> cols = new ArrayList<>(r.columnCount());
            for (ColumnInfo c : r.columns()) {
                cols.add(new ColumnInfo(c.name(), c.type(), c.typeMod(), keys.contains(c.name())));
            }
            return new RelationInfo(r.oid(), r.table(), r.replicaIdentity(), cols, types, r.ddl());
        });
    }
}
