package io.millrace.api;

import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.types.UnchangedToast;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One row image of a {@link Change}: the values of the table's columns, in the table's column order, as Java values
 * ({@code int4} an {@link Integer}, {@code text} a {@link String}, {@code numeric} a {@link java.math.BigDecimal},
 * {@code timestamptz} an {@link java.time.OffsetDateTime}, ...; SQL NULL is {@code null}).
 *
 * <p>A column of an update's new image whose value was stored out of line (TOAST) and did not change is not sent by
 * PostgreSQL: {@link #unchanged} is then true and {@link #get} refuses it. Immutable; any thread.
 */
public final class Row {
    private final RelationInfo relation;
    private final Object[] values;

    Row(RelationInfo relation, Object[] values) {
        this.relation = relation;
        this.values = values;
    }

    /** The column names, in the table's order. */
    public List<String> columns() {
        List<String> names = new ArrayList<>(relation.columnCount());
        for (ColumnInfo c : relation.columns()) {
            names.add(c.name());
        }
        return Collections.unmodifiableList(names);
    }

    /** The value of the {@code i}-th column (from 0). */
    public Object get(int i) {
        Object v = values[i];
        if (v == UnchangedToast.INSTANCE) {
            throw new IllegalStateException("column " + relation.column(i).name() + " of " + relation.table()
                    + " is an unchanged TOAST value, which PostgreSQL does not send; check unchanged() first");
        }
        return v;
    }

    /** The value of column {@code column}. */
    public Object get(String column) {
        return get(index(column));
    }

    /** Whether the column's value is an unchanged TOAST value, not sent by the source (see the class comment). */
    public boolean unchanged(String column) {
        return values[index(column)] == UnchangedToast.INSTANCE;
    }

    /** The columns and their values, in the table's order, leaving out {@linkplain #unchanged unchanged} ones. */
    public Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < values.length; i++) {
            if (values[i] != UnchangedToast.INSTANCE) {
                m.put(relation.column(i).name(), values[i]);
            }
        }
        return Collections.unmodifiableMap(m);
    }

    private int index(String column) {
        for (int i = 0; i < relation.columnCount(); i++) {
            if (relation.column(i).name().equals(column)) {
                return i;
            }
        }
        throw new IllegalArgumentException("table " + relation.table() + " has no column '" + column + "' (columns: " + columns() + ")");
    }

    @Override
    public String toString() {
        return toMap().toString();
    }
}
