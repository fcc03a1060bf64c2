package io.millrace.cli.duckdb;

import io.millrace.cli.Cli;
import io.millrace.cli.crash.EngineProcess;
import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;

import static io.millrace.cli.Cli.millrace;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * While a pipeline runs, no other process can open its DuckDB file, not even read-only (DuckDB's single-writer lock):
 * {@code millrace duckdb-copy} has the running engine write a consistent copy that any process can query.
 */
class DuckDbCopyCommandIT {
    private static EmbeddedPg pg;

    @BeforeAll
    static void startServer() {
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase("dc_src");
        pg.execute("dc_src", "CREATE TABLE t (id int PRIMARY KEY, v int)", "INSERT INTO t SELECT g, g FROM generate_series(1, 1000) g");
    }

    @AfterAll
    static void stopServer() {
        if (pg != null) {
            pg.close();
        }
    }

    private static Connection readOnly(Path file) throws SQLException {
        Properties ro = new Properties();
        ro.setProperty("duckdb.read_only", "true");
        return DriverManager.getConnection("jdbc:duckdb:" + file.toAbsolutePath(), ro);
    }

    /** count(*) and sum(v) of t in a DuckDB file, as "count/sum". */
    private static String rows(Path file) throws SQLException {
        try (Connection c = readOnly(file); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*), sum(v) FROM public.t")) {
            rs.next();
            return rs.getLong(1) + "/" + rs.getLong(2);
        }
    }

    @Test
    void aRunningPipelinesDuckDbFileIsQueriedThroughACopy(@TempDir Path dir) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Files.writeString(dir.resolve("token"), "duckdb-copy-token-0123456789\n");
        Path config = dir.resolve("dc.yaml");
        Files.writeString(config, String.join("\n", "name: dc", "source:", "  host: 127.0.0.1", "  port: " + pg.port(), "  database: dc_src",
                "  user: postgres", "  slot: dc", "  publication: dc", "  tables: [public.t]", "destinations:", "  - name: mirror",
                "    type: duckdb", "    file: ./mirror.duckdb", "pipeline:", "  linger_ms: 50", "operations:", "  http_port: " + port,
                "  control_token_file: token", ""));
        EngineProcess engine = EngineProcess.start(config, dir.resolve("engine.log"));
        try {
            while (!engine.logText().contains("streaming from")) {
                assertThat(engine.alive()).as("log:%n%s", engine.logTail(30)).isTrue();
                Thread.sleep(50);
            }
            // what the issue saw: the file itself cannot be opened by another process while the pipeline runs
            assertThatThrownBy(() -> readOnly(dir.resolve("mirror.duckdb")).close()).isInstanceOf(SQLException.class)
                    .hasMessageContaining("lock");

            pg.execute("dc_src", "INSERT INTO t SELECT g, g FROM generate_series(1001, 1500) g");
            String expected = "1500/" + (1500L * 1501 / 2);
            String got = null;
            long deadline = System.currentTimeMillis() + 60_000;
            for (int i = 0; !expected.equals(got); i++) {
                assertThat(System.currentTimeMillis()).as("a copy with every row, last: " + got).isLessThan(deadline);
                Path copy = dir.resolve("copy-" + i + ".duckdb");
                Cli.Run r = millrace("duckdb-copy", config.toString(), "--to", copy.toString());
                assertThat(r.exitCode()).as(r.err()).isZero();
                assertThat(r.out()).contains("copied destination 'mirror' to " + copy.toAbsolutePath()).contains("up to");
                got = rows(copy);
                Thread.sleep(100);
            }

            Cli.Run exists = millrace("duckdb-copy", config.toString(), "--to", dir.resolve("copy-0.duckdb").toString());
            assertThat(exists.exitCode()).isEqualTo(2);
            assertThat(exists.err()).contains("exists");
            Cli.Run wrong = millrace("duckdb-copy", config.toString(), "--destination", "nope", "--to", dir.resolve("x.duckdb").toString());
            assertThat(wrong.exitCode()).isEqualTo(2);
            assertThat(wrong.err()).contains("nope").contains("[mirror]");
            assertThat(engine.terminate(60)).isZero();
        } finally {
            engine.destroyQuietly();
        }
        assertThat(rows(dir.resolve("mirror.duckdb"))).as("the file itself, once the pipeline stopped").isEqualTo("1500/" + (1500L * 1501 / 2));
    }
}
