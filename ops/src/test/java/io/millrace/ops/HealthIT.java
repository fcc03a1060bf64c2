package io.millrace.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code /healthz} and {@code /readyz} over real HTTP against a running engine: both 200 while it streams; a destination
 * blocked by a lock makes it not ready (the WAL lag passes {@code ready_max_lag_mb}) and then not live (no progress for
 * {@code live_max_stall_s} with work waiting); both come back once the lock goes; 503 once it stopped, and for an engine
 * that failed, with the error in the body.
 */
class HealthIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().major(17).setting("synchronous_commit", "on").start();
        pg.createDatabase("hz");
        pg.createDatabase("hz_dst");
        pg.execute("hz", "CREATE TABLE public.orders (id int PRIMARY KEY, note text)",
                "INSERT INTO public.orders SELECT g, 'seed' FROM generate_series(1, 500) g");
    }

    @AfterAll
    static void stop() {
        pg.close();
    }

    private record Got(int code, JsonNode body) {
    }

    private static Got get(int port, String path) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
        return new Got(r.statusCode(), JSON.readTree(r.body()));
    }

    /** Polls {@code path} until {@code until} holds; fails with the last answer after 60 s. */
    private static Got await(int port, String path, Predicate<Got> until) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        Got g;
        while (!until.test(g = get(port, path))) {
            assertThat(System.currentTimeMillis()).as("%s: last answer %d %s; status %s", path, g.code(), g.body(),
                    HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/status")).build(),
                            HttpResponse.BodyHandlers.ofString()).body()).isLessThan(deadline);
            Thread.sleep(100);
        }
        return g;
    }

    private static String yaml(int dstPort) {
        return String.join("\n",
                "name: hz",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: hz, user: postgres, slot: hz, publication: hz, tables: [public.orders]}",
                "destinations:",
                "  - {name: replica, type: postgres, host: 127.0.0.1, port: " + dstPort + ", database: hz_dst, user: postgres}",
                "pipeline: {linger_ms: 20}",
                "operations: {monitor_interval_ms: 200, ready_max_lag_s: 3600, ready_max_lag_mb: 1, live_max_stall_s: 3,",
                "             retry: {attempts: 1, initial_ms: 100, max_ms: 100}}",
                "");
    }

    @Test
    void readyWhileStreamingWithinTheLagLiveUnlessStuckOrFailed(@TempDir Path dir) throws Exception {
        Engine engine = new Engine(new ConfigLoader(Map.<String, String>of()::get).parse(yaml(pg.port()), dir));
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
            int port = server.port();
            Got ready = await(port, "/readyz", g -> g.code() == 200);
            assertThat(ready.body().path("ok").asBoolean()).isTrue();
            assertThat(ready.body().path("state").asText()).isEqualTo("streaming");
            Got live = get(port, "/healthz");
            assertThat(live.code()).as("%s", live.body()).isEqualTo(200);
            assertThat(live.body().path("ok").asBoolean()).isTrue();

            // A destination blocked by a lock while the source writes more than 1 MiB of WAL: not ready, then stuck.
            try (Connection lock = pg.connect("hz_dst"); Statement s = lock.createStatement()) {
                lock.setAutoCommit(false);
                s.execute("LOCK TABLE public.orders IN ACCESS EXCLUSIVE MODE");
                String[] inserts = new String[40]; // small transactions, each sent at its commit, queued behind the blocked one
                for (int i = 0; i < inserts.length; i++) {
                    inserts[i] = "INSERT INTO public.orders SELECT g, repeat('x', 200) FROM generate_series(" + (1001 + i * 1000) + ", "
                            + (2000 + i * 1000) + ") g";
                }
                pg.execute("hz", inserts);
                Got lagging = await(port, "/readyz", g -> g.code() == 503);
                assertThat(lagging.body().path("ok").asBoolean()).isFalse();
                assertThat(lagging.body().path("reason").asText()).contains("exceeds operations.ready_max_lag_mb (1 MiB)");
                assertThat(lagging.body().path("lag_bytes").asLong()).isGreaterThan(1L << 20);
                Got stuck = await(port, "/healthz", g -> g.code() == 503);
                assertThat(stuck.body().path("reason").asText()).contains("stuck: no progress for").contains("live_max_stall_s: 3");
                assertThat(engine.state()).isEqualTo(Engine.State.STREAMING);
                lock.rollback();
            }
            await(port, "/healthz", g -> g.code() == 200);
            await(port, "/readyz", g -> g.code() == 200);

            engine.stop();
            t.join(30_000);
            Got stopped = get(port, "/healthz");
            assertThat(stopped.code()).isEqualTo(503);
            assertThat(stopped.body().path("reason").asText()).contains("stopped");
            assertThat(get(port, "/readyz").code()).isEqualTo(503);
        } finally {
            engine.stop();
            t.join(30_000);
        }
        assertThat(error.get()).isNull();

        // An engine that failed: a destination nobody listens on.
        int nobody;
        try (ServerSocket s = new ServerSocket(0)) {
            nobody = s.getLocalPort();
        }
        Engine failing = new Engine(new ConfigLoader(Map.<String, String>of()::get).parse(yaml(nobody), dir));
        try (StatusServer server = StatusServer.start(failing, "127.0.0.1", 0)) {
            try {
                failing.run();
            } catch (RuntimeException expected) {
                // the engine's error: its /healthz says it
            }
            Got failed = get(server.port(), "/healthz");
            assertThat(failed.code()).isEqualTo(503);
            assertThat(failed.body().path("state").asText()).isEqualTo("failed");
            assertThat(failed.body().path("reason").asText()).contains("the engine failed").contains("destination 'replica'");
        }
    }
}
