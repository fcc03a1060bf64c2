package io.millrace.engine.e2e;

import ch.qos.logback.classic.Level;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.api.Millrace;
import io.millrace.api.PipelineSettings;
import io.millrace.api.SnapshotSettings;
import io.millrace.api.SourceSettings;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.verify.Verifier;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * Shared support of the end-to-end tests: the pipeline's YAML, reading the JSON-lines events, and
 * comparing a destination with the source — first with {@link Verifier} (row digests), then column by
 * column so that a failure names the table, the row and the column. Public for the tests of other
 * packages (io.millrace.engine.snapshot).
 */
public final class E2e {
    public static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    static {
        // Without a logback-test.xml logback logs at DEBUG; the engine's INFO lines are what helps here.
        ((ch.qos.logback.classic.Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).setLevel(Level.INFO);
        ((ch.qos.logback.classic.Logger) LoggerFactory.getLogger("org.postgresql")).setLevel(Level.WARN);
        ((ch.qos.logback.classic.Logger) LoggerFactory.getLogger("io.zonky")).setLevel(Level.WARN);
    }

    private E2e() {
    }

    /** Loads this class (and its logging set-up) before a server starts. */
    public static void init() {
    }

    /**
     * A pipeline from {@code srcDb} into a postgres destination {@code dstDb} on the same server (named
     * {@code replica}) and a jsonl destination in {@code jsonlDir} (named {@code files}).
     */
    /**
     * The pipeline of {@link #yaml} through the builder: from {@code srcDb} into a postgres destination {@code dstDb} on the
     * same server ({@code replica}) and a jsonl destination in {@code jsonlDir} ({@code files}).
     */
    public static Millrace.Builder pipeline(EmbeddedPg pg, String srcDb, String slot, List<String> tables, SourceSettings.BinaryMode binary,
                                            String dstDb, Path jsonlDir) {
        return Millrace.builder().name("e2e")
                .source(source(pg, srcDb, slot).tables(tables).binary(binary).build())
                .snapshot(SnapshotSettings.builder().mode(SnapshotSettings.Mode.INITIAL).readers(2).build())
                .destination("postgres", postgres("replica", pg, dstDb))
                .destination("jsonl", Map.of("name", "files", "directory", jsonlDir.toAbsolutePath().toString()))
                .pipeline(PipelineSettings.builder().lingerMs(20).build());
    }

    /** The embedded server's database {@code db} as the source, through {@code slot} and a publication of that name. */
    public static SourceSettings.Builder source(EmbeddedPg pg, String db, String slot) {
        return SourceSettings.builder().host(pg.host()).port(pg.port()).database(db).user("postgres").slot(slot).publication(slot)
                .statusIntervalMs(500);
    }

    /** The settings of a postgres destination {@code name} into the embedded server's database {@code db}. */
    public static Map<String, Object> postgres(String name, EmbeddedPg pg, String db) {
        return Map.of("name", name, "host", pg.host(), "port", pg.port(), "database", db, "user", "postgres");
    }

    public static String yaml(EmbeddedPg pg, String srcDb, String slot, List<String> tables, String binary, String dstDb, Path jsonlDir) {
        return yaml(pg, srcDb, slot, tables, binary, dstDb, jsonlDir, "");
    }

    /** As above, with more {@code pipeline:} settings, e.g. {@code "  batch_kb: 8\n"}. */
    public static String yaml(EmbeddedPg pg, String srcDb, String slot, List<String> tables, String binary, String dstDb, Path jsonlDir,
                       String pipelineExtra) {
        return String.join("\n",
                "name: e2e",
                "source:",
                "  host: 127.0.0.1",
                "  port: " + pg.port(),
                "  database: " + srcDb,
                "  user: postgres",
                "  slot: " + slot,
                "  publication: " + slot,
                "  tables: [" + String.join(", ", tables) + "]",
                "  binary: " + binary,
                "  status_interval_ms: 500",
                "snapshot:",
                "  mode: initial",
                "  readers: 2",
                "destinations:",
                "  - name: replica",
                "    type: postgres",
                "    host: 127.0.0.1",
                "    port: " + pg.port(),
                "    database: " + dstDb,
                "    user: postgres",
                "  - name: files",
                "    type: jsonl",
                "    directory: " + jsonlDir.toAbsolutePath(),
                "pipeline:",
                "  linger_ms: 20",
                pipelineExtra);
    }

    public static List<TableRef> refs(List<String> tables) {
        return tables.stream().map(TableRef::parse).toList();
    }

    // ---------------------------------------------------------------- SQL

    public static void exec(Connection c, String... sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            for (String q : sql) {
                s.execute(q);
            }
        }
    }

