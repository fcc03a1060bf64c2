package io.millrace.core.schema;

import java.util.ArrayList;
import java.util.List;

/**
 * A table named in the configuration, {@code schema.table}. Names are taken literally (case and
 * spaces kept); a part may be written in double quotes to contain a dot: {@code "my.schema"."T"}.
 * Without a schema, {@code public} is meant.
 */
public record TableRef(String schema, String table) implements Comparable<TableRef> {
    public TableRef {
        if (schema == null || schema.isEmpty() || table == null || table.isEmpty()) {
            throw new IllegalArgumentException("table reference needs a schema and a table name");
        }
    }

    public static TableRef parse(String text) {
        List<String> parts = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        boolean quoted = false;
        boolean wasQuoted = false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (quoted) {
                if (c == '"') {
                    if (i + 1 < text.length() && text.charAt(i + 1) == '"') {
                        cur.append('"');
                        i++;
                    } else {
                        quoted = false;
                    }
                } else {
                    cur.append(c);
                }
            } else if (c == '"') {
                quoted = true;
                wasQuoted = true;
            } else if (c == '.') {
                parts.add(cur.toString());
                cur.setLength(0);
                wasQuoted = false;
            } else {
                cur.append(c);
            }
        }
        if (quoted) {
            throw new IllegalArgumentException("unterminated double quote in table name '" + text + "'");
        }
        parts.add(wasQuoted ? cur.toString() : cur.toString().strip());
        if (parts.size() == 1) {
            return new TableRef("public", parts.get(0));
        }
        if (parts.size() == 2 && !parts.get(0).isEmpty() && !parts.get(1).isEmpty()) {
            return new TableRef(parts.get(0), parts.get(1));
        }
        throw new IllegalArgumentException("table name '" + text + "' must be 'table' or 'schema.table'"
                + " (quote a part that contains a dot: \"my.schema\".\"t\")");
    }

    /** Whether the schema or table part is a pattern ({@code *} any characters, {@code ?} one). */
    public boolean isPattern() {
        return schema.indexOf('*') >= 0 || schema.indexOf('?') >= 0 || table.indexOf('*') >= 0 || table.indexOf('?') >= 0;
    }

    /** Whether {@code table} matches {@code pattern} (a plain name matches only itself). */
    public static boolean matches(TableRef pattern, TableRef table) {
        return glob(pattern.schema, table.schema) && glob(pattern.table, table.table);
    }

    private static boolean glob(String p, String s) {
        return glob(p, 0, s, 0);
    }

    private static boolean glob(String p, int i, String s, int j) {
        while (i < p.length()) {
            char c = p.charAt(i);
            if (c == '*') {
                for (int k = j; k <= s.length(); k++) {
                    if (glob(p, i + 1, s, k)) {
                        return true;
                    }
                }
                return false;
            }
            if (j >= s.length() || (c != '?' && c != s.charAt(j))) {
                return false;
            }
            i++;
            j++;
        }
        return j == s.length();
    }

    /** {@code "schema"."table"}, quoted for SQL. */
    public String sql() {
        return Ident.qualified(schema, table);
    }

    @Override
    public int compareTo(TableRef o) {
        int c = schema.compareTo(o.schema);
        return c != 0 ? c : table.compareTo(o.table);
    }

    /**
     * {@code schema.table} as {@link #parse} reads it back into this reference: as {@link #toString()}, but a part that
     * holds a dot or a double quote, or begins or ends with a space, is double-quoted (its quotes doubled). For what is
     * stored and read again (a checkpoint's online copies), where {@link #toString()} of {@code public."a.b"} would read
     * back as three parts.
     */
    public String text() {
        return part(schema) + "." + part(table);
    }

    private static String part(String p) {
        boolean plain = p.indexOf('.') < 0 && p.indexOf('"') < 0 && p.strip().equals(p);
        return plain ? p : "\"" + p.replace("\"", "\"\"") + "\"";
    }

    /** {@code schema.table}, unquoted, for messages and file names. */
    @Override
    public String toString() {
        return schema + "." + table;
    }
}
