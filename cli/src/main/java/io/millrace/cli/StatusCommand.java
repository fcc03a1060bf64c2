package io.millrace.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;

/** {@code millrace status}: prints a running engine's status, from its HTTP endpoint. */
@Command(name = "status", mixinStandardHelpOptions = true,
        description = "Print the status of a running pipeline (state, lag, retained WAL, per-table progress).")
final class StatusCommand implements Callable<Integer> {
    @Parameters(index = "0", arity = "0..1", paramLabel = "CONFIG", description = "the pipeline's configuration (its operations.http_port is used)")
    Path config;

    @Option(names = "--url", description = "the engine's status URL, e.g. http://127.0.0.1:8089/status")
    String url;

    @Option(names = "--json", description = "print the raw JSON")
    boolean json;

    @Override
    public Integer call() throws Exception {
        String target = url;
        if (target == null) {
            if (config == null) {
                throw new MillraceException(Kind.CONFIG, "give the pipeline's configuration file or --url http://host:port/status");
            }
            EngineConfig cfg = ConfigLoader.fromSystem().sourceOnly().load(config); // only operations.http_* is used
            if (cfg.operations().httpPort() == 0) {
                throw new MillraceException(Kind.CONFIG, "config: operations.http_port is 0 (off) in " + config
                        + "; set it (e.g. 8089) and restart the pipeline to query its status");
            }
            target = "http://" + cfg.operations().httpHost() + ":" + cfg.operations().httpPort() + "/status";
        }
        String body;
        try {
            HttpResponse<String> r = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build()
                    .send(HttpRequest.newBuilder(URI.create(target)).timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            body = r.body();
        } catch (IOException e) {
            throw new MillraceException(Kind.CONNECTION, "no pipeline answers at " + target + " (" + e
                    + "): is it running, with operations.http_port set?", e);
        }
        if (json) {
            System.out.println(body);
            return 0;
        }
        JsonNode s = new ObjectMapper().readTree(body);
        System.out.printf("%s: %s   source %s   slot %s%n", s.path("name").asText(), s.path("state").asText(), s.path("source").asText(),
                s.path("slot").asText());
        // "lag 1200 ms, 466 MiB of WAL" (the milliseconds only while a commit is waiting to be delivered)
        System.out.printf("delivered %,d events   durable at %s   lag %s%s of WAL   slot retains %s%n", s.path("events_written").asLong(),
                s.path("durable_lsn").asText("-"), s.path("lag_millis").asLong() < 0 ? "" : s.path("lag_millis").asLong() + " ms, ",
                bytes(s.path("lag_bytes").asLong()), bytes(s.path("retained_wal_bytes").asLong()));
        JsonNode values = s.path("values");
        if (values.isObject() && "text".equals(values.path("mode").asText())) {
            System.out.println("values read as text: " + values.path("text_reason").asText());
        }
        JsonNode slow = s.path("slow_destination");
        if (slow.isObject()) {
            System.out.printf("destination '%s' has been writing one batch for %d s (slow, or blocked: a lock on its tables?)%n",
                    slow.path("destination").asText(), slow.path("waiting_millis").asLong() / 1000);
        }
        JsonNode lost = s.path("slot_lost");
        if (lost.isObject()) {
            System.out.printf("slot lost (%s; %d time(s)) and replaced at %s (the checkpoints were at %s): %s%s, %,d row(s) the source"
                            + " no longer has deleted%n", lost.path("reason").asText(), lost.path("count").asInt(), lost.path("new_slot_at").asText(),
                    lost.path("lost_at").asText(), lost.path("action").asText(), lost.path("reconciling").isEmpty() ? ""
                            : " " + lost.path("reconciling"), lost.path("rows_deleted").asLong());
        }
        if (!s.path("last_error").isNull() && s.has("last_error")) {
            System.out.println("error: " + s.path("last_error").asText());
        }
        for (JsonNode n : s.path("not_captured")) {
            // not_captured lists tables not captured at all and captured tables whose UPDATEs and DELETEs are not
            System.out.println("needs attention: " + n.path("table").asText() + ": " + n.path("reason").asText()
                    + (n.path("fix").isTextual() ? " (fix: " + n.path("fix").asText() + ")" : ""));
        }
        JsonNode reload = s.path("last_reload");
        if (reload.isObject()) {
            System.out.println("last reload " + reload.path("at").asText() + (reload.path("ok").asBoolean() ? ": " : " FAILED: ")
                    + reload.path("message").asText());
        }
        System.out.printf("%n%-32s %-10s %14s %14s %14s%n", "table", "phase", "snapshot rows", "estimated", "changes");
        for (JsonNode t : s.path("tables")) {
            long est = t.path("rows_estimated").asLong();
            System.out.printf("%-32s %-10s %,14d %14s %,14d%n", t.path("table").asText(), t.path("phase").asText(), t.path("rows_copied").asLong(),
                    est < 0 ? "unknown" : String.format("%,d", est), t.path("events").asLong());
        }
        return 0;
    }

    private static String bytes(long n) {
        if (n < 0) {
            return "-";
        }
        return n < 1 << 20 ? (n >> 10) + " KiB" : (n >> 20) + " MiB";
    }
}
