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
 *       the previous version + 1 (a repeated or lost change breaks the chain);</li>
 *   <li>a key is read by the snapshot at most once since the last truncate.</li>
 * </ul>
 */
public final class TopicState {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String UNAVAILABLE = "__debezium_unavailable_value";

    private final Map<String, JsonNode> rows = new TreeMap<>();
    private final List<String> problems = new ArrayList<>();
    private long events;

    private TopicState() {
    }

    /** @param versionColumn the column every UPDATE increments by one, or {@code null} */
    public static TopicState rebuild(List<ConsumerRecord<String, String>> records, String versionColumn) {
        TopicState s = new TopicState();
        Map<String, Long> versions = new HashMap<>();
        Map<String, Integer> reads = new HashMap<>();
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
                }
                case "d" -> {
                    if (s.rows.remove(key) == null) {
                        s.problems.add("offset " + r.offset() + ": delete of key " + key + ", which is not there");
                    }
                    versions.remove(key);
                }
                case "c", "r", "u" -> {
                    JsonNode after = v.get("after");
                    if ("r".equals(op) && reads.merge(key, 1, Integer::sum) > 1) {
                        s.problems.add("offset " + r.offset() + ": key " + key + " read by the snapshot twice");
                    }
                    if ("c".equals(op) && s.rows.containsKey(key)) {
                        s.problems.add("offset " + r.offset() + ": create of key " + key + ", which is already there");
                    }
                    if (versionColumn != null) {
                        long ver = after.get(versionColumn).asLong();
                        Long prev = versions.put(key, ver);
                        if ("u".equals(op) && (prev == null || ver != prev + 1)) {
                            s.problems.add("offset " + r.offset() + ": update of key " + key + " to version " + ver + " after version " + prev);
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
