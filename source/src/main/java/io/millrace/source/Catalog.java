package io.millrace.source;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Reads what Millrace needs from the source catalog. Every method takes the connection to use. */
public final class Catalog {

    /** Runs {@code statements} on {@code c} in one transaction: all of them or none (rolled back on the first failure). */
    static void inOneTransaction(Connection c, String... statements) throws SQLException {
        boolean auto = c.getAutoCommit();
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            for (String sql : statements) {
                s.execute(sql);
            }
            c.commit();
        } catch (SQLException e) {
            c.rollback();
            throw e;
        } finally {
            c.setAutoCommit(auto);
        }
    }
    /**
     * The server's current WAL position as SQL: written ({@code pg_current_wal_lsn()}) on a primary, replayed on a standby,
     * where the other raises "recovery is in progress" (the slot is there with source.capture_from: standby).
     */
    public static final String WAL_NOW = "(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)";

    private Catalog() {
    }

    /**
     * The position after every WAL record inserted so far: {@code pg_current_wal_insert_lsn()} on a primary (a commit
     * another session already sees is before it, also under {@code synchronous_commit = off}, where the written position
     * {@link #WAL_NOW} may lag it), the replayed position on a standby.
     */
    public static io.millrace.core.Lsn walInserted(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()"
                + " ELSE pg_current_wal_insert_lsn() END)::text"); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return io.millrace.core.Lsn.parse(rs.getString(1));
        }
    }

    /** A table as the catalog describes it; {@code estimatedRows} is -1 when PostgreSQL has no estimate. */
    public record TableInfo(TableRef ref, int oid, char relkind, char replicaIdentity, boolean hasPrimaryKey,
                            boolean canSelect, long estimatedRows, long pages) {
        public boolean partitioned() {
            return relkind == 'p';
        }
    }

    /**
     * The planner's row estimate of a relation with storage {@code r}, as an SQL expression: reltuples scaled to the
     * relation's current size (as the planner does), 0 when it has no pages, -1 when unknown (never vacuumed or
     * analysed: reltuples -1, or 0 before PostgreSQL 14, while the table has pages).
     */
    private static String estimate(String r) {
        return "CASE WHEN pg_relation_size(" + r + ".oid) = 0 THEN 0 WHEN " + r + ".relpages > 0 AND " + r + ".reltuples >= 0"
                + " THEN " + r + ".reltuples / " + r + ".relpages * (pg_relation_size(" + r + ".oid) / current_setting('block_size')::float8)"
                + " ELSE -1 END";
    }

    /** Looks a table up by schema and name (taken literally), or returns null when there is none. */
    public static TableInfo table(Connection c, TableRef ref) throws SQLException {
        // A partitioned table holds no rows itself: its estimate is its partitions' (unknown when one is).
        String rows = serverVersion(c) < 120000 ? estimate("c") : "CASE WHEN c.relkind = 'p' THEN (SELECT CASE WHEN bool_or(e < 0) THEN -1"
                + " ELSE coalesce(sum(e), 0) END FROM (SELECT " + estimate("l") + " AS e FROM pg_partition_tree(c.oid) p"
                + " JOIN pg_class l ON l.oid = p.relid WHERE p.isleaf AND l.relkind = 'r') leaves) ELSE " + estimate("c") + " END";
        String sql = "SELECT c.oid, c.relkind, c.relreplident,"
                + " EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary),"
                + " has_table_privilege(c.oid, 'SELECT'), round(" + rows + ")::bigint, c.relpages"
                + " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                + " WHERE n.nspname = ? AND c.relname = ? AND c.relkind IN ('r', 'p')";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, ref.schema());
            ps.setString(2, ref.table());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                return new TableInfo(ref, (int) rs.getLong(1), rs.getString(2).charAt(0), rs.getString(3).charAt(0),
                        rs.getBoolean(4), rs.getBoolean(5), rs.getLong(6), rs.getLong(7));
            }
        }
    }

    /**
     * The table's columns as pgoutput sends them (not dropped, not generated, in attribute order),
     * with the key flag on the primary key columns (or the replica identity index's, when
     * REPLICA IDENTITY USING INDEX). Under REPLICA IDENTITY FULL pgoutput flags every column; Millrace
     * keys rows by the primary key all the same (see {@link #keyColumns}).
     */
    public static RelationInfo relation(Connection c, TableRef ref, TypeResolver types) throws SQLException {
        TableInfo t = table(c, ref);
        if (t == null) {
            throw new MillraceException(Kind.CONFIG, "table " + ref.sql() + " does not exist in the source database");
        }
        List<String> keys = keyColumns(c, t.oid());
        String sql = "SELECT a.attname, a.atttypid, a.atttypmod FROM pg_attribute a"
                + " WHERE a.attrelid = ? AND a.attnum > 0 AND NOT a.attisdropped"
                + (serverVersion(c) >= 120000 ? " AND a.attgenerated = ''" : "")
                + " ORDER BY a.attnum";
        List<ColumnInfo> cols = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setInt(1, t.oid());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String name = rs.getString(1);
                    int typeOid = (int) rs.getLong(2);
                    TypeInfo type = types.resolve(typeOid);
                    if (type == null) {
                        type = new TypeInfo(typeOid, "pg_catalog", "unknown_oid_" + typeOid, 'b', 'X', 0, 0);
                    }
                    cols.add(new ColumnInfo(name, type, rs.getInt(3), keys.contains(name)));
                }
            }
        }
        return new RelationInfo(t.oid(), ref, t.replicaIdentity(), cols, types);
    }

    /** Names of the key columns: the replica identity index's when set, else the primary key's; empty when none. */
    public static List<String> keyColumns(Connection c, int relOid) throws SQLException {
        String sql = "SELECT a.attname FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid"
                + " JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true"
                + " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum"
                + " WHERE i.indrelid = ? AND (CASE WHEN c.relreplident = 'i' THEN i.indisreplident ELSE i.indisprimary END)"
                + " ORDER BY k.ord";
        List<String> keys = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setInt(1, relOid);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    keys.add(rs.getString(1));
                }
            }
        }
        return keys;
    }

    /** Every user table (and partitioned root; no partitions), in name order. */
    public static List<TableRef> userTables(Connection c) throws SQLException {
        return userTablesByOid(c).values().stream().sorted().toList();
    }

    /** The tables of {@code oids} that exist, by oid, under their current names. */
    public static Map<Integer, TableRef> tablesByOid(Connection c, Collection<Integer> oids) throws SQLException {
        Map<Integer, TableRef> out = new HashMap<>();
        if (oids.isEmpty()) {
            return out;
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT c.oid::int8, n.nspname, c.relname FROM pg_class c"
                + " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid::int8 = ANY (?)")) {
            ps.setArray(1, c.createArrayOf("int8", oids.stream().map(Integer::toUnsignedLong).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put((int) rs.getLong(1), new TableRef(rs.getString(2), rs.getString(3)));
                }
            }
        }
        return out;
    }

    /** Every user table and partitioned root (no partitions), by oid. */
    public static Map<Integer, TableRef> userTablesByOid(Connection c) throws SQLException {
        Map<Integer, TableRef> out = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT c.oid::int8, n.nspname, c.relname FROM pg_class c"
                + " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relpersistence = 'p'"
                + " AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'");
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                out.put((int) rs.getLong(1), new TableRef(rs.getString(2), rs.getString(3)));
            }
        }
        return out;
    }

    /** The attribute numbers of the live columns of the tables {@code oids}, by column name. */
    public static Map<Integer, Map<String, Integer>> attributeNumbers(Connection c, Collection<Integer> oids) throws SQLException {
        Map<Integer, Map<String, Integer>> out = new HashMap<>();
        if (oids.isEmpty()) {
            return out;
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT attrelid::int8, attname, attnum FROM pg_attribute"
                + " WHERE attrelid::int8 = ANY (?) AND attnum > 0 AND NOT attisdropped")) {
            ps.setArray(1, c.createArrayOf("int8", oids.stream().map(Integer::toUnsignedLong).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.computeIfAbsent((int) rs.getLong(1), k -> new HashMap<>()).put(rs.getString(2), rs.getInt(3));
                }
            }
        }
        return out;
    }

    /**
     * Which of {@code columns} of relation {@code relOid} hold a value in rows that existed before they were added: a
     * default or generated value, or one PostgreSQL filled in without rewriting the table (atthasmissing). Such a
     * column changed existing rows without change events.
     */
    public static List<String> filledColumns(Connection c, int relOid, List<String> columns) throws SQLException {
        List<String> filled = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT a.attname FROM pg_attribute a"
                + " WHERE a.attrelid = ? AND a.attname = ANY (?) AND (a.atthasmissing OR a.attgenerated <> '' OR a.attidentity <> ''"
                + " OR EXISTS (SELECT 1 FROM pg_attrdef d WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum))")) {
            ps.setInt(1, relOid);
            ps.setArray(2, c.createArrayOf("text", columns.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    filled.add(rs.getString(1));
                }
            }
        }
        return filled;
    }

    /** Whether publication {@code publication} is {@code FOR ALL TABLES}. */
    public static boolean allTables(Connection c, String publication) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT puballtables FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, publication);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    /** Whether the relation of {@code oid} is a partition (PostgreSQL 10+; false before). */
    public static boolean isPartition(Connection c, int oid) throws SQLException {
        if (serverVersion(c) < 100000) {
            return false;
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT relispartition FROM pg_class WHERE oid = ?::oid")) {
            ps.setLong(1, Integer.toUnsignedLong(oid));
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    /** Tables of a publication (as published: partitions through their root when publish_via_partition_root). */
    public static List<TableRef> publicationTables(Connection c, String publication) throws SQLException {
        List<TableRef> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = ? ORDER BY 1, 2")) {
            ps.setString(1, publication);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new TableRef(rs.getString(1), rs.getString(2)));
                }
            }
        }
        return out;
    }

    public static int serverVersion(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT current_setting('server_version_num')::int");
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        }
    }

    public static String setting(Connection c, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT current_setting(?)")) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }
}
