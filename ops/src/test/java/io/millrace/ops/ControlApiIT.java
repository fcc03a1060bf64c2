package io.millrace.ops;

import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The HTTP control calls: an online re-snapshot asked over HTTP repairs a broken destination table, with and
 * without a filter; calls without the right token are refused and change nothing; pause and resume.
 */
class ControlApiIT {
    private static final String TOKEN = "test-token-0123456789abcdef";
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().major(17).setting("synchronous_commit", "on").start();
        pg.createDatabase("ctl");
        pg.createDatabase("ctl_dst");
        pg.execute("ctl", "CREATE TABLE public.orders (id int PRIMARY KEY, note text)",
                "INSERT INTO public.orders SELECT g, 'seed' FROM generate_series(1, 3000) g");
    }

    @AfterAll
    static void stop() {
        pg.close();
    }

    private static long count(String sql) throws Exception {
        try (Connection c = pg.connect("ctl_dst"); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static void await(String sql, long expected) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (count(sql) != expected) {
            assertThat(System.currentTimeMillis()).as("%s = %d", sql, expected).isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    private static HttpResponse<String> post(int port, String path, String token, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .POST(HttpRequest.BodyPublishers.ofString(body == null ? "" : body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        return HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void reSnapshotOverHttpNeedsTheTokenAndRepairsTheDestination(@TempDir Path dir) throws Exception {
        String yaml = String.join("\n",
                "name: ctl",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: ctl, user: postgres, slot: ctl, publication: ctl,",
                "         tables: [public.orders]}",
                "snapshot: {online: {readers: 2, chunk_rows: 500}}",
                "destinations:",
                "  - {name: replica, type: postgres, host: 127.0.0.1, port: " + pg.port() + ", database: ctl_dst, user: postgres}",
                "pipeline: {linger_ms: 20}",
                "operations: {control_token_env: CTL_TOKEN}",
                "");
        Engine engine = new Engine(new ConfigLoader(Map.of("CTL_TOKEN", TOKEN)::get).parse(yaml, dir));
        AtomicReference<Throwable> error = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                engine.run();
            } catch (Throwable e) {
                error.set(e);
            }
        });
        t.start();
        try (StatusServer server = StatusServer.start(engine, "127.0.0.1", 0)) {
            long deadline = System.currentTimeMillis() + 60_000;
            while (engine.state() != Engine.State.STREAMING && System.currentTimeMillis() < deadline && error.get() == null) {
                Thread.sleep(50);
            }
            assertThat(error.get()).isNull();
            await("SELECT count(*) FROM public.orders", 3000);
            try (Connection c = pg.connect("ctl_dst"); Statement s = c.createStatement()) {
                s.execute("DELETE FROM public.orders WHERE id % 2 = 0");
            }
            int port = server.port();
            String body = "{\"tables\": [\"public.orders\"], \"filter\": \"id <= 1000\"}";

            HttpResponse<String> none = post(port, "/snapshot", null, body);
            assertThat(none.statusCode()).isEqualTo(401);
            assertThat(none.body()).contains("Authorization: Bearer");
            HttpResponse<String> wrong = post(port, "/snapshot", "not-the-token-at-all", body);
            assertThat(wrong.statusCode()).isEqualTo(401);
            assertThat(wrong.body()).doesNotContain(TOKEN);
            Thread.sleep(500);
            assertThat(count("SELECT count(*) FROM public.orders")).as("refused calls copy nothing").isEqualTo(1500);

            HttpResponse<String> bad = post(port, "/snapshot", TOKEN, "{\"tables\": [\"public.nope\"]}");
            assertThat(bad.statusCode()).isEqualTo(400);
            assertThat(bad.body()).contains("not captured");

            HttpResponse<String> ok = post(port, "/snapshot", TOKEN, body);
            assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
            assertThat(ok.body()).contains("\"ok\":true");
            await("SELECT count(*) FROM public.orders WHERE id <= 1000", 1000);
            assertThat(count("SELECT count(*) FROM public.orders WHERE id > 1000")).as("the filter limits the copy").isEqualTo(1000);

            assertThat(post(port, "/snapshot/pause", TOKEN, null).statusCode()).isEqualTo(200);
            assertThat(post(port, "/snapshot", TOKEN, "{\"tables\": [\"public.orders\"]}").statusCode()).isEqualTo(200);
            Thread.sleep(800);
            assertThat(count("SELECT count(*) FROM public.orders")).as("paused").isEqualTo(2000);
            assertThat(post(port, "/snapshot/resume", TOKEN, null).statusCode()).isEqualTo(200);
            await("SELECT count(*) FROM public.orders", 3000);
            String status = get(port, "/status");
            assertThat(status).doesNotContain(TOKEN).contains("\"online\":{\"paused\":false");
            assertThat(get(port, "/metrics")).contains("millrace_online_snapshot_chunks_total").contains("millrace_tables_not_captured").doesNotContain(TOKEN);

            // a copy of a duckdb destination: token, an absolute path and a duckdb destination, or a 400 that says so
            String copy = "{\"destination\": \"replica\", \"file\": \"" + dir.resolve("c.duckdb").toAbsolutePath() + "\"}";
            assertThat(post(port, "/duckdb/copy", null, copy).statusCode()).isEqualTo(401);
            HttpResponse<String> notDuck = post(port, "/duckdb/copy", TOKEN, copy);
            assertThat(notDuck.statusCode()).isEqualTo(400);
            assertThat(notDuck.body()).contains("destination 'replica' is not a duckdb destination");
            HttpResponse<String> relative = post(port, "/duckdb/copy", TOKEN, "{\"destination\": \"replica\", \"file\": \"c.duckdb\"}");
            assertThat(relative.statusCode()).isEqualTo(400);
            assertThat(relative.body()).contains("absolute path");
        } finally {
            engine.stop();
            t.join(30_000);
        }
    }

    /**
     * POST /reload (as SIGHUP) needs the token; a file that does not load answers 400 naming the key and changes nothing,
     * and /status says the reload failed; a file that adds a table: 200, and the table is copied while streaming.
     */
    @Test
    void reloadOverHttpNeedsTheTokenAndChangesTheTableSelection(@TempDir Path dir) throws Exception {
        pg.createDatabase("rld");
        pg.createDatabase("rld_dst");
        pg.execute("rld", "CREATE TABLE public.a (id int PRIMARY KEY)", "INSERT INTO public.a SELECT generate_series(1, 10)",
                "CREATE TABLE public.b (id int PRIMARY KEY)", "INSERT INTO public.b SELECT generate_series(1, 20)");
        java.util.function.Function<String, String> yaml = tables -> String.join("\n",
                "name: rld",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: rld, user: postgres, slot: rld, publication: rld,",
                "         tables: [" + tables + "]}",
                "destinations:",
                "  - {name: replica, type: postgres, host: 127.0.0.1, port: " + pg.port() + ", database: rld_dst, user: postgres}",
                "pipeline: {linger_ms: 20}",
                "operations: {control_token_env: CTL_TOKEN}",
                "");
        Path file = dir.resolve("rld.yaml");
        java.nio.file.Files.writeString(file, yaml.apply("public.a"));
        ConfigLoader loader = new ConfigLoader(Map.of("CTL_TOKEN", TOKEN)::get);
        io.millrace.engine.Supervisor sup = new io.millrace.engine.Supervisor(loader.load(file));
        sup.reloadFrom(() -> loader.load(file));
        AtomicReference<Throwable> error = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                sup.run();
            } catch (Throwable e) {
                error.set(e);
            }
        });
        t.start();
        try (StatusServer server = StatusServer.start(sup, "127.0.0.1", 0)) {
            long deadline = System.currentTimeMillis() + 60_000;
            while (!sup.status().state().equals("streaming") && System.currentTimeMillis() < deadline && error.get() == null) {
                Thread.sleep(50);
            }
            assertThat(error.get()).isNull();
            int port = server.port();
            assertThat(post(port, "/reload", null, null).statusCode()).isEqualTo(401);

            java.nio.file.Files.writeString(file, yaml.apply("public.a, public.b").replace("linger_ms", "lingr_ms"));
            HttpResponse<String> bad = post(port, "/reload", TOKEN, null);
            assertThat(bad.statusCode()).isEqualTo(400);
            assertThat(bad.body()).contains("pipeline.lingr_ms").contains("nothing was changed");
            assertThat(get(port, "/status")).contains("\"last_reload\":{").contains("\"ok\":false");

            java.nio.file.Files.writeString(file, yaml.apply("public.a, public.b"));
            HttpResponse<String> ok = post(port, "/reload", TOKEN, null);
            assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
            assertThat(ok.body()).contains("adding [public.b]");
            try (Connection c = pg.connect("rld_dst")) {
                long until = System.currentTimeMillis() + 60_000;
                while (true) {
                    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM public.b")) {
                        rs.next();
                        if (rs.getLong(1) == 20) {
                            break;
                        }
                    } catch (java.sql.SQLException notYet) {
                        // the table is made with the copy's first rows
                    }
                    assertThat(System.currentTimeMillis()).as("public.b copied").isLessThan(until);
                    Thread.sleep(50);
                }
            }
            assertThat(get(port, "/status")).contains("\"ok\":true").doesNotContain(TOKEN);
        } finally {
            sup.stop();
            t.join(30_000);
        }
    }

    private static String get(int port, String path) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }
}
