package io.millrace.sink.duckdb;

import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.KeyedReducer;
import io.millrace.core.types.UnchangedToast;

/**
 * The keyed reduction ({@link KeyedReducer}: its rules) as the DuckDB destination keeps it, to be merged set-wise:
 * values are the codecs' Java values; {@code null} is SQL NULL and {@link #UNCHANGED} marks an unchanged TOAST value.
 * Keys are compared by their PostgreSQL text form ({@code toPgText}), which denotes the value exactly.
 */
final class Reduction extends KeyedReducer<Reduction.Row> {
    /** Marks an unchanged TOAST value (compared by identity). */
    static final Object UNCHANGED = UnchangedToast.INSTANCE;

    /** One key's outcome. */
    static final class Row {
        /** Delete: the key values (key order). Otherwise all column values. */
        final Object[] vals;
        /** Partial row: the key (key order) of the pre-run destination row holding the unchanged values; else null. */
        final Object[] from;
        final boolean delete;

        Row(Object[] vals, Object[] from, boolean delete) {
            this.vals = vals;
            this.from = from;
            this.delete = delete;
        }
    }

    private final int[] keyIdx;
    int deletes;
    int partials;

    Reduction(RelationInfo rel, TableRef target, int expected) {
        super(rel, target, expected);
        this.keyIdx = rel.keyIndexes();
    }

    /** Counts outcomes; call once after the last {@link #add}. */
    void finish() {
        for (Row r : rows().values()) {
            if (r.delete) {
                deletes++;
            } else if (r.from != null) {
                partials++;
            }
        }
    }

    @Override
    protected Object encode(int i, Object value) {
        return value;
    }

    @Override
    protected Object sqlNull() {
        return null;
    }

    @Override
    protected Object unchanged() {
        return UNCHANGED;
    }

    @Override
    protected String keyText(int j, Object kept) {
        return rel.codec(keyIdx[j]).toPgText(kept);
    }

    @Override
    protected Row complete(Object[] vals) {
        return new Row(vals, null, false);
    }

    @Override
    protected Row partial(Object[] vals, Object[] from) {
        return new Row(vals, from, false);
    }

    @Override
    protected Row delete(Object[] key) {
        return new Row(key, null, true);
    }

    @Override
    protected boolean isDelete(Row row) {
        return row.delete;
    }

    @Override
    protected Object[] values(Row row) {
        return row.vals;
    }

    @Override
    protected Object[] from(Row row) {
        return row.from;
    }
}
