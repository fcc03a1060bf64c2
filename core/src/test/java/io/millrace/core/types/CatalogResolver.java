package io.millrace.core.types;

import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
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
        String sql = "SELECT t.oid, n.nspname, t.typname, t.typtype, t.typcategory, t.typelem, t.typbasetype "
                + "FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE t.oid = ?";
        try (PreparedStatement ps = connection.prepareStatement(sql)) {
            ps.setLong(1, oid & 0xFFFFFFFFL);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                return new TypeInfo((int) rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4).charAt(0),
                        rs.getString(5).charAt(0), (int) rs.getLong(6), (int) rs.getLong(7));
            }
        } catch (SQLException e) {
            throw new IllegalStateException("pg_type lookup of oid " + oid + " failed: " + e.getMessage(), e);
        }
    }
}
