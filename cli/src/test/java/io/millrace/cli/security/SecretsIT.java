package io.millrace.cli.security;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Secrets never appear in output: {@code millrace run} in JVMs of their own (DEBUG logging), as a role that needs a
 * password, through a start, streaming, a transient failure and its retry (the walsender terminated), the status page,
 * {@code /status} and {@code /metrics}, a stop; and through failing starts (a destination that cannot be reached, a
 * wrong password). Everything they print — stdout, stderr, logs, error messages — and every HTTP body is searched for
 * the right and the wrong password: neither may appear. The searched text is checked to hold what a leak would sit
 * next to (the user name, the source, the error), so an empty capture cannot pass. The same in JSON logs.
 */
class SecretsIT {
    private static final String USER = "sec_user";
    private static final String PASSWORD = "Pw-" + UUID.randomUUID().toString().replace("-", "");
    private static final String WRONG = "Wrong-" + UUID.randomUUID().toString().replace("-", "");
    private static EmbeddedPg pg;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().major(17).start();
        pg.execute("postgres", "CREATE ROLE " + USER + " LOGIN REPLICATION PASSWORD '" + PASSWORD + "'",
                "CREATE DATABASE sec_src OWNER " + USER, "CREATE DATABASE sec_dst OWNER " + USER);
        pg.execute("sec_src", "CREATE TABLE items (id int PRIMARY KEY, v text)", "ALTER TABLE items OWNER TO " + USER,
                "INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 100) g");
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private Path config(String name, int dstPort, int httpPort) throws IOException {
        Path f = dir.resolve(name + ".yaml");
        Files.writeString(f, String.join("\n",
                "name: " + name,
                "source:",
                "  host: 127.0.0.1",
                "  port: " + pg.port(),
                "  database: sec_src",
                "  user: " + USER,
                "  password_env: SEC_PW",
                "  slot: " + name,
                "  publication: " + name,
                "  tables: [public.items]",
                "destinations:",
                "  - name: replica",
                "    type: postgres",
                "    host: 127.0.0.1",
                "    port: " + dstPort,
                "    database: sec_dst",
                "    user: " + USER,
                "    password_env: SEC_PW",
                "    state_schema: " + name + "_state",
                "    schema: " + name,
                "  - name: files",
                "    type: jsonl",
                "    directory: " + dir.resolve(name + "-events"),
                "operations:",
                "  http_port: " + httpPort,
                "  retry: {initial_ms: 100, max_ms: 500, attempts: 2}",
                ""), StandardCharsets.UTF_8);
        return f;
    }

    private static Process run(Path config, Path log, String password) throws IOException {
        return run(config, log, password, Map.of());
    }

