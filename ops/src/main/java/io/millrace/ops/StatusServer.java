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
 * metrics ({@code /metrics}) of one engine, on loopback unless configured otherwise. Read-only:
 * there are no control calls yet (when there are, they will require a token).
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
            if (!"GET".equals(ex.getRequestMethod()) && !"HEAD".equals(ex.getRequestMethod())) {
                send(ex, 405, "text/plain", "method not allowed: this endpoint is read-only\n");
                return;
            }
            switch (ex.getRequestURI().getPath()) {
                case "/", "/index.html" -> send(ex, 200, "text/html; charset=utf-8", page());
                case "/status" -> send(ex, 200, "application/json", statusJson());
                case "/metrics" -> send(ex, 200, "text/plain; version=0.0.4; charset=utf-8", metrics.scrape());
                default -> send(ex, 404, "text/plain", "not found: try /, /status or /metrics\n");
            }
        } catch (RuntimeException e) {
            LOG.warn("status request {} failed: {}", ex.getRequestURI(), e.toString());
        }
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
