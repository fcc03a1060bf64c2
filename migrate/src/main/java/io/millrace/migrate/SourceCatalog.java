package io.millrace.migrate;

import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TableRef;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a migration reads of the source catalog: the captured tables with their columns (exact types by
 * {@code format_type}), defaults, constraints, indexes, and the sequences their defaults use. Read once, by one thread;
 * nothing in it changes afterwards. No {@code pg_dump}: every definition comes from the catalog functions
 * ({@code pg_get_expr}, {@code pg_get_constraintdef}, {@code pg_get_indexdef}), so it works across major versions.
 */
final class SourceCatalog {

    /** One column, in attribute order. {@code identity} is {@code a}, {@code d} or empty; {@code generated} {@code s} or empty. */
    record Column(String name, String type, boolean notNull, String defaultExpr, String identity, String generated,
                  String collation) {
    }

    /** A constraint: its name, {@code contype} (p, u, f, c, x) and {@code pg_get_constraintdef}. */
    record Constraint(String name, char type, String definition) {
    }

    /** A sequence one of the tables' defaults or identity columns uses. {@code identity}: made by an identity column. */
    record Sequence(TableRef ref, String dataType, long start, long min, long max, long increment, long cache, boolean cycle,
                    boolean identity, TableRef ownerTable, String ownerColumn) {
    }

    /**
     * A partition of a partitioned table, at any depth.
     *
     * @param parent          the table it is a partition of
     * @param bound           {@code pg_get_expr(relpartbound)}: {@code FOR VALUES ...} or {@code DEFAULT}
     * @param partitionKey    {@code pg_get_partkeydef} when it is partitioned itself, else null
     * @param replicaIdentity its own {@code relreplident} (a partition does not take its root's)
     * @param hasIdentity     whether it has a replica identity (FULL, a primary key, USING INDEX): without one, once its
     *                        root is published, its UPDATEs and DELETEs fail on the source
     * @param constraints     its own constraints (not inherited from its parent: CHECK, primary key, unique, exclusion,
     *                        foreign key)
     * @param indexes         {@code pg_get_indexdef} of its own indexes: not a partition of its parent's index, backing no
     *                        constraint
     */
    record Partition(TableRef ref, TableRef parent, String bound, String partitionKey, char replicaIdentity, boolean hasIdentity,
                     List<Constraint> constraints, List<String> indexes) {
    }

    /**
     * One table.
     *
     * @param key             the primary key's columns in key order; empty when it has none
     * @param replicaIdentity {@code relreplident}: d (default: the primary key), f (full), i (an index), n (nothing)
     * @param indexes         {@code pg_get_indexdef} of each index that backs no constraint; a partitioned table's are made
     *                        on its partitions too
     * @param partitionKey    for a partitioned table, {@code pg_get_partkeydef} (e.g. {@code RANGE (at)}); null otherwise
     * @param partitions      for a partitioned table, its partitions at every depth, each after its parent; empty otherwise
     * @param bytes           its size on disk, its partitions' for a partitioned table
     * @param bytewiseKey     the key columns verify compares in byte order (the servers collate them differently); empty
     *                        as read from the source
     */
    record Table(long oid, TableRef ref, boolean unlogged, char replicaIdentity, List<Column> columns, List<String> key,
                 List<String> keyTypes, List<Constraint> constraints, List<String> indexes, long bytes, String partitionKey,
                 List<Partition> partitions, java.util.Set<String> bytewiseKey) {

        Table(long oid, TableRef ref, boolean unlogged, char replicaIdentity, List<Column> columns, List<String> key,
              List<String> keyTypes, List<Constraint> constraints, List<String> indexes, long bytes, String partitionKey,
              List<Partition> partitions) {
            this(oid, ref, unlogged, replicaIdentity, columns, key, keyTypes, constraints, indexes, bytes, partitionKey, partitions,
                    java.util.Set.of());
        }

        /**
         * This table with the key columns {@code columns} compared in byte order ({@code COLLATE "C"}) by verify: the two
         * servers collate them differently ({@link Verifier}).
         */
        Table bytewise(java.util.Set<String> columns) {
            return new Table(oid, ref, unlogged, replicaIdentity, this.columns, key, keyTypes, constraints, indexes, bytes,
                    partitionKey, partitions, java.util.Set.copyOf(columns));
        }

        boolean hasKey() {
            return !key.isEmpty();
        }

        List<Constraint> of(char type) {
            return constraints.stream().filter(c -> c.type() == type).toList();
        }
    }

