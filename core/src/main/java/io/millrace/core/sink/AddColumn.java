package io.millrace.core.sink;

import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TableRef;

import java.util.List;

/**
 * The SQL a table destination (postgres, DuckDB) runs for a column the source added with a constant default
 * ({@link io.millrace.core.schema.SchemaChange.Column#missing}): the rows already there take that value, as in the
 * source, and the column keeps no default of its own (the stream brings every later row's value).
 */
public final class AddColumn {
    private AddColumn() {
    }

    /** @param value the default's text form, or null for NULL */
    public static List<String> sql(TableRef target, String column, String type, String value) {
        return sql(target.sql(), column, type, value);
    }

    /** As above, the table as SQL names it ({@code target}: DuckDB's with its catalog). */
    public static List<String> sql(String target, String column, String type, String value) {
        String add = "ALTER TABLE " + target + " ADD COLUMN IF NOT EXISTS " + Ident.quote(column) + " " + type;
        if (value == null) {
            return List.of(add);
        }
        return List.of(add + " DEFAULT CAST(" + Ident.literal(value) + " AS " + type + ")",
                "ALTER TABLE " + target + " ALTER COLUMN " + Ident.quote(column) + " DROP DEFAULT");
    }
}
