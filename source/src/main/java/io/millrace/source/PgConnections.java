package io.millrace.source;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.source.SourceConfig.HostPort;
import org.postgresql.PGConnection;
import org.postgresql.PGProperty;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * Opens connections to the source: regular ones (catalog, snapshot) and replication ones. Every
 * connection uses UTC, ISO dates, the {@code postgres} interval style and exact floats, so the
 * text values the codecs parse have one form.
 *
 * <p>With several {@code source.hosts} every connection goes to the primary among them, found at the first connection
 * (each host asked {@code pg_is_in_recovery()}; exactly one must answer false) and kept for this instance's life: one
 * engine attempt.
 * After a failover the attempt fails on the lost connection and the supervisor's next attempt, with a new instance,
 * finds the promoted server. A replication connection that reaches a standby is refused (the synchronised slot on a
 * standby cannot be read, and the stream must come from the primary whose catalog the engine read).
 */
public final class PgConnections {
    /** Session settings every source connection gets. */
    static final String SESSION_OPTIONS = "-c TimeZone=UTC -c IntervalStyle=postgres -c extra_float_digits=3 -c lc_monetary=C"
            + " -c standard_conforming_strings=on"; // Ident.literal quotes for it

    private final SourceConfig config;
    private volatile HostPort primary;

    public PgConnections(SourceConfig config) {
        this.config = config;
        this.primary = config.hosts().size() == 1 ? config.hosts().get(0) : null;
    }

    public SourceConfig config() {
        return config;
    }

    /** The primary's JDBC URL (with several hosts: found now if not yet). */
    public String url() {
        return url(primary());
    }

    private String url(HostPort h) {
        return "jdbc:postgresql://" + h + "/" + config.database();
    }

    /** {@code host:port/database} of the server connections go to (the primary among several hosts), for messages. */
    public String where() {
        HostPort p = primary;
        return p == null ? config.where() : p + "/" + config.database();
    }

    /**
     * The server connections go to: the only host, or the first of {@code source.hosts} that is not in recovery. Throws a
     * {@link Kind#CONNECTION} error (retried by the supervisor: a promotion may be under way) naming each host and what it
     * is when none or more than one is a primary, or the error of a host that refused Millrace for another reason (a wrong
     * password).
     */
    public HostPort primary() {
        HostPort p = primary;
        if (p != null) {
            return p;
        }
        synchronized (this) {
            if (primary == null) {
                primary = findPrimary();
            }
            return primary;
        }
    }

    private HostPort findPrimary() {
        List<String> seen = new ArrayList<>();
        List<HostPort> primaries = new ArrayList<>();
        MillraceException refused = null;
        for (HostPort h : config.hosts()) { // every host: two that both say primary must not be chosen between
            try (Connection c = DriverManager.getConnection(url(h), baseProperties()); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT pg_is_in_recovery()")) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    primaries.add(h);
                    seen.add(h + " (the primary)");
                } else {
                    seen.add(h + " (a standby: in recovery)");
                }
            } catch (SQLException e) {
                MillraceException m = PgErrors.translate("connecting to " + h, e);
                if (m.kind() != Kind.CONNECTION && refused == null) {
                    refused = m;
                }
                seen.add(h + " (" + (m.kind() == Kind.CONNECTION ? "unreachable: " : "") + firstLine(e.getMessage()) + ")");
            }
        }
        if (primaries.size() == 1) {
            return primaries.get(0);
        }
        if (primaries.size() > 1) {
            // a former primary back after its standby was promoted (split brain): its slot and WAL are another history
            throw new MillraceException(Kind.CONNECTION, "more than one of source.hosts is a primary: " + String.join(", ", seen)
                    + ". After a failover the former primary must be stopped or made a standby of the new one (pg_rewind);"
                    + " Millrace does not choose between two histories and waits until one primary is left");
        }
        if (refused != null) {
            throw refused; // the same on every attempt: not retried
        }
        throw new MillraceException(Kind.CONNECTION, "no primary among source.hosts: " + String.join(", ", seen)
                + ". During a failover this lasts until a standby is promoted; otherwise check that one of the hosts is the primary");
    }

    private static String firstLine(String msg) {
        if (msg == null) {
            return "no message";
        }
        int nl = msg.indexOf('\n');
        return (nl < 0 ? msg : msg.substring(0, nl)).strip();
    }

    /** A regular connection to {@code host} (a standby's settings, in the preflight), not necessarily the primary. */
    public Connection openTo(HostPort host) {
        try {
            return DriverManager.getConnection(url(host), baseProperties());
        } catch (SQLException e) {
            throw PgErrors.translate("connecting to " + host + "/" + config.database() + " as '" + config.user() + "'", e);
        }
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
            throw PgErrors.translate("connecting to the source " + where() + " as '" + config.user() + "'", e);
        }
    }

    /** A logical replication connection ({@code replication=database}, simple query protocol). */
    public Connection openReplication() {
        Properties p = baseProperties();
        p.remove(PGProperty.SOCKET_TIMEOUT.getName()); // the reader has its own receive timeout and waits on the socket
        PGProperty.REPLICATION.set(p, "database");
        PGProperty.ASSUME_MIN_SERVER_VERSION.set(p, "10");
        PGProperty.PREFER_QUERY_MODE.set(p, "simple");
        Connection c;
        try {
            c = DriverManager.getConnection(url(), p);
        } catch (SQLException e) {
            throw PgErrors.translate("opening a replication connection to " + where() + " as '" + config.user() + "'", e);
        }
        if (config.hosts().size() > 1) {
            requirePrimary(c);
        }
        return c;
    }

    /** Refuses a replication connection to a server that became a standby since it was found the primary (PG14+ reports it). */
    private void requirePrimary(Connection c) {
        String hotStandby;
        try {
            hotStandby = c.unwrap(PGConnection.class).getParameterStatus("in_hot_standby");
        } catch (SQLException e) {
            hotStandby = null;
        }
        if ("on".equals(hotStandby)) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // refused anyway
            }
            throw new MillraceException(Kind.CONNECTION, "the replication connection to " + where() + " reached a standby, not the"
                    + " primary (a failover under way?); looking for the primary again");
        }
    }
}
