package io.millrace.source;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One engine per pipeline: a session advisory lock on the source, keyed by the slot's name, taken before any
 * destination is opened and held until the engine has closed them.
 *
 * <p>The slot alone does not keep a second engine out: it is held only while streaming, so during an initial
 * snapshot (hours, on a large database) a second engine with the same configuration passed every check, then
 * opened the destinations — cutting the first's jsonl files back to their checkpoint, fencing its Kafka
 * producer, taking its snapshot for an interrupted one. INV: IDENTITY.
 *
 * <p>A lock outlives a client that vanished without closing its socket until the server notices: the session
 * asks the server to probe it every few seconds (TCP keepalives), so that takes about a minute, like
 * {@code wal_sender_timeout} for the slot. A lock this JVM held and closed, but which a stalled network kept
 * alive on the server, is ended at once.
 */
public final class PipelineLock implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PipelineLock.class);
    /** Sessions (server address, backend PID and start) whose lock this JVM gave up: never a live engine's. */
    private static final Set<String> GIVEN_UP = ConcurrentHashMap.newKeySet();
    /** The lock's two keys: Millrace's, and the slot's. */
    private static final String KEYS = "hashtext('millrace.pipeline'), hashtext(?)";

    private final Connection connection;
    private final String session;

    private PipelineLock(Connection connection, String session) {
        this.connection = connection;
        this.session = session;
    }

    /**
     * Takes the lock of {@code connections}' pipeline, or throws {@link Kind#SLOT_IN_USE} naming the session that
     * holds it.
     */
    public static PipelineLock acquire(PgConnections connections) {
        String slot = connections.config().slot();
        Connection c = connections.open();
        try {
            try (Statement s = c.createStatement()) {
                // Ignored on a Unix socket; on TCP, a vanished client's lock is freed after about 30 + 3 × 10 s.
                s.execute("SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10; SET tcp_keepalives_count = 3");
            }
            String where = connections.config().where();
            for (int attempt = 0; ; attempt++) {
                if (tryLock(c, slot)) {
                    return new PipelineLock(c, where + "#" + self(c));
                }
                Holder h = holder(c, slot);
                if (h != null && attempt < 50 && GIVEN_UP.contains(where + "#" + h.pid + "@" + h.started)) {
                    if (attempt == 0) {
                        LOG.info("ending source session {}: it holds the lock of slot '{}' that this process gave up (a stalled connection)",
                                h.pid, slot);
                        terminate(c, h.pid);
                    }
                    Thread.sleep(100);
                    continue;
                }
                throw new MillraceException(Kind.SLOT_IN_USE, "slot '" + slot + "' is in use by another Millrace engine running this"
                        + " pipeline" + (h == null ? "" : " (its source session, process " + h.pid + (h.client == null ? "" : " from " + h.client)
                        + ", holds the pipeline's lock)") + ". Fix: stop that engine, or give this one its own source.slot");
            }
        } catch (SQLException e) {
            close(c);
            throw PgErrors.translate("taking the pipeline lock of slot '" + slot + "'", e);
        } catch (InterruptedException e) {
            close(c);
            Thread.currentThread().interrupt();
            throw new MillraceException(Kind.INTERNAL, "interrupted while taking the pipeline lock of slot '" + slot + "'", e);
        } catch (RuntimeException e) {
            close(c);
            throw e;
        }
    }

    private static boolean tryLock(Connection c, String slot) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_lock(" + KEYS + ")")) {
            ps.setString(1, slot);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    /** This session: {@code pid@start} (a PID alone may be reused). */
    private static String self(Connection c) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pid, backend_start::text FROM pg_stat_activity"
                + " WHERE pid = pg_backend_pid()")) {
            return rs.next() ? rs.getInt(1) + "@" + rs.getString(2) : "?";
        }
    }

    private record Holder(int pid, String client, String started) {
    }

    /** Whether an engine of the pipeline of {@code slot} holds the lock now (on {@code c}'s database): it runs. */
    public static boolean held(Connection c, String slot) throws SQLException {
        return holder(c, slot) != null;
    }

    /** The session holding the lock (two int4 keys: classid, objid, objsubid 2), or null if it is gone. */
    private static Holder holder(Connection c, String slot) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT l.pid, host(a.client_addr), a.backend_start::text FROM pg_locks l"
                + " LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2"
                + " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                + " AND l.classid = hashtext('millrace.pipeline')::oid AND l.objid = hashtext(?)::oid")) {
            ps.setString(1, slot);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? new Holder(rs.getInt(1), rs.getString(2), rs.getString(3)) : null;
            }
        }
    }

    private static void terminate(Connection c, int pid) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
            ps.setInt(1, pid);
            ps.execute();
        }
    }

    /** Gives the lock up: the session ends (an unlock could not be sent over a connection that broke). */
    @Override
    public void close() {
        GIVEN_UP.add(session);
        close(connection);
    }

    private static void close(Connection c) {
        try {
            c.close();
        } catch (SQLException e) {
            LOG.debug("closing the pipeline lock's connection: {}", e.getMessage());
        }
    }
}
