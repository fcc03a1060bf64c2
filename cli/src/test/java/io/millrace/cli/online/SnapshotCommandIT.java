package io.millrace.cli.online;

import io.millrace.cli.crash.EngineProcess;

import io.millrace.cli.Main;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.verify.Verifier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code millrace snapshot} against a running engine process: a filtered copy, then a whole one, repair a broken
 * destination table; without a token in the configuration the command says how to enable control calls.
 */
class SnapshotCommandIT {
    private static EmbeddedPg pg;

    @BeforeAll
    static void startServer() {
        pg = EmbeddedPg.builder().major(17).setting("synchronous_commit", "on").start();
        pg.createDatabase("sc_src");
        pg.createDatabase("sc_dst");
        pg.execute("sc_src", "CREATE TABLE t (id int PRIMARY KEY, v int)", "INSERT INTO t SELECT g, g FROM generate_series(1, 4000) g");
    }

    @AfterAll
    static void stopServer() {
        if (pg != null) {
            pg.close();
        }
    }

    private record Run(int code, String out, String err) {
    }

    private static Run cli(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        java.io.PrintStream old = System.out;
        java.io.ByteArrayOutputStream stdout = new java.io.ByteArrayOutputStream();
        System.setOut(new java.io.PrintStream(stdout, true));
        try {
            int code = Main.execute(new PrintWriter(out, true), new PrintWriter(err, true), args);
            return new Run(code, out + stdout.toString(), err.toString());
        } finally {
            System.setOut(old);
        }
    }

    private static long count(String sql) throws Exception {
        try (Connection c = pg.connect("sc_dst"); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static void await(String sql, long expected) throws Exception {
        long deadline = System.currentTimeMillis() + 90_000;
        while (count(sql) != expected) {
            assertThat(System.currentTimeMillis()).as("%s = %d", sql, expected).isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    @Test
    void theCommandCopiesATableAgainWhileItStreams(@TempDir Path dir) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Files.writeString(dir.resolve("token"), "cli-test-token-0123456789\n");
        String base = String.join("\n", "name: sc", "source:", "  host: 127.0.0.1", "  port: " + pg.port(), "  database: sc_src",
                "  user: postgres", "  slot: sc", "  publication: sc", "  tables: [public.t]", "destinations:", "  - name: replica",
                "    type: postgres", "    host: 127.0.0.1", "    port: " + pg.port(), "    database: sc_dst", "    user: postgres",
                "pipeline:", "  linger_ms: 50", "operations:", "  http_port: " + port, "");
        Path config = dir.resolve("sc.yaml");
        Files.writeString(config, base + "  control_token_file: token\n");
        Path noToken = dir.resolve("no-token.yaml");
        Files.writeString(noToken, base);

        Run refused = cli("snapshot", noToken.toString(), "--table", "public.t");
        assertThat(refused.code()).isEqualTo(2);
        assertThat(refused.err()).contains("operations.control_token_env");

        EngineProcess engine = EngineProcess.start(config, dir.resolve("engine.log"));
        try (Connection src = pg.connect("sc_src"); Connection dst = pg.connect("sc_dst")) {
            while (!engine.logText().contains("streaming from")) {
                assertThat(engine.alive()).as("log:%n%s", engine.logTail(30)).isTrue();
                Thread.sleep(50);
            }
            await("SELECT count(*) FROM public.t", 4000);
            try (Statement s = dst.createStatement()) {
                s.execute("DELETE FROM public.t WHERE id % 2 = 0");
            }

            Run filtered = cli("snapshot", config.toString(), "--table", "public.t", "--filter", "id <= 1000");
            assertThat(filtered.code()).as(filtered.err()).isZero();
            assertThat(filtered.out()).contains("copying [public.t] where id <= 1000");
            await("SELECT count(*) FROM public.t WHERE id <= 1000", 1000);
            assertThat(count("SELECT count(*) FROM public.t WHERE id > 1000")).isEqualTo(1500);

            Run unknown = cli("snapshot", config.toString(), "--table", "public.nope");
            assertThat(unknown.code()).isNotZero();
            assertThat(unknown.err()).contains("not captured");

            Run whole = cli("snapshot", config.toString(), "--table", "public.t");
            assertThat(whole.code()).as(whole.err()).isZero();
            long deadline = System.currentTimeMillis() + 90_000;
            while (!Verifier.compare(src, dst, List.of(TableRef.parse("public.t")), null).get(0).equal()) {
                assertThat(System.currentTimeMillis()).isLessThan(deadline);
                Thread.sleep(50);
            }
            assertThat(engine.terminate(60)).isZero();
        } finally {
            engine.destroyQuietly();
        }
    }
}
