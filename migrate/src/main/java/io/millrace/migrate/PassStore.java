package io.millrace.migrate;

import io.millrace.core.schema.Ident;
import io.millrace.migrate.Verifier.Chunk;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The last full verify pass of each table, on the target in {@code <state_schema>.verified_tables} and
 * {@code verified_chunks}: the pass's chunks with the rows each held when it was found equal, and each side's
 * transaction horizon then ({@code txid_snapshot_xmin} of the snapshot the chunks were read in: every row version
 * written by an older transaction was in the pass). The cutover's comparison skips a chunk when neither side has a row
 * version written since its horizon and both hold the recorded number of rows: an insert or update writes a new
 * version, a delete lowers the count, so an unchanged chunk is still equal (INV: COVER — the recorded chunks tile the key
 * space, so a row inserted since falls into one of them).
 */
final class PassStore {
    /**
     * A table's recorded pass. {@code rows[i]} is chunk i's row count when found equal, {@value #DIFFERED} when it differed
     * when read and then converged or was copied again, {@value #DIVERGENT} when it was still divergent at the end of the
     * pass and not copied again.
     */
    record Pass(long sourceHorizon, long targetHorizon, List<Chunk> chunks, long[] rows, java.time.Instant at) {
        /** Chunks that differed when the pass read them (in flux then, or divergent). */
        long differed() {
            return java.util.Arrays.stream(rows).filter(r -> r < 0).count();
        }

        /** Chunks found divergent by the pass and not repaired since. */
        long divergent() {
            return java.util.Arrays.stream(rows).filter(r -> r == DIVERGENT).count();
        }
    }

    static final long DIFFERED = -1;
    static final long DIVERGENT = -2;

    private final String schema;
    private final String tables;
    private final String chunks;

    PassStore(String stateSchema) {
        this.schema = stateSchema;
        this.tables = Ident.qualified(stateSchema, "verified_tables");
        this.chunks = Ident.qualified(stateSchema, "verified_chunks");
    }

    /**
     * Forgets every recorded pass: a migration started over after an abort copies every table again, and status showed the
     * aborted attempt's passes beside the new copy as if it were verified (found by a migrate user). Returns how many
     * tables had one.
     */
    int forgetAll(Connection tgt) throws SQLException {
        if (Planner.oneOrNull(tgt, "SELECT to_regclass(" + Ident.literal(tables) + ")") == null) {
            return 0;
        }
        try (Statement s = tgt.createStatement()) {
            int n = s.executeUpdate("DELETE FROM " + tables);
            if (Planner.oneOrNull(tgt, "SELECT to_regclass(" + Ident.literal(chunks) + ")") != null) {
                s.executeUpdate("DELETE FROM " + chunks);
            }
            return n;
        }
    }

    /** Replaces {@code table}'s recorded pass, in one target transaction. */
    void save(Connection tgt, String table, Pass p) throws SQLException {
        tgt.setAutoCommit(false);
        try (Statement s = tgt.createStatement()) {
            s.execute("CREATE SCHEMA IF NOT EXISTS " + Ident.quote(schema));
            s.execute("CREATE TABLE IF NOT EXISTS " + tables + " (tbl text PRIMARY KEY, source_horizon bigint NOT NULL,"
                    + " target_horizon bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())");
            s.execute("CREATE TABLE IF NOT EXISTS " + chunks + " (tbl text NOT NULL, ord int NOT NULL, lo text[], hi text[],"
                    + " rows bigint NOT NULL, PRIMARY KEY (tbl, ord))");
            try (PreparedStatement del = tgt.prepareStatement("DELETE FROM " + chunks + " WHERE tbl = ?")) {
                del.setString(1, table);
                del.executeUpdate();
            }
            try (PreparedStatement up = tgt.prepareStatement("INSERT INTO " + tables + " (tbl, source_horizon, target_horizon)"
                    + " VALUES (?, ?, ?) ON CONFLICT (tbl) DO UPDATE SET source_horizon = EXCLUDED.source_horizon,"
                    + " target_horizon = EXCLUDED.target_horizon, at = clock_timestamp()")) {
                up.setString(1, table);
                up.setLong(2, p.sourceHorizon());
                up.setLong(3, p.targetHorizon());
                up.executeUpdate();
            }
            try (PreparedStatement ins = tgt.prepareStatement("INSERT INTO " + chunks + " (tbl, ord, lo, hi, rows) VALUES (?, ?, ?, ?, ?)")) {
                for (int i = 0; i < p.chunks().size(); i++) {
                    Chunk c = p.chunks().get(i);
                    ins.setString(1, table);
                    ins.setInt(2, i);
                    ins.setArray(3, c.lo() == null ? null : tgt.createArrayOf("text", c.lo().toArray()));
                    ins.setArray(4, c.hi() == null ? null : tgt.createArrayOf("text", c.hi().toArray()));
                    ins.setLong(5, p.rows()[i]);
                    ins.addBatch();
                }
                ins.executeBatch();
            }
            tgt.commit();
        } catch (SQLException e) {
            tgt.rollback();
            throw e;
        } finally {
            tgt.setAutoCommit(true);
        }
    }

