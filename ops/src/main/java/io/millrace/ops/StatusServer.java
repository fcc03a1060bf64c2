package io.millrace.ops;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.millrace.engine.Engine;
import io.millrace.engine.EngineStatus;
import io.millrace.engine.EngineView;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Serves the status page ({@code /}), the JSON status API ({@code /status}) and the Prometheus
 * metrics ({@code /metrics}) of one engine, on loopback unless configured otherwise, and its control
 * calls, each a {@code POST} that must carry {@code Authorization: Bearer <token>} (the token from
 * {@code operations.control_token_env} or {@code _file}; without one, control calls are refused):
 * <ul>
 *   <li>{@code /snapshot} with {@code {"tables": ["public.t"], "filter": "id > 100"}} — copy tables again
 *       while streaming (an online snapshot; the filter is optional);</li>
 *   <li>{@code /snapshot/pause}, {@code /snapshot/resume} — hold and continue online snapshots;</li>
 *   <li>{@code /reload} — read the configuration file again and apply its {@code source.tables} and
 *       {@code source.exclude_tables} (as {@code SIGHUP} does); 400 with the error, nothing changed, when the file is not
 *       valid or another setting changed;</li>
 *   <li>{@code /duckdb/copy} with {@code {"destination": "mirror", "file": "/abs/copy.duckdb"}} — write a consistent
 *       copy of a duckdb destination to a new file, which other processes can open while the engine runs.</li>
 * </ul>
 * and, for orchestrators, {@code /healthz} (liveness) and {@code /readyz} (readiness): 200 or 503 with a small JSON
 * body saying why ({@link Health}).
 *
 * <p>A sampler thread records throughput and lag once a second for the last five minutes, so the
 * page can draw them.
 */
