package io.millrace.source;

import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.Codecs;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * Resolves type oids: built-ins from the codecs, the rest (enums, domains, ranges, multiranges,
 * composites, their arrays) from {@code pg_type}, {@code pg_range} and {@code pg_attribute},
 * loaded once at start and looked up again for an oid first seen later (a type created while the
 * pipeline runs). Safe to call from any thread.
 */
public final class CatalogTypeResolver implements TypeResolver {
    private static final String QUERY = "SELECT t.oid, n.nspname, t.typname, t.typtype, t.typcategory, t.typelem, t.typbasetype,"
            + " COALESCE((SELECT r.rngsubtype FROM pg_range r WHERE r.rngtypid = t.oid), CASE WHEN t.typtype = 'm' THEN"
            + " (SELECT r.rngtypid FROM pg_range r WHERE (to_jsonb(r) ->> 'rngmultitypid')::oid = t.oid) END, 0),"
            + " CASE WHEN t.typtype = 'c' THEN ARRAY(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = t.typrelid"
            + " AND a.attnum > 0 ORDER BY a.attnum) END,"
            + " CASE WHEN t.typtype = 'c' THEN ARRAY(SELECT a.atttypid::int8 FROM pg_attribute a WHERE a.attrelid = t.typrelid"
            + " AND a.attnum > 0 ORDER BY a.attnum) END,"
            + " CASE WHEN t.typtype = 'c' THEN ARRAY(SELECT a.attnum::int4 FROM pg_attribute a WHERE a.attrelid = t.typrelid"
            + " AND a.attnum > 0 ORDER BY a.attnum) END,"
            + " CASE WHEN t.typtype = 'c' THEN ARRAY(SELECT a.attisdropped FROM pg_attribute a WHERE a.attrelid = t.typrelid"
            + " AND a.attnum > 0 ORDER BY a.attnum) END"
            + " FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace";

    private final Map<Integer, TypeInfo> types = new ConcurrentHashMap<>();
    private final Supplier<Connection> connections;

    /** @param connections opens a catalog connection when an unknown oid must be looked up */
    public CatalogTypeResolver(Supplier<Connection> connections) {
        this.connections = connections;
    }

    /** Loads every user type of the database (one query). */
    public void load(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(QUERY + " WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')");
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                TypeInfo t = row(rs);
                types.put(t.oid(), t);
            }
        }
    }

    @Override
    public TypeInfo resolve(int oid) {
        TypeInfo builtin = Codecs.builtin(oid);
        if (builtin != null) {
            return builtin;
        }
        TypeInfo known = types.get(oid);
        if (known != null) {
            return known;
        }
        synchronized (this) {
            known = types.get(oid);
            return known != null ? known : read(oid);
        }
    }

    /** Reads the type from the catalog (its attributes may have changed since: ALTER TYPE), and keeps it. */
    @Override
    public TypeInfo reread(int oid) {
        TypeInfo builtin = Codecs.builtin(oid);
        if (builtin != null) {
            return builtin;
        }
        synchronized (this) {
            return read(oid);
        }
    }

    /** Reads the type from the catalog, and keeps it; {@code null} when the catalog has no such oid. */
    private TypeInfo read(int oid) {
        try (Connection c = connections.get(); PreparedStatement ps = c.prepareStatement(QUERY + " WHERE t.oid = ?")) {
            ps.setInt(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                TypeInfo t = row(rs);
                types.put(oid, t);
                return t;
            }
        } catch (SQLException e) {
            throw PgErrors.translate("looking up type oid " + oid + " in the source catalog", e);
        }
    }

    /**
     * A row of the query: pg_type's columns, the range's subtype or multirange's range, a composite's attributes (the
     * dropped ones too, which CompositeCodec needs to name the fields of a value written before a change of shape).
     */
    static TypeInfo row(ResultSet rs) throws SQLException {
        List<TypeInfo.Attribute> attributes = new ArrayList<>();
        java.sql.Array names = rs.getArray(9);
        if (names != null) {
            String[] n = (String[]) names.getArray();
            Long[] t = (Long[]) rs.getArray(10).getArray();
            Integer[] number = (Integer[]) rs.getArray(11).getArray();
            Boolean[] dropped = (Boolean[]) rs.getArray(12).getArray();
            for (int i = 0; i < n.length; i++) {
                attributes.add(new TypeInfo.Attribute(n[i], (int) t[i].longValue(), number[i], dropped[i]));
            }
        }
        return new TypeInfo((int) rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4).charAt(0), rs.getString(5).charAt(0),
                (int) rs.getLong(6), (int) rs.getLong(7), (int) rs.getLong(8), attributes);
    }
}
