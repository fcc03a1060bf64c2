package io.millrace.migrate;

import io.millrace.migrate.SourceCatalog.Table;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * Whether the two servers order a table's key alike. Verify cuts each table into key ranges on the source and hashes the
 * same ranges on the target (INV: COVER — the ranges tile the key space under one order). A text key under another
 * collation on the target (a database created with another locale or provider, an ICU default, a different collation
 * library version: the common case of a move to a new host or cloud) puts other rows in a range on each side, and every
 * range then differed: a false divergence, which {@code --repair} could not repair either. Such key columns are compared
 * in byte order ({@code COLLATE "C"}) on both servers, which orders them alike; the price is that the key's index, built
 * under the column's collation, cannot serve the ranges, so each chunk reads the table (logged once per table, with the
 * fix, at each verify). A key whose collations agree keeps its index.
 */
final class KeyOrder {
    private static final Logger LOG = LoggerFactory.getLogger(KeyOrder.class);

    private KeyOrder() {
    }

    /** {@code tables}, each keyed table with the key columns the servers collate differently compared in byte order. */
    static List<Table> bytewise(Connection src, Connection tgt, List<Table> tables) throws SQLException {
        List<Table> out = new ArrayList<>(tables.size());
        for (Table t : tables) {
            out.add(t.hasKey() ? bytewise(src, tgt, t) : t);
        }
        return out;
    }

    private static Table bytewise(Connection src, Connection tgt, Table t) throws SQLException {
        Map<String, Collation> s = collations(src, t);
        Map<String, Collation> d = collations(tgt, t);
        Set<String> differ = new TreeSet<>();
        List<String> said = new ArrayList<>();
        for (String k : t.key()) {
            Collation a = s.get(k);
            Collation b = d.get(k);
            if (a != null && b != null && !a.sameOrder(b)) {
                differ.add(k);
                said.add(k + " (source " + a + ", target " + b + ")");
            }
        }
        if (differ.isEmpty()) {
            return t;
        }
        LOG.warn("verify {}: the servers collate key column(s) {} differently, so they are compared in byte order (COLLATE \"C\") on"
                + " both, which cannot use the key's index: each chunk reads the table. Fix, for a faster verify (and the source's"
                + " ORDER BY results on the target): give the target's column(s) a collation that orders as the source's (ALTER TABLE {}"
                + " ALTER COLUMN <column> TYPE <its type> COLLATE <collation>, on the target)", t.ref(), said, t.ref().sql());
        return t.bytewise(differ);
    }

    /**
     * How a server collates a column: nothing (not a collatable type), or its collation's provider, locale and (where the
     * server tells it) version; the database's default collation resolved. Read through {@code to_jsonb} so that the
     * catalog columns of every supported version (14 to 18) are read by one query.
     */
    record Collation(String locale, String version) {
        boolean sameOrder(Collation o) {
            if (!locale.equals(o.locale)) {
                return false;
            }
            // a version told by both and not the same: the library changed (glibc 2.28 reordered many strings)
            return version.isEmpty() || o.version.isEmpty() || version.equals(o.version);
        }

        /** As a user reads it: {@code libc C}, {@code icu en (version 153.80)}. */
        @Override
        public String toString() {
            if (locale.isEmpty()) {
                return "none";
            }
            String[] p = locale.split(":", -1); // provider:collate:icu locale
            String provider = switch (p[0]) {
                case "c" -> "libc";
                case "i" -> "icu";
                case "b" -> "builtin";
                default -> p[0];
            };
            String name = p.length > 2 && !p[2].isEmpty() ? p[2] : p.length > 1 ? p[1] : "";
            return provider + " " + name + (version.isEmpty() ? "" : " (version " + version + ")");
        }
    }

    private static Map<String, Collation> collations(Connection c, Table t) throws SQLException {
        boolean v15 = c.getMetaData().getDatabaseMajorVersion() >= 15;
        String dbVersion = v15 ? "pg_database_collation_actual_version(d.oid)" : "NULL";
        String db = "(SELECT coalesce(to_jsonb(d) ->> 'datlocprovider', 'c') || ':' || d.datcollate || ':'"
                + " || coalesce(to_jsonb(d) ->> 'daticulocale', to_jsonb(d) ->> 'datlocale', '') || '|' || coalesce(" + dbVersion
                + ", '') FROM pg_database d WHERE d.datname = current_database())";
        String own = "co.collprovider::text || ':' || coalesce(to_jsonb(co) ->> 'collcollate', '') || ':'"
                + " || coalesce(to_jsonb(co) ->> 'colliculocale', to_jsonb(co) ->> 'colllocale', '') || '|'"
                + " || coalesce(pg_collation_actual_version(co.oid), '')";
        Map<String, Collation> out = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT a.attname, CASE WHEN a.attcollation = 0 THEN '|'"
                + " WHEN co.collprovider = 'd' THEN " + db + " ELSE " + own + " END FROM pg_attribute a"
                + " LEFT JOIN pg_collation co ON co.oid = a.attcollation WHERE a.attrelid = to_regclass(?) AND a.attnum > 0"
                + " AND NOT a.attisdropped")) {
            ps.setString(1, t.ref().sql());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String v = Objects.requireNonNullElse(rs.getString(2), "|");
                    int bar = v.lastIndexOf('|');
                    out.put(rs.getString(1), new Collation(v.substring(0, bar), v.substring(bar + 1)));
                }
            }
        }
        return out;
    }
}
