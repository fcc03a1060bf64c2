package io.millrace.migrate;

import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TableRef;
import io.millrace.migrate.SourceCatalog.Table;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Column definitions that differ between a table on the source and its copy on the target: a column added, dropped or
 * given another default or NOT NULL on the source while the target follows.
 *
 * <p>Why: the stream carries a table's columns (names and types) but not their defaults or NOT NULL, and the target
 * adds a column only when a row of its table next changes. {@code ALTER TABLE ... ADD COLUMN c text NOT NULL DEFAULT 'x'}
 * on the source gives every existing row 'x' without writing any of them, so the target's copy kept NULL there, had no
 * default and no NOT NULL, and the cutover's comparison of the chunks written since the last pass saw no written row: a
 * cutover left the target diverged (MigrateFollowIT). Verify reports each drift, {@code --repair} makes the target's
 * definitions the source's (before the rows are compared and copied again, NOT NULL after), and the cutover refuses
 * while one is left, before anything is fenced. Identity (BY DEFAULT on the target until the cutover) and generated
 * columns are not compared.
 */
final class ColumnDrift {
    private ColumnDrift() {
    }

    /** One column as a catalog says: its type, NOT NULL and default expression. */
    record Column(String name, String type, boolean notNull, String defaultExpr) {
        String sql() {
            return type + (defaultExpr == null ? "" : " DEFAULT " + defaultExpr) + (notNull ? " NOT NULL" : "");
        }
    }

    /**
     * One difference: {@code source} (the definition to follow, on the database named {@code sourceName}) or {@code target}
     * (the copy's, on {@code targetName}) null when the column is missing there.
     */
    record Drift(TableRef table, String column, Column source, Column target, String sourceName, String targetName) {
        @Override
        public String toString() {
            return table + "." + column + ": " + (source == null ? "dropped on the " + sourceName : sourceName + " " + source.sql())
                    + ", " + (target == null ? "missing on the " + targetName : targetName + " " + target.sql());
        }
    }

    /** Every column drift of {@code tables}, the source's definitions followed by the target's. */
    static List<Drift> find(Connection src, Connection tgt, List<Table> tables) throws SQLException {
        return find(src, "source", tgt, "target", tables);
    }

    /** Every column drift of {@code tables}: {@code src} (named {@code srcName}) is followed by {@code tgt}. */
    static List<Drift> find(Connection src, String srcName, Connection tgt, String tgtName, List<Table> tables) throws SQLException {
        List<Drift> out = new ArrayList<>();
        // One catalog read per side for every table: the cutover calls this inside its write-unavailable window too.
        Map<TableRef, Map<String, Column>> srcColumns = columns(src, tables);
        Map<TableRef, Map<String, Column>> tgtColumns = columns(tgt, tables);
        for (Table t : tables) {
            Map<String, Column> s = srcColumns.get(t.ref());
            Map<String, Column> d = tgtColumns.get(t.ref());
            if (s == null || d == null) {
                continue; // not made on the target yet (the copy makes it), or gone from the source
            }
            for (Column c : s.values()) {
                if (!Objects.equals(c, d.get(c.name())) && !sameButForRendering(tgt, c, d.get(c.name()))) {
                    out.add(new Drift(t.ref(), c.name(), c, d.get(c.name()), srcName, tgtName));
                }
            }
            for (Column c : d.values()) {
                if (!s.containsKey(c.name())) {
                    out.add(new Drift(t.ref(), c.name(), null, c, srcName, tgtName));
                }
            }
        }
        return out;
    }

    /**
     * Makes the target's definitions the source's, all but NOT NULL of a column that has it on both or gains it (set by
     * {@link #notNulls} once the rows are equal): a missing column is added with the source's default, which gives the rows
     * already there that value, as the source's ADD COLUMN did; a dropped one is dropped. Returns the statements run.
     */
    static List<String> repair(Connection tgt, List<Drift> drifts) throws SQLException {
        List<String> done = new ArrayList<>();
        try (Statement s = tgt.createStatement()) {
            for (Drift d : drifts) {
                String table = d.table().sql();
                String col = Ident.quote(d.column());
                List<String> sql = new ArrayList<>();
                if (d.source() == null) {
                    sql.add("ALTER TABLE " + table + " DROP COLUMN " + col);
                } else if (d.target() == null) {
                    sql.add("ALTER TABLE " + table + " ADD COLUMN " + col + " " + d.source().type()
                            + (d.source().defaultExpr() == null ? "" : " DEFAULT " + d.source().defaultExpr()));
                } else {
                    if (!d.source().type().equals(d.target().type())) {
                        sql.add("ALTER TABLE " + table + " ALTER COLUMN " + col + " TYPE " + d.source().type() + " USING " + col
                                + "::" + d.source().type());
                    }
                    if (!Objects.equals(d.source().defaultExpr(), d.target().defaultExpr())) {
                        sql.add("ALTER TABLE " + table + " ALTER COLUMN " + col + (d.source().defaultExpr() == null ? " DROP DEFAULT"
                                : " SET DEFAULT " + d.source().defaultExpr()));
                    }
                    if (!d.source().notNull() && d.target().notNull()) {
                        sql.add("ALTER TABLE " + table + " ALTER COLUMN " + col + " DROP NOT NULL");
                    }
                }
                for (String q : sql) {
                    s.execute(q);
                    done.add(q);
                }
            }
        }
        return done;
    }

