package io.millrace.engine.verify;

import io.millrace.core.schema.TableRef;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * Compares tables of the source with their copies in a PostgreSQL destination, row for row: the
 * count and a digest of every row's text form (order-independent). Both sides are read in the
 * same session settings, so equal rows have equal text.
 */
public final class Verifier {
    private Verifier() {
    }

    /** The outcome for one table. */
    public record TableResult(TableRef source, TableRef target, long sourceRows, long targetRows, boolean equal) {
        @Override
        public String toString() {
            return String.format("%-28s %10d rows  %s", source, sourceRows,
                    equal ? "equal" : "DIFFERENT (destination has " + targetRows + " rows)");
        }
    }

    /**
     * @param targetSchema schema of the copies, or null when it is the source table's schema
     */
    public static List<TableResult> compare(Connection source, Connection target, List<TableRef> tables, String targetSchema)
            throws SQLException {
        List<TableResult> out = new ArrayList<>();
        for (TableRef t : tables) {
            TableRef d = targetSchema == null ? t : new TableRef(targetSchema, t.table());
            long[] a = new long[1];
            long[] b = new long[1];
            String ha = digest(source, t, a);
            String hb = exists(target, d) ? digest(target, d, b) : null;
            out.add(new TableResult(t, d, a[0], hb == null ? 0 : b[0], ha.equals(hb) && a[0] == b[0]));
        }
        return out;
    }

    private static boolean exists(Connection c, TableRef t) throws SQLException {
        try (Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT to_regclass('" + t.sql().replace("'", "''") + "') IS NOT NULL")) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    private static String digest(Connection c, TableRef t, long[] count) throws SQLException {
        String sql = "SELECT count(*), coalesce(md5(string_agg(h, '' ORDER BY h)), '') FROM (SELECT md5(x::text) AS h FROM "
                + t.sql() + " AS x) d";
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            count[0] = rs.getLong(1);
            return rs.getString(2);
        }
    }
}
