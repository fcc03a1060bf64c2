package io.millrace.connect;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.FloatNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.TextNode;
import com.fasterxml.jackson.databind.util.TokenBuffer;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.event.EnvelopeWriter;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.types.PgInfinity;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.source.SourceRecord;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Turns Millrace's changes into the records Debezium's PostgreSQL connector makes: topic
 * {@code <prefix>.<schema>.<table>}, key a Struct of the replica identity columns ({@code <topic>.Key}), value the
 * envelope Struct ({@code <topic>.Envelope}: before, after, source, transaction, op, ts_ms, ts_us, ts_ns), a tombstone
 * after each delete of a keyed row, and an update that moves a row to another key as a delete of the old key (with its
 * tombstone) and a create of the new one.
 *
 * <p>The values are read from the envelope {@link EnvelopeWriter} writes (docs/EVENTS.md), so that the
 * {@code JsonConverter} with {@code schemas.enable=false} writes exactly Millrace's own JSON; the schemas give each
 * column the Connect type and Debezium logical name of its JSON form (docs/TYPES.md). One engine thread uses an
 * instance (it caches per relation; not thread-safe).
 */
final class RecordMaker {
    static final String PARTITION_KEY = "server";
    static final String UNAVAILABLE = EnvelopeWriter.UNAVAILABLE_VALUE;