    /** The NOT NULL of the source's columns the target lacks, set once the rows are equal; returns the statements run. */
    static List<String> notNulls(Connection tgt, List<Drift> drifts) throws SQLException {
        List<String> done = new ArrayList<>();
        try (Statement s = tgt.createStatement()) {
            for (Drift d : drifts) {
                if (d.source() != null && d.source().notNull() && (d.target() == null || !d.target().notNull())) {
                    String q = "ALTER TABLE " + d.table().sql() + " ALTER COLUMN " + Ident.quote(d.column()) + " SET NOT NULL";
                    s.execute(q);
                    done.add(q);
                }
            }
        }
        return done;
    }

    /**
     * Whether {@code c} and {@code copy} differ only in how their servers print the default (another major version may
     * print an expression otherwise): the source's expression is given, in a transaction rolled back, to a temporary
     * column on the copy's server, which prints it its way. Without this a migration across major versions could be
     * refused for ever: setting the default again changes nothing.
     */
    private static boolean sameButForRendering(Connection copyServer, Column c, Column copy) throws SQLException {
        if (copy == null || c.defaultExpr() == null || copy.defaultExpr() == null || !c.type().equals(copy.type())
                || c.notNull() != copy.notNull()) {
            return false;
        }
        boolean auto = copyServer.getAutoCommit();
        copyServer.setAutoCommit(false);
        try (Statement s = copyServer.createStatement()) {
            s.execute("SET TRANSACTION READ WRITE"); // the copy's database may be fenced (the old primary, at a rollback)
            s.execute("SAVEPOINT millrace_probe");
            try {
                s.execute("CREATE TEMP TABLE millrace_default_probe (c " + c.type() + " DEFAULT " + c.defaultExpr() + ")");
                try (ResultSet rs = s.executeQuery("SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d"
                        + " WHERE d.adrelid = 'millrace_default_probe'::regclass")) {
                    return rs.next() && copy.defaultExpr().equals(rs.getString(1));
                }
            } catch (SQLException e) {
                return false; // the copy's server cannot read the source's expression: a drift indeed
            } finally {
                s.execute("ROLLBACK TO SAVEPOINT millrace_probe");
            }
        } finally {
            copyServer.rollback();
            copyServer.setAutoCommit(auto);
        }
    }

    /** The columns of each of {@code tables} by name, in order; a table absent when there is no such table. */
    private static Map<TableRef, Map<String, Column>> columns(Connection c, List<Table> tables) throws SQLException {
        Map<String, TableRef> byName = new LinkedHashMap<>();
        tables.forEach(t -> byName.put(t.ref().sql(), t.ref()));
        Map<TableRef, Map<String, Column>> out = new LinkedHashMap<>();
        try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT t.name, a.attname, format_type(a.atttypid, a.atttypmod),"
                + " a.attnotnull, pg_get_expr(d.adbin, d.adrelid), a.attidentity = '' AND a.attgenerated = ''"
                + " FROM unnest(?::text[]) AS t(name)"
                + " JOIN pg_attribute a ON a.attrelid = to_regclass(t.name) LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid"
                + " AND d.adnum = a.attnum WHERE a.attnum > 0 AND NOT a.attisdropped ORDER BY t.name, a.attnum")) {
            ps.setArray(1, c.createArrayOf("text", byName.keySet().toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Map<String, Column> columns = out.computeIfAbsent(byName.get(rs.getString(1)), k -> new LinkedHashMap<>());
                    if (rs.getBoolean(6)) { // identity and generated columns are not compared (see the class comment)
                        columns.put(rs.getString(2), new Column(rs.getString(2), rs.getString(3), rs.getBoolean(4), rs.getString(5)));
                    }
                }
            }
        }
        return out;
    }
}
