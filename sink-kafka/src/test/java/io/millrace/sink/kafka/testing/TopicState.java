package io.millrace.sink.kafka.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Test support: the state of one table rebuilt from its topic as a consumer would, applying each
 * event per key ({@code c}/{@code r}/{@code u} put {@code after}, {@code d} removes, {@code t} clears,
 * tombstones are skipped, an unchanged TOASTed column keeps its value), while checking that each change appears exactly once and in order:
 * <ul>
 *   <li>positions {@code (source.commit_lsn, source.ordinal)} of streamed events increase strictly
 *       (a key change, written as delete + create, shares one position);</li>
 *   <li>with a version column that every UPDATE increments by one, each update of a key carries exactly
 *       the previous version + 1 (a repeated or lost change breaks the chain), and a snapshot read never
 *       goes back to an older version than one already seen;</li>
 *   <li>a key read again by a snapshot (a chunk re-read after a crash) carries no older version than the
 *       last one seen: the repeat is counted ({@link #rereads()}), it restates the row;</li>
 *   <li>a key is not deleted twice without a create in between.</li>
 * </ul>
 * An online snapshot (DBLog) emits a table's rows chunk by chunk while the stream goes on, so an update
 * or delete of a key whose chunk has not been read yet is the first the topic says of that key: it is
 * accepted as the start of the key's history.
 */
public final class TopicState {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String UNAVAILABLE = "__debezium_unavailable_value";

    private final Map<String, JsonNode> rows = new TreeMap<>();
    private final List<String> problems = new ArrayList<>();
    private long events;
    private long rereads;

    private TopicState() {
    }

    /** @param versionColumn the column every UPDATE increments by one, or {@code null} */
    public static TopicState rebuild(List<ConsumerRecord<String, String>> records, String versionColumn) {
        TopicState s = new TopicState();
        Map<String, Long> versions = new HashMap<>();
        Map<String, Integer> reads = new HashMap<>();
        java.util.Set<String> deleted = new java.util.HashSet<>();
        long lastCommit = -1;
        long lastOrdinal = -1;
        String lastOp = null;
        for (ConsumerRecord<String, String> r : records) {
            if (r.value() == null) {
                continue; // tombstone
            }
            s.events++;
            JsonNode v;
            try {
                v = JSON.readTree(r.value());
            } catch (Exception e) {
                throw new UncheckedIOException(new java.io.IOException("unreadable event at offset " + r.offset() + ": " + r.value(), e));
            }
            String op = v.get("op").asText();
            String key = r.key();
            JsonNode src = v.get("source");
            boolean snapshot = "true".equals(src.get("snapshot").asText());
            if (!snapshot) {
                long commit = src.get("commit_lsn").asLong();
                long ordinal = src.get("ordinal").asLong();
                boolean later = commit > lastCommit || (commit == lastCommit && ordinal > lastOrdinal);
                boolean keyChange = commit == lastCommit && ordinal == lastOrdinal && "c".equals(op) && "d".equals(lastOp);
                if (!later && !keyChange) {
                    s.problems.add("offset " + r.offset() + ": position (" + commit + ", " + ordinal + ") of a " + op + " event is not after ("
                            + lastCommit + ", " + lastOrdinal + ")");
                }
                lastCommit = commit;
                lastOrdinal = ordinal;
            }
            lastOp = op;
            switch (op) {
                case "t" -> {
                    s.rows.clear();
                    versions.clear();
                    reads.clear();
                    deleted.clear();
                }
                case "d" -> {
                    if (s.rows.remove(key) == null && deleted.contains(key)) {
                        s.problems.add("offset " + r.offset() + ": key " + key + " deleted twice");
                    }
                    deleted.add(key);
                    versions.remove(key);
                }
                case "c", "r", "u" -> {
                    JsonNode after = v.get("after");
                    if ("r".equals(op) && reads.merge(key, 1, Integer::sum) > 1) {
                        s.rereads++;
                    }
                    if ("c".equals(op) && s.rows.containsKey(key)) {
                        s.problems.add("offset " + r.offset() + ": create of key " + key + ", which is already there");
                    }
                    deleted.remove(key);
                    if (versionColumn != null) {
                        long ver = after.get(versionColumn).asLong();
                        Long prev = versions.put(key, ver);
                        if ("u".equals(op) && prev != null && ver != prev + 1) {
                            s.problems.add("offset " + r.offset() + ": update of key " + key + " to version " + ver + " after version " + prev);
                        }
                        if ("r".equals(op) && prev != null && ver < prev) {
                            s.problems.add("offset " + r.offset() + ": snapshot read of key " + key + " at version " + ver
                                    + " after version " + prev + " was streamed");
                        }
                    }
                    JsonNode prev = s.rows.get(key);
                    if (prev != null && after.isObject()) {
                        // an unchanged TOASTed column: keep the value we have (docs/EVENTS.md)
                        JsonNode incoming = after;
                        com.fasterxml.jackson.databind.node.ObjectNode merged = ((com.fasterxml.jackson.databind.node.ObjectNode) after).deepCopy();
                        incoming.fieldNames().forEachRemaining(f -> {
                            if (UNAVAILABLE.equals(incoming.get(f).asText(null))) {
                                merged.set(f, prev.get(f));
                            }
                        });
                        after = merged;
                    }
                    s.rows.put(key, after);
                }
                default -> s.problems.add("offset " + r.offset() + ": unknown op " + op);
            }
        }
        return s;
    }

    /** Rows by key (the key's JSON text), each the last {@code after}. */
    public Map<String, JsonNode> rows() {
        return rows;
    }

    /** Each broken rule, with the offset; empty when the topic is exactly once and in order. */
    public List<String> problems() {
        return problems;
    }

    /** Snapshot reads of a key already read since the last truncate. */
    public long rereads() {
        return rereads;
    }

    /** Events (not tombstones) read. */
    public long events() {
        return events;
    }

    /** Rows as {@code key -> col=value|col=value} lines of the given columns, ordered by key text. */
    public List<String> lines(String... columns) {
        List<String> out = new ArrayList<>();
        rows.forEach((k, after) -> {
            StringBuilder sb = new StringBuilder(k).append(" ->");
            for (String c : columns) {
                JsonNode n = after.get(c);
                sb.append(' ').append(c).append('=').append(n == null || n.isNull() ? "null" : n.asText());
            }
            out.add(sb.toString());
        });
        return out;
    }
}
