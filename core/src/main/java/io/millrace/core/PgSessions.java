package io.millrace.core;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The session limits a DBA sets on a database or role against runaway queries, turned off in Millrace's own sessions (on
 * the source, a PostgreSQL destination, a migration's target). Millrace's sessions are long by nature: a table's COPY,
 * the snapshot's transaction that its readers share, a large source transaction applied at once, a connection idle while
 * the source is. Under such a limit each would be ended, and the snapshot would start over at every retry while the slot
 * keeps the source's WAL (found trying a server set up as in production). The application's sessions keep the limits.
 *
 * <p>{@link #STARTUP_OPTIONS} go into the connection's startup packet ({@code options}), whose settings take precedence
 * over the database's and the role's; the limits only newer servers know are set by {@link #lift} once connected (an
 * unknown name in the startup packet ends the connection). A postgres destination's {@code url} may carry {@code options}
 * of its own: they go first, these after them ({@code PostgresSink.open}).
 */
public final class PgSessions {
    /** {@code statement_timeout} and {@code idle_in_transaction_session_timeout} off (every supported server has both). */
    public static final String STARTUP_OPTIONS = " -c statement_timeout=0 -c idle_in_transaction_session_timeout=0";

    private PgSessions() {
    }

    /** {@code c} after {@link #lift}; closed if that fails. */
    public static Connection lifted(Connection c) throws SQLException {
        try {
            lift(c);
            return c;
        } catch (SQLException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    /**
     * Turns off {@code idle_session_timeout} (PostgreSQL 14+) and {@code transaction_timeout} (17+) for the session; call it
     * right after connecting, in autocommit (a SET in a transaction rolled back is undone). Nothing on older servers.
     */
    public static void lift(Connection c) throws SQLException {
        int major = c.getMetaData().getDatabaseMajorVersion();
        if (major < 14) {
            return;
        }
        try (Statement s = c.createStatement()) { // one round trip per new connection
            s.execute(major >= 17 ? "SET idle_session_timeout = 0; SET transaction_timeout = 0" : "SET idle_session_timeout = 0");
        }
    }
}
