package io.millrace.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.engine.config.EngineConfig;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;

/** A control call to a running pipeline over its HTTP endpoint, with the token its configuration names. */
final class ControlCall {
    private ControlCall() {
    }

    /** POSTs {@code body} (JSON, or empty) to {@code path} and returns the pipeline's message; refusals are errors. */
    static String post(EngineConfig cfg, Path config, String path, String body, Duration timeout) throws InterruptedException {
        if (cfg.operations().httpPort() == 0) {
            throw new MillraceException(Kind.CONFIG, "config: operations.http_port is 0 (off) in " + config
                    + "; set it (e.g. 8089) and operations.control_token_env, and restart the pipeline");
        }
        if (cfg.operations().controlToken().isEmpty()) {
            throw new MillraceException(Kind.CONFIG, "config: operations.control_token_env (or control_token_file) is not set in " + config
                    + "; control calls need a token: set it, export the token, and restart the pipeline");
        }
        String base = "http://" + cfg.operations().httpHost() + ":" + cfg.operations().httpPort();
        HttpResponse<String> r;
        try {
            r = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build().send(HttpRequest.newBuilder(URI.create(base + path))
                    .timeout(timeout).header("Authorization", "Bearer " + cfg.operations().controlToken().reveal())
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new MillraceException(Kind.CONNECTION, "no pipeline answers at " + base + " (" + e + "): is it running?", e);
        }
        JsonNode answer;
        try {
            answer = new ObjectMapper().readTree(r.body());
        } catch (IOException e) {
            throw new MillraceException(Kind.CONNECTION, "the pipeline at " + base + " answered " + r.statusCode() + " with no JSON", e);
        }
        if (r.statusCode() != 200) {
            throw new MillraceException(r.statusCode() == 401 || r.statusCode() == 403 ? Kind.PERMISSION : Kind.CONFIG,
                    "the pipeline refused: " + answer.path("error").asText(r.body()));
        }
        return answer.path("message").asText();
    }
}
