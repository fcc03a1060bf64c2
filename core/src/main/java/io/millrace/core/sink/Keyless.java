package io.millrace.core.sink;

import io.millrace.core.MillraceException;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.types.UnchangedToast;

/**
 * The keyless path of a table destination, shared by the postgres and DuckDB sinks: a table without a key
 * ({@link Runs#keyed} false) takes its inserts in bulk and its updates and deletes one by one, in order, each on one
 * row whose columns all equal the old image ({@link #sql}); the checks of the row images on that path
 * ({@link #image}, {@link #noOldRow}, {@link #unchangedInInsert}). What differs between databases is a {@link Dialect}.
 */
public final class Keyless {
    private Keyless() {
    }

    /** How one database names a row and casts a parameter (given as text) to a column's type. */
    public interface Dialect {
        /**
         * The pseudo-columns that identify a row, comma-separated ({@code rowid}; {@code tableoid, ctid}: a {@code ctid} is
         * unique only within one partition, or one table of an inheritance tree).
         */
        String rowId();

        /** The expression that sets column {@code i} from one text parameter ({@code ?}). */
        String value(int i);

        /** The condition that column {@code i} holds what one text parameter ({@code ?}) denotes, NULL included. */
        String matches(int i);

        /** {@code table} in SQL ({@code schema.table}; DuckDB's with its catalog). */
        default String table(TableRef table) {
            return table.sql();
        }
    }

    /**
     * {@code UPDATE … SET <columns not unchanged TOAST> … WHERE (<rowId>) = (SELECT <rowId> … one row whose columns
     * (those not unchanged TOAST in before) all match)}, or the {@code DELETE} of that row when {@code after} is null.
     * Parameters: the values of {@code after} set, then those of {@code before} matched, in column order.
     */
    public static String sql(TableRef target, RelationInfo rel, Object[] before, Object[] after, Dialect dialect) {
        StringBuilder sql = new StringBuilder();
        if (after == null) {
            sql.append("DELETE FROM ").append(dialect.table(target));
        } else {
            sql.append("UPDATE ").append(dialect.table(target)).append(" SET ");
            boolean first = true;
            for (int i = 0; i < rel.columnCount(); i++) {
                if (after[i] != UnchangedToast.INSTANCE) {
                    sql.append(first ? "" : ", ").append(Ident.quote(rel.column(i).name())).append(" = ").append(dialect.value(i));
                    first = false;
                }
            }
        }
        String rowId = dialect.rowId();
        sql.append(" WHERE (").append(rowId).append(") = (SELECT ").append(rowId).append(" FROM ").append(dialect.table(target)).append(" WHERE ");
        boolean first = true;
        for (int i = 0; i < rel.columnCount(); i++) {
            if (before[i] == UnchangedToast.INSTANCE) {
                continue;
            }
            sql.append(first ? "" : " AND ").append(dialect.matches(i));
            first = false;
        }
        if (first) {
            sql.append("true");
        }
        return sql.append(" LIMIT 1)").toString();
    }

    /** {@code values}, checked to be an image of {@code rel}'s columns ({@code which}: before or after). */
    public static Object[] image(ChangeEvent e, RelationInfo rel, Object[] values, String which) {
        if (values == null || values.length != rel.columnCount()) {
            throw new MillraceException(MillraceException.Kind.SINK, "table " + rel.table() + ": change at "
                    + e.position() + " (" + e.op().code() + ") carries " + (values == null ? "no " + which + " image"
                    : "an " + which + " image of " + values.length + " values for " + rel.columnCount() + " columns"));
        }
        return values;
    }

    /** An insert cannot carry an unchanged TOAST value: there is no row to keep it from. */
    public static MillraceException unchangedInInsert(TableRef target, ChangeEvent e) {
        return new MillraceException(MillraceException.Kind.SINK, "table " + target + ": insert at " + e.position()
                + " carries an unchanged TOAST value");
    }

    /** An update or delete of a table without a key that carries no old row cannot find its row. */
    public static MillraceException noOldRow(TableRef target, RelationInfo rel, ChangeEvent e) {
        return new MillraceException(MillraceException.Kind.SINK, "table " + target + ": "
                + (e.op() == Op.UPDATE ? "update" : "delete") + " at " + e.position()
                + " carries no old row and the table has no key, so the row cannot be found."
                + " Fix: ALTER TABLE " + rel.table().sql() + " REPLICA IDENTITY FULL on the source"
                + " (or give it a primary key), then re-snapshot it.");
    }
}
