package io.millrace.cli.crash;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.Lsn;
import io.millrace.sink.kafka.testing.KafkaBroker;
import io.millrace.sink.kafka.testing.TopicState;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Reads the crash matrix's Kafka destination as a {@code read_committed} consumer does: its durable checkpoint (the last
 * record of the checkpoint topic) and the state the topics rebuild, with the exactly-once rules of {@link TopicState}
 * (INV: DURABLE, RESUME). The keyed tables ({@code accounts}, {@code small}) are rebuilt key by key; the keyless
 * {@code txlog}, one row per source transaction and never updated, must carry each transaction's row in one create
 * event at most (a snapshot read may restate it) and, with the reads, every row of the source, counted from the last
 * truncate (the one that opens a re-copy).
 */
final class KafkaCheck {
    static final String DEST = "bus";
    private static final String CHECKPOINT_TOPIC = "millrace.checkpoints";
    private static final ObjectMapper JSON = new ObjectMapper();

    private static final String UNAVAILABLE = "__debezium_unavailable_value";

    private final KafkaBroker kafka;
    private final String prefix;
    private long unavailable;

    KafkaCheck(KafkaBroker kafka, String prefix) {
        this.kafka = kafka;
        this.prefix = prefix;
    }

    /**
     * The flush LSN of the last checkpoint committed to the checkpoint topic, or null when there is none (yet) or its
     * snapshot is RUNNING: such a checkpoint is never resumed from, and the slot re-created for its re-copy is
     * legitimately ahead of it (as {@link DurableSampler} skips it).
     */
    Lsn flushLsn() throws Exception {
        if (!kafka.topics().contains(CHECKPOINT_TOPIC)) {
            return null;
        }
        com.fasterxml.jackson.databind.JsonNode last = null;
        for (ConsumerRecord<String, String> r : kafka.readCommitted(CHECKPOINT_TOPIC)) {
            if (r.value() != null) {
                last = JSON.readTree(r.value());
            }
        }
        return last == null || "RUNNING".equals(last.path("snapshot").path("state").asText()) ? null
                : Lsn.parse(last.get("flush_lsn").asText());
    }

    /** What differs between the topics and the source, and every change repeated, lost or out of order; empty when none. */
    List<String> differences(Connection src) throws Exception {
        Map<String, String[]> keyed = new java.util.LinkedHashMap<>();
        keyed.put("accounts", new String[] {"owner", "balance", "payload"});
        keyed.put("small", new String[] {"v"});
        return differences(src, keyed);
    }

    /** As {@link #differences(Connection)}, for these keyed tables (key column {@code id}) and their columns, and txlog. */
    List<String> differences(Connection src, Map<String, String[]> keyedTables) throws Exception {
        List<String> out = new ArrayList<>();
        unavailable = 0;
        for (Map.Entry<String, String[]> t : keyedTables.entrySet()) {
            keyed(src, t.getKey(), out, t.getValue());
        }
        txlog(src, out);
        return out;
    }

    private void keyed(Connection src, String table, List<String> out, String... columns) throws SQLException {
        TopicState state = TopicState.rebuild(kafka.readCommitted(topic(table)), null);
        state.problems().stream().limit(10).forEach(p -> out.add(table + ": " + p));
        Map<String, List<String>> expected = sourceRows(src, table, columns);
        List<String> wrong = new ArrayList<>();
        for (Map.Entry<String, List<String>> e : expected.entrySet()) {
            JsonNode after = state.rows().get(e.getKey());
            if (after == null) {
                wrong.add(e.getKey() + " missing");
                continue;
            }
            for (int i = 0; i < columns.length; i++) {
                JsonNode n = after.get(columns[i]);
                String actual = n == null || n.isNull() ? null : n.asText();
                String want = e.getValue().get(i);
                if (UNAVAILABLE.equals(actual) && want != null) {
                    // a key change of a row whose TOASTed column did not change: its value is not in the stream
                    // (docs/EVENTS.md, "Unchanged TOAST values"); counted, not a loss
                    unavailable++;
                } else if (!java.util.Objects.equals(actual, want)) {
                    wrong.add(e.getKey() + "." + columns[i] + ": Kafka " + shorten(actual) + ", source " + shorten(want));
                }
            }
        }
        state.rows().keySet().stream().filter(k -> !expected.containsKey(k)).limit(5).forEach(k -> wrong.add(k + " not in the source"));
        if (!wrong.isEmpty() || state.rows().size() != expected.size()) {
            out.add(table + ": rebuilt from Kafka has " + state.rows().size() + " rows, the source " + expected.size() + "; "
                    + wrong.size() + " differ: " + wrong.stream().limit(5).toList());
        }
    }

