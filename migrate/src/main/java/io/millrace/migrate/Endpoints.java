package io.millrace.migrate;

import io.millrace.api.SourceSettings;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.PgSessions;
import io.millrace.sink.postgres.PostgresSinkConfig;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Properties;

/**
 * Opens the migration's own connections to the source and the target (not the engine's). Every session has the same
 * settings, so that a row's text form, which verify hashes, is the same on both servers (UTC, ISO dates, exact floats,
 * hex bytea).
 */
final class Endpoints {
    static final String SESSION_OPTIONS = "-c TimeZone=UTC -c DateStyle=ISO -c extra_float_digits=3 -c IntervalStyle=postgres"
            + " -c bytea_output=hex" + PgSessions.STARTUP_OPTIONS; // a long hash of a chunk, a fence held while the marker lands

    final SourceSettings source;
    final PostgresSinkConfig target;

    Endpoints(SourceSettings source, PostgresSinkConfig target) {
        this.source = source;
        this.target = target;
    }

    String sourceUrl() {
        return "jdbc:postgresql://" + source.host() + ":" + source.port() + "/" + source.database();
    }

    Connection source() {
        Properties p = new Properties();
        p.setProperty("user", source.user());
        if (!source.password().isEmpty()) {
            p.setProperty("password", source.password().reveal());
        }
        if (source.sslMode() != null) {
            p.setProperty("sslmode", source.sslMode());
        }
        if (source.sslRootCert() != null) {
            p.setProperty("sslrootcert", source.sslRootCert().toString());
        }
        // The migration's own sessions write past the cutover's fence (its marker; abort lifting the fence).
        return open("source " + source.host() + ":" + source.port() + "/" + source.database(), sourceUrl(), p,
                " -c default_transaction_read_only=off", true);
    }

    /** A target session; with {@code replica}, one whose triggers and foreign keys do not fire (as the sink's). */
    Connection target(boolean replica) {
        Properties p = new Properties();
        p.setProperty("user", target.user());
        if (!target.password().isEmpty()) {
            p.setProperty("password", target.password().reveal());
        }
        int q = target.jdbcUrl().indexOf('?');
        // As on the source: the migration's own sessions write past a rollback's fence of the target (its marker, its steps).
        return open("target " + (q < 0 ? target.jdbcUrl() : target.jdbcUrl().substring(0, q)), target.jdbcUrl(), p,
                " -c default_transaction_read_only=off" + (replica ? " -c session_replication_role=replica" : ""), false);
    }

    private static Connection open(String what, String url, Properties p, String extra, boolean source) {
        p.setProperty("options", SESSION_OPTIONS + extra);
        p.setProperty("ApplicationName", "millrace-migrate");
        p.setProperty("connectTimeout", "10");
        try {
            Connection c = io.millrace.sink.postgres.PostgresSink.open(url, p); // the url's own options kept, ours after them
            if (c == null) {
                throw new MillraceException(Kind.CONFIG, what + ": not a PostgreSQL JDBC URL (expected jdbc:postgresql://host:5432/database)");
            }
            return PgSessions.lifted(c);
        } catch (SQLException e) {
            // As millrace run says the same mistakes (found by a user: the same wrong database name gave exit 3 and no fix
            // here, exit 2 and the fix there): the source's errors through the engine's own translation.
            if (source) {
                throw io.millrace.source.PgErrors.translate("connecting to the " + what, e);
            }
            String state = e.getSQLState() == null ? "" : e.getSQLState();
            if (state.equals("3D000")) {
                throw new MillraceException(Kind.CONFIG, "cannot connect to the " + what + ": " + e.getMessage()
                        + ". Create the database there, or fix the destination's database (or url).", e);
            }
            Kind kind = state.equals("28P01") || state.equals("28000") || io.millrace.core.PgMessages.noPasswordGiven(e.getMessage())
                    ? Kind.AUTHENTICATION
                    : state.equals("42501") ? Kind.PERMISSION : Kind.CONNECTION;
            String fix = kind == Kind.AUTHENTICATION ? ". Check the destination's user and its password (password_env or password_file),"
                    + " and that pg_hba.conf lets it in." : "";
            // the server's message ends without a period ("password authentication failed for user ..."), or with one
            throw new MillraceException(kind, "cannot connect to the " + what + ": " + String.valueOf(e.getMessage()).replaceAll("\\.$", "") + fix, e);
        }
    }

