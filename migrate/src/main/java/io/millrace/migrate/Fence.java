package io.millrace.migrate;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.Ident;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * The write fence of one database (INV: FENCE), the same for the cutover (the source) and the rollback (the target).
 *
 * <p>{@link #close} sets {@code ALTER DATABASE <db> SET default_transaction_read_only = on}, so every new session's
 * transactions are read-only ({@code cannot execute INSERT in a read-only transaction}); then ends every existing client
 * session of the database but Millrace's own ({@code application_name} starting with {@code millrace}) with
 * {@code pg_terminate_backend}, waiting for each to be gone, so its open transaction rolls back and its application
 * reconnects into a read-only session. {@link #marker} then writes a transactional logical message: every transaction
 * committed before the fence has a commit record before the marker's position, so once a reader's durable checkpoint is
 * past the marker, it holds all of them. A session that sets {@code default_transaction_read_only = off} itself, or a
 * superuser's {@code BEGIN READ WRITE}, is not stopped by the fence: that is its limit. Walsenders are not client
 * backends, so a stream reading the database keeps reading.
 */
final class Fence {
    /** The prefix of the marker's logical message. */
    static final String MARKER_PREFIX = "millrace-migrate";

    private Fence() {
    }

    /**
     * Fences the database of {@code c} and ends its client sessions; returns how many were ended.
     *
     * @param stuck what the error says when a session that began before the fence does not end, after the sessions' list
     *              (its state and how to go on)
     */
    static int close(Connection c, String stuck) throws SQLException, InterruptedException {
        String db = Planner.one(c, "SELECT current_database()");
        try (Statement s = c.createStatement()) {
            String before = Planner.one(c, "SELECT now()::text");
            s.execute("ALTER DATABASE " + Ident.quote(db) + " SET default_transaction_read_only = on");
            int ended = terminate(c);
            List<String> left = survivors(c, before);
            // A session still authenticating when the list was read (no database in pg_stat_activity yet) escapes the
            // first round; it may have read the database's settings before the fence: end it too (MigrateKillIT).
            for (int round = 0; !left.isEmpty() && round < 5; round++) {
                Thread.sleep(50);
                ended += terminate(c);
                left = survivors(c, before);
            }
            if (!left.isEmpty()) {
                // a session started before the fence is read-write still: a write of it after the marker would be lost
                throw new MillraceException(Kind.SINK, left.size() + " session(s) of database " + db + " that began before"
                        + " its fence did not end after pg_terminate_backend (a superuser's, or one stuck in I/O): " + left
                        + ". " + stuck);
            }
            return ended;
        }
    }

    /**
     * Refuses, before anything is fenced, a role that cannot see the other roles' sessions of the database: without
     * {@code pg_read_all_stats} (or superuser), pg_stat_activity shows their {@code backend_type} and
     * {@code backend_start} as NULL, so the fence would neither end them nor find them left, and an application's open
     * sessions would go on writing to the source after the cutover — writes the target never gets (found by a migrate
     * user: 3,635 rows on the source against 2,996 on the target after a cutover that said it fenced 0 sessions).
     */
    static void visible(Connection c) throws SQLException {
        String db = Planner.one(c, "SELECT current_database()");
        String n = Planner.one(c, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                + " AND backend_type IS NULL");
        if (!n.equals("0")) {
            String role = Planner.one(c, "SELECT current_user");
            throw new MillraceException(Kind.PERMISSION, "role " + role + " cannot see " + n + " session(s) of other roles in database " + db
                    + " (pg_stat_activity hides them), so the fence could neither end them nor tell that they are gone: they would"
                    + " go on writing to it after the cutover. Nothing was fenced. Fix: GRANT pg_read_all_stats TO " + Ident.quote(role)
                    + " (as a superuser), or run the cutover as a superuser");
        }
    }

    /** Writes the fence marker (a transactional logical message carrying {@code what}) and returns its position. */
    static Lsn marker(Connection c, String what) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("BEGIN READ WRITE");
            Lsn at;
            try (ResultSet rs = s.executeQuery("SELECT pg_logical_emit_message(true, " + Ident.literal(MARKER_PREFIX) + ", "
                    + Ident.literal(what) + ")")) {
                rs.next();
                at = Lsn.parse(rs.getString(1));
            }
            s.execute("COMMIT");
            return at;
        }
    }

    /** Whether the database of {@code c} has the fence's read-only default. */
    static boolean fenced(Connection c) throws SQLException {
        return Planner.bool(c, "SELECT EXISTS (SELECT 1 FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase"
                + " WHERE d.datname = current_database() AND s.setrole = 0 AND " + READ_ONLY_IN + ")");
    }

    /**
     * SQL: whether the settings {@code s.setconfig} (of a {@code pg_db_role_setting} row {@code s}) make sessions
     * read-only. PostgreSQL keeps a setting's value as it was written, and a DBA writes {@code true}, {@code yes} or
     * {@code 1} as often as the fence's {@code on}: the value is read as PostgreSQL reads a boolean (found by a review:
     * a database made read-only with {@code = true} was taken for writable, and abort would have lifted it).
     */
    static final String READ_ONLY_IN = "EXISTS (SELECT 1 FROM unnest(s.setconfig) AS g(setting)"
            + " WHERE CASE WHEN g.setting LIKE 'default\\_transaction\\_read\\_only=%'"
            + " THEN substr(g.setting, length('default_transaction_read_only=') + 1)::boolean ELSE false END)";

    /** Lifts the fence. */
    static void open(Connection c) throws SQLException {
        String db = Planner.one(c, "SELECT current_database()");
        try (Statement s = c.createStatement()) {
            s.execute("ALTER DATABASE " + Ident.quote(db) + " RESET default_transaction_read_only");
        }
    }

    /** Client sessions (not Millrace's) that began before {@code before} and are still there: pid, user, application, state. */
    private static List<String> survivors(Connection c, String before) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pid, usename, application_name, state"
                + " FROM pg_stat_activity WHERE datname = current_database()"
                + " AND pid <> pg_backend_pid() AND (backend_type = 'client backend' AND coalesce(application_name, '') NOT LIKE 'millrace%'"
                + " AND backend_start < " + Ident.literal(before) + "::timestamptz"
                // a session the role cannot see (another role's, its details hidden) may have begun before the fence: fail closed
                + " OR backend_type IS NULL)")) {
            while (rs.next()) {
                out.add("pid " + rs.getInt(1) + " (user " + rs.getString(2) + ", application '" + rs.getString(3) + "', " + rs.getString(4) + ")");
            }
        }
        return out;
    }

    /** Ends every client session of this database but Millrace's, waiting for each to be gone; returns how many. */
    private static int terminate(Connection c) throws SQLException {
        boolean waits = c.getMetaData().getDatabaseMajorVersion() >= 14;
        int n = 0;
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_terminate_backend(pid"
                + (waits ? ", 10000" : "") + ") FROM pg_stat_activity WHERE datname = current_database()"
                + " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                + " AND coalesce(application_name, '') NOT LIKE 'millrace%'")) {
            while (rs.next()) {
                n += rs.getBoolean(1) ? 1 : 0;
            }
        }
        return n;
    }
}
