package io.millrace.pgoutput;

import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;
import io.millrace.embedded.EmbeddedPg;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/** Test-side resolver that asks pg_type (the source module has the real one). */
final class CatalogTypeResolver implements TypeResolver {
    private final EmbeddedPg pg;
    private final String db;
    private final Map<Integer, Optional<TypeInfo>> cache = new ConcurrentHashMap<>();

    CatalogTypeResolver(EmbeddedPg pg, String db) {
        this.pg = pg;
        this.db = db;
    }

    @Override
    public TypeInfo resolve(int oid) {
        return cache.computeIfAbsent(oid, this::query).orElse(null);
    }

    private Optional<TypeInfo> query(int oid) {
        try (Connection c = pg.connect(db); PreparedStatement ps = c.prepareStatement(
                "SELECT n.nspname, t.typname, t.typtype, t.typcategory, t.typelem, t.typbasetype"
                        + " FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE t.oid = ?")) {
            ps.setLong(1, Integer.toUnsignedLong(oid));
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                return Optional.of(new TypeInfo(oid, rs.getString(1), rs.getString(2), rs.getString(3).charAt(0),
                        rs.getString(4).charAt(0), (int) rs.getLong(5), (int) rs.getLong(6)));
            }
        } catch (SQLException e) {
            throw new IllegalStateException("pg_type lookup of oid " + oid + " failed: " + e.getMessage(), e);
        }
    }
}
