package io.millrace.sink.duckdb;

import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TableRef;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Tables of the destination's DuckDB file in SQL, with the file's catalog. DuckDB names a file's catalog after the file
 * ({@code millrace.duckdb} is catalog {@code millrace}) and refuses {@code schema.table} as an ambiguous reference when
 * a catalog has the schema's name: with {@code file: millrace.duckdb} not even the checkpoint table
 * ({@code millrace.checkpoints}) could be made, and {@code mirror.duckdb} could not take a source schema {@code mirror}.
 * Three-part names are never ambiguous.
 */
final class DuckNames {
    private final String catalog;
    private final String prefix;

    private DuckNames(String catalog) {
        this.catalog = catalog;
        this.prefix = Ident.quote(catalog) + ".";
    }

    /** The names of {@code c}'s database (its file's catalog). */
    static DuckNames of(Connection c) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT current_database()")) {
            rs.next();
            return new DuckNames(rs.getString(1));
        }
    }

    /** The catalog's name, unquoted (for the Appender). */
    String catalog() {
        return catalog;
    }

    /** {@code "catalog"."schema"."table"}. */
    String of(TableRef t) {
        return prefix + t.sql();
    }

    /** A table of Millrace's own schema, {@code "catalog"."millrace"."table"}. */
    String state(String table) {
        return prefix + Ident.qualified(DuckDbSink.STATE_SCHEMA, table);
    }

    /** The prefix of {@link #of}: {@code "catalog".}. */
    String prefix() {
        return prefix;
    }
}
