package io.millrace.migrate;

import io.millrace.api.SourceSettings;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
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
            + " -c bytea_output=hex";

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
                " -c default_transaction_read_only=off");
    }

    /** A target session; with {@code replica}, one whose triggers and foreign keys do not fire (as the sink's). */
    Connection target(boolean replica) {
        Properties p = new Properties();
        p.setProperty("user", target.user());
        if (!target.password().isEmpty()) {
            p.setProperty("password", target.password().reveal());
        }
        int q = target.jdbcUrl().indexOf('?');
        return open("target " + (q < 0 ? target.jdbcUrl() : target.jdbcUrl().substring(0, q)), target.jdbcUrl(), p,
                replica ? " -c session_replication_role=replica" : "");
    }

    private static Connection open(String what, String url, Properties p, String extra) {
        p.setProperty("options", SESSION_OPTIONS + extra);
        p.setProperty("ApplicationName", "millrace-migrate");
        p.setProperty("connectTimeout", "10");
        try {
            Connection c = new org.postgresql.Driver().connect(url, p);
            if (c == null) {
                throw new MillraceException(Kind.CONFIG, what + ": not a PostgreSQL JDBC URL (expected jdbc:postgresql://host:5432/database)");
            }
            return c;
        } catch (SQLException e) {
            String state = e.getSQLState() == null ? "" : e.getSQLState();
            Kind kind = state.equals("28P01") || state.equals("28000") ? Kind.AUTHENTICATION
                    : state.equals("42501") ? Kind.PERMISSION : Kind.CONNECTION;
            throw new MillraceException(kind, "cannot connect to the " + what + ": " + e.getMessage(), e);
        }
    }

    static MillraceException failed(String what, SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        Kind kind = state.startsWith("08") ? Kind.CONNECTION : state.equals("42501") ? Kind.PERMISSION : Kind.SINK;
        return new MillraceException(kind, what + ": " + e.getMessage(), e);
    }
}
