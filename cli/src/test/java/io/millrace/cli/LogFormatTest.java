package io.millrace.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.MillraceException;
import io.millrace.engine.config.EngineConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The console log format switches between logback.xml's text pattern and logback's JSON encoder, exceptions included. */
class LogFormatTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Logger LOG = LoggerFactory.getLogger(LogFormatTest.class);

    @AfterEach
    void text() {
        LogFormat.use(EngineConfig.LogFormat.TEXT);
    }

    private static List<String> logged(Runnable r) {
        PrintStream old = System.err;
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            r.run();
        } finally {
            System.setErr(old);
        }
        return err.toString(StandardCharsets.UTF_8).lines().filter(l -> !l.isBlank()).toList();
    }

    @Test
    void jsonLinesCarryTheFieldsAndTheException() throws Exception {
        LogFormat.use(EngineConfig.LogFormat.JSON);
        List<String> lines = logged(() -> {
            LOG.info("destination '{}': {} rows", "replica", 42);
            LOG.error("copy failed", new IllegalStateException("outer \"quoted\"\nsecond line", new java.io.IOException("the cause")));
        });
        assertThat(lines).hasSize(2);
        JsonNode info = JSON.readTree(lines.get(0));
        assertThat(info.path("timestamp").asLong()).isGreaterThan(1_600_000_000_000L);
        assertThat(info.path("level").asText()).isEqualTo("INFO");
        assertThat(info.path("loggerName").asText()).isEqualTo(LogFormatTest.class.getName());
        assertThat(info.path("threadName").asText()).isEqualTo(Thread.currentThread().getName());
        assertThat(info.path("formattedMessage").asText()).isEqualTo("destination 'replica': 42 rows");
        JsonNode error = JSON.readTree(lines.get(1));
        assertThat(error.path("level").asText()).isEqualTo("ERROR");
        JsonNode t = error.path("throwable");
        assertThat(t.path("className").asText()).isEqualTo("java.lang.IllegalStateException");
        assertThat(t.path("message").asText()).isEqualTo("outer \"quoted\"\nsecond line");
        assertThat(t.path("stepArray").isArray()).isTrue();
        assertThat(t.path("cause").path("className").asText()).isEqualTo("java.io.IOException");

        LogFormat.use(EngineConfig.LogFormat.TEXT);
        List<String> text = logged(() -> LOG.info("back to text"));
        assertThat(text).singleElement().asString().contains("INFO").contains("LogFormatTest - back to text").doesNotStartWith("{");
    }

    @Test
    void anUnknownFormatInTheEnvironmentIsAConfigurationError() {
        assertThat(LogFormat.fromEnvironment(null)).isNull();
        assertThat(LogFormat.fromEnvironment(" JSON ")).isEqualTo(EngineConfig.LogFormat.JSON);
        assertThatThrownBy(() -> LogFormat.fromEnvironment("xml")).isInstanceOf(MillraceException.class)
                .hasMessage("MILLRACE_LOG_FORMAT must be text or json, got 'xml'")
                .extracting(e -> ((MillraceException) e).kind()).isEqualTo(MillraceException.Kind.CONFIG);
    }
}
