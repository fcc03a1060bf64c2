package io.millrace.sink.postgres;

import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TypeInfo;
import io.millrace.core.types.Codecs;

import java.util.Set;

/**
 * The destination column type for a source column: built-in types keep their name and modifier
 * ({@code numeric(12,2)}, {@code varchar(40)}, {@code timestamptz(3)}, {@code interval day to second(3)}),
 * enums and unknown types become {@code text}, domains their base type, arrays of those arrays of
 * the mapped element. Types whose input refers to catalog objects of the source ({@code regclass},
 * {@code aclitem}, ...) become {@code text}, since those objects may not exist in the destination.
 */
final class TypeMapping {
    private TypeMapping() {
    }

    /** Built-in types whose values name source catalog objects or that have no usable input function. */
    private static final Set<String> AS_TEXT = Set.of(
            "regclass", "regproc", "regprocedure", "regoper", "regoperator", "regtype", "regconfig", "regdictionary",
            "regnamespace", "regrole", "regcollation", "aclitem", "pg_node_tree", "pg_ndistinct", "pg_dependencies",
            "pg_mcv_list", "pg_brin_bloom_summary", "pg_brin_minmax_multi_summary", "unknown");

    static String sqlType(ColumnInfo c) {
        return sqlType(c.type(), c.typeMod());
    }

    static String sqlType(TypeInfo t, int typmod) {
        if (t == null) {
            return "text";
        }
        if (t.isArray() && !isVector(t)) {
            TypeInfo element = element(t);
            // An array's typmod applies to its elements (varchar(10)[] has atttypmod 14).
            return (element == null || element.isArray() && !isVector(element) ? "text" : scalar(element, typmod)) + "[]";
        }
        return scalar(t, typmod);
    }

    /** int2vector and oidvector: arrays to the catalog, but types of their own with their own text form. */
    private static boolean isVector(TypeInfo t) {
        return "pg_catalog".equals(t.schema()) && (t.oid() == 22 || t.oid() == 30);
    }

    /**
     * The element type of an array: a built-in one from the codecs, else for an array in pg_catalog
     * the base type its name denotes ({@code _point} → {@code point}); null when unknown (enums, domains
     * and user types: their arrays become {@code text[]}).
     */
    private static TypeInfo element(TypeInfo array) {
        TypeInfo element = Codecs.builtin(array.elementOid());
        if (element == null && "pg_catalog".equals(array.schema()) && array.name().startsWith("_")) {
            element = new TypeInfo(array.elementOid(), "pg_catalog", array.name().substring(1), 'b', 'X', 0, 0);
        }
        return element;
    }

    private static String scalar(TypeInfo t, int typmod) {
        if (t.isDomain()) {
            TypeInfo base = t.baseOid() == 0 ? null : Codecs.builtin(t.baseOid());
            return base == null || base.isDomain() ? "text" : sqlType(base, -1);
        }
        if (t.isEnum() || !"pg_catalog".equals(t.schema()) || AS_TEXT.contains(t.name())) {
            return "text";
        }
        if (t.typtype() != 'b' && t.typtype() != 'r' && t.typtype() != 'm') {
            return "text"; // composites, pseudo types
        }
        return "pg_catalog." + Ident.quote(t.name()) + modifier(t.name(), typmod);
    }

    /** The type modifier in the form the type's {@code typmodin} reads, or "" (see PostgreSQL's *typmodout). */
    static String modifier(String typeName, int typmod) {
        if (typmod < 0) {
            return "";
        }
        switch (typeName) {
            case "numeric": {
                int t = typmod - 4;
                int precision = (t >> 16) & 0xffff;
                int scale = ((t & 0x7ff) ^ 1024) - 1024; // negative scales exist since PostgreSQL 15
                return "(" + precision + "," + scale + ")";
            }
            case "varchar":
            case "bpchar":
                return typmod >= 4 ? "(" + (typmod - 4) + ")" : "";
            case "time":
            case "timetz":
            case "timestamp":
            case "timestamptz":
            case "bit":
            case "varbit":
                return "(" + typmod + ")";
            case "interval": {
                int range = (typmod >> 16) & 0x7fff;
                int precision = typmod & 0xffff;
                if (precision == 0xffff) {
                    return range == 0x7fff ? "" : "(" + range + ")";
                }
                return "(" + range + "," + precision + ")";
            }
            default:
                return "";
        }
    }
}
