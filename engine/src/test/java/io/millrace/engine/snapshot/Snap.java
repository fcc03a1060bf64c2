package io.millrace.engine.snapshot;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.e2e.E2e;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * Support of the snapshot tests, on top of {@link E2e} (the pipeline's YAML, SQL helpers, comparing a
 * destination with the source): the snapshot settings, captured log lines, and a streaming pass over
 * the JSON-lines events (a million events do not fit a list of parsed trees).
 */
final class Snap {
    private Snap() {
    }

    /** Loads E2e's logging set-up before a server starts. */
    static void init() {
        E2e.init();
    }

    /**
     * E2e's pipeline (postgres destination {@code replica} in {@code dstDb}, jsonl destination {@code files}
     * in {@code jsonlDir}, values binary where possible) with {@code snapshot.mode}, 2 readers and
     * {@code snapshot.chunk_pages}.
     */
    static String yaml(EmbeddedPg pg, String srcDb, String slot, List<String> tables, String dstDb, Path jsonlDir, String mode,
                       int chunkPages) {
        String base = E2e.yaml(pg, srcDb, slot, tables, "auto", dstDb, jsonlDir);
        String snapshot = "snapshot:\n  mode: initial\n  readers: 2\n";
        if (!base.contains(snapshot)) {
            throw new IllegalStateException("E2e.yaml no longer has the snapshot section this test rewrites: " + base);
        }
        return base.replace(snapshot, "snapshot:\n  mode: " + mode + "\n  readers: 2\n  chunk_pages: " + chunkPages + "\n");
    }

    // ---------------------------------------------------------------- log lines

    /** Captures the formatted log messages of every logger while open. */
    static final class Logs implements AutoCloseable {
        private final Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

        Logs() {
            appender.start();
            root.addAppender(appender);
        }

        /** Every message so far, one per line, prefixed by its level. */
        String text() {
            StringBuilder b = new StringBuilder();
            synchronized (appender.list) {
                for (ILoggingEvent e : appender.list) {
                    b.append(e.getLevel()).append(' ').append(e.getFormattedMessage()).append('\n');
                }
            }
            return b.toString();
        }

        /** The first message containing {@code part}, or null. */
        String find(String part) {
            for (String line : text().split("\n")) {
                if (line.contains(part)) {
                    return line;
                }
            }
            return null;
        }

        @Override
        public void close() {
            root.detachAppender(appender);
            appender.stop();
        }
    }

    // ---------------------------------------------------------------- JSON lines, streamed

    /** Calls {@code each} for every complete line of the events files, in order, parsed; see {@link Tail}. */
    static long scan(Path dir, Consumer<JsonNode> each) throws IOException {
        return new Tail(dir).poll(each);
    }

    /**
     * Reads the events files incrementally without keeping them: each {@link #poll} hands the complete
     * lines written since the last one to a consumer, in order (files by number, lines in file order),
     * parsed; a line that is not a JSON object fails. Files are only appended to while the engine runs.
     */
    static final class Tail {
        private final Path dir;
        private final Map<Path, Long> offsets = new HashMap<>();
        private final Map<Path, Integer> lineNumbers = new HashMap<>();

        Tail(Path dir) {
            this.dir = dir;
        }

        private static JsonNode parse(Path f, int lineNo, byte[] b, int from, int len) throws IOException {
            JsonNode e;
            try {
                e = E2e.JSON.readTree(b, from, len);
            } catch (JsonProcessingException x) {
                throw new AssertionError(f.getFileName() + ":" + lineNo + " is not JSON (" + x.getOriginalMessage() + "): "
                        + E2e.shorten(new String(b, from, len, StandardCharsets.UTF_8)), x);
            }
            if (e == null || !e.isObject()) {
                throw new AssertionError(f.getFileName() + ":" + lineNo + " is not a JSON object: "
                        + E2e.shorten(new String(b, from, len, StandardCharsets.UTF_8)));
            }
            return e;
        }

        private static Brief brief(Path f, int lineNo, byte[] b, int from, int len) throws IOException {
            String op = null;
            String schema = null;
            String table = null;
            String snapshot = null;
            Long id = null;
            try (JsonParser p = E2e.JSON.getFactory().createParser(b, from, len)) {
                if (p.nextToken() != JsonToken.START_OBJECT) {
                    throw new JsonParseException(p, "not an object");
                }
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String field = p.currentName();
                    JsonToken t = p.nextToken();
                    if (field.equals("op")) {
                        op = p.getText();
                    } else if ((field.equals("source") || field.equals("after")) && t == JsonToken.START_OBJECT) {
                        while (p.nextToken() == JsonToken.FIELD_NAME) {
                            String inner = p.currentName();
                            JsonToken v = p.nextToken();
                            if (field.equals("after") && inner.equals("id") && v == JsonToken.VALUE_NUMBER_INT) {
                                id = p.getLongValue();
                            } else if (field.equals("source") && v == JsonToken.VALUE_STRING) {
                                switch (inner) {
                                    case "schema" -> schema = p.getText();
                                    case "table" -> table = p.getText();
                                    case "snapshot" -> snapshot = p.getText();
                                    default -> {
                                    }
                                }
                            } else {
                                p.skipChildren();
                            }
                        }
                    } else {
                        p.skipChildren();
                    }
                }
                if (p.currentToken() != JsonToken.END_OBJECT || p.nextToken() != null) {
                    throw new JsonParseException(p, "not one JSON object");
                }
            } catch (JsonProcessingException x) {
                throw new AssertionError(f.getFileName() + ":" + lineNo + " is not a JSON object (" + x.getOriginalMessage() + "): "
                        + E2e.shorten(new String(b, from, len, StandardCharsets.UTF_8)), x);
            }
            return new Brief(op, schema + "." + table, snapshot, id);
        }