    private static final ObjectMapper MAPPER = new ObjectMapper();
    /**
     * The values of {@code source.snapshot} as Debezium's PostgreSQL connector (3.6) declares them in its schema, so that
     * the source schema is Debezium's (a schema registry sees one subject version for both); Millrace writes
     * {@code true}, {@code incremental}, and leaves it to the default {@code false} (ConnectDifferentialIT).
     */
    static final String SNAPSHOT_VALUES = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental";
    private static final Schema SOURCE = SchemaBuilder.struct().name("io.debezium.connector.postgresql.Source")
            .field("version", Schema.STRING_SCHEMA).field("connector", Schema.STRING_SCHEMA).field("name", Schema.STRING_SCHEMA)
            .field("ts_ms", Schema.INT64_SCHEMA)
            .field("snapshot", SchemaBuilder.string().optional().name("io.debezium.data.Enum").version(1)
                    .parameter("allowed", SNAPSHOT_VALUES).defaultValue("false").build())
            .field("db", Schema.STRING_SCHEMA).field("sequence", Schema.OPTIONAL_STRING_SCHEMA)
            .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA).field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
            .field("schema", Schema.STRING_SCHEMA).field("table", Schema.STRING_SCHEMA)
            .field("txId", Schema.OPTIONAL_INT64_SCHEMA).field("lsn", Schema.OPTIONAL_INT64_SCHEMA)
            .field("xmin", Schema.OPTIONAL_INT64_SCHEMA)
            .field("commit_lsn", Schema.OPTIONAL_INT64_SCHEMA).field("ordinal", Schema.OPTIONAL_INT64_SCHEMA)
            .field("table_oid", Schema.OPTIONAL_INT64_SCHEMA).build();
    /** {@code source.<field>} of each source field, by index: names a field in an error without a string per value. */
    private static final String[] SOURCE_LABELS = SOURCE.fields().stream().map(f -> "source." + f.name()).toArray(String[]::new);
    static final Schema HEARTBEAT_KEY = SchemaBuilder.struct().name("io.debezium.connector.common.ServerNameKey")
            .field("serverName", Schema.STRING_SCHEMA).build();
    static final Schema HEARTBEAT_VALUE = SchemaBuilder.struct().name("io.debezium.connector.common.Heartbeat")
            .field("ts_ms", Schema.INT64_SCHEMA).build();

    private final String prefix;
    private final boolean tombstones;
    private final boolean truncates;
    private final EnvelopeWriter envelope;
    private final Map<String, String> partition;
    private final Map<RelationInfo, Shapes> shapes = new IdentityHashMap<>();
    /** Debezium's transaction metadata, or null ({@code provide.transaction.metadata=false}: the block is null). */
    private final TransactionMetadata transactions;
    /** How numeric, money and interval values are written ({@code decimal.handling.mode}, {@code interval.handling.mode}). */
    private final ColumnTypes.Modes modes;

    RecordMaker(String prefix, String database, boolean tombstones, boolean truncates) {
        this(prefix, new EnvelopeWriter(new SourceMeta(prefix, database)), tombstones, truncates, null);
    }

    RecordMaker(String prefix, EnvelopeWriter envelope, boolean tombstones, boolean truncates, String transactionTopic) {
        this(prefix, envelope, tombstones, truncates, transactionTopic, ColumnTypes.Modes.STRINGS);
    }

    /**
     * With the envelope writer given (a test's, with a fixed clock), and the transaction metadata written to
     * {@code transactionTopic} (null: none).
     */
    RecordMaker(String prefix, EnvelopeWriter envelope, boolean tombstones, boolean truncates, String transactionTopic,
                ColumnTypes.Modes modes) {
        this.modes = modes;
        this.prefix = prefix;
        this.tombstones = tombstones;
        this.truncates = truncates;
        this.envelope = envelope;
        this.partition = Map.of(PARTITION_KEY, prefix);
        this.transactions = transactionTopic == null ? null : new TransactionMetadata(transactionTopic, partition);
    }

    /** The transaction metadata this maker writes, or null when it writes none. */
    TransactionMetadata transactions() {
        return transactions;
    }

    /** The source partition of every record: {@code {"server": <topic.prefix>}}, as Debezium's. */
    Map<String, String> partition() {
        return partition;
    }

    /**
     * The records of {@code change}, each with {@code offset}, appended to {@code out}; with transaction metadata, the
     * END of the transaction before it and the BEGIN of its own first when it starts one ({@link TransactionMetadata}).
     */
    void add(ChangeEvent e, Map<String, ?> offset, List<SourceRecord> out) {
        Shapes s = shapes(e.relation());
        if (transactions != null) {
            transactions.before(e, offset, out);
        }
        switch (e.op()) {
            case TRUNCATE -> {
                if (truncates) {
                    out.add(record(s, offset, e, null, value(s, e)));
                }
            }
            case DELETE -> {
                Struct key = key(s, e);
                out.add(record(s, offset, e, key, value(s, e)));
                tombstone(s, offset, e, key, out);
            }
            case UPDATE -> {
                if (e.keyChanged()) {
                    // As Debezium: the old key's history ends with a delete (and tombstone), the new key starts with a create.
                    ChangeEvent del = new ChangeEvent(Op.DELETE, e.relation(), e.before(), null, e.lsn(), e.position(), e.xid(),
                            e.commitTimeMicros(), e.snapshot());
                    Struct oldKey = key(s, del);
                    out.add(record(s, offset, del, oldKey, value(s, del)));
                    tombstone(s, offset, del, oldKey, out);
                    ChangeEvent ins = new ChangeEvent(Op.CREATE, e.relation(), null, e.after(), e.lsn(), e.position(), e.xid(),
                            e.commitTimeMicros(), e.snapshot());
                    out.add(record(s, offset, ins, key(s, ins), value(s, ins)));
                } else {
                    out.add(record(s, offset, e, key(s, e), value(s, e)));
                }
            }
            default -> out.add(record(s, offset, e, key(s, e), value(s, e)));
        }
    }

    /** A record that carries only {@code offset}: Debezium's heartbeat, for a batch without changes. */
    SourceRecord heartbeat(String topic, Map<String, ?> offset, long nowMs) {
        Struct key = new Struct(HEARTBEAT_KEY).put("serverName", prefix);
        Struct value = new Struct(HEARTBEAT_VALUE).put("ts_ms", nowMs);
        return new SourceRecord(partition, offset, topic, null, HEARTBEAT_KEY, key, HEARTBEAT_VALUE, value, nowMs);
    }

    private void tombstone(Shapes s, Map<String, ?> offset, ChangeEvent e, Struct key, List<SourceRecord> out) {
        if (tombstones && key != null) {
            out.add(new SourceRecord(partition, offset, s.topic, null, s.key, key, null, null, Math.floorDiv(e.commitTimeMicros(), 1000L))); // as Debezium: no value schema
        }
    }

    private SourceRecord record(Shapes s, Map<String, ?> offset, ChangeEvent e, Struct key, Struct value) {
        return new SourceRecord(partition, offset, s.topic, null, key == null ? null : s.key, key, s.envelope, value,
                Math.floorDiv(e.commitTimeMicros(), 1000L));
    }

    private Struct key(Shapes s, ChangeEvent e) {
        if (s.key == null || e.op() == Op.TRUNCATE) {
            return null;
        }
        TokenBuffer tb = new TokenBuffer(MAPPER, false);
        envelope.writeKey(tb, e);
        try (JsonParser p = tb.asParser()) {
            p.nextToken();
            return row(s.key, p, s.topic);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * The envelope Struct, read from the envelope's JSON tokens as they come (no tree of the whole envelope: that tree,
     * a map per row image, was most of the task thread's time per record).
     */
    private Struct value(Shapes s, ChangeEvent e) {
        TokenBuffer tb = new TokenBuffer(MAPPER, false);
        envelope.writeValue(tb, e);
        Struct v = new Struct(s.envelope);
        try (JsonParser p = tb.asParser()) {
            p.nextToken(); // the envelope's START_OBJECT
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                p.nextToken();
                switch (name) {
                    case "before", "after" -> v.put(name, row(s.row, p, s.topic));
                    case "source" -> v.put("source", source(p, s.topic));
                    case "op" -> v.put("op", p.getText());
                    case "ts_ms", "ts_us", "ts_ns" -> v.put(name, p.getLongValue());
                    default -> p.skipChildren(); // "transaction" is null in the envelope: the block is made below
                }
            }
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        v.put("transaction", transactions == null ? null : transactions.block(e)); // one per change record, as Debezium counts
        return v;
    }

    private static Struct source(JsonParser p, String topic) throws IOException {
        Struct source = new Struct(SOURCE);
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            p.nextToken();
            org.apache.kafka.connect.data.Field f = SOURCE.field(name);
            if (f == null || (name.equals("snapshot") && "false".equals(p.getText()))) {
                // As Debezium's connector: a streamed change leaves source.snapshot unset and the schema's default
                // ("false") stands. The JSON converter writes the default, so the JSON is the same; what reads the field
                // without its default (ExtractNewRecordState's add.fields=snapshot, Struct.getWithoutDefault) gets null.
                p.skipChildren();
                continue;
            }
            source.put(f, convert(f.schema(), node(p), topic, SOURCE_LABELS[f.index()]));
        }
        return source;
    }

    /** A row image (or key) from the parser at its START_OBJECT (or null); the parser is left at its END_OBJECT. */
    private static Struct row(Schema schema, JsonParser p, String topic) throws IOException {
        if (p.currentToken() != JsonToken.START_OBJECT) {
            p.skipChildren();
            return null;
        }
        Struct row = new Struct(schema);
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            p.nextToken();
            org.apache.kafka.connect.data.Field f = schema.field(name);
            if (f == null) {
                p.skipChildren();
                continue;
            }
            row.put(f, convert(f.schema(), node(p), topic, name));
        }
        return row;
    }

    /**
     * The parser's current value as the node a tree of the JSON would hold (as Jackson's tree deserializer makes it): a
     * scalar without a tree, an array or object (and a number outside int, long, float and double) read as a tree.
     */
    static JsonNode node(JsonParser p) throws IOException {
        switch (p.currentToken()) {
            case VALUE_NULL:
                return null;
            case VALUE_STRING:
                return TextNode.valueOf(p.getText());
            case VALUE_TRUE:
                return BooleanNode.TRUE;
            case VALUE_FALSE:
                return BooleanNode.FALSE;
            case VALUE_NUMBER_INT:
                switch (p.getNumberType()) {
                    case INT:
                        return IntNode.valueOf(p.getIntValue());
                    case LONG:
                        return LongNode.valueOf(p.getLongValue());
                    default:
                        return MAPPER.readTree(p);
                }
            case VALUE_NUMBER_FLOAT:
                switch (p.getNumberType()) {
                    case FLOAT:
                        return FloatNode.valueOf(p.getFloatValue());
                    case DOUBLE:
                        return DoubleNode.valueOf(p.getDoubleValue());
                    default:
                        return MAPPER.readTree(p);
                }
            default:
                return MAPPER.readTree(p);
        }
    }

    /** The Connect value of a column's JSON form (docs/TYPES.md) under its schema; a value the schema cannot hold fails. */
    static Object convert(Schema schema, JsonNode v, String topic, String field) {
        if (v == null || v.isNull()) {
            return null;
        }
        if (schema.name() != null) {
            switch (schema.name()) {
                case org.apache.kafka.connect.data.Decimal.LOGICAL_NAME:
                    if (special(v)) {
                        return null;
                    }
                    try {
                        return new java.math.BigDecimal(v.textValue()).setScale(
                                Integer.parseInt(schema.parameters().get(org.apache.kafka.connect.data.Decimal.SCALE_FIELD)),
                                java.math.RoundingMode.UNNECESSARY);
                    } catch (ArithmeticException e) { // money under an lc_monetary with other than 2 fraction digits
                        throw new DataException("topic " + topic + ", field " + field + ": " + v.textValue() + " has more fraction"
                                + " digits than the field's Decimal scale; set " + ConnectorSettings.DECIMAL_MODE + "=string", e);
                    }
                case ColumnTypes.VARIABLE_SCALE_DECIMAL: {
                    if (special(v)) {
                        return null;
                    }
                    java.math.BigDecimal d = new java.math.BigDecimal(v.textValue());
                    return new Struct(schema).put("scale", d.scale()).put("value", d.unscaledValue().toByteArray());
                }
                case ColumnTypes.MICRO_DURATION:
                    return microDuration(v.textValue(), topic, field);
                default:
                    break;
            }
        }
        switch (schema.type()) {
            case BOOLEAN:
                return v.booleanValue();
            case INT16:
            case INT32:
            case INT64:
                if (v.isTextual() && schema.name() != null) {
                    Object infinity = infinity(schema.name(), v.textValue());
                    if (infinity != null) {
                        return infinity;
                    }
                }
                if (!v.isIntegralNumber() || !v.canConvertToLong()) {
                    throw unrepresentable(schema, v, topic, field);
                }
                long l = v.longValue();
                if (schema.type() == Schema.Type.INT16) {
                    return (short) l;
                }
                return schema.type() == Schema.Type.INT32 ? (Object) (int) l : (Object) l;
            case FLOAT32:
                return v.isNumber() ? v.floatValue() : Float.parseFloat(v.textValue()); // "NaN", "Infinity", "-Infinity"
            case FLOAT64:
                return v.isNumber() ? v.doubleValue() : Double.parseDouble(v.textValue());
            case BYTES:
                return v.textValue().equals(UNAVAILABLE) ? UNAVAILABLE.getBytes(StandardCharsets.UTF_8) // as Debezium's binary placeholder
                        : Base64.getDecoder().decode(v.textValue());
            case ARRAY: {
                if (v.isTextual() && v.textValue().equals(UNAVAILABLE) && schema.valueSchema().type() == Schema.Type.STRING) {
                    return List.of(UNAVAILABLE); // an unchanged TOASTed array, as Debezium writes one
                }
                if (!v.isArray()) {
                    throw unrepresentable(schema, v, topic, field);
                }
                List<Object> list = new ArrayList<>(v.size());
                for (Iterator<JsonNode> it = v.elements(); it.hasNext(); ) {
                    JsonNode element = it.next();
                    if (element.isArray()) {
                        throw multiDimensional(schema, v, topic, field);
                    }
                    list.add(convert(schema.valueSchema(), element, topic, field));
                }
                return list;
            }
            case STRING:
                return v.isTextual() ? v.textValue() : v.toString();
            default:
                throw unrepresentable(schema, v, topic, field);
        }
    }

    /**
     * Debezium's PostgreSQL connector's values for {@code date} and {@code timestamp} ±infinity (what it writes for a
     * streamed change, {@code PostgresValueConverter}'s infinity constants through {@code io.debezium.time.Date} and
     * {@code MicroTimestamp}): a date is the day number of {@code -5877611-06-21} for infinity and {@code -5877611-06-22}
     * for -infinity (PostgreSQL's infinite day counts, overflowed in 32 bits, as Debezium reads them); a timestamp is
     * pgjdbc's {@code PGStatement.DATE_POSITIVE_INFINITY} / {@code DATE_NEGATIVE_INFINITY} as microseconds.
     * {@code timestamptz} needs none: Debezium writes the strings {@code "infinity"} / {@code "-infinity"}, as Millrace.
     */
    static final int DATE_POSITIVE_INFINITY = -2147472692;
    static final int DATE_NEGATIVE_INFINITY = -2147472691;
    static final long TIMESTAMP_POSITIVE_INFINITY = 9223372036825200000L;
    static final long TIMESTAMP_NEGATIVE_INFINITY = -9223372036832400000L;

    private static Object infinity(String logicalName, String text) {
        boolean positive = text.equals(PgInfinity.POSITIVE.pgText());
        if (!positive && !text.equals(PgInfinity.NEGATIVE.pgText())) {
            return null;
        }
        return switch (logicalName) {
            case "io.debezium.time.Date" -> positive ? DATE_POSITIVE_INFINITY : DATE_NEGATIVE_INFINITY;
            case "io.debezium.time.MicroTimestamp" -> positive ? TIMESTAMP_POSITIVE_INFINITY : TIMESTAMP_NEGATIVE_INFINITY;
            default -> null;
        };
    }

    /**
     * NaN and ±Infinity of a numeric: Debezium's precise mode has no form for them (its documentation: only string and
     * double modes encode them), and writes null, as here.
     */
    private static boolean special(JsonNode v) {
        String t = v.textValue();
        return t == null || t.equals("NaN") || t.equals("Infinity") || t.equals("-Infinity") || t.equals(UNAVAILABLE);
    }

    private static final java.util.regex.Pattern ISO_INTERVAL = java.util.regex.Pattern.compile(
            "P(?:(-?\\d+)Y)?(?:(-?\\d+)M)?(?:(-?\\d+)D)?(?:T(?:(-?\\d+)H)?(?:(-?\\d+)M)?(?:(-?\\d+(?:\\.\\d+)?)S)?)?");

    /**
     * An interval's ISO-8601 form (docs/TYPES.md) as Debezium's {@code interval.handling.mode=numeric} writes it: micros,
     * computed as its {@code MicroDuration.durationMicros} does from pgjdbc's {@code PGInterval} parts (months as 365.25 / 12
     * days, in doubles, truncated), so that the numbers are the same. PostgreSQL 17's ±infinity has no such number: null.
     */
    static Long microDuration(String iso, String topic, String field) {
        if (iso.equals("infinity") || iso.equals("-infinity")) {
            return null;
        }
        java.util.regex.Matcher m = ISO_INTERVAL.matcher(iso);
        if (!m.matches()) {
            throw new DataException("topic " + topic + ", field " + field + ": '" + iso + "' is not an ISO-8601 interval");
        }
        int years = part(m, 1);
        int months = part(m, 2);
        int days = part(m, 3);
        int hours = part(m, 4);
        int minutes = part(m, 5);
        double seconds = 0;
        if (m.group(6) != null) { // as PGInterval keeps them: whole seconds and rounded micros, summed again as a double
            double s = Double.parseDouble(m.group(6));
            int whole = (int) s;
            int micros = (int) Math.round((s - whole) * 1_000_000);
            seconds = whole + (double) micros / 1_000_000;
        }
        double numberOfDays = (double) (years * 12 + months) * (365.25 / 12.0) + (double) days;
        double numberOfSeconds = ((numberOfDays * 24.0 + (double) hours) * 60.0 + (double) minutes) * 60.0 + seconds;
        return (long) (numberOfSeconds * 1_000_000.0);
    }

    private static int part(java.util.regex.Matcher m, int group) {
        return m.group(group) == null ? 0 : Integer.parseInt(m.group(group));
    }

    private static DataException unrepresentable(Schema schema, JsonNode v, String topic, String field) {
        String text = v.toString();
        return new DataException("topic " + topic + ", field " + field + ": the value " + (text.length() > 120 ? text.substring(0, 120)
                + "..." : text) + " has no form in the field's Connect schema " + schema.type()
                + (schema.name() == null ? "" : " (" + schema.name() + ")")
                + " (e.g. a timestamp past what int64 microseconds hold): not supported by the Connect records");
    }

    /**
     * A multi-dimensional array has no form in a column's Connect schema (an array of the element type: PostgreSQL does
     * not record an array column's dimensions), and Debezium's connector has none either: it writes each inner array as
     * a null element (numbers, dates, ...) or as a Java object's name (text), with a warning. Refused, naming the field.
     */
    private static DataException multiDimensional(Schema schema, JsonNode v, String topic, String field) {
        String text = v.toString();
        return new DataException("topic " + topic + ", field " + field + ": the value " + (text.length() > 120 ? text.substring(0, 120)
                + "..." : text) + " is a multi-dimensional array, which has no form in the field's Connect schema (array of "
                + schema.valueSchema().type() + "); Debezium's PostgreSQL connector cannot represent one either (it writes null"
                + " or garbled elements). Keep the column one-dimensional, store such values as jsonb, or leave the table out"
                + " of " + ConnectorSettings.TABLE_INCLUDE + " (Millrace's own Kafka and jsonl destinations write them as nested"
                + " JSON arrays)");
    }

    /** The schemas and topic of one table shape. */
    private record Shapes(String topic, Schema key, Schema row, Schema envelope) {
    }

    private Shapes shapes(RelationInfo rel) {
        Shapes s = shapes.get(rel);
        if (s == null) {
            if (shapes.size() > 10_000) {
                shapes.clear(); // relations are made again after each restart and shape change: do not hold them all
            }
            s = makeShapes(rel);
            shapes.put(rel, s);
        }
        return s;
    }

    private Shapes makeShapes(RelationInfo rel) {
        String topic = topic(prefix, rel.table().schema(), rel.table().table());
        SchemaBuilder row = SchemaBuilder.struct().optional().name(topic + ".Value");
        for (int i = 0; i < rel.columnCount(); i++) {
            row.field(rel.column(i).name(), ColumnTypes.schema(rel.codec(i).typeName(), rel.column(i).typeMod(), true, modes));
        }
        Schema rowSchema = row.build();
        Schema keySchema = null;
        if (rel.hasKey()) {
            SchemaBuilder key = SchemaBuilder.struct().name(topic + ".Key");
            for (int i : rel.keyIndexes()) {
                key.field(rel.column(i).name(), ColumnTypes.schema(rel.codec(i).typeName(), rel.column(i).typeMod(), false, modes));
            }
            keySchema = key.build();
        }
        Schema envelopeSchema = SchemaBuilder.struct().name(topic + ".Envelope").version(2)
                .field("before", rowSchema).field("after", rowSchema).field("source", SOURCE).field("transaction", TransactionMetadata.BLOCK)
                .field("op", Schema.STRING_SCHEMA).field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
                .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA).field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA).build();
        return new Shapes(topic, keySchema, rowSchema, envelopeSchema);
    }

    /** {@code <prefix>.<schema>.<table>}, characters Kafka refuses replaced by '_' as Debezium's topic naming does. */
    static String topic(String prefix, String schema, String table) {
        String raw = prefix + "." + schema + "." + table;
        StringBuilder sb = new StringBuilder(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
            sb.append(ok ? c : '_');
        }
        return sb.toString();
    }
}
