package io.millrace.cli.crash;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.Lsn;
import io.millrace.core.Position;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Reads a jsonl destination's events files in name order and replays them the way a consumer
 * keeping a copy of each table would, checking the order rules on the way:
 * <ul>
 *   <li>the file holds a snapshot part ({@code r} events, and {@code t} events with
 *       {@code source.snapshot = "true"} that open a re-copy after a crash during the snapshot), then
 *       a streamed part ({@code c}, {@code u}, {@code d}, {@code t} with {@code source.snapshot = "false"});
 *       no snapshot event follows a streamed one;</li>
 *   <li>streamed positions {@code (source.commit_lsn, source.ordinal)} increase strictly, except for
 *       repeats, which follow the sink's documented rule (docs/EVENTS.md, "The jsonl destination"): on
 *       open the sink cuts the newest file back to its checkpointed offset, so a crash leaves no repeat
 *       inside a file; but a crash inside a batch that rotated leaves that batch's first events complete
 *       at the end of the full file, and they are written again at the start of the next one. So a
 *       <em>repeat run</em> — events whose position is not after the highest one before them — may only
 *       begin on the first line of a file, must go on without a gap through positions seen before, each
 *       with the same content (op, table, before, after) as its first copy, and must end exactly at the
 *       highest position seen so far (the engine resumes at the checkpoint and writes everything after
 *       it again). Repeats are dropped as a consumer would (it keeps the last position it processed);
 *       what is left is every change once, in order;</li>
 *   <li>replay: {@code t} empties the table, {@code r}/{@code c} add the row (a keyed row must not
 *       exist yet), {@code u} replaces the row found by the old key ({@code before}, else {@code after}),
 *       keeping the old value of a column sent as {@code __debezium_unavailable_value}, {@code d} removes
 *       the row (keyless tables: one row equal to {@code before}). A change that finds no row is an
 *       anomaly, with one exception below.</li>
 * </ul>
 *
 * <h2>TRUNCATE during the copy</h2>
 * PostgreSQL's TRUNCATE is not MVCC-safe: a transaction whose snapshot predates a committed TRUNCATE
 * sees the table empty (PostgreSQL manual, "Concurrency Control — Caveats"). A snapshot reader that
 * reaches a table after a TRUNCATE that committed after the slot's consistent point copies nothing,
 * while the stream still holds the changes made between the consistent point and the TRUNCATE.
 * Updates and deletes of a table in that stretch then find no row. Such a change is excused — counted
 * in {@link #excusedByTruncate} — only if it comes before the first streamed {@code t} of its table and
 * that {@code t} does follow; the replayed state must still equal the source at the end.
 *
 * <h2>Online copies</h2>
 * An online copy (DBLog watermarks: {@code source.snapshot = "incremental"}) reads a table while the stream
 * runs, so the stream may change a row before the copy brings it, and the copy may bring a row the stream
 * created. Its {@code r} events are upserts of the row as it is: one of a key that exists replaces it, counted
 * in {@link #incrementalUpserts}. A change that found no row is excused, counted in {@link #excusedByCopy},
 * when an {@code r} of the same table's online copy follows it. The replayed state must still equal the source.
 *
 * <h2>Tables that DDL changes</h2>
 * Tables whose name {@link #followed} accepts are replayed as a consumer that follows DDL would: by
 * {@code source.table_oid} (a rename keeps it; a table created under a dropped table's name has another), each row
 * as its values in the event's column order (a renamed column keeps its place), keyed by the first.
 */
final class JsonlReplay {
    static final String UNAVAILABLE = "__debezium_unavailable_value";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** How to replay one table: its columns in order, and the index of its key column (-1: no key). */
    record TableShape(List<String> columns, int keyColumn) {
    }

    final Map<String, TableShape> shapes;
    /** Tables (by name, without schema) replayed by oid, whose shape DDL changes (see the class comment). */
    private final java.util.function.Predicate<String> followed;
    final Map<String, Map<String, List<String>>> keyed = new HashMap<>();
    final Map<String, Map<List<String>, Integer>> keyless = new HashMap<>();
    final List<String> anomalies = new ArrayList<>();
    long anomalyCount;
    long files;
    long events;
    long snapshotEvents;
    long snapshotTruncates;
    long streamEvents;
    /** Streamed events dropped as repeats (a crash inside a rotating batch), and the runs they came in. */
    long repeats;
    long repeatRuns;
    long regressions;
    long snapshotAfterStream;
    long unterminatedLines;
    Position lastStreamed;
    /** txlog tx_ids seen in 'c' events (value: how often) and in 'r' events of the last copy. */
    final Map<Long, Integer> txlogCreated = new HashMap<>();
    final Set<Long> txlogRead = new HashSet<>();
    /** Changes that found no row, excused by a TRUNCATE during the copy (see the class comment). */
    long excusedByTruncate;
    /** Changes that found no row, excused by an online copy of their table that follows (see the class comment). */
    long excusedByCopy;
    /** Online-copy reads of a key that existed (see the class comment). */
    long incrementalUpserts;
    /** Every streamed position seen, with a digest of its content (op, table, before, after). */
    private final Map<Position, Integer> seen = new HashMap<>();
    /** Positions in the order first seen, to check that a repeat run follows them without a gap. */
    private final List<Position> order = new ArrayList<>();
    private int runNext = -1;
    private boolean firstStreamedLineOfFile;
    private boolean streaming;
    /** Tables whose stream has held a {@code t} since the last copy. */
    private final Set<String> streamTruncated = new HashSet<>();
    /** Per table: changes that found no row before any streamed {@code t} of it (excused if one follows). */
    private final Map<String, List<String>> awaitingTruncate = new HashMap<>();
    /** Followed tables: changes that found no row and no copy followed, by table (see {@link #unexcused}). */
    private final Map<String, List<String>> unexcused = new HashMap<>();

    JsonlReplay(Map<String, TableShape> shapes) {
        this(shapes, t -> false);
    }

    JsonlReplay(Map<String, TableShape> shapes, java.util.function.Predicate<String> followed) {
        this.followed = followed;
        this.shapes = new LinkedHashMap<>(shapes);
        for (Map.Entry<String, TableShape> e : shapes.entrySet()) {
            if (e.getValue().keyColumn() >= 0) {
                keyed.put(e.getKey(), new HashMap<>());
            } else {
                keyless.put(e.getKey(), new HashMap<>());
            }
        }
    }

    /** The events files of {@code dir} in name order. */
    static List<Path> eventsFiles(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().matches("events-\\d{6,9}\\.jsonl")).sorted().toList();
        }
    }

    void readAll(Path dir) throws IOException {
        for (Path f : eventsFiles(dir)) {
            files++;
            firstStreamedLineOfFile = true;
            byte[] bytes = Files.readAllBytes(f);
            int start = 0;
            for (int i = 0; i < bytes.length; i++) {
                if (bytes[i] == '\n') {
                    line(f, new String(bytes, start, i - start, StandardCharsets.UTF_8));
                    start = i + 1;
                }
            }
            if (start < bytes.length) {
                unterminatedLines++;
                anomaly(f.getFileName() + ": " + (bytes.length - start) + " bytes after the last newline");
            }
        }
    }

    private void line(Path file, String text) throws IOException {
        JsonNode e = JSON.readTree(text);
        events++;
        String op = e.get("op").asText();
        JsonNode src = e.get("source");
        String table = src.get("schema").asText() + "." + src.get("table").asText();
        boolean snapshot = "true".equals(src.get("snapshot").asText());
        if (snapshot) {
            snapshotEvents++;
            if (op.equals("t")) {
                snapshotTruncates++;
                streamTruncated.remove(table);
                awaitingTruncate.remove(table); // a new copy begins: what it missed before is moot
            }
            if (streaming) {
                snapshotAfterStream++;
                anomaly(file.getFileName() + ": snapshot event '" + op + "' on " + table + " after streamed events");
            }
        } else {
            streaming = true;
            streamEvents++;
            Position p = new Position(Lsn.of(src.get("commit_lsn").asLong()), src.get("ordinal").asLong());
            boolean fileStart = firstStreamedLineOfFile;
            firstStreamedLineOfFile = false;
            int digest = (op + "|" + table + "|" + e.get("before") + "|" + e.get("after")).hashCode();
            if (lastStreamed != null && !p.isAfter(lastStreamed)) {
                // INV: RESUME — a repeat: recognisable by its position, dropped as a consumer drops it
                repeat(file, p, digest, fileStart, op, table);
                return;
            }
            if (runNext >= 0) {
                anomaly(file.getFileName() + ": repeat run ended at " + order.get(runNext - 1) + " before reaching "
                        + lastStreamed + " (events between were not written again)");
                runNext = -1;
            }
            seen.put(p, digest);
            order.add(p);
            lastStreamed = p;
            if (op.equals("t")) {
                streamTruncated.add(table);
                List<String> excused = awaitingTruncate.remove(table);
                excusedByTruncate += excused == null ? 0 : excused.size();
            }
        }
        TableShape shape = shapes.get(table);
        if (shape == null && followed.test(src.get("table").asText()) && src.hasNonNull("table_oid")) {
            String byOid = byOid(src.get("table_oid").asLong());
            keyed.computeIfAbsent(byOid, k -> new HashMap<>());
            applyKeyed(byOid, 0, op, values(e.get("before")), values(e.get("after")), "incremental".equals(src.get("snapshot").asText()));
            return;
        }
        if (shape == null) {
            anomaly("event for unexpected table " + table);
            return;
        }
        List<String> before = row(shape, e.get("before"));
        List<String> after = row(shape, e.get("after"));
        if (table.equals("public.txlog")) {
            if (op.equals("c")) {
                txlogCreated.merge(Long.parseLong(after.get(0)), 1, Integer::sum);
            } else if (op.equals("r")) {
                txlogRead.add(Long.parseLong(after.get(0)));
            } else if (op.equals("t")) {
                txlogRead.clear();
            }
        }
        if (shape.keyColumn() >= 0) {
            applyKeyed(table, shape.keyColumn(), op, before, after, "incremental".equals(src.get("snapshot").asText()));
        } else {
            applyKeyless(table, op, before, after);
        }
    }

    private void applyKeyed(String table, int key, String op, List<String> before, List<String> after, boolean incremental) {
        Map<String, List<String>> rows = keyed.get(table);
        if (incremental && op.equals("r")) {
            if (rows.put(after.get(key), after) != null) {
                incrementalUpserts++;
            }
            List<String> excused = awaitingTruncate.remove(table);
            excusedByCopy += excused == null ? 0 : excused.size();
            return;
        }
        switch (op) {
            case "t" -> rows.clear();
            case "r", "c" -> {
                if (rows.put(after.get(key), after) != null) {
                    anomaly(table + ": '" + op + "' of key " + after.get(key) + " that already exists");
                }
            }
            case "u" -> {
                String oldKey = before != null ? before.get(key) : after.get(key);
                List<String> old = rows.remove(oldKey);
                if (old == null) {
                    missing(table, "update of key " + oldKey + " that does not exist");
                }
                List<String> next = new ArrayList<>(after);
                for (int i = 0; i < next.size(); i++) {
                    if (UNAVAILABLE.equals(next.get(i))) {
                        next.set(i, old == null ? UNAVAILABLE : old.get(i));
                    }
                }
                rows.put(next.get(key), next);
            }
            case "d" -> {
                if (rows.remove(before.get(key)) == null) {
                    missing(table, "delete of key " + before.get(key) + " that does not exist");
                }
            }
            default -> anomaly(table + ": unknown op '" + op + "'");
        }
    }

    private void applyKeyless(String table, String op, List<String> before, List<String> after) {
        Map<List<String>, Integer> rows = keyless.get(table);
        switch (op) {
            case "t" -> rows.clear();
            case "r", "c" -> rows.merge(after, 1, Integer::sum);
            case "u", "d" -> {
                Integer n = rows.get(before);
                if (n == null) {
                    missing(table, "'" + op + "' of row " + before + " that does not exist");
                } else if (n == 1) {
                    rows.remove(before);
                } else {
                    rows.put(before, n - 1);
                }
                if (op.equals("u")) {
                    rows.merge(after, 1, Integer::sum);
                }
            }
            default -> anomaly(table + ": unknown op '" + op + "'");
        }
    }

    private void repeat(Path file, Position p, int digest, boolean fileStart, String op, String table) {
        repeats++;
        Integer first = seen.get(p);
        if (first == null) {
            regressions++;
            anomaly(file.getFileName() + ": position " + p + " (" + op + " on " + table + ") after " + lastStreamed
                    + ", and never seen before: out of order");
            return;
        }
        if (first != digest) {
            anomaly(file.getFileName() + ": repeat of " + p + " differs from its first copy (" + op + " on " + table + ")");
        }
        if (runNext < 0) {
            // a run begins: only on a file's first line (a crash inside a batch that rotated)
            repeatRuns++;
            if (!fileStart) {
                anomaly(file.getFileName() + ": repeat of " + p + " inside a file, not at its start (the sink cuts a"
                        + " file back to its checkpoint on open, so repeats can only follow a rotation)");
            }
            runNext = order.indexOf(p);
        } else if (fileStart) {
            // the run went on into a further rotation: it may begin again, anywhere before
            repeatRuns++;
            runNext = order.indexOf(p);
        } else if (!order.get(runNext).equals(p)) {
            anomaly(file.getFileName() + ": repeat run skips from " + order.get(runNext - 1) + " to " + p + " (expected "
                    + order.get(runNext) + ")");
            runNext = order.indexOf(p);
        }
        runNext++;
        if (runNext == order.size()) {
            runNext = -1; // the run reached the highest position: what follows is new
        }
    }

    /** A change that found no row: excusable only before the table's first streamed TRUNCATE. */
    private void missing(String table, String what) {
        if (streaming && !streamTruncated.contains(table)) {
            awaitingTruncate.computeIfAbsent(table, t -> new ArrayList<>()).add(what);
        } else {
            anomaly(table + ": " + what);
        }
    }

    /** Call after {@link #readAll}: changes that found no row and were not followed by a TRUNCATE. */
    void finish() {
        if (runNext >= 0) {
            anomaly("the files end inside a repeat run, at " + order.get(runNext - 1) + " before " + lastStreamed);
        }
        awaitingTruncate.forEach((t, l) -> {
            if (t.startsWith("oid ")) {
                unexcused.put(t, l); // a followed table: an anomaly only if it still exists (its copy may have stopped at a drop)
            } else {
                l.forEach(w -> anomaly(t + ": " + w + " (and no TRUNCATE of it follows)"));
            }
        });
        awaitingTruncate.clear();
    }

    private static List<String> row(TableShape shape, JsonNode image) {
        if (image == null || image.isNull()) {
            return null;
        }
        List<String> out = new ArrayList<>(shape.columns().size());
        for (String c : shape.columns()) {
            JsonNode v = image.get(c);
            out.add(v == null || v.isNull() ? null : v.asText());
        }
        return out;
    }

    private static String byOid(long oid) {
        return "oid " + oid;
    }

    /** A row image as its values in the event's column order. */
    private static List<String> values(JsonNode image) {
        if (image == null || image.isNull()) {
            return null;
        }
        List<String> out = new ArrayList<>();
        image.elements().forEachRemaining(v -> out.add(v.isNull() ? null : v.asText()));
        return out;
    }

    /**
     * Changes of the followed table of {@code oid} that found no row, with no online copy of it after them: none may be
     * left for a table that exists at the end (one dropped during its copy has them).
     */
    List<String> unexcused(long oid) {
        return unexcused.getOrDefault(byOid(oid), List.of());
    }

    /** The replayed rows of the followed table of {@code oid} (see the class comment). */
    Map<List<String>, Integer> tableOfOid(long oid) {
        Map<List<String>, Integer> out = new HashMap<>();
        keyed.getOrDefault(byOid(oid), Map.of()).values().forEach(r -> out.merge(r, 1, Integer::sum));
        return out;
    }

    /** The replayed table as a multiset of rows. */
    Map<List<String>, Integer> table(String table) {
        if (keyless.containsKey(table)) {
            return keyless.get(table);
        }
        Map<List<String>, Integer> out = new HashMap<>();
        for (List<String> r : keyed.get(table).values()) {
            out.merge(r, 1, Integer::sum);
        }
        return out;
    }

    private void anomaly(String what) {
        anomalyCount++;
        if (anomalies.size() < 20) {
            anomalies.add(what);
        }
    }
}