    /**
     * The cutover's comparison found chunk {@code c} of {@code table} divergent: so recorded, in the table's pass (for a
     * table without a key, whose pass is not recorded otherwise, a pass of one chunk, the whole table, is recorded).
     */
    void divergent(Connection tgt, String table, Chunk c) throws SQLException {
        Pass p = load(tgt, table);
        if (p == null) {
            save(tgt, table, new Pass(0, 0, List.of(c), new long[] {DIVERGENT}, null));
            return;
        }
        long[] rows = p.rows().clone();
        boolean found = false;
        for (int i = 0; i < rows.length; i++) {
            if (java.util.Objects.equals(p.chunks().get(i).lo(), c.lo()) && java.util.Objects.equals(p.chunks().get(i).hi(), c.hi())) {
                rows[i] = DIVERGENT;
                found = true;
            }
        }
        if (found) {
            save(tgt, table, new Pass(p.sourceHorizon(), p.targetHorizon(), p.chunks(), rows, null));
        }
    }

    /** Chunk {@code c} of {@code table}'s recorded pass was copied again: no longer divergent (compared again by a cutover). */
    void repaired(Connection tgt, String table, Chunk c) throws SQLException {
        if (Planner.oneOrNull(tgt, "SELECT to_regclass(" + Ident.literal(chunks) + ")") == null) {
            return;
        }
        try (PreparedStatement ps = tgt.prepareStatement("UPDATE " + chunks + " SET rows = " + DIFFERED + " WHERE tbl = ? AND rows = "
                + DIVERGENT + " AND lo IS NOT DISTINCT FROM ? AND hi IS NOT DISTINCT FROM ?")) {
            ps.setString(1, table);
            ps.setArray(2, c.lo() == null ? null : tgt.createArrayOf("text", c.lo().toArray()));
            ps.setArray(3, c.hi() == null ? null : tgt.createArrayOf("text", c.hi().toArray()));
            ps.executeUpdate();
        }
    }

    /** {@code table}'s recorded pass, or null when none was recorded. */
    Pass load(Connection tgt, String table) throws SQLException {
        if (Planner.oneOrNull(tgt, "SELECT to_regclass(" + Ident.literal(chunks) + ")") == null) {
            return null;
        }
        long src;
        long dst;
        java.time.Instant at;
        try (PreparedStatement ps = tgt.prepareStatement("SELECT source_horizon, target_horizon, at FROM " + tables + " WHERE tbl = ?")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                src = rs.getLong(1);
                dst = rs.getLong(2);
                at = rs.getTimestamp(3).toInstant();
            }
        }
        List<Chunk> out = new ArrayList<>();
        List<Long> rows = new ArrayList<>();
        try (PreparedStatement ps = tgt.prepareStatement("SELECT lo, hi, rows FROM " + chunks + " WHERE tbl = ? ORDER BY ord")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new Chunk(list(rs.getArray(1)), list(rs.getArray(2))));
                    rows.add(rs.getLong(3));
                }
            }
        }
        return out.isEmpty() ? null : new Pass(src, dst, out, rows.stream().mapToLong(Long::longValue).toArray(), at);
    }

    private static List<String> list(Array a) throws SQLException {
        return a == null ? null : Arrays.asList((String[]) a.getArray());
    }
}
