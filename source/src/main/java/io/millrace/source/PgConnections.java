package io.millrace.source;

import org.postgresql.PGProperty;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Map;
import java.util.Properties;

/**
 * Opens connections to the source: regular ones (catalog, snapshot) and replication ones. Every
 * connection uses UTC, ISO dates, the {@code postgres} interval style and exact floats, so the
 * text values the codecs parse have one form.
 */
public final class PgConnections {
    /** Session settings every source connection gets. */
    static final String SESSION_OPTIONS = "-c TimeZone=UTC -c IntervalStyle=postgres -c extra_float_digits=3 -c lc_monetary=C"
            + " -c standard_conforming_strings=on"; // Ident.literal quotes for it

    private final SourceConfig config;

    public PgConnections(SourceConfig config) {
        this.config = config;
    }

    public SourceConfig config() {
        return config;
    }

    public String url() {
        return "jdbc:postgresql://" + config.host() + ":" + config.port() + "/" + config.database();
    }

    private Properties baseProperties() {
        Properties p = new Properties();
        for (Map.Entry<String, String> e : config.jdbcProperties().entrySet()) {
            p.setProperty(e.getKey(), e.getValue());
        }
        PGProperty.USER.set(p, config.user());
        if (!config.password().isEmpty()) {
            PGProperty.PASSWORD.set(p, config.password().reveal());
        }
        PGProperty.APPLICATION_NAME.set(p, "millrace");
        PGProperty.OPTIONS.set(p, SESSION_OPTIONS);
        PGProperty.CONNECT_TIMEOUT.set(p, 10);
        PGProperty.TCP_KEEP_ALIVE.set(p, true);
        return p;
    }

    /** A regular connection (autocommit on). */
    public Connection open() {
        try {
            return DriverManager.getConnection(url(), baseProperties());
        } catch (SQLException e) {
            throw PgErrors.translate("connecting to the source " + config.where() + " as '" + config.user() + "'", e);
        }
    }

    /** A logical replication connection ({@code replication=database}, simple query protocol). */
    public Connection openReplication() {
        Properties p = baseProperties();
        p.remove(PGProperty.SOCKET_TIMEOUT.getName()); // the reader has its own receive timeout and waits on the socket
        PGProperty.REPLICATION.set(p, "database");
        PGProperty.ASSUME_MIN_SERVER_VERSION.set(p, "10");
        PGProperty.PREFER_QUERY_MODE.set(p, "simple");
        try {
            return DriverManager.getConnection(url(), p);
        } catch (SQLException e) {
            throw PgErrors.translate("opening a replication connection to " + config.where() + " as '" + config.user() + "'", e);
        }
    }
}
