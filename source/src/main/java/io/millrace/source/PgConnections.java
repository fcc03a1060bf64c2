package io.millrace.source;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.PgSessions;
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
 *
 * <p>With {@code source.capture_from: standby} ({@link SourceConfig#fromStandby()}) the slot is on a standby among the
 * hosts: {@link #openReplication()} and {@link #openCapture()} (the initial snapshot, the slot's state) go to the
 * {@link #capture()} server, {@link #open()} still to the primary, where everything that writes goes (the publication,
 * watermarks, the pipeline lock) and the catalog is read.
 */
public final class PgConnections {
    /** Session settings every source connection gets. */
    static final String SESSION_OPTIONS = "-c TimeZone=UTC -c IntervalStyle=postgres -c extra_float_digits=3 -c lc_monetary=C"
            + " -c standard_conforming_strings=on"; // Ident.literal quotes for it

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(PgConnections.class);

    private final SourceConfig config;
    private volatile HostPort primary;
    private volatile HostPort capture;

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

    /**
     * The server the slot is on, which the stream and the initial snapshot are read from: the primary, or with
     * {@link SourceConfig#fromStandby()} the host of {@code source.hosts} that has the slot (a standby, or the standby since
     * promoted, which kept it), else the first standby, where the slot is made. Found at the first call and kept for this
     * instance's life. While a host does not answer and none that does has the slot, a {@link Kind#CONNECTION} error
     * (retried): the slot may be on the silent one, and a new slot elsewhere would lose the changes it holds. A host that
     * refuses the user or the database is the translated error at once (not retried: the same on every attempt).
     */
    public HostPort capture() {
        if (!config.fromStandby()) {
            return primary();
        }
        HostPort c = capture;
        if (c != null) {
            return c;
        }
        synchronized (this) {
            if (capture == null) {
                capture = findCapture();
            }
            return capture;
        }
    }

    /** Whether the slot is on a server other than the primary (capture_from: standby, and that standby not promoted). */
    public boolean captureIsStandby() {
        return config.fromStandby() && !capture().equals(primary());
    }

    private HostPort findCapture() {
        List<String> seen = new ArrayList<>();
        HostPort withSlot = null;
        boolean slotOnStandby = false;
        HostPort firstStandby = null;
        boolean silent = false;
        MillraceException refused = null;
        for (HostPort h : config.hosts()) {
            try (Connection c = DriverManager.getConnection(url(h), baseProperties());
                 java.sql.PreparedStatement ps = c.prepareStatement("SELECT pg_is_in_recovery(), EXISTS (SELECT 1 FROM pg_replication_slots"
                         + " WHERE slot_name = ? AND slot_type = 'logical')")) {
                ps.setString(1, config.slot());
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    boolean standby = rs.getBoolean(1);
                    boolean hasSlot = rs.getBoolean(2);
                    seen.add(h + " (" + (standby ? "a standby" : "the primary") + (hasSlot ? ", has slot '" + config.slot() + "'" : "") + ")");
                    if (hasSlot && withSlot == null) {
                        withSlot = h;
                        slotOnStandby = standby;
                    }
                    if (standby && firstStandby == null) {
                        firstStandby = h;
                    }
                }
            } catch (SQLException e) {
                MillraceException m = PgErrors.translate("connecting to " + h, e);
                if (m.kind() == Kind.CONNECTION) {
                    silent = true;
                    seen.add(h + " (unreachable: " + firstLine(e.getMessage()) + ")");
                } else if (refused == null) {
                    refused = m; // refused the user, or no such database: the same on every attempt
                }
            }
        }
        if (refused != null) {
            throw refused; // not retried: a set-up error, even if another host has the slot (the stream would not reach it either)
        }
        if (withSlot != null) {
            if (!slotOnStandby) {
                LOG.warn("source.capture_from is standby, but slot '{}' is on {}, which is not in recovery (a promoted standby, or a"
                        + " slot made while capturing from the primary): the pipeline reads it there", config.slot(), withSlot);
            }
            return withSlot;
        }
        if (silent) { // INV: RESUME — a new slot elsewhere would begin after the changes the silent host's slot holds
            throw new MillraceException(Kind.CONNECTION, "source.capture_from is standby and no reachable host has slot '" + config.slot()
                    + "': " + String.join(", ", seen) + ". The slot may be on the unreachable one: Millrace waits for it rather than"
                    + " make a new slot elsewhere");
        }
        if (firstStandby == null) {
            throw new MillraceException(Kind.CONNECTION, "source.capture_from is standby, but no host of source.hosts is a standby: "
                    + String.join(", ", seen) + ". Start the standby (or list it under source.hosts), or set source.capture_from: primary");
        }
        return firstStandby;
    }

    /** {@code host:port/database} of the server the slot is on (see {@link #capture()}), for messages. */
    public String captureWhere() {
        if (!config.fromStandby()) {
            return where();
        }
        HostPort c = capture;
        return c == null ? config.where() : c + "/" + config.database();
    }

    /** A regular connection to the {@link #capture()} server: the slot's state, the initial snapshot's reads. */
    public Connection openCapture() {
        return config.fromStandby() ? openTo(capture()) : open();
    }

    /**
     * While open, with the slot on a standby: asks the primary every half second to log its running transactions
     * ({@code pg_log_standby_snapshot()}, PostgreSQL 16+), which a slot being created on a standby waits for (otherwise up
     * to the primary's next checkpoint or 15 s of bgwriter). Nothing without a standby. A role that may not call it is
     * told once in the log; the creation then just waits.
     */
    public Nudge standbySnapshots() {
        if (!captureIsStandby()) {
            return () -> { };
        }
        java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        Thread t = new Thread(() -> {
            try (Connection c = open(); Statement s = c.createStatement()) {
                while (!done.get()) {
                    s.execute("SELECT pg_log_standby_snapshot()");
                    Thread.sleep(500);
                }
            } catch (SQLException | RuntimeException e) {
                LOG.info("could not ask the primary to log its running transactions ({}): creating the slot on the standby waits"
                        + " for the primary's next record of them (up to 15 s; GRANT EXECUTE ON FUNCTION pg_log_standby_snapshot()"
                        + " TO the role speeds it up)", firstLine(e.getMessage()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "millrace-standby-snapshot");
        t.setDaemon(true);
        t.start();
        return () -> {
            done.set(true);
            t.interrupt();
        };
    }

    /** What {@link #standbySnapshots()} starts; {@link #close()} ends it. */
    public interface Nudge extends AutoCloseable {
        @Override
        void close();
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
            return PgSessions.lifted(DriverManager.getConnection(url(host), baseProperties()));
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
        PGProperty.OPTIONS.set(p, SESSION_OPTIONS + PgSessions.STARTUP_OPTIONS);
        PGProperty.CONNECT_TIMEOUT.set(p, 10);
        PGProperty.TCP_KEEP_ALIVE.set(p, true);
        return p;
    }

    /** A regular connection (autocommit on). */
    public Connection open() {
        try {
            return PgSessions.lifted(DriverManager.getConnection(url(), baseProperties()));
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
            c = PgSessions.lifted(DriverManager.getConnection(url(capture()), p));
        } catch (SQLException e) {
            throw PgErrors.translate("opening a replication connection to " + captureWhere() + " as '" + config.user() + "'", e);
        }
        if (config.hosts().size() > 1 && !config.fromStandby()) {
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
