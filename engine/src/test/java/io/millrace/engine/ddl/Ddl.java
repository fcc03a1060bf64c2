package io.millrace.engine.ddl;

import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.e2e.E2e;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Support of the DDL tests: a pipeline into a postgres destination ({@code replica}), a jsonl one ({@code files}) and a
 * DuckDB one ({@code duck}), and comparing the DuckDB tables with the source.
 */
final class Ddl {
    private Ddl() {
    }

    /** The pipeline of {@link E2e#yaml} plus a DuckDB destination {@code duck} in {@code dir/duck.duckdb}. */
    static String yaml(EmbeddedPg pg, String db, List<String> tables, Path dir, String extra) {
        return E2e.yaml(pg, db, "s_" + db, tables, "auto", db + "_dst", dir.resolve("events"))
                .replace("pipeline:\n", "  - name: duck\n    type: duckdb\n    file: " + duckFile(dir) + "\npipeline:\n") + "\n" + extra;
    }

    static Path duckFile(Path dir) {
        return dir.resolve("duck.duckdb").toAbsolutePath();
    }

    /** A connection to the DuckDB file; inside this JVM it shares the running sink's database and reads its committed state. */
    static Connection duck(Path dir) throws SQLException {
        return DriverManager.getConnection("jdbc:duckdb:" + duckFile(dir));
    }

    /** The tables of schema {@code public} in the DuckDB file. */
    static List<String> duckTables(Connection duck) throws SQLException {
        return strings(duck, "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
                + " AND schema_name = 'public' ORDER BY table_name");
    }

    /** The tables of schema {@code public} in a postgres database. */
    static List<String> pgTables(Connection c) throws SQLException {
        return strings(c, "SELECT relname::text FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p')"
                + " ORDER BY 1");
    }

    /** Rows of {@code t} as {@code col1|col2|...} (NULL as {@code -}), ordered, columns in the source's order. */
    static List<String> rows(Connection c, TableRef t, List<String> cols) throws SQLException {
        List<String> parts = new ArrayList<>();
        for (String col : cols) {
            parts.add("coalesce(CAST(" + Ident.quote(col) + " AS VARCHAR), '-')");
        }
        return strings(c, "SELECT " + String.join(" || '|' || ", parts) + " FROM " + t.sql() + " ORDER BY 1");
    }

    /** Waits until the DuckDB table has the source's columns and rows; fails naming the difference. */
    static void awaitDuckSame(Connection src, Connection duck, TableRef t, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        String last;
        while (true) {
            List<String> cols = E2e.columns(src, t);
            List<String> duckCols = strings(duck, "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database()"
                    + " AND schema_name = " + E2e.q(t.schema()) + " AND table_name = " + E2e.q(t.table()) + " ORDER BY column_index");
            if (!cols.equals(duckCols)) {
                last = "columns " + duckCols + " but the source has " + cols;
            } else {
                List<String> a = rows(src, t, cols);
                List<String> b = rows(duck, t, cols);
                if (a.equals(b)) {
                    return;
                }
                last = "rows " + E2e.shorten(b.toString()) + " but the source has " + E2e.shorten(a.toString());
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("DuckDB table " + t + ": " + last);
            }
            Thread.sleep(100);
        }
    }

    static List<String> strings(Connection c, String sql) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }
}
