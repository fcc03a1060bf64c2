package io.millrace.connect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.event.EnvelopeWriter;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.Codecs;
import io.millrace.core.types.UnchangedToast;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Records as Debezium's PostgreSQL connector makes them, through Connect's real {@link JsonConverter}: without schemas
 * the value is exactly Millrace's own envelope JSON (docs/EVENTS.md) and the key its key JSON; with schemas the
 * Debezium names and logical types are there; tombstones after deletes; a key change is delete + tombstone + create.
 */
class RecordMakerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Clock CLOCK = Clock.fixed(Instant.parse("2024-05-06T07:08:09.123456789Z"), ZoneOffset.UTC);
    private static final SourceMeta META = new SourceMeta("shop", "shopdb");
    private static final long COMMIT_MICROS = 1_700_000_000_123_456L;
    private static final Map<String, String> OFFSET = Map.of("checkpoint", "{}");

    private static ColumnInfo col(String name, int oid, boolean key) {
        return new ColumnInfo(name, Codecs.builtin(oid), -1, key);
    }

    /** Every common type (bool, int2/4/8, float4/8, numeric, text, bytea, date, time, timestamp(tz), uuid, json(b), arrays). */
    private static final RelationInfo ALL = new RelationInfo(16390, new TableRef("public", "all types"), 'd', List.of(
            col("id", 23, true), col("b", 16, false), col("s", 21, false), col("l", 20, false), col("f4", 700, false),
            col("f8", 701, false), col("n", 1700, false), col("t", 25, false), col("bin", 17, false), col("d", 1082, false),
            col("tm", 1083, false), col("ts", 1114, false), col("tz", 1184, false), col("u", 2950, false), col("j", 114, false),
            col("jb", 3802, false), col("ia", 1007, false), col("ta", 1009, false)), TypeResolver.builtinsOnly());

    private static Object[] row(RelationInfo rel, String... texts) {
        Object[] r = new Object[texts.length];
        for (int i = 0; i < texts.length; i++) {
            r[i] = texts[i] == null ? null : rel.codec(i).decodeText(texts[i]);
        }
        return r;
    }

    private static final Object[] ROW = row(ALL, "7", "t", "-32768", "9223372036854775807", "0.1", "NaN", "1.500", "héllo \"q\"",
            "\\x000102ff", "1970-01-02", "00:00:01.000002", "2024-01-02 03:04:05.123456", "2024-01-02 08:34:05.123456+05:30",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "{\"a\": 1}", "{\"b\": [1, 2]}", "{1,NULL,3}", "{x,\"y z\"}");

    private static ChangeEvent event(Op op, RelationInfo rel, Object[] before, Object[] after) {
        return new ChangeEvent(op, rel, before, after, Lsn.of(1000), new Position(Lsn.of(1100), 1), 770, COMMIT_MICROS, false);
    }

    private final EnvelopeWriter envelope = new EnvelopeWriter(META, CLOCK, "9.9.9");
    private final RecordMaker maker = new RecordMaker("shop", new EnvelopeWriter(META, CLOCK, "9.9.9"), true, true);
    private final JsonConverter plain = converter(false);
    private final JsonConverter withSchemas = converter(true);

    private static JsonConverter converter(boolean schemas) {
        JsonConverter c = new JsonConverter();
        c.configure(Map.of("schemas.enable", Boolean.toString(schemas), "converter.type", "value"));
        return c;
    }

    private List<SourceRecord> records(ChangeEvent e) {
        List<SourceRecord> out = new ArrayList<>();
        maker.add(e, OFFSET, out);
        return out;
    }

    private JsonNode value(SourceRecord r, JsonConverter c) throws Exception {
        byte[] bytes = c.fromConnectData(r.topic(), r.valueSchema(), r.value());
        return bytes == null ? null : JSON.readTree(bytes);
    }

    private JsonNode key(SourceRecord r) throws Exception {
        byte[] bytes = plain.fromConnectData(r.topic(), r.keySchema(), r.key());
        return bytes == null ? null : JSON.readTree(bytes);
    }

    private JsonNode millraceValue(ChangeEvent e) throws Exception {
        return JSON.readTree(new String(envelope.valueBytes(e), StandardCharsets.UTF_8));
    }

    private JsonNode millraceKey(ChangeEvent e) throws Exception {
        return JSON.readTree(new String(envelope.keyBytes(e), StandardCharsets.UTF_8));
    }

    @Test
    void insertIsMillracesJsonWithoutSchemasAndDebeziumsSchemaWithThem() throws Exception {
        ChangeEvent e = event(Op.CREATE, ALL, null, ROW);
        List<SourceRecord> rs = records(e);
        assertThat(rs).hasSize(1);
        SourceRecord r = rs.get(0);
        assertThat(r.topic()).isEqualTo("shop.public.all_types");
        assertThat(r.sourcePartition()).isEqualTo(Map.of("server", "shop"));
        assertThat(r.sourceOffset()).isEqualTo(OFFSET);
        assertThat(value(r, plain)).isEqualTo(millraceValue(e));
        assertThat(key(r)).isEqualTo(millraceKey(e)).isEqualTo(JSON.readTree("{\"id\":7}"));
        assertThat(value(r, plain).get("after").get("f8").textValue()).isEqualTo("NaN");

        JsonNode schema = value(r, withSchemas).get("schema");
        assertThat(schema.get("name").textValue()).isEqualTo("shop.public.all_types.Envelope");
        JsonNode after = schema.get("fields").get(1);
        assertThat(after.get("name").textValue()).isEqualTo("shop.public.all_types.Value");
        Map<String, String> names = new java.util.HashMap<>();
        Map<String, String> types = new java.util.HashMap<>();
        after.get("fields").forEach(f -> {
            types.put(f.get("field").textValue(), f.get("type").textValue());
            if (f.has("name")) {
                names.put(f.get("field").textValue(), f.get("name").textValue());
            }
        });
        assertThat(types).containsEntry("id", "int32").containsEntry("s", "int16").containsEntry("l", "int64")
                .containsEntry("b", "boolean").containsEntry("f4", "float").containsEntry("f8", "double").containsEntry("n", "string")
                .containsEntry("bin", "bytes").containsEntry("ia", "array").containsEntry("ts", "int64");
        assertThat(names).containsEntry("d", "io.debezium.time.Date").containsEntry("tm", "io.debezium.time.MicroTime")
                .containsEntry("ts", "io.debezium.time.MicroTimestamp").containsEntry("tz", "io.debezium.time.ZonedTimestamp")
                .containsEntry("u", "io.debezium.data.Uuid").containsEntry("jb", "io.debezium.data.Json");
        assertThat(schema.get("fields").get(2).get("name").textValue()).isEqualTo("io.debezium.connector.postgresql.Source");
    }

    /**
     * Debezium's connector leaves {@code source.snapshot} unset on a streamed change (its schema's default, "false", stands),
     * so {@code ExtractNewRecordState} with {@code add.fields=snapshot} gives {@code __snapshot: null} for it;
     * ConnectDifferentialIT found Millrace's "false" there. The JSON (schemas off and on) is "false" all the same.
     */
    @Test
    void aStreamedChangeLeavesSourceSnapshotToTheSchemaDefaultAsDebezium() throws Exception {
        SourceRecord streamed = records(event(Op.CREATE, ALL, null, ROW)).get(0);
        Struct source = ((Struct) streamed.value()).getStruct("source");
        assertThat(source.getWithoutDefault("snapshot")).isNull();
        assertThat(source.get("snapshot")).isEqualTo("false");
        assertThat(source.schema().field("snapshot").schema().parameters()).as("Debezium's allowed values")
                .isEqualTo(Map.of("allowed", "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"));
        assertThat(value(streamed, plain).get("source").get("snapshot").textValue()).isEqualTo("false");
        assertThat(value(streamed, withSchemas).get("payload").get("source").get("snapshot").textValue()).isEqualTo("false");
        try (io.debezium.transforms.ExtractNewRecordState<SourceRecord> unwrap = new io.debezium.transforms.ExtractNewRecordState<>()) {
            unwrap.configure(Map.of("add.fields", "snapshot"));
            assertThat(((Struct) unwrap.apply(streamed).value()).getWithoutDefault("__snapshot")).isNull();

            ChangeEvent read = new ChangeEvent(Op.READ, ALL, null, ROW, Lsn.of(1000), Position.START, 0, COMMIT_MICROS, true);
            SourceRecord snapshot = records(read).get(0);
            assertThat(((Struct) snapshot.value()).getStruct("source").getWithoutDefault("snapshot")).isEqualTo("true");
            assertThat(((Struct) unwrap.apply(snapshot).value()).get("__snapshot")).isEqualTo("true");
        }
    }

    @Test
    void updateWithoutKeyChangeIsOneRecordAndUnchangedToastKeepsThePlaceholder() throws Exception {
        Object[] after = ROW.clone();
        after[7] = UnchangedToast.INSTANCE;
        after[8] = UnchangedToast.INSTANCE;
        after[17] = UnchangedToast.INSTANCE;
        ChangeEvent e = event(Op.UPDATE, ALL, null, after);
        List<SourceRecord> rs = records(e);
        assertThat(rs).hasSize(1);
        JsonNode v = value(rs.get(0), plain);
        assertThat(v.get("after").get("t").textValue()).isEqualTo(RecordMaker.UNAVAILABLE);
        JsonNode expected = millraceValue(e);
        ((com.fasterxml.jackson.databind.node.ObjectNode) expected.get("after")).remove(List.of("bin", "ta"));
        ((com.fasterxml.jackson.databind.node.ObjectNode) v.get("after")).remove(List.of("bin", "ta"));
        assertThat(v).isEqualTo(expected); // bytea and arrays: Debezium's placeholders (bytes of it, [it]); see docs/EVENTS.md
    }

    @Test
    void deleteIsFollowedByATombstone() throws Exception {
        Object[] before = new Object[ALL.columnCount()];
        before[0] = 7;
        ChangeEvent e = event(Op.DELETE, ALL, before, null);
        List<SourceRecord> rs = records(e);
        assertThat(rs).hasSize(2);
        assertThat(value(rs.get(0), plain)).isEqualTo(millraceValue(e));
        assertThat(key(rs.get(0))).isEqualTo(JSON.readTree("{\"id\":7}"));
        assertThat(rs.get(1).value()).isNull();
        assertThat(value(rs.get(1), plain)).isNull();
        assertThat(value(rs.get(1), withSchemas)).isNull();
        assertThat(key(rs.get(1))).isEqualTo(JSON.readTree("{\"id\":7}"));
        assertThat(rs.get(1).topic()).isEqualTo(rs.get(0).topic());
    }

    @Test
    void keyChangeIsDeleteTombstoneCreate() throws Exception {
        Object[] before = new Object[ALL.columnCount()];
        before[0] = 6;
        ChangeEvent e = event(Op.UPDATE, ALL, before, ROW);
        List<SourceRecord> rs = records(e);
        assertThat(rs).hasSize(3);
        assertThat(value(rs.get(0), plain).get("op").textValue()).isEqualTo("d");
        assertThat(key(rs.get(0))).isEqualTo(JSON.readTree("{\"id\":6}"));
        assertThat(value(rs.get(1), plain)).isNull();
        assertThat(key(rs.get(1))).isEqualTo(JSON.readTree("{\"id\":6}"));
        assertThat(value(rs.get(2), plain).get("op").textValue()).isEqualTo("c");
        assertThat(key(rs.get(2))).isEqualTo(JSON.readTree("{\"id\":7}"));
        ChangeEvent ins = new ChangeEvent(Op.CREATE, ALL, null, ROW, e.lsn(), e.position(), e.xid(), e.commitTimeMicros(), false);
        assertThat(value(rs.get(2), plain)).isEqualTo(millraceValue(ins));
    }

    @Test
    void truncatesOnlyWhenNotSkippedAndWithoutKey() throws Exception {
        ChangeEvent e = event(Op.TRUNCATE, ALL, null, null);
        List<SourceRecord> rs = records(e);
        assertThat(rs).hasSize(1);
        assertThat(rs.get(0).key()).isNull();
        assertThat(value(rs.get(0), plain)).isEqualTo(millraceValue(e));
        List<SourceRecord> none = new ArrayList<>();
        new RecordMaker("shop", "shopdb", true, false).add(e, OFFSET, none);
        assertThat(none).isEmpty();
    }

    @Test
    void tombstonesCanBeTurnedOff() {
        Object[] before = new Object[ALL.columnCount()];
        before[0] = 7;
        List<SourceRecord> out = new ArrayList<>();
        new RecordMaker("shop", "shopdb", false, true).add(event(Op.DELETE, ALL, before, null), OFFSET, out);
        assertThat(out).hasSize(1);
    }

    @Test
    void aValueWithoutAConnectFormIsRefusedNamingTheField() {
        RelationInfo dates = new RelationInfo(16391, new TableRef("public", "dates"), 'd', List.of(col("id", 23, true),
                col("d", 1082, false)), TypeResolver.builtinsOnly());
        ChangeEvent e = event(Op.CREATE, dates, null, row(dates, "1", "infinity"));
        assertThatThrownBy(() -> records(e)).hasMessageContaining("field d").hasMessageContaining("\"infinity\"");
    }

    @Test
    void heartbeatCarriesTheOffset() throws Exception {
        SourceRecord h = maker.heartbeat("__debezium-heartbeat.shop", OFFSET, 42);
        assertThat(h.sourceOffset()).isEqualTo(OFFSET);
        assertThat(key(h)).isEqualTo(JSON.readTree("{\"serverName\":\"shop\"}"));
        assertThat(((Struct) h.value()).getInt64("ts_ms")).isEqualTo(42L);
    }
}