public final class StatusServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StatusServer.class);
    private static final int HISTORY = 300;
    private static final ObjectMapper JSON = new ObjectMapper().setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);

    private final EngineView engine;
    private final EngineMetrics metrics;
    private final Health health;
    private final HttpServer server;
    private final ScheduledExecutorService sampler;
    private final Object historyLock = new Object();
    // @GuardedBy("historyLock")
    private final long[] rate = new long[HISTORY];
    // @GuardedBy("historyLock")
    private final long[] lag = new long[HISTORY];
    // @GuardedBy("historyLock")
    private int samples;
    private long lastEvents = -1;

    private StatusServer(EngineView engine, HttpServer server) {
        this.engine = engine;
        this.metrics = new EngineMetrics(engine);
        this.health = new Health(engine.config().operations().health(), System::currentTimeMillis);
        this.server = server;
        this.sampler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "millrace-status-sampler");
            t.setDaemon(true);
            return t;
        });
    }

    /** Starts serving {@code engine} on {@code host:port} (port 0 picks a free one). */
    public static StatusServer start(Engine engine, String host, int port) {
        return start(EngineView.of(engine), host, port);
    }

    /** Starts serving {@code engine} (an engine, or a {@code Supervisor} restarting engines) on {@code host:port}. */
    public static StatusServer start(EngineView engine, String host, int port) {
        HttpServer http;
        try {
            http = HttpServer.create(new InetSocketAddress(host, port), 16);
        } catch (java.net.BindException e) {
            // Bad input, not a bug: exit 2, naming the port and the key (before the engine writes anything).
            throw new io.millrace.core.MillraceException(io.millrace.core.MillraceException.Kind.CONFIG, "config: operations.http_port "
                    + port + " cannot be listened on at " + host + " (" + e.getMessage() + "): the port is in use (another Millrace"
                    + " with this port?) or operations.http_host is not an address of this machine; choose another port, or 0 for no"
                    + " status page", e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot listen on " + host + ":" + port + " for the status page (operations.http_port): "
                    + e.getMessage(), e);
        }
        StatusServer s = new StatusServer(engine, http);
        http.createContext("/", s::handle);
        http.setExecutor(Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "millrace-http");
            t.setDaemon(true);
            return t;
        }));
        http.start();
        s.sampler.scheduleAtFixedRate(s::sample, 0, 1, TimeUnit.SECONDS);
        LOG.info("status page on http://{}:{}/ (JSON at /status, Prometheus metrics at /metrics)", host, s.port());
        return s;
    }

    public int port() {
        return server.getAddress().getPort();
    }

    private void sample() {
        try {
            metrics.attach();
            EngineStatus st = engine.status();
            health.observe(st);
            long events = st.eventsWritten();
            synchronized (historyLock) {
                rate[samples % HISTORY] = lastEvents < 0 ? 0 : Math.max(0, events - lastEvents);
                lag[samples % HISTORY] = st.lagMillis();
                samples++;
            }
            lastEvents = events;
        } catch (RuntimeException e) {
            LOG.debug("status sample failed: {}", e.toString());
        }
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            if ("POST".equals(ex.getRequestMethod())) {
                control(ex);
                return;
            }
            if (!"GET".equals(ex.getRequestMethod()) && !"HEAD".equals(ex.getRequestMethod())) {
                send(ex, 405, "text/plain", "method not allowed: use GET, or POST for control calls\n");
                return;
            }
            switch (ex.getRequestURI().getPath()) {
                case "/", "/index.html" -> send(ex, 200, "text/html; charset=utf-8", page());
                case "/status" -> send(ex, 200, "application/json", statusJson());
                case "/metrics" -> send(ex, 200, "text/plain; version=0.0.4; charset=utf-8", metrics.scrape());
                case "/healthz" -> health(ex, health.liveness(engine.status()));
                case "/readyz" -> health(ex, health.readiness(engine.status()));
                default -> send(ex, 404, "text/plain", "not found: try /, /status, /metrics, /healthz or /readyz\n");
            }
        } catch (RuntimeException e) {
            LOG.warn("status request {} failed: {}", ex.getRequestURI(), e.toString());
        }
    }

    private void control(HttpExchange ex) throws IOException {
        io.millrace.core.Secret token = engine.config().operations().controlToken();
        if (token.isEmpty()) {
            reply(ex, 403, false, "control calls are disabled: set operations.control_token_env (or control_token_file) to a token"
                    + " of at least 16 characters and restart");
            return;
        }
        String auth = ex.getRequestHeaders().getFirst("Authorization");
        byte[] given = auth == null || !auth.startsWith("Bearer ") ? new byte[0] : auth.substring(7).strip().getBytes(StandardCharsets.UTF_8);
        if (!java.security.MessageDigest.isEqual(given, token.reveal().getBytes(StandardCharsets.UTF_8))) {
            LOG.warn("control call {} refused: missing or wrong token", ex.getRequestURI().getPath());
            reply(ex, 401, false, "missing or wrong token: send the header 'Authorization: Bearer <token>' with the token named by"
                    + " operations.control_token_env");
            return;
        }
        com.fasterxml.jackson.databind.JsonNode body;
        try (InputStream in = ex.getRequestBody()) {
            body = JSON.readTree(in.readNBytes(1 << 16)); // empty for the calls that take none
        } catch (IOException e) {
            reply(ex, 400, false, "the body is not JSON: " + e.getMessage());
            return;
        }
        try {
            switch (ex.getRequestURI().getPath()) {
                case "/snapshot" -> {
                    if (body == null || !body.path("tables").isArray() || body.path("tables").isEmpty()) {
                        reply(ex, 400, false, "name the tables: {\"tables\": [\"public.orders\"], \"filter\": \"optional SQL condition\"}");
                        return;
                    }
                    java.util.List<io.millrace.core.schema.TableRef> tables = new java.util.ArrayList<>();
                    body.path("tables").forEach(t -> tables.add(io.millrace.core.schema.TableRef.parse(t.asText())));
                    String filter = body.hasNonNull("filter") && !body.get("filter").asText().isBlank() ? body.get("filter").asText() : null;
                    engine.snapshot(tables, filter);
                    LOG.info("control: online snapshot of {}{} asked", tables, filter == null ? "" : " where " + filter);
                    reply(ex, 200, true, "copying " + tables + (filter == null ? "" : " where " + filter) + " while streaming");
                }
                case "/reload" -> {
                    String done = engine.reload();
                    LOG.info("control: {}", done);
                    reply(ex, 200, true, done);
                }
                case "/snapshot/pause" -> {
                    engine.pauseSnapshots(true);
                    reply(ex, 200, true, "online snapshots paused");
                }
                case "/snapshot/resume" -> {
                    engine.pauseSnapshots(false);
                    reply(ex, 200, true, "online snapshots resumed");
                }
                case "/duckdb/copy" -> {
                    String dest = body == null ? null : body.path("destination").asText(null);
                    String file = body == null ? null : body.path("file").asText(null);
                    if (dest == null || file == null || !java.nio.file.Path.of(file).isAbsolute()) {
                        reply(ex, 400, false, "name the destination and a new file by its absolute path:"
                                + " {\"destination\": \"mirror\", \"file\": \"/tmp/mirror-copy.duckdb\"}");
                        return;
                    }
                    String done = engine.copyDuckDb(dest, java.nio.file.Path.of(file));
                    LOG.info("control: {}", done);
                    reply(ex, 200, true, done);
                }
                default -> reply(ex, 404, false, "no such control call: try /snapshot, /snapshot/pause, /snapshot/resume, /reload or /duckdb/copy");
            }
        } catch (io.millrace.core.MillraceException e) {
            reply(ex, 400, false, e.getMessage());
        }
    }

    private static void health(HttpExchange ex, Health.Answer a) throws IOException {
        send(ex, a.ok() ? 200 : 503, "application/json", JSON.writeValueAsString(a) + "\n");
    }

    private static void reply(HttpExchange ex, int code, boolean ok, String message) throws IOException {
        ObjectNode o = JSON.createObjectNode();
        o.put("ok", ok);
        o.put(ok ? "message" : "error", message);
        send(ex, code, "application/json", o.toString() + "\n");
    }

    /** The JSON status document: the engine's status plus per-second history (oldest first). */
    public String statusJson() {
        ObjectNode root = JSON.valueToTree(engine.status());
        ArrayNode r = root.putArray("history_events_per_second");
        ArrayNode l = root.putArray("history_lag_millis");
        synchronized (historyLock) {
            int n = Math.min(samples, HISTORY);
            for (int i = samples - n; i < samples; i++) {
                r.add(rate[i % HISTORY]);
                l.add(lag[i % HISTORY]);
            }
        }
        return root.toString();
    }

    private static String page() {
        try (InputStream in = StatusServer.class.getResourceAsStream("status.html")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException | NullPointerException e) {
            throw new IllegalStateException("status.html missing from the classpath", e);
        }
    }

    private static void send(HttpExchange ex, int code, String type, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", type);
        ex.getResponseHeaders().set("Cache-Control", "no-store");
        ex.sendResponseHeaders(code, "HEAD".equals(ex.getRequestMethod()) ? -1 : b.length);
        if (!"HEAD".equals(ex.getRequestMethod())) {
            try (OutputStream out = ex.getResponseBody()) {
                out.write(b);
            }
        }
    }

    @Override
    public void close() {
        sampler.shutdownNow();
        server.stop(0);
    }
}
