package io.millrace.migrate;

import io.millrace.core.schema.Ident;
import io.millrace.migrate.SourceCatalog.Sequence;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;

/** Moving sequences from the database that was the primary to the one that becomes it, at the cutover and the rollback. */
final class Sequences {
    private Sequences() {
    }

    /**
     * What {@link #advance} could not do with the roles of {@code from} and {@code to}: read a sequence on the one (SELECT),
     * set it on the other (UPDATE), each with the grant that fixes it; empty when it can. Asked by the plan, and by the
     * cutover before it fences (a migrate user's cutover fenced the source, then stopped on "permission denied for
     * sequence", the source left fenced).
     */
    static List<String> unreadable(Connection from, Connection to, List<Sequence> sequences) throws SQLException {
        List<String> out = new java.util.ArrayList<>();
        for (Sequence q : sequences) {
            String lit = Ident.literal(q.ref().sql());
            // A sequence named in a schema the role may not use fails the name's lookup ("permission denied for schema"): the
            // plan stopped on it with no fix (found by a user). Such a schema is named with its GRANT, once.
            if (!usable(from, q.ref().schema(), "source", out)) {
                continue;
            }
            if (!Planner.bool(from, "SELECT has_sequence_privilege(" + lit + ", 'SELECT')")) {
                out.add("GRANT SELECT ON SEQUENCE " + q.ref().sql() + " TO " + Ident.quote(Planner.one(from, "SELECT current_user"))
                        + " (on the source)");
            }
            if (usable(to, q.ref().schema(), "target", out) && Planner.bool(to, "SELECT to_regclass(" + lit + ") IS NOT NULL")
                    && !Planner.bool(to, "SELECT has_sequence_privilege(" + lit + ", 'UPDATE')")) {
                out.add("GRANT UPDATE ON SEQUENCE " + q.ref().sql() + " TO " + Ident.quote(Planner.one(to, "SELECT current_user"))
                        + " (on the target)");
            }
        }
        return out;
    }

    /**
     * Whether the role of {@code c} may use {@code schema} (or the database has no such schema yet); if not, its
     * {@code GRANT USAGE} is added to {@code out} once.
     */
    private static boolean usable(Connection c, String schema, String which, List<String> out) throws SQLException {
        if (Planner.bool(c, "SELECT coalesce(has_schema_privilege(n.oid, 'USAGE'), true) FROM (SELECT (SELECT oid FROM pg_namespace"
                + " WHERE nspname = " + Ident.literal(schema) + ") AS oid) n")) {
            return true;
        }
        String grant = "GRANT USAGE ON SCHEMA " + Ident.quote(schema) + " TO " + Ident.quote(Planner.one(c, "SELECT current_user"))
                + " (on the " + which + ")";
        if (!out.contains(grant)) {
            out.add(grant);
        }
        return false;
    }

    /**
     * Sets each sequence of {@code to} to the value of the same sequence of {@code from}, unless {@code to}'s is there or
     * past it already (in the sequence's direction): a sequence only moves forward. A step run again after a crash (the database that becomes the primary
     * may have handed out values since the first run) must not set it back: its next value would be one already used.
     *
     * @return how many were moved
     */
    static int advance(Connection from, Connection to, List<Sequence> sequences) throws SQLException {
        int moved = 0;
        try (Statement fs = from.createStatement(); Statement ts = to.createStatement()) {
            for (Sequence q : sequences) {
                long last;
                boolean called;
                try (ResultSet rs = fs.executeQuery("SELECT last_value, is_called FROM " + q.ref().sql())) {
                    rs.next();
                    last = rs.getLong(1);
                    called = rs.getBoolean(2);
                }
                // Forward is the sequence's direction (a negative increment counts down); at the same last_value,
                // is_called = true has handed out that value itself, so it is the later state.
                try (ResultSet rs = ts.executeQuery("SELECT setval(" + Ident.literal(q.ref().sql()) + ", " + last + ", " + called
                        + ") FROM " + q.ref().sql() + " s, pg_sequence p WHERE p.seqrelid = " + Ident.literal(q.ref().sql())
                        + "::regclass AND (CASE WHEN p.seqincrement > 0 THEN s.last_value < " + last + " ELSE s.last_value > " + last
                        + " END OR (s.last_value = " + last + " AND NOT s.is_called AND " + called + "))")) {
                    moved += rs.next() ? 1 : 0;
                }
            }
        }
        return moved;
    }
}