    /** Runs the statements in one transaction (the connection is in autocommit mode). */
    public static void tx(Connection c, String... sql) throws SQLException {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            for (String q : sql) {
                s.execute(q);
            }
            c.commit();
        } catch (SQLException | RuntimeException e) {
            c.rollback();
            throw e;
        } finally {
            c.setAutoCommit(true);
        }
    }

    public static String queryString(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        }
    }

    public static long queryLong(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            if (!rs.next()) {
                throw new AssertionError("no row from " + sql);
            }
            return rs.getLong(1);
        }
    }

    /** A string as an SQL literal (standard_conforming_strings is on: only quotes are doubled). */
    public static String q(String s) {
        return "'" + s.replace("'", "''") + "'";
    }

    // ---------------------------------------------------------------- comparing tables

    /**
     * Waits until {@link Verifier} finds every table equal (or the time is up), then compares every
     * table column by column as text, failing with the first difference named by table, row and column.
     */
    public static void awaitSame(Connection src, Connection dst, List<TableRef> tables, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<Verifier.TableResult> last;
        do {
            last = Verifier.compare(src, dst, tables, null);
            if (last.stream().allMatch(Verifier.TableResult::equal)) {
                break;
            }
            Thread.sleep(100);
        } while (System.nanoTime() < deadline);
        if (!last.stream().allMatch(Verifier.TableResult::equal)) {
            printThreads("awaitSame timed out");
        }
        for (TableRef t : tables) {
            assertColumnsEqual(src, dst, t);
        }
        if (!last.stream().allMatch(Verifier.TableResult::equal)) {
            throw new AssertionError("Verifier: destination differs from source after " + timeout + ": " + last);
        }
    }

    /**
     * Waits until {@code sql} (a count) returns a positive number on {@code c}: for a postgres
     * destination, which applies transactions whole and in order, a row of the source's last
     * transaction being there means every earlier one is applied.
     */
    public static void awaitRow(Connection c, String sql, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try {
                if (queryLong(c, sql) > 0) {
                    return;
                }
            } catch (SQLException e) {
                // the table may not exist yet
            }
            if (System.nanoTime() > deadline) {
                printThreads("awaitRow timed out");
                throw new AssertionError("destination: no row for " + sql + " after " + timeout);
            }
            Thread.sleep(50);
        }
    }

    /**
     * The stacks of Millrace's threads, printed when a wait times out: what a pipeline was doing when it did not deliver
     * in time, in the test's report (a failure seen once in CI is otherwise only a missing row).
     */
    public static void printThreads(String why) {
        StringBuilder out = new StringBuilder("---- " + why + ": Millrace's threads ----\n");
        Thread.getAllStackTraces().forEach((t, stack) -> {
            if (t.getName().startsWith("millrace") || t.getName().equals("test-engine")) {
                out.append('"').append(t.getName()).append("\" ").append(t.getState()).append('\n');
                for (StackTraceElement e : stack) {
                    out.append("    at ").append(e).append('\n');
                }
            }
        });
        System.out.print(out);
    }

    /** The table's live columns in order, from the source catalog. */
    public static List<String> columns(Connection c, TableRef t) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT attname FROM pg_attribute WHERE attrelid = "
                + q(t.sql()) + "::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum")) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }

    /**
     * Compares the source table with its copy: the same columns in the same order, and the same rows
     * (as a multiset), each column's {@code ::text} equal. Rows are paired in the order of their whole
     * text, which pairs rows by their first column (the key) where there is one.
     */
    public static void assertColumnsEqual(Connection src, Connection dst, TableRef t) throws SQLException {
        List<String> cols = columns(src, t);
        List<String> dcols = columns(dst, t);
        if (!cols.equals(dcols)) {
            throw new AssertionError("table " + t + ": destination columns " + dcols + " differ from the source's " + cols);
        }
        List<List<String>> a = rows(src, t, cols);
        List<List<String>> b = rows(dst, t, cols);
        java.util.Map<String, List<String>> ka = byFirst(a);
        java.util.Map<String, List<String>> kb = byFirst(b);
        if (ka != null && kb != null) {
            // The first column is unique on both sides (the key): pair rows by it.
            for (java.util.Map.Entry<String, List<String>> e : ka.entrySet()) {
                List<String> rb = kb.get(e.getKey());
                if (rb == null) {
                    throw new AssertionError("table " + t + ": row with " + cols.get(0) + " = " + e.getKey()
                            + " is missing in the destination; source row: " + shorten(e.getValue().toString()));
                }
                compareRow(t, cols, e.getValue(), rb);
            }
            for (String k : kb.keySet()) {
                if (!ka.containsKey(k)) {
                    throw new AssertionError("table " + t + ": destination has a row with " + cols.get(0) + " = " + k
                            + " that the source has not: " + shorten(kb.get(k).toString()));
                }
            }
            return;
        }
        if (!a.equals(b)) {
            // no key to pair rows by: show both sides, sorted
            throw new AssertionError("table " + t + " " + cols + ": source rows " + shorten(a.toString()) + " but destination rows "
                    + shorten(b.toString()));
        }
        if (a.size() != b.size()) {
            List<List<String>> longer = a.size() > b.size() ? a : b;
            throw new AssertionError("table " + t + ": source has " + a.size() + " rows, destination " + b.size() + "; first unmatched "
                    + (a.size() > b.size() ? "source" : "destination") + " row: " + shorten(longer.get(Math.min(a.size(), b.size())).toString()));
        }
    }

    private static void compareRow(TableRef t, List<String> cols, List<String> ra, List<String> rb) {
        for (int k = 0; k < cols.size(); k++) {
            if (!java.util.Objects.equals(ra.get(k), rb.get(k))) {
                throw new AssertionError("table " + t + ", row with " + cols.get(0) + " = " + ra.get(0) + " (destination row "
                        + cols.get(0) + " = " + rb.get(0) + "), column " + cols.get(k) + ": source " + shorten(ra.get(k))
                        + " but destination " + shorten(rb.get(k)));
            }
        }
    }

    /** Rows by their first column, or null when it is not unique (or null) in some row. */
    private static java.util.Map<String, List<String>> byFirst(List<List<String>> rows) {
        java.util.Map<String, List<String>> m = new java.util.LinkedHashMap<>();
        for (List<String> r : rows) {
            if (r.get(0) == null || m.put(r.get(0), r) != null) {
                return null;
            }
        }
        return m;
    }

    private static List<List<String>> rows(Connection c, TableRef t, List<String> cols) throws SQLException {
        StringBuilder sql = new StringBuilder("SELECT ");
        for (int i = 0; i < cols.size(); i++) {
            sql.append(i == 0 ? "" : ", ").append(io.millrace.core.schema.Ident.quote(cols.get(i))).append("::text");
        }
        sql.append(" FROM ").append(t.sql());
        List<List<String>> out = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql.toString())) {
            while (rs.next()) {
                List<String> row = new ArrayList<>(cols.size());
                for (int i = 1; i <= cols.size(); i++) {
                    row.add(rs.getString(i));
                }
                out.add(row);
            }
        }
        out.sort(ROW_ORDER);
        return out;
    }

    /** Numbers (the usual key) compare as numbers, the rest as text; nulls first. */
    private static final Comparator<List<String>> ROW_ORDER = (x, y) -> {
        for (int i = 0; i < x.size(); i++) {
            int c = compareCell(x.get(i), y.get(i));
            if (c != 0) {
                return c;
            }
        }
        return 0;
    };

    private static int compareCell(String a, String b) {
        if (a == null || b == null) {
            return a == null ? (b == null ? 0 : -1) : 1;
        }
        if (a.matches("-?\\d{1,30}") && b.matches("-?\\d{1,30}")) {
            return new BigInteger(a).compareTo(new BigInteger(b));
        }
        return a.compareTo(b);
    }

    public static String shorten(String s) {
        if (s == null) {
            return "NULL";
        }
        return s.length() > 200 ? "'" + s.substring(0, 200) + "...' (" + s.length() + " chars)" : "'" + s + "'";
    }

    // ---------------------------------------------------------------- JSON lines

    /** Every complete line of the events files, in file order, each parsed (a line that is not JSON fails). */
    public static List<JsonNode> events(Path dir) throws IOException {
        return new EventReader(dir).poll();
    }

    /**
     * Reads the events files incrementally: each {@link #poll()} parses only the complete lines
     * written since the last one (files are only appended to while the engine runs).
     */
    public static final class EventReader {
        private final Path dir;
        private final java.util.Map<Path, Long> offsets = new java.util.HashMap<>();
        private final java.util.Map<Path, Integer> lines = new java.util.HashMap<>();
        private final List<JsonNode> events = new ArrayList<>();

        public EventReader(Path dir) {
            this.dir = dir;
        }

        /** All events read so far, the new ones included. */
        public List<JsonNode> poll() throws IOException {
            if (!Files.isDirectory(dir)) {
                return events;
            }
            List<Path> files;
            try (Stream<Path> s = Files.list(dir)) {
                files = s.filter(p -> p.getFileName().toString().matches("events-\\d+\\.jsonl")).sorted().toList();
            }
            for (Path f : files) {
                long off = offsets.getOrDefault(f, 0L);
                byte[] bytes;
                try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(f)) {
                    long size = ch.size();
                    if (size <= off) {
                        continue;
                    }
                    java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocate((int) (size - off));
                    while (buf.hasRemaining() && ch.read(buf, off + buf.position()) > 0) {
                        // read to the end
                    }
                    bytes = java.util.Arrays.copyOf(buf.array(), buf.position());
                }
                int start = 0;
                int lineNo = lines.getOrDefault(f, 0);
                for (int i = 0; i < bytes.length; i++) {
                    if (bytes[i] != '\n') {
                        continue;
                    }
                    String line = new String(bytes, start, i - start, StandardCharsets.UTF_8);
                    lineNo++;
                    try {
                        JsonNode n = JSON.readTree(line);
                        if (n == null || !n.isObject()) {
                            throw new AssertionError(f.getFileName() + ":" + lineNo + " is not a JSON object: " + shorten(line));
                        }
                        events.add(n);
                    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                        throw new AssertionError(f.getFileName() + ":" + lineNo + " is not JSON (" + e.getOriginalMessage() + "): "
                                + shorten(line), e);
                    }
                    start = i + 1;
                }
                offsets.put(f, off + start); // an incomplete last line is read again next time
                lines.put(f, lineNo);
            }
            return events;
        }
    }

    /** Waits until an event matching {@code p} has been written; returns all events then. */
    public static List<JsonNode> awaitEvent(Path dir, Predicate<JsonNode> p, String what, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        EventReader reader = new EventReader(dir);
        int checked = 0;
        while (true) {
            List<JsonNode> all = reader.poll();
            for (; checked < all.size(); checked++) {
                if (p.test(all.get(checked))) {
                    return all;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no event " + what + " in " + dir + " after " + timeout + " (" + all.size() + " events)");
            }
            Thread.sleep(50);
        }
    }

    public static boolean isTable(JsonNode e, String table) {
        return table.equals(e.path("source").path("table").asText());
    }

    /** The row image of an event: {@code after}, or {@code before} for a delete. */
    public static JsonNode row(JsonNode e) {
        return e.path("op").asText().equals("d") ? e.path("before") : e.path("after");
    }

    /** Position (commit_lsn, ordinal) of an event, for ordering checks. */
    public record Pos(long commitLsn, long ordinal) implements Comparable<Pos> {
        public static Pos of(JsonNode e) {
            JsonNode s = e.path("source");
            if (!s.path("commit_lsn").canConvertToLong() || !s.path("ordinal").canConvertToLong()) {
                throw new AssertionError("event without a numeric source.commit_lsn / source.ordinal: " + e);
            }
            return new Pos(s.path("commit_lsn").asLong(), s.path("ordinal").asLong());
        }

        @Override
        public int compareTo(Pos o) {
            int c = Long.compareUnsigned(commitLsn, o.commitLsn);
            return c != 0 ? c : Long.compare(ordinal, o.ordinal);
        }
    }
}
