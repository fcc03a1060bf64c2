package io.millrace.cli.crash;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.Lsn;
import io.millrace.core.schema.TableRef;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads a DuckDB destination's file while no engine holds it (DuckDB lets one process open a file): its durable
 * checkpoint, and each table's rows as text lines comparable with the source's, so the crash tests check the DuckDB
 * destination after each kill and at the end (INV: DURABLE, RESUME).
 */
final class DuckCheck {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path file;
    private final String destination;

    DuckCheck(Path file, String destination) {
        this.file = file;
        this.destination = destination;
    }

    /**
     * The flush LSN of the destination's checkpoint, or null when there is none (yet) or its snapshot is RUNNING (never
     * resumed from: see {@link KafkaCheck#flushLsn}).
     */
    Lsn flushLsn() throws SQLException, IOException {
        if (!Files.exists(file)) {
            return null;
        }
        try (Connection c = open(); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'millrace'"
                    + " AND table_name = 'checkpoints'")) {
                rs.next();
                if (rs.getLong(1) == 0) {
                    return null;
                }
            }
            try (ResultSet rs = s.executeQuery("SELECT checkpoint FROM millrace.checkpoints WHERE destination = '" + destination + "'")) {
                if (!rs.next()) {
                    return null;
                }
                com.fasterxml.jackson.databind.JsonNode cp = JSON.readTree(rs.getString(1));
                return "RUNNING".equals(cp.path("snapshot").path("state").asText()) ? null : Lsn.parse(cp.get("flush_lsn").asText());
            }
        }
    }

    /** tx_ids the destination's txlog holds more than once (INV: RESUME, exactly once). */
    List<Long> duplicateTxIds() throws SQLException {
        List<Long> out = new ArrayList<>();
        if (!Files.exists(file)) {
            return out;
        }
        try (Connection c = open(); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT count(*) FROM information_schema.tables WHERE table_name = 'txlog'")) {
                rs.next();
                if (rs.getLong(1) == 0) {
                    return out;
                }
            }
            try (ResultSet rs = s.executeQuery("SELECT tx_id FROM public.txlog GROUP BY tx_id HAVING count(*) > 1 LIMIT 10")) {
                while (rs.next()) {
                    out.add(rs.getLong(1));
                }
            }
        }
        return out;
    }

    /**
     * The rows of {@code table} as sorted text lines of {@code columns} (each as text, {@code <null>} for null); the same
     * query on the source gives comparable lines for integer and text columns. Null when the table is missing.
     */
    List<String> rows(TableRef table, List<String> columns) throws SQLException {
        try (Connection c = open()) {
            return lines(c, table, columns, "VARCHAR");
        }
    }

    /** The same lines from the source (PostgreSQL). */
    static List<String> sourceRows(Connection src, TableRef table, List<String> columns) throws SQLException {
        return lines(src, table, columns, "text");
    }

    private static List<String> lines(Connection c, TableRef table, List<String> columns, String text) throws SQLException {
        StringBuilder sql = new StringBuilder("SELECT ");
        for (int i = 0; i < columns.size(); i++) {
            sql.append(i == 0 ? "" : " || '|' || ").append("coalesce(CAST(\"").append(columns.get(i).replace("\"", "\"\""))
                    .append("\" AS ").append(text).append("), '<null>')");
        }
        sql.append(" FROM ").append(table.sql());
        List<String> out = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql.toString())) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        } catch (SQLException e) {
            return null; // the table (or a column) is not there
        }
        out.sort(null);
        return out;
    }

    private Connection open() throws SQLException {
        return DriverManager.getConnection("jdbc:duckdb:" + file.toAbsolutePath());
    }
}
