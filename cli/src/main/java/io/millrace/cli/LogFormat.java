package io.millrace.cli;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.OutputStreamAppender;
import ch.qos.logback.core.encoder.Encoder;
import io.millrace.core.MillraceException;
import io.millrace.engine.config.EngineConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;

/**
 * The log format: {@code text} (logback.xml's pattern) or {@code json} — one JSON object per line, written by
 * logback's own {@link JsonEncoder}: {@code timestamp} (epoch milliseconds), {@code level}, {@code threadName},
 * {@code loggerName}, {@code formattedMessage}, and {@code throwable} (class, message, stack, causes) when there is
 * one. {@code MILLRACE_LOG_FORMAT} sets it for every command from the start and overrides
 * {@code operations.log_format}, which {@code millrace run} applies once the configuration is read. The messages are
 * the same in both formats, so what keeps secrets out of the text keeps them out of the JSON.
 */
final class LogFormat {
    static final String ENV = "MILLRACE_LOG_FORMAT";
    private static volatile EngineConfig.LogFormat current = EngineConfig.LogFormat.TEXT;
    /** The encoders logback.xml gave each console appender: what {@code text} goes back to. */
    private static final Map<Appender<ILoggingEvent>, Encoder<ILoggingEvent>> TEXT = new IdentityHashMap<>();

    private LogFormat() {
    }

    /** The format {@code MILLRACE_LOG_FORMAT} names, or null when it is unset. */
    static EngineConfig.LogFormat fromEnvironment(String value) {
        if (value == null || value.isBlank()) {
            return null;
        }
        try {
            return EngineConfig.LogFormat.valueOf(value.strip().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new MillraceException(MillraceException.Kind.CONFIG, ENV + " must be text or json, got '" + value + "'");
        }
    }

    /** Applies {@code MILLRACE_LOG_FORMAT} when set, else {@code configured}. */
    static EngineConfig.LogFormat apply(EngineConfig.LogFormat configured) {
        EngineConfig.LogFormat env = fromEnvironment(System.getenv(ENV));
        EngineConfig.LogFormat f = env != null ? env : configured;
        use(f);
        return f;
    }

    /** The format in use. */
    static EngineConfig.LogFormat current() {
        return current;
    }

    /** Switches every console (output stream) appender of the root logger to {@code format}. */
    static synchronized void use(EngineConfig.LogFormat format) {
        current = format;
        if (!(LoggerFactory.getILoggerFactory() instanceof LoggerContext ctx)) {
            return; // another logging backend: its own configuration decides
        }
        ch.qos.logback.classic.Logger root = ctx.getLogger(Logger.ROOT_LOGGER_NAME);
        for (Iterator<Appender<ILoggingEvent>> it = root.iteratorForAppenders(); it.hasNext(); ) {
            if (!(it.next() instanceof OutputStreamAppender<ILoggingEvent> out)) {
                continue;
            }
            Encoder<ILoggingEvent> text = TEXT.computeIfAbsent(out, a -> out.getEncoder());
            boolean json = format == EngineConfig.LogFormat.JSON;
            if (json ? out.getEncoder() instanceof JsonEncoder : out.getEncoder() == text) {
                continue;
            }
            Encoder<ILoggingEvent> next = json ? json(ctx) : text;
            out.stop();
            out.setEncoder(next);
            out.start();
        }
    }

    private static Encoder<ILoggingEvent> json(LoggerContext ctx) {
        JsonEncoder e = new JsonEncoder();
        e.setContext(ctx);
        e.setWithSequenceNumber(false);
        e.setWithNanoseconds(false);
        e.setWithContext(false);
        e.setWithMDC(false);
        e.setWithMessage(false);
        e.setWithArguments(false);
        e.setWithFormattedMessage(true);
        e.start();
        return e;
    }
}
