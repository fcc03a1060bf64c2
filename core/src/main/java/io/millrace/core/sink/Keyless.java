package io.millrace.core.sink;

import io.millrace.core.MillraceException;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.types.UnchangedToast;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The keyless path of a table destination, shared by the postgres and DuckDB sinks. A table without a key
 * ({@link Runs#keyed} false) is a multiset of rows: an update takes one row equal to its old image away and adds its new
 * image, a delete takes one away, and which of two equal rows goes cannot be told. A short run is applied one change at
 * a time, in order, each on one row whose columns all equal the old image ({@link #sql}); a long one by its net effect
 * ({@link #net}): the rows it takes away in one statement, then the rows it adds in bulk, so the table is read once per
 * run instead of once per change (a 500,000-row UPDATE of a keyless table applied 77,000 changes in 8 minutes, each
 * a scan of the table). The checks of the row images ({@link #image}, {@link #noOldRow}, {@link #unchangedInInsert})
 * are the same on both. What differs between databases is a {@link Dialect}.
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

    /** Runs with fewer updates and deletes than this are applied one change at a time ({@link #sql}). */
    public static final int NET_FROM = 32;

    /** A row image and how many times it is added or taken away. */
    public record Counted(Object[] values, int times) {
    }

    /** A run's net effect on a table without a key: rows to take away, then rows to add, each with its count. */
    public record Net(List<Counted> added, List<Counted> removed) {
        /** How many rows {@link #removed} takes away in all. */
        public long removedRows() {
            long n = 0;
            for (Counted c : removed) {
                n += c.times();
            }
            return n;
        }
    }

    /**
     * The net effect of {@code run} (inserts, updates and deletes of one table without a key) as a multiset: each row
     * image, by the text of its values, counted +1 where the run adds it and -1 where it takes it away; what one change
     * adds and a later one takes away cancels out. An unchanged TOAST value in a new image is the old image's value (a
     * REPLICA IDENTITY FULL old row carries every value). Null when the run has fewer than {@link #NET_FROM} updates and
     * deletes, or an old image lacks a value (an unchanged TOAST value in it): apply it one change at a time.
     * INV: ORDER — the sink still receives the run in WAL order; what it writes is the order's outcome, which for a multiset
     * does not depend on the order within the run (PostgresSinkIT and DuckDbSinkIT compare it with the changes applied one
     * at a time). Taking the rows away, then adding the others, gives the same table as applying the changes in order, wherever each
     * old image had its row: a row taken away on balance was there before the run (what the run adds and takes away
     * cancels out). Where one was not (the destination already differs from the source) it is counted as missed either
     * way, but here the update's new row is still added; and a row the run takes away and adds again is left as the
     * destination has it (in order, a missed delete was warned of and the insert added the row). Away first, as the changes did: a unique index a user put on the
     * destination's table does not see an old and a new row at once (a value moved from one row to another).
     */
    public static Net net(TableRef target, RelationInfo rel, List<ChangeEvent> run) {
        int changes = 0;
        for (ChangeEvent e : run) {
            if (e.op() == Op.UPDATE || e.op() == Op.DELETE) {
                changes++;
                if (e.before() == null) {
                    throw noOldRow(target, rel, e);
                }
                for (Object v : image(e, rel, e.before(), "before")) {
                    if (v == UnchangedToast.INSTANCE) {
                        return null;
                    }
                }
            }
        }
        if (changes < NET_FROM) {
            return null;
        }
        Map<List<String>, Object[]> images = new LinkedHashMap<>();
        Map<List<String>, Integer> counts = new HashMap<>();
        for (ChangeEvent e : run) {
            switch (e.op()) {
                case CREATE, READ -> {
                    Object[] after = image(e, rel, e.after(), "after");
                    for (Object v : after) {
                        if (v == UnchangedToast.INSTANCE) {
                            throw unchangedInInsert(target, e);
                        }
                    }
                    count(rel, after, 1, images, counts);
                }
                case UPDATE -> {
                    Object[] before = e.before();
                    Object[] after = image(e, rel, e.after(), "after").clone();
                    for (int i = 0; i < after.length; i++) {
                        if (after[i] == UnchangedToast.INSTANCE) {
                            after[i] = before[i];
                        }
                    }
                    count(rel, before, -1, images, counts);
                    count(rel, after, 1, images, counts);
                }
                case DELETE -> count(rel, e.before(), -1, images, counts);
                default -> throw new MillraceException(MillraceException.Kind.INTERNAL, "unexpected " + e.op() + " in a run of " + target);
            }
        }
        List<Counted> added = new ArrayList<>();
        List<Counted> removed = new ArrayList<>();
        for (Map.Entry<List<String>, Object[]> image : images.entrySet()) {
            int c = counts.get(image.getKey());
            if (c > 0) {
                added.add(new Counted(image.getValue(), c));
            } else if (c < 0) {
                removed.add(new Counted(image.getValue(), -c));
            }
        }
        return new Net(added, removed);
    }

    private static void count(RelationInfo rel, Object[] values, int by, Map<List<String>, Object[]> images,
                              Map<List<String>, Integer> counts) {
        List<String> text = new ArrayList<>(values.length);
        for (int i = 0; i < values.length; i++) {
            text.add(values[i] == null ? null : rel.codec(i).toPgText(values[i]));
        }
        images.putIfAbsent(text, values);
        counts.merge(text, by, Integer::sum);
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

    /**
     * What a destination logs when {@code missed} updates and deletes of {@code target} matched no row there (it no longer
     * matches the source), with the fix.
     */
    public static String missed(String destination, long missed, TableRef target, RelationInfo rel) {
        return "destination '" + destination + "': " + missed + " update(s)/delete(s) of table " + target + " (no key) matched no row in"
                + " the destination; it no longer matches the source. A table without a key cannot be copied while streaming: give source"
                + " table " + rel.table() + " a primary key and copy it again (millrace snapshot CONFIG --table), or start the pipeline over"
                + " (millrace reset, then run: an initial snapshot copies tables without a key)";
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
