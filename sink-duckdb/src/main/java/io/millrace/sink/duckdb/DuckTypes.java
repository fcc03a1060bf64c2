package io.millrace.sink.duckdb;

import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.TypeInfo;
import io.millrace.core.types.Codecs;

/**
 * The DuckDB column type of a source column, and the SQL that turns a value's PostgreSQL text form
 * (what {@link io.millrace.core.types.TypeCodec#toPgText} renders, as staged) into that type.
 *
 * <p>Types DuckDB has an exact counterpart for keep their meaning; everything else (arrays, intervals,
 * network types, enums, user types, unconstrained or very wide numerics) is stored as VARCHAR holding
 * PostgreSQL's text form, which loses nothing and can be cast by the reader.
 */
final class DuckTypes {
    private DuckTypes() {
    }

    static String sqlType(ColumnInfo c) {
        TypeInfo t = c.type();
        int typmod = c.typeMod();
        if (t != null && t.isDomain()) {
            t = t.baseOid() == 0 ? null : Codecs.builtin(t.baseOid());
            typmod = -1;
        }
        if (t == null || t.isArray() || !"pg_catalog".equals(t.schema()) || t.typtype() != 'b') {
            return "VARCHAR";
        }
        return switch (t.name()) {
            case "int2" -> "SMALLINT";
            case "int4" -> "INTEGER";
            case "int8", "oid" -> "BIGINT";
            case "bool" -> "BOOLEAN";
            case "float4" -> "REAL";
            case "float8" -> "DOUBLE";
            case "numeric" -> numeric(typmod);
            case "bytea" -> "BLOB";
            case "uuid" -> "UUID";
            case "date" -> "DATE";
            case "time" -> "TIME";
            case "timestamp" -> "TIMESTAMP";
            case "timestamptz" -> "TIMESTAMPTZ";
            case "json", "jsonb" -> "JSON";
            default -> "VARCHAR";
        };
    }

    /** numeric(p,s) with 1 ≤ p ≤ 38 and 0 ≤ s ≤ p is DECIMAL(p,s); other numerics keep their exact text. */
    private static String numeric(int typmod) {
        if (typmod < 4) {
            return "VARCHAR";
        }
        int t = typmod - 4;
        int precision = (t >> 16) & 0xffff;
        int scale = ((t & 0x7ff) ^ 1024) - 1024;
        if (precision < 1 || precision > 38 || scale < 0 || scale > precision) {
            return "VARCHAR";
        }
        return "DECIMAL(" + precision + "," + scale + ")";
    }

    /** SQL turning {@code expr} (a VARCHAR holding PostgreSQL text) into a value of {@code type}. */
    static String fromText(String type, String expr) {
        return switch (type) {
            case "VARCHAR" -> expr;
            case "BLOB" -> "from_hex(substr(" + expr + ", 3))"; // bytea text is hex: \x0a1b
            default -> "CAST(" + expr + " AS " + type + ")";
        };
    }
}