    /** Values of unchanged TOASTed columns the topics could not carry (rows whose key changed), counted by the last check. */
    long unavailable() {
        return unavailable;
    }

    private static String shorten(String v) {
        return v == null ? "null" : v.length() > 40 ? v.substring(0, 40) + "...(" + v.length() + " chars)" : v;
    }

    private void txlog(Connection src, List<String> out) throws SQLException {
        Map<Long, Integer> creates = new HashMap<>();
        TreeSet<Long> seen = new TreeSet<>();
        for (ConsumerRecord<String, String> r : kafka.readCommitted(topic("txlog"))) {
            if (r.value() == null) {
                continue;
            }
            JsonNode v;
            try {
                v = JSON.readTree(r.value());
            } catch (Exception e) {
                throw new IllegalStateException("unreadable txlog event at offset " + r.offset(), e);
            }
            String op = v.get("op").asText();
            if (op.equals("c") || op.equals("r")) {
                long id = v.get("after").get("tx_id").asLong();
                seen.add(id);
                if (op.equals("c")) {
                    creates.merge(id, 1, Integer::sum);
                }
            } else if (op.equals("t")) {
                // the truncate that opens a re-copy (docs/EVENTS.md): what came before is restated after it
                seen.clear();
                creates.clear();
            } else {
                out.add("txlog: unexpected " + op + " event at offset " + r.offset());
            }
        }
        creates.forEach((id, n) -> {
            if (n > 1) {
                out.add("txlog: transaction " + id + " created " + n + " times");
            }
        });
        TreeSet<Long> source = new TreeSet<>();
        try (Statement s = src.createStatement(); ResultSet rs = s.executeQuery("SELECT tx_id FROM txlog")) {
            while (rs.next()) {
                source.add(rs.getLong(1));
            }
        }
        if (!seen.equals(source)) {
            TreeSet<Long> missing = new TreeSet<>(source);
            missing.removeAll(seen);
            TreeSet<Long> extra = new TreeSet<>(seen);
            extra.removeAll(source);
            out.add("txlog: " + seen.size() + " transactions in Kafka, " + source.size() + " in the source; missing "
                    + missing.stream().limit(10).toList() + ", not in the source " + extra.stream().limit(10).toList());
        }
    }

    private String topic(String table) {
        return prefix + ".public." + table;
    }

    /** The source's rows by key text as the topics carry it ({@code {"id":n}}), each its columns' text ({@code null}: NULL). */
    private static Map<String, List<String>> sourceRows(Connection src, String table, String... columns) throws SQLException {
        Map<String, List<String>> rows = new TreeMap<>();
        try (Statement s = src.createStatement(); ResultSet rs = s.executeQuery("SELECT id, " + String.join(", ", columns) + " FROM " + table)) {
            while (rs.next()) {
                List<String> values = new ArrayList<>(columns.length);
                for (int i = 0; i < columns.length; i++) {
                    values.add(rs.getString(2 + i));
                }
                rows.put("{\"id\":" + rs.getLong(1) + "}", values);
            }
        }
        return rows;
    }
}