    private static Process run(Path config, Path log, String password, Map<String, String> env) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"), "io.millrace.cli.Main",
                "run", config.toString()).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("SEC_PW", password);
        pb.environment().put("MILLRACE_LOG_LEVEL", "DEBUG");
        pb.environment().remove("MILLRACE_LOG_FORMAT");
        pb.environment().putAll(env);
        return pb.start();
    }

    private static String get(HttpClient http, int port, String path) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(path).isEqualTo(200);
        return r.body();
    }

    private static void awaitLog(Process p, Path log, String text) throws Exception {
        long deadline = System.currentTimeMillis() + 90_000;
        while (!Files.readString(log).contains(text)) {
            assertThat(p.isAlive()).as("engine ended before '%s':%n%s", text, Files.readString(log)).isTrue();
            assertThat(System.currentTimeMillis()).as("no '%s' after 90 s", text).isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    @Test
    void noPasswordInLogsStatusMetricsOrErrors() throws Exception {
        List<String> captured = new ArrayList<>();
        HttpClient http = HttpClient.newHttpClient();

        // 1. a run: start, stream, a transient failure and its retry, status page, /status, /metrics, stop
        int httpPort = freePort();
        Path log = dir.resolve("run.log");
        Process p = run(config("secrun", pg.port(), httpPort), log, PASSWORD);
        try {
            awaitLog(p, log, "streaming from slot");
            pg.execute("sec_src", "INSERT INTO items VALUES (1000, 'streamed')");
            try (Connection c = pg.connect("sec_src"); Statement s = c.createStatement()) {
                s.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'secrun'");
            }
            awaitLog(p, log, "transient failure");
            long deadline = System.currentTimeMillis() + 60_000;
            String status;
            do {
                Thread.sleep(200);
                status = get(http, httpPort, "/status");
            } while (!status.contains("\"state\":\"streaming\"") && System.currentTimeMillis() < deadline);
            captured.add(status);
            captured.add(get(http, httpPort, "/metrics"));
            captured.add(get(http, httpPort, "/"));
            assertThat(captured.get(0)).contains("\"state\":\"streaming\"").contains("sec_src").contains("secrun");
            assertThat(captured.get(1)).contains("millrace_events_written");
            p.destroy(); // SIGTERM
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).isZero();
        } finally {
            p.destroyForcibly();
        }
        String runLog = Files.readString(log);
        assertThat(runLog).contains("streaming from slot 'secrun'").contains("transient failure").contains("127.0.0.1:" + pg.port() + "/sec_src")
                .contains("DEBUG");
        captured.add(runLog);

        // 2. a destination that cannot be reached: retried, then exit 3
        Path log2 = dir.resolve("nodest.log");
        Process p2 = run(config("secnodest", freePort(), 0), log2, PASSWORD);
        assertThat(p2.waitFor(120, TimeUnit.SECONDS)).isTrue();
        String noDest = Files.readString(log2);
        assertThat(p2.exitValue()).as(noDest).isEqualTo(3);
        assertThat(noDest).contains("destination 'replica'").contains("Check that the server is running");
        captured.add(noDest);

        // 3. a wrong password: exit 4, and the wrong one is not printed either
        Path log3 = dir.resolve("wrongpw.log");
        Process p3 = run(config("secwrong", pg.port(), 0), log3, WRONG);
        assertThat(p3.waitFor(120, TimeUnit.SECONDS)).isTrue();
        String wrong = Files.readString(log3);
        assertThat(p3.exitValue()).as(wrong).isEqualTo(4);
        assertThat(wrong).contains("'" + USER + "'").contains("the password was rejected");
        captured.add(wrong);

        for (String text : captured) {
            assertThat(text).doesNotContain(PASSWORD).doesNotContain(WRONG);
        }
        // the events written hold data only
        try (var files = Files.walk(dir)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                assertThat(Files.readString(f, StandardCharsets.ISO_8859_1)).as("%s", f).doesNotContain(PASSWORD);
            }
        }
        // nor is the password kept where other roles could read it: the destination's state holds none
        try (Connection c = pg.connect("sec_dst"); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT checkpoint::text FROM secrun_state.checkpoints")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).doesNotContain(PASSWORD).contains("secrun");
        }
        assertThat(Map.of("captured texts", captured.size())).containsEntry("captured texts", 6);
    }

    /**
     * JSON logs: with {@code operations.log_format: json} a run that snapshots, streams and stops on SIGTERM, and with
     * {@code MILLRACE_LOG_FORMAT=json} over a text configuration a start refused for a wrong password: every line they
     * print is one JSON object with a timestamp, level, logger, thread and message — the error that ends the command
     * included — and neither password appears anywhere.
     */
    @Test
    void jsonLogsAreOneObjectPerLineWithoutPasswords() throws Exception {
        Path config = config("secjson", pg.port(), 0);
        Files.writeString(config, Files.readString(config).replace("operations:\n", "operations:\n  log_format: json\n"));
        Path log = dir.resolve("json.log");
        Process p = run(config, log, PASSWORD);
        try {
            awaitLog(p, log, "streaming from slot");
            pg.execute("sec_src", "INSERT INTO items VALUES (2000, 'streamed')");
            Thread.sleep(1000);
            p.destroy(); // SIGTERM
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as(Files.readString(log)).isZero();
        } finally {
            p.destroyForcibly();
        }
        List<JsonNode> run = jsonLines(log);
        assertThat(run.stream().map(n -> n.path("formattedMessage").asText()))
                .anyMatch(m -> m.contains("streaming from slot 'secjson'"))
                .anyMatch(m -> m.contains("snapshot of public.items landed: 100 rows"))
                .anyMatch(m -> m.contains("stopped; durable position"));
        assertThat(run.stream().map(n -> n.path("level").asText())).contains("DEBUG", "INFO");
        assertThat(run.stream().map(n -> n.path("loggerName").asText())).contains("io.millrace.engine.Engine");

        Path log2 = dir.resolve("json-wrong.log");
        Process p2 = run(config("secjsonwrong", pg.port(), 0), log2, WRONG, Map.of("MILLRACE_LOG_FORMAT", "json"));
        assertThat(p2.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(p2.exitValue()).as(Files.readString(log2)).isEqualTo(4);
        List<JsonNode> wrong = jsonLines(log2);
        JsonNode last = wrong.get(wrong.size() - 1);
        assertThat(last.path("level").asText()).isEqualTo("ERROR");
        assertThat(last.path("loggerName").asText()).isEqualTo("io.millrace.cli.Main");
        assertThat(last.path("formattedMessage").asText()).contains("'" + USER + "'").contains("the password was rejected");
        for (Path f : List.of(log, log2)) {
            assertThat(Files.readString(f)).doesNotContain(PASSWORD).doesNotContain(WRONG);
        }
    }

    /** Every line as JSON with the fields a collector needs; fails naming the line that is not. */
    private static List<JsonNode> jsonLines(Path log) throws Exception {
        List<JsonNode> out = new ArrayList<>();
        for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode n;
            try {
                n = new ObjectMapper().readTree(line);
            } catch (Exception e) {
                throw new AssertionError("not a JSON line: " + line, e);
            }
            assertThat(n.isObject()).as(line).isTrue();
            assertThat(n.path("timestamp").isIntegralNumber()).as("timestamp: %s", line).isTrue();
            assertThat(n.path("level").asText()).as(line).isIn("TRACE", "DEBUG", "INFO", "WARN", "ERROR");
            assertThat(n.path("loggerName").asText()).as(line).isNotEmpty();
            assertThat(n.path("threadName").asText()).as(line).isNotEmpty();
            assertThat(n.has("formattedMessage")).as(line).isTrue();
            out.add(n);
        }
        return out;
    }
}