    private SourceCatalog() {
    }

    /**
     * The tables of {@code patterns} (every user table when empty): regular ones and partitioned ones (with their
     * partitions, which are not matched on their own: the root carries their rows); a partitioned table with a partition
     * the stream cannot carry (unlogged, foreign) is in {@code skipped}, with the reason.
     */
    static List<Table> tables(Connection c, List<TableRef> patterns, List<TableRef> exclude, List<String> skipped) throws SQLException {
        List<Table> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT c.oid, n.nspname, c.relname, c.relkind, c.relpersistence,"
                + " c.relreplident, CASE WHEN c.relkind = 'p' THEN (SELECT coalesce(sum(pg_total_relation_size(t.relid)), 0)"
                + " FROM pg_partition_tree(c.oid) t)::bigint ELSE pg_total_relation_size(c.oid) END"
                + " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                + " WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'millrace')"
                + " AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%' AND c.relpersistence <> 't'"
                + " ORDER BY n.nspname, c.relname")) {
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    TableRef ref = new TableRef(rs.getString(2), rs.getString(3));
                    if (!patterns.isEmpty() && patterns.stream().noneMatch(p -> TableRef.matches(p, ref))) {
                        continue;
                    }
                    if (exclude.stream().anyMatch(p -> TableRef.matches(p, ref))) {
                        continue;
                    }
                    out.add(new Table(rs.getLong(1), ref, rs.getString(5).equals("u"), rs.getString(6).charAt(0),
                            null, null, null, null, null, rs.getLong(7), rs.getString(4).equals("p") ? "" : null, List.of()));
                }
            }
        }
        List<Table> full = new ArrayList<>();
        for (Table t : out) {
            String refused = t.partitionKey() == null ? null : refusedPartition(c, t);
            if (refused != null) {
                skipped.add(refused);
            } else {
                full.add(read(c, t));
            }
        }
        return full;
    }

    /** Why a partitioned table cannot be migrated (a partition whose changes the stream does not carry), or null. */
    private static String refusedPartition(Connection c, Table t) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT n.nspname, p.relname, p.relkind, p.relpersistence FROM pg_partition_tree(?::oid) x"
                + " JOIN pg_class p ON p.oid = x.relid JOIN pg_namespace n ON n.oid = p.relnamespace"
                + " WHERE p.relkind NOT IN ('r', 'p') OR p.relpersistence <> 'p' ORDER BY x.level, 1, 2 LIMIT 1")) {
            ps.setLong(1, t.oid());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                TableRef part = new TableRef(rs.getString(1), rs.getString(2));
                return t.ref() + ": its partition " + part + (rs.getString(3).equals("f")
                        ? " is a foreign table, whose rows are on another server (detach it, or migrate that server too)"
                        : " is unlogged: its changes are not in the WAL, so none would reach the target (ALTER TABLE " + part.sql()
                        + " SET LOGGED)");
            }
        }
    }

    /** A partitioned table's partitions at every depth, each after its parent. */
    private static List<Partition> partitions(Connection c, long root) throws SQLException {
        List<Partition> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT p.oid, n.nspname, p.relname, pn.nspname, pp.relname,"
                + " pg_get_expr(p.relpartbound, p.oid), CASE WHEN p.relkind = 'p' THEN pg_get_partkeydef(p.oid) END, p.relreplident,"
                + " (SELECT " + io.millrace.source.Preflight.HAS_IDENTITY + " FROM pg_class c WHERE c.oid = p.oid)"
                + " FROM pg_partition_tree(?::oid) x JOIN pg_class p ON p.oid = x.relid JOIN pg_namespace n ON n.oid = p.relnamespace"
                + " JOIN pg_class pp ON pp.oid = x.parentrelid JOIN pg_namespace pn ON pn.oid = pp.relnamespace"
                + " WHERE x.level > 0 ORDER BY x.level, n.nspname, p.relname")) {
            ps.setLong(1, root);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    long oid = rs.getLong(1);
                    out.add(new Partition(new TableRef(rs.getString(2), rs.getString(3)), new TableRef(rs.getString(4), rs.getString(5)),
                            rs.getString(6), rs.getString(7), rs.getString(8).charAt(0), rs.getBoolean(9),
                            constraints(c, oid, " AND coninhcount = 0"),
                            indexes(c, oid, " AND NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid)")));
                }
            }
        }
        return out;
    }

    private static List<Constraint> constraints(Connection c, long oid, String and) throws SQLException {
        List<Constraint> constraints = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint"
                + " WHERE conrelid = ? AND contype IN ('p', 'u', 'f', 'c', 'x')" + and + " ORDER BY contype, conname")) {
            ps.setLong(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    constraints.add(new Constraint(rs.getString(1), rs.getString(2).charAt(0), rs.getString(3)));
                }
            }
        }
        return List.copyOf(constraints);
    }

    /**
     * {@code pg_get_indexdef} of the relation's indexes that back no constraint. A partitioned table's index is written
     * {@code ON ONLY}, which would make it on the table alone, invalid until each partition's is attached: made without
     * {@code ONLY}, it is made on every partition too, as on the source.
     */
    private static List<String> indexes(Connection c, long oid, String and) throws SQLException {
        List<String> indexes = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i"
                + " WHERE i.indrelid = ? AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid"
                + " AND k.conrelid = i.indrelid)" + and + " ORDER BY i.indexrelid")) {
            ps.setLong(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    indexes.add(rs.getString(1).replaceFirst(" ON ONLY ", " ON "));
                }
            }
        }
        return List.copyOf(indexes);
    }

    private static Table read(Connection c, Table t) throws SQLException {
        List<Column> columns = new ArrayList<>();
        boolean v12 = c.getMetaData().getDatabaseMajorVersion() >= 12;
        try (PreparedStatement ps = c.prepareStatement("SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,"
                + " pg_get_expr(d.adbin, d.adrelid), a.attidentity, " + (v12 ? "a.attgenerated" : "''") + ","
                + " CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation"
                + " THEN (SELECT quote_ident(cn.nspname) || '.' || quote_ident(co.collname) FROM pg_collation co"
                + " JOIN pg_namespace cn ON cn.oid = co.collnamespace WHERE co.oid = a.attcollation) END"
                + " FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
                + " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
                + " WHERE a.attrelid = ? AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum")) {
            ps.setLong(1, t.oid());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    columns.add(new Column(rs.getString(1), rs.getString(2), rs.getBoolean(3), rs.getString(4), rs.getString(5),
                            rs.getString(6), rs.getString(7)));
                }
            }
        }
        List<String> key = new ArrayList<>();
        List<String> keyTypes = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT a.attname, format_type(a.atttypid, a.atttypmod)"
                + " FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)"
                + " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum"
                + " WHERE i.indrelid = ? AND i.indisprimary ORDER BY k.n")) {
            ps.setLong(1, t.oid());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    key.add(rs.getString(1));
                    keyTypes.add(rs.getString(2));
                }
            }
        }
        String partitionKey = t.partitionKey() == null ? null : one(c, "SELECT pg_get_partkeydef(?::oid)", t.oid());
        return new Table(t.oid(), t.ref(), t.unlogged(), t.replicaIdentity(), List.copyOf(columns), List.copyOf(key),
                List.copyOf(keyTypes), constraints(c, t.oid(), ""), indexes(c, t.oid(), ""), t.bytes(), partitionKey,
                partitionKey == null ? List.of() : partitions(c, t.oid()));
    }

    private static String one(Connection c, String sql, long oid) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    /**
     * The sequences the tables use: those their column defaults call ({@code nextval}), those they own (serial) and those
     * of their identity columns. Read from {@code pg_depend}, so a sequence is found however its default is spelt.
     */
    static List<Sequence> sequences(Connection c, List<Table> tables) throws SQLException {
        Map<Long, Sequence> out = new LinkedHashMap<>();
        Long[] oids = tables.stream().map(Table::oid).toArray(Long[]::new);
        Array arr = c.createArrayOf("oid", oids);
        // a column's default's, a serial's or identity's, and a domain default's (DEFAULT nextval(...)) of a type the tables use
        try (PreparedStatement ps = c.prepareStatement("WITH RECURSIVE " + USED_TYPES + ", seqs AS ("
                + " SELECT d.refobjid AS seq FROM pg_depend d JOIN pg_attrdef ad ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid"
                + " WHERE d.refclassid = 'pg_class'::regclass AND ad.adrelid = ANY (?)"
                + " UNION SELECT d.objid FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass"
                + " AND d.deptype IN ('a', 'i') AND d.refobjid = ANY (?)"
                + " UNION SELECT d.refobjid FROM pg_depend d WHERE d.classid = 'pg_type'::regclass AND d.refclassid = 'pg_class'::regclass"
                + " AND d.objid IN (SELECT oid FROM used))"
                + " SELECT n.nspname, s.relname, format_type(q.seqtypid, NULL), q.seqstart, q.seqmin, q.seqmax, q.seqincrement,"
                + " q.seqcache, q.seqcycle,"
                + " EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = s.oid AND d.classid = 'pg_class'::regclass AND d.deptype = 'i'),"
                + " (SELECT tn.nspname FROM pg_depend d JOIN pg_class t ON t.oid = d.refobjid JOIN pg_namespace tn ON tn.oid = t.relnamespace"
                + "   WHERE d.objid = s.oid AND d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass"
                + "   AND d.deptype IN ('a', 'i') LIMIT 1),"
                + " (SELECT t.relname FROM pg_depend d JOIN pg_class t ON t.oid = d.refobjid"
                + "   WHERE d.objid = s.oid AND d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass"
                + "   AND d.deptype IN ('a', 'i') LIMIT 1),"
                + " (SELECT a.attname FROM pg_depend d JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid"
                + "   WHERE d.objid = s.oid AND d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass"
                + "   AND d.deptype IN ('a', 'i') LIMIT 1), s.oid"
                + " FROM seqs u JOIN pg_class s ON s.oid = u.seq AND s.relkind = 'S' JOIN pg_namespace n ON n.oid = s.relnamespace"
                + " JOIN pg_sequence q ON q.seqrelid = s.oid ORDER BY n.nspname, s.relname")) {
            ps.setArray(1, arr);
            ps.setArray(2, arr);
            ps.setArray(3, arr);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    TableRef owner = rs.getString(11) == null ? null : new TableRef(rs.getString(11), rs.getString(12));
                    out.put(rs.getLong(14), new Sequence(new TableRef(rs.getString(1), rs.getString(2)), rs.getString(3), rs.getLong(4),
                            rs.getLong(5), rs.getLong(6), rs.getLong(7), rs.getLong(8), rs.getBoolean(9), rs.getBoolean(10), owner,
                            rs.getString(13)));
                }
            }
        }
        return List.copyOf(out.values());
    }

    /** The extensions the tables' column types belong to (e.g. {@code citext}, {@code hstore}), by name. */
    static List<String> extensions(Connection c, List<Table> tables) throws SQLException {
        List<String> out = new ArrayList<>();
        Long[] oids = tables.stream().map(Table::oid).toArray(Long[]::new);
        // Also through the user's types (USED_TYPES): a domain over citext, a composite type with an hstore attribute, a
        // range over an extension's type — the plan said ready, and the schema step stopped on 'type "public.citext" does
        // not exist (in: CREATE DOMAIN public.email AS public.citext ...)', found by trying it.
        try (PreparedStatement ps = c.prepareStatement("WITH RECURSIVE " + USED_TYPES + " SELECT DISTINCT e.extname FROM used u"
                + " JOIN pg_depend d ON d.classid = 'pg_type'::regclass AND d.objid = u.oid AND d.deptype = 'e'"
                + " JOIN pg_extension e ON e.oid = d.refobjid ORDER BY 1")) {
            ps.setArray(1, c.createArrayOf("oid", oids));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
        }
        return out;
    }

    /**
     * A type of the user's that a table's column (or its arrays' elements) uses: its name as SQL, what it is, how to create
     * it, and for an enum its labels in order (else empty).
     */
    record UserType(String sql, String kind, String create, List<String> labels) {
        UserType {
            labels = List.copyOf(labels);
        }
    }

    /**
     * An array's element; a multirange's range (created with it), also for an array of multiranges (a column of only
     * floatmultirange[] had its range left out: the plan said ready without it, and the target lacked it).
     */
    private static final String ELEMENT = "CASE WHEN x.typcategory = 'A' AND x.typelem <> 0"
            + " THEN coalesce((SELECT rngtypid FROM pg_range WHERE rngmultitypid = x.typelem), x.typelem)"
            + " WHEN x.typtype = 'm' THEN (SELECT rngtypid FROM pg_range WHERE rngmultitypid = x.oid) ELSE x.oid END";

    /**
     * {@code used(oid, depth)}: the types the columns of the tables whose oids are the one parameter use, and the types
     * those are made of (a domain's base type, a range's subtype, a composite type's attributes), at any depth.
     */
    private static final String USED_TYPES = "used(oid, depth) AS ("
            + " SELECT " + ELEMENT + ", 0 FROM pg_attribute a JOIN pg_type x ON x.oid = a.atttypid"
            + " WHERE a.attrelid = ANY (?) AND a.attnum > 0 AND NOT a.attisdropped"
            + " UNION" // not ALL: a type reached by many paths once per depth
            + " SELECT " + ELEMENT + ", u.depth + 1 FROM used u JOIN pg_type t ON t.oid = u.oid"
            + " JOIN pg_type x ON x.oid = t.typbasetype OR x.oid = (SELECT rngsubtype FROM pg_range WHERE rngtypid = t.oid)"
            + " OR x.oid IN (SELECT atttypid FROM pg_attribute"
            + " WHERE attrelid = t.typrelid AND t.typtype = 'c' AND attnum > 0 AND NOT attisdropped)"
            + " WHERE t.typtype IN ('d', 'c', 'r') AND u.depth < 32)";

    /**
     * The enums, domains, composite and range types (made with CREATE TYPE or CREATE DOMAIN, not by an extension) that the
     * tables' columns use — also through a domain's base type, a composite type's attributes, a range's subtype or a
     * multirange, at any depth — with the
     * statement that creates each as the source has it, in an order that creates each before the types that use it (the
     * deepest first).
     */
    static List<UserType> userTypes(Connection c, List<Table> tables) throws SQLException {
        List<UserType> out = new ArrayList<>();
        Long[] oids = tables.stream().map(Table::oid).toArray(Long[]::new);
        try (PreparedStatement ps = c.prepareStatement("WITH RECURSIVE " + USED_TYPES
                + " SELECT t.oid, format('%I.%I', n.nspname, t.typname), t.typtype,"
                + " format_type(t.typbasetype, t.typtypmod), t.typnotnull, t.typdefault, max(u.depth)"
                + " FROM used u JOIN pg_type t ON t.oid = u.oid"
                + " JOIN pg_namespace n ON n.oid = t.typnamespace"
                + " WHERE (t.typtype IN ('e', 'd', 'r') OR t.typtype = 'c' AND (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c')"
                + " AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
                + " AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_type'::regclass AND d.objid = t.oid AND d.deptype = 'e')"
                + " GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 7 DESC, 2")) {
            ps.setArray(1, c.createArrayOf("oid", oids));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(definition(c, rs.getLong(1)));
                }
            }
        }
        return out;
    }

    /**
     * The collations the tables' columns use, and those of the types they use (a domain's, a composite type's attributes',
     * a range's): of the user's ({@code own}, each as the statement that creates it, {@link #collation}), and the built-in
     * ones other than the database's default ({@code builtIn}: pg_catalog's, which the target must have by that name — an
     * ICU one needs a server built with ICU, a libc one the locale installed on the target's machine).
     */
    record Collations(List<UserType> own, List<String> builtIn) {
    }

    static Collations collations(Connection c, List<Table> tables) throws SQLException {
        List<UserType> own = new ArrayList<>();
        List<String> builtIn = new ArrayList<>();
        Long[] oids = tables.stream().map(Table::oid).toArray(Long[]::new);
        try (PreparedStatement ps = c.prepareStatement("WITH RECURSIVE " + USED_TYPES + ", colls(oid) AS ("
                + " SELECT a.attcollation FROM pg_attribute a WHERE a.attrelid = ANY (?) AND a.attnum > 0 AND NOT a.attisdropped"
                + " UNION SELECT t.typcollation FROM used u JOIN pg_type t ON t.oid = u.oid"
                + " UNION SELECT a.attcollation FROM used u JOIN pg_type t ON t.oid = u.oid AND t.typtype = 'c'"
                + " JOIN pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped"
                + " UNION SELECT r.rngcollation FROM used u JOIN pg_range r ON r.rngtypid = u.oid)"
                + " SELECT co.oid, format('%I.%I', n.nspname, co.collname), n.nspname = 'pg_catalog' FROM colls"
                + " JOIN pg_collation co ON co.oid = colls.oid JOIN pg_namespace n ON n.oid = co.collnamespace"
                + " WHERE co.collprovider <> 'd'" // the database's default: the target's own
                + " AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_collation'::regclass AND d.objid = co.oid"
                + " AND d.deptype = 'e') ORDER BY 2")) {
            ps.setArray(1, c.createArrayOf("oid", oids));
            ps.setArray(2, c.createArrayOf("oid", oids));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (rs.getBoolean(3)) {
                        builtIn.add(rs.getString(2));
                    } else {
                        own.add(collation(c, rs.getLong(1)));
                    }
                }
            }
        }
        return new Collations(List.copyOf(own), List.copyOf(builtIn));
    }

    /**
     * Collation {@code oid} of {@code c}'s catalog as the statement that creates it, the same code on both servers (so that
     * one the target has can be compared with the source's): provider, locale (ICU's, PostgreSQL 17's builtin one, or libc's
     * LC_COLLATE and LC_CTYPE), ICU rules (PostgreSQL 16+) and whether it is deterministic. Read through {@code to_jsonb},
     * whose fields name what each version has (colliculocale in 15 and 16, colllocale from 17).
     */
    static UserType collation(Connection c, long oid) throws SQLException {
        String name = Planner.one(c, "SELECT format('%I.%I', n.nspname, co.collname) FROM pg_collation co"
                + " JOIN pg_namespace n ON n.oid = co.collnamespace WHERE co.oid = " + oid); // a quoted name may hold " ("
        String create = Planner.one(c, "SELECT format('CREATE COLLATION %I.%I (', n.nspname, co.collname)"
                + " || CASE co.collprovider WHEN 'i' THEN 'provider = icu, locale = '"
                + " || quote_literal(coalesce(j ->> 'colllocale', j ->> 'colliculocale', co.collcollate))"
                + " || coalesce(', rules = ' || quote_literal(nullif(j ->> 'collicurules', '')), '')"
                + " WHEN 'b' THEN 'provider = builtin, locale = ' || quote_literal(j ->> 'colllocale')"
                + " ELSE 'provider = libc, lc_collate = ' || quote_literal(co.collcollate) || ', lc_ctype = ' || quote_literal(co.collctype)"
                + " END || CASE WHEN co.collisdeterministic THEN '' ELSE ', deterministic = false' END || ');'"
                + " FROM pg_collation co JOIN pg_namespace n ON n.oid = co.collnamespace, to_jsonb(co) j WHERE co.oid = " + oid);
        return new UserType(name, COLLATION, create, List.of());
    }

    /** The {@link UserType#kind} of a collation. */
    static final String COLLATION = "a collation";

    /** The COLLATE clause for collation {@code collOid} where it is not the type's own default, else "". */
    private static final String COLLATE = "(SELECT ' COLLATE ' || format('%%I.%%I', cn.nspname, co.collname) FROM pg_collation co"
            + " JOIN pg_namespace cn ON cn.oid = co.collnamespace WHERE co.oid = %1$s AND %1$s <> 0"
            + " AND %1$s <> (SELECT typcollation FROM pg_type WHERE oid = %2$s))";

    /**
     * Enum, domain, composite or range type {@code oid} of {@code c}'s catalog as the statement that creates it — the same
     * code on both servers, so that a type the target has already can be compared with the source's: an enum's labels in
     * their order; a domain's base type, collation, default, NOT NULL and CHECK constraints; a composite type's attributes
     * with their types and collations, in order; a range's subtype, operator class and collation where not the default,
     * canonical and difference functions, and its multirange's name.
     */
    static UserType definition(Connection c, long oid) throws SQLException {
        // Every name qualified, whatever the session's search_path (a database's own, say): the statement runs on the other
        // server, and the two servers' statements are compared.
        String path = Planner.one(c, "SELECT current_setting('search_path')");
        try (java.sql.Statement st = c.createStatement()) {
            st.execute("SELECT set_config('search_path', 'pg_catalog', false)");
        }
        try {
            return definitionAsIs(c, oid);
        } finally {
            try (PreparedStatement st = c.prepareStatement("SELECT set_config('search_path', ?, false)")) {
                st.setString(1, path);
                st.execute();
            }
        }
    }

    private static UserType definitionAsIs(Connection c, long oid) throws SQLException {
        try (java.sql.Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT format('%I.%I', n.nspname, t.typname),"
                + " t.typtype, format_type(t.typbasetype, t.typtypmod), t.typnotnull, pg_get_expr(t.typdefaultbin, 0), "
                + COLLATE.formatted("t.typcollation", "t.typbasetype")
                + " FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE t.oid = " + oid)) {
            if (!rs.next()) {
                throw new SQLException("type " + oid + " is gone from the catalog");
            }
            String name = rs.getString(1);
            return switch (rs.getString(2)) {
                case "e" -> {
                    List<String> labels = strings(c, "SELECT enumlabel FROM pg_enum WHERE enumtypid = " + oid + " ORDER BY enumsortorder");
                    yield new UserType(name, "an enum", "CREATE TYPE " + name + " AS ENUM (" + String.join(", ",
                            labels.stream().map(Ident::literal).toList()) + ");", labels);
                }
                case "r" -> new UserType(name, "a range type", "CREATE TYPE " + name + " AS RANGE (" + String.join(", ", strings(c,
                        "SELECT unnest(ARRAY['SUBTYPE = ' || format_type(r.rngsubtype, NULL),"
                        + " (SELECT 'SUBTYPE_OPCLASS = ' || format('%I.%I', n.nspname, o.opcname) FROM pg_opclass o"
                        + " JOIN pg_namespace n ON n.oid = o.opcnamespace WHERE o.oid = r.rngsubopc AND NOT o.opcdefault),"
                        + " (SELECT 'COLLATION = ' || format('%I.%I', cn.nspname, co.collname) FROM pg_collation co"
                        + " JOIN pg_namespace cn ON cn.oid = co.collnamespace WHERE co.oid = r.rngcollation AND r.rngcollation <> 0"
                        + " AND r.rngcollation <> (SELECT typcollation FROM pg_type WHERE oid = r.rngsubtype)),"
                        + " CASE WHEN r.rngcanonical <> 0 THEN 'CANONICAL = ' || r.rngcanonical::regproc::text END,"
                        + " CASE WHEN r.rngsubdiff <> 0 THEN 'SUBTYPE_DIFF = ' || r.rngsubdiff::regproc::text END,"
                        + " (SELECT 'MULTIRANGE_TYPE_NAME = ' || format('%I.%I', mn.nspname, m.typname) FROM pg_type m"
                        + " JOIN pg_namespace mn ON mn.oid = m.typnamespace WHERE m.oid = r.rngmultitypid)])"
                        + " FROM pg_range r WHERE r.rngtypid = " + oid).stream().filter(java.util.Objects::nonNull).toList()) + ");", List.of());
                case "d" -> new UserType(name, "a domain", "CREATE DOMAIN " + name + " AS " + rs.getString(3)
                        + (rs.getString(6) == null ? "" : rs.getString(6))
                        + (rs.getString(5) == null ? "" : " DEFAULT " + rs.getString(5)) + (rs.getBoolean(4) ? " NOT NULL" : "")
                        + strings(c, "SELECT ' CONSTRAINT ' || quote_ident(conname) || ' ' || pg_get_constraintdef(oid) FROM pg_constraint"
                        + " WHERE contypid = " + oid + " AND contype = 'c' ORDER BY conname").stream().reduce("", String::concat) + ";", List.of());
                default -> new UserType(name, "a composite type", "CREATE TYPE " + name + " AS (" + String.join(", ",
                        strings(c, "SELECT quote_ident(attname) || ' ' || format_type(atttypid, atttypmod) || coalesce("
                        + COLLATE.formatted("attcollation", "atttypid") + ", '') FROM pg_attribute"
                        + " WHERE attrelid = (SELECT typrelid FROM pg_type WHERE oid = " + oid + ") AND attnum > 0 AND NOT attisdropped"
                        + " ORDER BY attnum")) + ");", List.of());
            };
        }
    }

    static List<String> strings(Connection c, String sql) throws SQLException {
        List<String> out = new ArrayList<>();
        try (java.sql.Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }

    /** {@code "a", "b"} */
    static String quoteAll(List<String> names) {
        return String.join(", ", names.stream().map(Ident::quote).toList());
    }
}
