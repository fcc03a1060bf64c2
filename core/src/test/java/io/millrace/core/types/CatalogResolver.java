package io.millrace.core.types;

import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** A resolver over pg_type, as the source module would build one (tests only). */
final class CatalogResolver implements TypeResolver {
    private final Connection connection;
    private final Map<Integer, TypeInfo> cache = new ConcurrentHashMap<>();

    CatalogResolver(Connection connection) {
        this.connection = connection;
    }

    @Override
    public TypeInfo resolve(int oid) {
        TypeInfo t = cache.get(oid);
        if (t == null) {
            t = load(oid);
            if (t != null) {
                cache.put(oid, t);
            }
        }
        return t;
    }

    int oidOf(String sqlType) throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement("SELECT CAST(CAST(? AS text) AS regtype)::oid")) {
            ps.setString(1, sqlType);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return (int) rs.getLong(1);
            }
        }
    }

    private TypeInfo load(int oid) {
        String sql = "SELECT t.oid, n.nspname, t.typname, t.typtype, t.typcategory, t.typelem, t.typbasetype,"
                + " COALESCE((SELECT r.rngsubtype FROM pg_range r WHERE r.rngtypid = t.oid), CASE WHEN t.typtype = 'm' THEN"
                + " (SELECT r.rngtypid FROM pg_range r WHERE (to_jsonb(r) ->> 'rngmultitypid')::oid = t.oid) END, 0),"
                + " CASE WHEN t.typtype = 'c' THEN ARRAY(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = t.typrelid"
                + " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum) END,"
                + " CASE WHEN t.typtype = 'c' THEN ARRAY(SELECT a.atttypid::int8 FROM pg_attribute a WHERE a.attrelid = t.typrelid"
                + " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum) END"
                + " FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace" + " WHERE t.oid = ?";
        try (PreparedStatement ps = connection.prepareStatement(sql)) {
            ps.setLong(1, oid & 0xFFFFFFFFL);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                return row(rs);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("pg_type lookup of oid " + oid + " failed: " + e.getMessage(), e);
        }
    }
    /** A row of the query: pg_type's columns, the range's subtype or multirange's range, a composite's attributes. */
    static TypeInfo row(ResultSet rs) throws SQLException {
        List<TypeInfo.Attribute> attributes = new ArrayList<>();
        java.sql.Array names = rs.getArray(9);
        if (names != null) {
            String[] n = (String[]) names.getArray();
            Long[] t = (Long[]) rs.getArray(10).getArray();
            for (int i = 0; i < n.length; i++) {
                attributes.add(new TypeInfo.Attribute(n[i], (int) t[i].longValue()));
            }
        }
        return new TypeInfo((int) rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4).charAt(0), rs.getString(5).charAt(0),
                (int) rs.getLong(6), (int) rs.getLong(7), (int) rs.getLong(8), attributes);
    }
}
