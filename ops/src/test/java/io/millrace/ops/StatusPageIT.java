package io.millrace.ops;

import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The status page in a real browser (headless Chromium): it shows the pipeline's state, each
 * table's phase and counters; the screenshot is kept in target/status-page.png. The Prometheus
 * endpoint is scraped and checked, and the HTTP endpoint listens on loopback only.
 */
class StatusPageIT {
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase("web");
        pg.createDatabase("web_dst");
        pg.execute("web", "CREATE TABLE public.orders (id int PRIMARY KEY, note text)",
                "INSERT INTO public.orders SELECT g, 'seed' FROM generate_series(1, 500) g");
    }

    @AfterAll
    static void stop() {
        pg.close();
    }

    @Test
    void thePageShowsTheRunningPipelineAndTheMetricsAreScraped(@TempDir Path dir) throws Exception {
        String yaml = String.join("\n",
                "name: webshop",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: web, user: postgres, slot: web, publication: web,",
                "         tables: [public.orders]}",
                "destinations:",
                "  - {name: replica, type: postgres, host: 127.0.0.1, port: " + pg.port() + ", database: web_dst, user: postgres}",
                "operations: {monitor_interval_ms: 200}",
                "");
        Engine engine = new Engine(new ConfigLoader(Map.<String, String>of()::get).parse(yaml, dir));
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
            pg.execute("web", "UPDATE public.orders SET note = 'changed' WHERE id <= 120");
            while (engine.status().tables().stream().mapToLong(x -> x.events()).sum() < 120 && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            Thread.sleep(1500); // a monitor sample and a few history points
            String base = "http://127.0.0.1:" + server.port() + "/";

            // Metrics, scraped as Prometheus does.
            String metrics = get(base + "metrics");
            assertThat(metrics).contains("millrace_table_events_total{pipeline=\"webshop\",table=\"public.orders\"} 120.0")
                    .contains("millrace_snapshot_rows_total{pipeline=\"webshop\",table=\"public.orders\"} 500.0")
                    .contains("millrace_up{pipeline=\"webshop\"} 1.0").contains("millrace_retained_wal_bytes")
                    .contains("millrace_commit_to_durable_seconds_count{pipeline=\"webshop\"}").contains("millrace_budget_bytes")
                    .contains("millrace_values_binary{pipeline=\"webshop\"} 1.0");
            assertThat(get(base + "status")).contains("\"state\":\"streaming\"").contains("\"table\":\"public.orders\"")
                    .contains("\"values\":{\"mode\":\"binary\"");

            // The page, rendered by a browser.
            String chromium = System.getenv().getOrDefault("MILLRACE_CHROMIUM", "/usr/bin/chromium");
            if (!Files.isExecutable(Path.of(chromium))) {
                Assumptions.assumeTrue(System.getenv("CI") == null, "no Chromium at " + chromium + " (CI installs it: .ci/run)");
                throw new AssertionError("CI must provide Chromium at " + chromium);
            }
            Path profile = Files.createTempDirectory("millrace-chromium");
            Path shot = Path.of("target", "status-page.png").toAbsolutePath();
            Files.deleteIfExists(shot);
            String dom = browser(chromium, profile, "--dump-dom", base);
            assertThat(dom).contains("Millrace — <span id=\"name\">webshop</span>");
            assertThat(dom).containsPattern("id=\"state\" class=\"state-streaming\">streaming<");
            assertThat(dom).contains("<tr data-table=\"public.orders\"><td>public.orders</td><td>streaming</td><td class=\"n\">500</td>");
            assertThat(dom).containsPattern("<td class=\"n\">120</td></tr>");
            assertThat(dom).containsPattern("id=\"events\">620<");
            assertThat(dom).contains("values <span id=\"values\">binary</span>");
            browser(chromium, profile, "--screenshot=" + shot, "--window-size=1280,900", base);
            assertThat(shot).exists();
            assertThat(Files.size(shot)).as("a rendered page, not a blank one").isGreaterThan(20_000);
        } finally {
            engine.stop();
            t.join(30_000);
        }
    }

    /** Without a control token every POST is refused (403) and names how to enable control calls; PUT is not allowed at all. */
    @Test
    void theEndpointListensOnLoopbackAndIsReadOnlyWithoutAToken(@TempDir Path dir) throws Exception {
        String yaml = "source: {host: 127.0.0.1, port: " + pg.port() + ", database: web, user: postgres, slot: ro, publication: ro,"
                + " tables: [public.orders]}\ndestinations: [{name: x, type: discard}]\n";
        Engine engine = new Engine(new ConfigLoader(Map.<String, String>of()::get).parse(yaml, dir));
        try (StatusServer server = StatusServer.start(engine, "127.0.0.1", 0)) {
            HttpResponse<String> post = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
                    + "/status")).POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(post.statusCode()).isEqualTo(403);
            assertThat(post.body()).contains("control calls are disabled").contains("operations.control_token_env");
            HttpResponse<String> snapshot = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                    + server.port() + "/snapshot")).header("Authorization", "Bearer anything-at-all-0123456789")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"tables\": [\"public.orders\"]}")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(snapshot.statusCode()).isEqualTo(403);
            HttpResponse<String> put = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
                    + "/status")).PUT(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(put.statusCode()).isEqualTo(405);
        }
    }

    private static String get(String url) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    private static String browser(String chromium, Path profile, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                "--user-data-dir=" + profile, "--virtual-time-budget=4000"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("chromium did not finish");
        }
        return new String(out, StandardCharsets.UTF_8);
    }
}
