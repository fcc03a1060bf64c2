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
