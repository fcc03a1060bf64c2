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

    /**
     * SQL turning {@code expr} (a VARCHAR holding PostgreSQL text) into a value of {@code type}. A numeric(p,s) column
     * may hold NaN (PostgreSQL allows it under a precision, not infinities), which DuckDB's DECIMAL has no value for: it is
     * stored as NULL, and {@link #append} logs it once per run. Before, the cast failed, the batch with it, and every
     * restart at the same change: the pipeline stopped for good (found by a user).
     */
    static String fromText(String type, String expr) {
        if (type.startsWith("DECIMAL")) {
            return "CAST(NULLIF(" + expr + ", 'NaN') AS " + type + ")";
        }
        return switch (type) {
            case "VARCHAR" -> expr;
            case "BLOB" -> "from_hex(substr(" + expr + ", 3))"; // bytea text is hex: \x0a1b
            default -> "CAST(" + expr + " AS " + type + ")";
        };
    }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(DuckTypes.class);
    private static final java.util.concurrent.atomic.AtomicBoolean NAN_TOLD = new java.util.concurrent.atomic.AtomicBoolean();

    /**
     * How a value of a column of DuckDB type {@code type} is staged: typed types travel through the
     * Appender as their Java value ({@code h} SMALLINT, {@code i} INTEGER, {@code l} BIGINT, {@code b}
     * BOOLEAN, {@code f} REAL, {@code d} DOUBLE, {@code u} UUID), everything else as PostgreSQL text
     * ({@code t}; {@code n} for a DECIMAL, whose NaN the cast makes NULL) that the merge casts with {@link #fromText}.
     */
    static char stageKind(String type) {
        return switch (type) {
            case "SMALLINT" -> 'h';
            case "INTEGER" -> 'i';
            case "BIGINT" -> 'l';
            case "BOOLEAN" -> 'b';
            case "REAL" -> 'f';
            case "DOUBLE" -> 'd';
            case "UUID" -> 'u';
            case "DATE", "TIMESTAMP", "TIMESTAMPTZ" -> 'D'; // text too, in DuckDB's form of a BC year (dateTimeText)
            default -> type.startsWith("DECIMAL") ? 'n' : 't'; // n: text too, cast with NaN as NULL (fromText)
        };
    }

    /** The staging column's type for a column of DuckDB type {@code type}. */
    static String stageType(String type) {
        return textStaged(stageKind(type)) ? "VARCHAR" : type;
    }

    /** SQL turning staging column {@code expr} into a value of {@code type}. */
    static String fromStage(String type, String expr) {
        return textStaged(stageKind(type)) ? fromText(type, expr) : expr;
    }

    /** Whether values of {@code kind} travel as PostgreSQL text (a DECIMAL's too). */
    private static boolean textStaged(char kind) {
        return kind == 't' || kind == 'n' || kind == 'D';
    }

    /** The last year DuckDB's TIMESTAMP holds (294247 AD, 294246 whole); PostgreSQL's goes to 294276 AD. */
    private static final int LAST_TIMESTAMP_YEAR = 294246;
    private static final java.util.concurrent.atomic.AtomicBoolean RANGE_TOLD = new java.util.concurrent.atomic.AtomicBoolean();

    /**
     * The text DuckDB reads as the same date or time as PostgreSQL's text {@code pg} of a column of DuckDB type {@code type}
     * (DATE, TIMESTAMP, TIMESTAMPTZ): a BC year as DuckDB writes it ({@code 0044-03-15 (BC) 12:00:00+00}, where PostgreSQL
     * writes {@code 0044-03-15 12:00:00+00 BC}). Before, DuckDB read a BC date as the same year AD — 87 years off for 44 BC,
     * silently — and refused a BC timestamp, which stopped the pipeline at every restart (found by a DBA). Null for a
     * timestamp after DuckDB's last one, which it cannot hold (logged once); infinities pass as they are.
     */
    static String dateTimeText(String type, String pg) {
        if (!"DATE".equals(type) && pg.length() > 7 && Character.isDigit(pg.charAt(0))) {
            int dash = pg.indexOf('-');
            if (dash > 5 && !pg.endsWith(" BC") && Integer.parseInt(pg.substring(0, dash)) > LAST_TIMESTAMP_YEAR) {
                if (RANGE_TOLD.compareAndSet(false, true)) {
                    LOG.warn("a timestamp after DuckDB's last one (294247 AD) is stored as NULL in DuckDB: {} (told once)", pg);
                }
                return null;
            }
        }
        if (!pg.endsWith(" BC")) {
            return pg;
        }
        String s = pg.substring(0, pg.length() - 3);
        int space = s.indexOf(' ');
        return space < 0 ? s + " (BC)" : s.substring(0, space) + " (BC)" + s.substring(space);
    }

    /** The text a value of a text-staged column is staged as ({@link #stageKind}), or null when DuckDB cannot hold it. */
    static String stagedText(String type, io.millrace.core.types.TypeCodec codec, Object v) {
        String text = codec.toPgText(v);
        return stageKind(type) == 'D' ? dateTimeText(type, text) : text;
    }

    /** Appends one non-null value of a column of DuckDB type {@code type} the way {@link #stageKind} says. */
    static void append(org.duckdb.DuckDBAppender app, char kind, String type, io.millrace.core.types.TypeCodec codec, Object v)
            throws java.sql.SQLException {
        switch (kind) {
            case 'h' -> app.append(((Number) v).shortValue());
            case 'i' -> app.append(((Number) v).intValue());
            case 'l' -> app.append(((Number) v).longValue());
            case 'b' -> app.append(((Boolean) v).booleanValue());
            case 'f' -> app.append(((Number) v).floatValue());
            case 'd' -> app.append(((Number) v).doubleValue());
            case 'u' -> app.append((java.util.UUID) v);
            case 'n' -> {
                if (v == io.millrace.core.types.PgNumericSpecial.NAN && NAN_TOLD.compareAndSet(false, true)) {
                    LOG.warn("a numeric NaN is stored as NULL in DuckDB where its column is a DECIMAL (numeric with a precision"
                            + " in the source): DuckDB's DECIMAL has no NaN (told once)");
                }
                app.append(codec.toPgText(v));
            }
            case 'D' -> {
                String text = dateTimeText(type, codec.toPgText(v));
                if (text == null) {
                    app.appendNull();
                } else {
                    app.append(text);
                }
            }
            default -> app.append(codec.toPgText(v));
        }
    }
}
