package io.millrace.core.sink;

import io.millrace.core.change.KeyBound;
import io.millrace.core.change.OnlineTask.KeyRange;
import io.millrace.core.schema.Ident;

import java.util.ArrayList;
import java.util.List;

/**
 * A key range as an SQL condition for a destination ({@link KeyedSink#keysIn}): row comparisons spelled out column by
 * column ({@code k1 > 'a' OR (k1 = 'a' AND k2 > 'b')}), so that each text literal is compared with one column and takes
 * its type, in PostgreSQL and in DuckDB (which does not cast a row of literals to a row of columns).
 */
public final class KeyRangeSql {
    private KeyRangeSql() {
    }

    /** The condition, or {@code TRUE} for the whole key space. */
    public static String where(List<String> keyColumns, KeyRange r) {
        return where(keyColumns, r, (i, text) -> Ident.literal(text));
    }

    /**
     * The condition, each bound value (PostgreSQL's text for key column {@code i}) written by {@code literal}: for a
     * destination whose own literal syntax for a type differs from PostgreSQL's text (DuckDB reads {@code '\x0a'} as a
     * BLOB of four bytes, not one).
     */
    public static String where(List<String> keyColumns, KeyRange r, java.util.function.BiFunction<Integer, String, String> literal) {
        List<String> parts = new ArrayList<>();
        if (r.lo() instanceof KeyBound.Key lo) {
            parts.add(greater(keyColumns, lo.values(), literal));
        }
        if (r.hi() instanceof KeyBound.Key hi) {
            parts.add("NOT " + greater(keyColumns, hi.values(), literal));
        }
        return parts.isEmpty() ? "TRUE" : String.join(" AND ", parts);
    }

    /** {@code (cols) > (values)}, lexicographically. */
    private static String greater(List<String> cols, List<String> values, java.util.function.BiFunction<Integer, String, String> literal) {
        List<String> or = new ArrayList<>();
        for (int i = 0; i < cols.size(); i++) {
            StringBuilder and = new StringBuilder("(");
            for (int j = 0; j < i; j++) {
                and.append(Ident.quote(cols.get(j))).append(" = ").append(literal.apply(j, values.get(j))).append(" AND ");
            }
            and.append(Ident.quote(cols.get(i))).append(" > ").append(literal.apply(i, values.get(i))).append(')');
            or.add(and.toString());
        }
        return "(" + String.join(" OR ", or) + ")";
    }
}
