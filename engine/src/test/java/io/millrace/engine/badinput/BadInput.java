package io.millrace.engine.badinput;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.read.ListAppender;
import io.millrace.core.MillraceException;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.RunningEngine;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** Test support for bad-input and identity tests: configurations, a failing start, and "nothing was written". */
final class BadInput {
    static {
        // Without a logback-test.xml logback logs at DEBUG; INFO is what helps here.
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).setLevel(ch.qos.logback.classic.Level.INFO);
        ((Logger) LoggerFactory.getLogger("io.zonky")).setLevel(ch.qos.logback.classic.Level.WARN);
    }

    private BadInput() {
    }

    /** Loads this class (and its logging set-up) before a server starts. */
    static void init() {
    }

    /** The first column of every row of {@code sql}. */
    static List<String> strings(Connection c, String sql) throws SQLException {
        List<String> out = new ArrayList<>();
        try (java.sql.Statement s = c.createStatement(); java.sql.ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }

    /** A port nobody listens on (bound, then released). */
    static int closedPort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A pipeline configuration; {@link #yaml()} renders it. Source keys are replaced, never repeated. */
    static final class Config {
        final Map<String, String> source = new LinkedHashMap<>();
        final List<String> destinations = new ArrayList<>();

        Config(EmbeddedPg pg, String database, String slot) {
            source.put("host", pg.host());
            source.put("port", Integer.toString(pg.port()));
            source.put("database", database);
            source.put("user", "postgres");
            source.put("slot", slot);
            source.put("publication", slot + "_pub");
            source.put("tables", "[public.items]");
        }

        Config set(String key, String value) {
            source.put(key, value);
            return this;
        }

        Config remove(String key) {
            source.remove(key);
            return this;
        }

        /** A postgres destination: target tables in schema {@code <prefix>_t}, its checkpoint in {@code <prefix>_state}. */
        Config postgres(String name, String host, int port, String database, String prefix, String extra) {
            destinations.add("  - name: " + name + "\n    type: postgres\n    host: " + host + "\n    port: " + port
                    + "\n    database: " + database + "\n    user: postgres\n    schema: " + prefix + "_t\n    state_schema: " + prefix + "_state\n"
                    + (extra == null ? "" : extra));
            return this;
        }

        Config jsonl(String name, Path directory) {
            destinations.add("  - name: " + name + "\n    type: jsonl\n    directory: '" + directory + "'\n");
            return this;
        }

        String yaml() {
            StringBuilder b = new StringBuilder("name: badinput\nsource:\n");
            source.forEach((k, v) -> b.append("  ").append(k).append(": ").append(v).append('\n'));
            b.append("snapshot:\n  readers: 1\ndestinations:\n");
            destinations.forEach(b::append);
            return b.toString();
        }
    }

    /** Runs the engine on {@code yaml}, expecting it to fail at start; returns the failure. */
    static MillraceException startFails(String yaml, Path base, Map<String, String> env) throws InterruptedException {
        RunningEngine e = RunningEngine.start(yaml, base, env);
        Throwable t = e.awaitEnd(Duration.ofSeconds(60));
        assertThat(t).as("the engine should fail at start").isInstanceOf(MillraceException.class);
        assertThat(e.engine().state()).isEqualTo(Engine.State.FAILED);
        return (MillraceException) t;
    }

    /** Every message in {@code t}'s cause chain, and its string form. */
    static String allText(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            b.append(c).append('\n');
        }
        return b.toString();
    }

    /** Captures every log event (all loggers) while open, to check that no secret is logged. */
    static final class LogCapture implements AutoCloseable {
        private final Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

        LogCapture() {
            appender.start();
            root.addAppender(appender);
        }

        String text() {
            StringBuilder b = new StringBuilder();
            synchronized (appender.list) {
                for (ILoggingEvent e : appender.list) {
                    b.append(e.getFormattedMessage()).append('\n');
                    for (IThrowableProxy p = e.getThrowableProxy(); p != null; p = p.getCause()) {
                        b.append(p.getClassName()).append(": ").append(p.getMessage()).append('\n');
                    }
                }
            }
            return b.toString();
        }

        @Override
        public void close() {
            root.detachAppender(appender);
            appender.stop();
        }
    }

    static long count(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    static boolean slotExists(EmbeddedPg pg, String slot) throws SQLException {
        try (Connection c = pg.connect("postgres")) {
            return count(c, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = ?", slot) > 0;
        }
    }

    /**
     * Waits until a client holds the slot and returns its PID. An engine reports STREAMING before its reader has
     * sent START_REPLICATION, so a test that needs the slot taken must wait for the server to say so.
     */
    static int awaitSlotActive(EmbeddedPg pg, String slot, java.time.Duration timeout) throws SQLException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Connection c = pg.connect("postgres")) {
            while (count(c, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = ? AND active", slot) == 0) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("slot '" + slot + "' not active after " + timeout);
                }
                Thread.sleep(20);
            }
            return (int) count(c, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = ?", slot);
        }
    }

    static boolean publicationExists(EmbeddedPg pg, String database, String publication) throws SQLException {
        try (Connection c = pg.connect(database)) {
            return count(c, "SELECT count(*) FROM pg_publication WHERE pubname = ?", publication) > 0;
        }
    }

    static boolean schemaExists(EmbeddedPg pg, String database, String schema) throws SQLException {
        try (Connection c = pg.connect(database)) {
            return count(c, "SELECT count(*) FROM pg_namespace WHERE nspname = ?", schema) > 0;
        }
    }

    /** The files under {@code dir} (none when it does not exist). */
    static List<String> files(Path dir) {
        if (!Files.exists(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile).map(p -> dir.relativize(p).toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
