package io.millrace.cli.logging;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * JSON logs: {@code millrace run} in JVMs of their own, at DEBUG, as a role with a password. With
 * {@code operations.log_format: json} a run that snapshots, streams and stops on SIGTERM, and with
 * {@code MILLRACE_LOG_FORMAT=json} (over a text configuration) a start refused for a wrong password: every line of
 * what they print is one JSON object with a timestamp, level, logger, thread and message — the error that ends the
 * command included — and neither password appears anywhere.
 */
class JsonLogIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String USER = "jl_user";
    private static final String PASSWORD = "Pw-" + UUID.randomUUID().toString().replace("-", "");
    private static final String WRONG = "Wrong-" + UUID.randomUUID().toString().replace("-", "");
    private static EmbeddedPg pg;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().major(17).start();
        pg.execute("postgres", "CREATE ROLE " + USER + " LOGIN REPLICATION PASSWORD '" + PASSWORD + "'",
                "CREATE DATABASE jl_src OWNER " + USER, "CREATE DATABASE jl_dst OWNER " + USER);
        pg.execute("jl_src", "CREATE TABLE items (id int PRIMARY KEY, v text)", "ALTER TABLE items OWNER TO " + USER,
                "INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 100) g");
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    private Path config(String name, String format) throws Exception {
        Path f = dir.resolve(name + ".yaml");
        Files.writeString(f, String.join("\n",
                "name: " + name,
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: jl_src, user: " + USER + ", password_env: JL_PW,"
                        + " slot: " + name + ", publication: " + name + ", tables: [public.items]}",
                "destinations:",
                "  - {name: replica, type: postgres, host: 127.0.0.1, port: " + pg.port() + ", database: jl_dst, user: " + USER
                        + ", password_env: JL_PW, state_schema: " + name + "_state, schema: " + name + "}",
                "operations: {log_format: " + format + ", retry: {initial_ms: 100, max_ms: 500, attempts: 1}}",
                ""), StandardCharsets.UTF_8);
        return f;
    }

    private static Process run(Path config, Path log, String password, Map<String, String> env) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"), "io.millrace.cli.Main",
                "run", config.toString()).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("JL_PW", password);
        pb.environment().put("MILLRACE_LOG_LEVEL", "DEBUG");
        pb.environment().remove("MILLRACE_LOG_FORMAT");
        pb.environment().putAll(env);
        return pb.start();
    }

    /** Every line as JSON with the fields a collector needs; fails naming the line that is not. */
    private static List<JsonNode> lines(Path log) throws Exception {
        List<JsonNode> out = new ArrayList<>();
        for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode n;
            try {
                n = JSON.readTree(line);
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

    private static boolean logged(Path log, String text) throws Exception {
        return Files.readString(log).contains(text);
    }

    @Test
    void everyLineIsOneJsonObjectAndNoPasswordAppears() throws Exception {
        // 1. operations.log_format: json — a run: snapshot, stream, SIGTERM
        Path log = dir.resolve("run.log");
        Process p = run(config("jlrun", "json"), log, PASSWORD, Map.of());
        try {
            long deadline = System.currentTimeMillis() + 90_000;
            while (!logged(log, "streaming from slot")) {
                assertThat(p.isAlive()).as("ended early:%n%s", Files.readString(log)).isTrue();
                assertThat(System.currentTimeMillis()).isLessThan(deadline);
                Thread.sleep(50);
            }
            pg.execute("jl_src", "INSERT INTO items VALUES (1000, 'streamed')");
            Thread.sleep(1000);
            p.destroy();
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as(Files.readString(log)).isZero();
        } finally {
            p.destroyForcibly();
        }
        List<JsonNode> run = lines(log);
        assertThat(run.stream().map(n -> n.path("formattedMessage").asText()))
                .anyMatch(m -> m.contains("streaming from slot 'jlrun'"))
                .anyMatch(m -> m.contains("snapshot of public.items landed: 100 rows"))
                .anyMatch(m -> m.contains("stopped; durable position"));
        assertThat(run.stream().map(n -> n.path("level").asText())).contains("DEBUG", "INFO");
        assertThat(run.stream().map(n -> n.path("loggerName").asText())).contains("io.millrace.engine.Engine");

        // 2. MILLRACE_LOG_FORMAT=json over a text configuration: a wrong password, exit 4, the error as a JSON line too
        Path log2 = dir.resolve("wrong.log");
        Process p2 = run(config("jlwrong", "text"), log2, WRONG, Map.of("MILLRACE_LOG_FORMAT", "json"));
        assertThat(p2.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(p2.exitValue()).as(Files.readString(log2)).isEqualTo(4);
        List<JsonNode> wrong = lines(log2);
        JsonNode last = wrong.get(wrong.size() - 1);
        assertThat(last.path("level").asText()).isEqualTo("ERROR");
        assertThat(last.path("loggerName").asText()).isEqualTo("io.millrace.cli.Main");
        assertThat(last.path("formattedMessage").asText()).contains("'" + USER + "'").contains("the password was rejected");

        for (Path f : List.of(log, log2)) {
            assertThat(Files.readString(f)).doesNotContain(PASSWORD).doesNotContain(WRONG);
        }
    }
}