        /** Returns how many events were handed to {@code each}. */
        long poll(Consumer<JsonNode> each) throws IOException {
            return lines((f, lineNo, b, from, len) -> each.accept(parse(f, lineNo, b, from, len)));
        }

        /** As {@link #poll}, with only the fields the counting checks need: several times faster on large files. */
        long pollBrief(Consumer<Brief> each) throws IOException {
            return lines((f, lineNo, b, from, len) -> each.accept(brief(f, lineNo, b, from, len)));
        }

        private interface LineHandler {
            void line(Path f, int lineNo, byte[] b, int from, int len) throws IOException;
        }

        private long lines(LineHandler each) throws IOException {
            if (!Files.isDirectory(dir)) {
                return 0;
            }
            List<Path> files;
            try (Stream<Path> s = Files.list(dir)) {
                files = s.filter(p -> p.getFileName().toString().matches("events-\\d+\\.jsonl")).sorted().toList();
            }
            long n = 0;
            for (Path f : files) {
                long off = offsets.getOrDefault(f, 0L);
                int lineNo = lineNumbers.getOrDefault(f, 0);
                try (InputStream in = Files.newInputStream(f)) {
                    in.skipNBytes(off);
                    byte[] buf = new byte[1 << 16];
                    ByteArrayOutputStream partial = new ByteArrayOutputStream(); // a line cut by the buffer's end
                    int read;
                    while ((read = in.read(buf)) > 0) {
                        int start = 0;
                        for (int i = 0; i < read; i++) {
                            if (buf[i] != '\n') {
                                continue;
                            }
                            byte[] bytes = buf;
                            int from = start;
                            int len = i - start;
                            if (partial.size() > 0) {
                                partial.write(buf, start, i - start);
                                bytes = partial.toByteArray();
                                from = 0;
                                len = bytes.length;
                                partial.reset();
                            }
                            lineNo++;
                            each.line(f, lineNo, bytes, from, len);
                            off += len + 1;
                            n++;
                            start = i + 1;
                        }
                        partial.write(buf, start, read - start);
                    }
                }
                offsets.put(f, off); // an incomplete last line is read again next time
                lineNumbers.put(f, lineNo);
            }
            return n;
        }
    }

    /** What the counting checks need of an event: its op, table, source.snapshot, and after.id when a number. */
    record Brief(String op, String table, String snapshot, Long id) {
    }

    /** As {@link #scan}, for counting over large files. */
    static long scanBrief(Path dir, Consumer<Brief> each) throws IOException {
        return new Tail(dir).pollBrief(each);
    }

    static String op(JsonNode e) {
        return e.path("op").asText();
    }

    static String table(JsonNode e) {
        return e.path("source").path("schema").asText() + "." + e.path("source").path("table").asText();
    }

    // ---------------------------------------------------------------- SQL

    /** The values of {@code sql}'s first column (non-negative integers below 2^31) as a bit set. */
    static BitSet ids(Connection c, String sql) throws SQLException {
        BitSet out = new BitSet();
        try (Statement s = c.createStatement()) {
            s.setFetchSize(10_000);
            try (ResultSet rs = s.executeQuery(sql)) {
                while (rs.next()) {
                    out.set(Math.toIntExact(rs.getLong(1)));
                }
            }
        }
        return out;
    }

    /** A short description of how two id sets differ (a few ids each way). */
    static String difference(BitSet expected, BitSet actual) {
        BitSet missing = (BitSet) expected.clone();
        missing.andNot(actual);
        BitSet extra = (BitSet) actual.clone();
        extra.andNot(expected);
        return "missing " + missing.cardinality() + " " + first(missing) + ", unexpected " + extra.cardinality() + " " + first(extra);
    }

    private static String first(BitSet b) {
        StringBuilder s = new StringBuilder("[");
        int n = 0;
        for (int i = b.nextSetBit(0); i >= 0 && n < 10; i = b.nextSetBit(i + 1), n++) {
            s.append(n == 0 ? "" : ", ").append(i);
        }
        return s.append(b.cardinality() > 10 ? ", ...]" : "]").toString();
    }
}
