package io.millrace.migrate;

import io.millrace.core.schema.Ident;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The migration's steps on the target, in {@code <state_schema>.migration}: each {@link #record} is one committed
 * transaction (INV: DURABLE — a step is recorded before the next relies on it), read back by {@code migrate status}.
 */
final class StateStore {
    /** One recorded step. */
    record Step(MigrationState state, Instant at, String detail) {
    }

    private final String table;
    private final String schema;

    StateStore(String stateSchema) {
        this.schema = stateSchema;
        this.table = Ident.qualified(stateSchema, "migration");
    }

    /** The steps so far, oldest first; empty when no migration was recorded (the table need not exist). */
    List<Step> steps(Connection tgt) throws SQLException {
        List<Step> out = new ArrayList<>();
        try (Statement s = tgt.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT to_regclass(" + Ident.literal(table) + ") IS NOT NULL")) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    return out;
                }
            }
            try (ResultSet rs = s.executeQuery("SELECT step, at, detail FROM " + table + " ORDER BY id")) {
                while (rs.next()) {
                    out.add(new Step(MigrationState.valueOf(rs.getString(1)), rs.getTimestamp(2).toInstant(), rs.getString(3)));
                }
            }
        }
        return out;
    }

    MigrationState current(Connection tgt) throws SQLException {
        List<Step> s = steps(tgt);
        return s.isEmpty() ? MigrationState.NONE : s.get(s.size() - 1).state();
    }

    /** How long ago (by the target's clock) {@code state} was last recorded. */
    java.time.Duration since(Connection tgt, MigrationState state) throws SQLException {
        try (PreparedStatement ps = tgt.prepareStatement("SELECT (extract(epoch FROM clock_timestamp() - at) * 1000)::bigint FROM "
                + table + " WHERE step = ? ORDER BY id DESC LIMIT 1")) {
            ps.setString(1, state.name());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? java.time.Duration.ofMillis(rs.getLong(1)) : java.time.Duration.ZERO;
            }
        }
    }

    /** The keys of the migration's lock: Millrace's migrations, and the source's slot (one migration each). */
    private static final String KEYS = "hashtext('millrace.migrate')::oid AND l.objid = hashtext(?)::oid";

    /**
     * Takes the migration's lock on {@code tgt}'s session (a session advisory lock on the target, held until that
     * connection closes) for {@code doing} — a cutover, a rollback or an abort, which move the fences — or throws CONFIG
     * naming the session that holds it. Two at once undo each other: an abort run while a cutover waited for its fence
     * marker lifted the source's fence, and the cutover went on to cut over with the application writing to the source.
     */
    static void exclusive(Connection tgt, String slot, String doing) throws SQLException {
        try (PreparedStatement ps = tgt.prepareStatement("SELECT pg_try_advisory_lock(hashtext('millrace.migrate'), hashtext(?))")) {
            ps.setString(1, slot);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (rs.getBoolean(1)) {
                    return;
                }
            }
        }
        int pid = holder(tgt, slot);
        throw new io.millrace.core.MillraceException(io.millrace.core.MillraceException.Kind.CONFIG, doing + ": a cutover, rollback or"
                + " abort of this migration is running now" + (pid == 0 ? "" : " (the target's session " + pid + " holds the migration's"
                + " lock)") + "; nothing was changed. Fix: wait for it to end ('millrace migrate status' says when), or stop it"
                + " (Ctrl-C), then run this again" + (pid == 0 ? "" : "; if its process is gone but the session stays (a stalled"
                + " network), end it on the target: SELECT pg_terminate_backend(" + pid + ")"));
    }

    /** The target session holding the migration's lock now (a cutover, rollback or abort runs), or 0. */
    static int holder(Connection tgt, String slot) throws SQLException {
        try (PreparedStatement ps = tgt.prepareStatement("SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted"
                + " AND l.objsubid = 2 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                + " AND l.classid = " + KEYS)) {
            ps.setString(1, slot);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        }
    }

    /** Appends {@code state} and commits (the connection may be in autocommit or not). */
    void record(Connection tgt, MigrationState state, String detail) throws SQLException {
        boolean auto = tgt.getAutoCommit();
        tgt.setAutoCommit(false);
        try (Statement s = tgt.createStatement()) {
            s.execute("CREATE SCHEMA IF NOT EXISTS " + Ident.quote(schema));
            s.execute("CREATE TABLE IF NOT EXISTS " + table + " (id bigserial PRIMARY KEY, step text NOT NULL,"
                    + " at timestamptz NOT NULL DEFAULT clock_timestamp(), detail text)");
            try (PreparedStatement ps = tgt.prepareStatement("INSERT INTO " + table + " (step, detail) VALUES (?, ?)")) {
                ps.setString(1, state.name());
                ps.setString(2, detail);
                ps.executeUpdate();
            }
            tgt.commit();
        } catch (SQLException e) {
            tgt.rollback();
            throw e;
        } finally {
            tgt.setAutoCommit(auto);
        }
    }
}