    /**
     * The target's durable position: the sink's checkpoint {@code flush_lsn} (end of the last source transaction applied
     * in full, INV: DURABLE), read in the caller's transaction; null before the sink stored one (no table or no row yet).
     */
    String targetFlushLsn(Connection tgt) throws SQLException {
        return flushLsn(tgt, target.name());
    }

    /** The reverse stream's durable position on the source ({@link #targetFlushLsn} of its sink), or null before one. */
    String reverseFlushLsn(Connection src) throws SQLException {
        return flushLsn(src, REVERSE_DESTINATION);
    }

    /** The destination name of the reverse stream's sink, whose checkpoint is on the source. */
    static final String REVERSE_DESTINATION = "reverse";

    private String flushLsn(Connection c, String destination) throws SQLException {
        String table = io.millrace.core.schema.Ident.qualified(target.stateSchema(), "checkpoints");
        if (Planner.oneOrNull(c, "SELECT to_regclass(" + io.millrace.core.schema.Ident.literal(table) + ")") == null) {
            return null;
        }
        return Planner.oneOrNull(c, "SELECT checkpoint->>'flush_lsn' FROM " + table + " WHERE destination = "
                + io.millrace.core.schema.Ident.literal(destination));
    }

    /**
     * The tables whose copy has not landed in full on the target, from the sink's checkpoint (read in the caller's
     * transaction): all of {@code tables} before the first checkpoint or while the initial snapshot runs (but those it
     * landed), then those of the online snapshots still under way (an interrupted initial snapshot goes on as online
     * snapshots, chunk by chunk, after a restart). Empty: the copy is done.
     */
    java.util.Set<String> copying(Connection tgt, java.util.Collection<String> tables) throws SQLException {
        java.util.Set<String> left = new java.util.TreeSet<>(tables);
        String table = io.millrace.core.schema.Ident.qualified(target.stateSchema(), "checkpoints");
        if (Planner.oneOrNull(tgt, "SELECT to_regclass(" + io.millrace.core.schema.Ident.literal(table) + ")") == null) {
            return left;
        }
        String where = " FROM " + table + " WHERE destination = " + io.millrace.core.schema.Ident.literal(target.name());
        String state = Planner.oneOrNull(tgt, "SELECT checkpoint->'snapshot'->>'state'" + where);
        if (state == null) {
            return left;
        }
        java.util.Set<String> online = new java.util.HashSet<>();
        try (java.sql.Statement s = tgt.createStatement();
             java.sql.ResultSet rs = s.executeQuery("SELECT t->>'table' FROM (SELECT jsonb_array_elements(coalesce(checkpoint->'online',"
                     + " '[]'::jsonb)) AS t" + where + ") o")) {
            while (rs.next()) {
                online.add(rs.getString(1));
            }
        }
        if (state.equals("DONE")) {
            left.retainAll(online);
            return left;
        }
        try (java.sql.Statement s = tgt.createStatement();
             java.sql.ResultSet rs = s.executeQuery("SELECT jsonb_array_elements_text(checkpoint->'snapshot'->'tables_done')" + where)) {
            while (rs.next()) {
                left.remove(rs.getString(1));
            }
        }
        return left;
    }

    static MillraceException failed(String what, SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        Kind kind = state.startsWith("08") ? Kind.CONNECTION : state.equals("42501") ? Kind.PERMISSION : Kind.SINK;
        return new MillraceException(kind, what + ": " + e.getMessage(), e);
    }
}
