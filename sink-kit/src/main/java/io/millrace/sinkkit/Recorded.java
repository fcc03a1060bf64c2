package io.millrace.sinkkit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.types.UnchangedToast;

import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * One event as an event destination holds it, the parts the contract compares: op code, table, position and the row
 * images, each value as text ({@code null} for SQL NULL).
 *
 * @param op       {@code c}, {@code u}, {@code d}, {@code r} or {@code t}
 * @param table    the source table
 * @param position {@code (commit_lsn, ordinal)}
 * @param before   the old row image, or {@code null}
 * @param after    the new row image, or {@code null}
 */
public record Recorded(String op, TableRef table, Position position, Map<String, String> before, Map<String, String> after) {
    /** The value docs/EVENTS.md gives an unchanged TOAST column (Debezium's placeholder). */
    public static final String UNAVAILABLE = "__debezium_unavailable_value";

    private static final ObjectMapper JSON = new ObjectMapper();

    /** A Debezium-compatible envelope (docs/EVENTS.md), as jsonl lines and Kafka record values hold it. */
    public static Recorded fromEnvelope(String json) {
        try {
            return fromEnvelope(JSON.readTree(json));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new UncheckedIOException("not an event envelope: " + json, e);
        }
    }

    public static Recorded fromEnvelope(JsonNode env) {
        JsonNode source = env.path("source");
        Position p = new Position(Lsn.of(source.path("commit_lsn").asLong()), source.path("ordinal").asLong());
        return new Recorded(env.path("op").asText(), new TableRef(source.path("schema").asText(), source.path("table").asText()), p,
                image(env.path("before")), image(env.path("after")));
    }

    private static Map<String, String> image(JsonNode node) {
        if (node.isMissingNode() || node.isNull()) {
            return null;
        }
        Map<String, String> out = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            JsonNode v = f.getValue();
            out.put(f.getKey(), v.isNull() ? null : v.isTextual() ? v.textValue() : v.toString());
        }
        return out;
    }

    /** What an event destination records for {@code e} (REPLICA IDENTITY other than FULL: TOAST as the placeholder). */
    public static Recorded of(ChangeEvent e) {
        RelationInfo rel = e.relation();
        return new Recorded(String.valueOf(e.op().code()), rel.table(), e.position(), image(rel, e.before()), image(rel, e.after()));
    }

    private static Map<String, String> image(RelationInfo rel, Object[] values) {
        if (values == null) {
            return null;
        }
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i < rel.columnCount(); i++) {
            Object v = values[i];
            out.put(rel.column(i).name(), v == null ? null : v == UnchangedToast.INSTANCE ? UNAVAILABLE : v.toString());
        }
        return out;
    }
}
