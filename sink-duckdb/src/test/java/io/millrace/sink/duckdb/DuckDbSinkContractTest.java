package io.millrace.sink.duckdb;

import io.millrace.core.fault.FaultPoint;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.Sink;
import io.millrace.sinkkit.TableSinkContract;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;

/** The DuckDB destination passes the sink contract kit, a real DuckDB file per destination. */
class DuckDbSinkContractTest extends TableSinkContract {
    @TempDir
    static Path dir;

    /** The destination's file. */
    protected Path file(String destination) {
        return dir.resolve(destination + ".duckdb");
    }

    @Override
    protected Sink newSink(String destination) {
        return new DuckDbSink(new DuckDbSinkConfig(destination, file(destination), null));
    }

    @Override
    protected List<FaultPoint> faultPoints() {
        return List.of(FaultPoint.SINK_DUCKDB_BEFORE_COMMIT, FaultPoint.SINK_DUCKDB_AFTER_COMMIT);
    }

    @Override
    protected List<Map<String, String>> rows(String destination, TableRef table) {
        if (!Files.exists(file(destination))) {
            return List.of();
        }
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:" + file(destination).toAbsolutePath())) {
            if (query(c, "SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = '" + table.schema()
                    + "' AND table_name = '" + table.table() + "'").get(0).get("n").equals("0")) {
                return List.of();
            }
            String catalog = file(destination).getFileName().toString().replaceAll("\\.duckdb$", ""); // DuckDB's name for the file
            return query(c, "SELECT * FROM " + Ident.quote(catalog) + "." + Ident.qualified(table.schema(), table.table()));
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
