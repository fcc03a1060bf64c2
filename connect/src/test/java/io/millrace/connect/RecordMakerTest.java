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
    private final RecordMaker maker = new RecordMaker("shop", new EnvelopeWriter(META, CLOCK, "9.9.9"), true, true, null);
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

    /**
     * Debezium's defaults, decimal.handling.mode=precise and interval.handling.mode=numeric (found by a Debezium-on-Connect
     * user: Millrace wrote strings, so a consumer of Debezium's records, an Avro or JDBC sink, saw every numeric and interval
     * column change type): numeric(p,s) is a Kafka Decimal of scale s with Debezium's precision parameter, a numeric
     * without a scale a VariableScaleDecimal (scale and unscaled bytes), money a Decimal of scale 2, NaN null, an interval
     * a MicroDuration computed as Debezium's (months as 365.25 / 12 days). Array elements keep their string form.
     */
    @Test
    void debeziumsDefaultDecimalAndIntervalModes() throws Exception {
        RelationInfo rel = new RelationInfo(16391, new TableRef("public", "money"), 'd', List.of(col("id", 23, true),
                new ColumnInfo("price", Codecs.builtin(1700), ((12 << 16) | 3) + 4, false), col("nu", 1700, false),
                col("m", 790, false), col("iv", 1186, false), col("na", 1231, false)), TypeResolver.builtinsOnly());
        RecordMaker precise = new RecordMaker("shop", envelope, true, true, null, ColumnTypes.Modes.DEBEZIUM);
        List<SourceRecord> out = new ArrayList<>();
        precise.add(event(Op.CREATE, rel, null, row(rel, "1", "1.500", "-12.0345", "-1234.56", "1 year 2 mons 3 days 04:05:06.789",
                "{1.5,NaN}")), OFFSET, out);
        precise.add(event(Op.CREATE, rel, null, row(rel, "2", "NaN", "NaN", "0.00", "-1 years -2 mons +3 days -04:05:06.5",
                "{}")), OFFSET, out);
        org.apache.kafka.connect.data.Struct after = ((org.apache.kafka.connect.data.Struct) out.get(0).value()).getStruct("after");
        assertThat(after.get("price")).isEqualTo(new java.math.BigDecimal("1.500"));
        org.apache.kafka.connect.data.Schema price = after.schema().field("price").schema();
        assertThat(price.name()).isEqualTo(org.apache.kafka.connect.data.Decimal.LOGICAL_NAME);
        assertThat(price.parameters()).containsEntry("scale", "3").containsEntry("connect.decimal.precision", "12");
        org.apache.kafka.connect.data.Struct nu = after.getStruct("nu");
        assertThat(nu.schema().name()).isEqualTo("io.debezium.data.VariableScaleDecimal");
        assertThat(new java.math.BigDecimal(new java.math.BigInteger(nu.getBytes("value")), nu.getInt32("scale")))
                .isEqualTo(new java.math.BigDecimal("-12.0345"));
        assertThat(after.get("m")).isEqualTo(new java.math.BigDecimal("-1234.56"));
        // Debezium's MicroDuration.durationMicros: ((1*12+2)*30.4375 + 3) days, 4 h 5 min 6.789 s
        long micros = (long) (((((14 * (365.25 / 12.0) + 3) * 24.0 + 4) * 60.0 + 5) * 60.0 + 6.789) * 1_000_000.0);
        assertThat(after.get("iv")).isEqualTo(micros);
        assertThat(micros / 1_000_000).isEqualTo(37_091_106L); // 429.125 days, 4 h 5 min 6 s
        assertThat(after.schema().field("iv").schema().name()).isEqualTo("io.debezium.time.MicroDuration");
        assertThat(after.getArray("na")).containsExactly("1.5", "NaN");
        org.apache.kafka.connect.data.Struct second = ((org.apache.kafka.connect.data.Struct) out.get(1).value()).getStruct("after");
        assertThat(second.get("price")).as("NaN: no Decimal").isNull();
        assertThat(second.get("nu")).isNull();
        double negative = (((-14 * (365.25 / 12.0) + 3) * 24.0 - 4) * 60.0 - 5) * 60.0 - 6.5; // each part signed, as PGInterval's
        assertThat(second.get("iv")).isEqualTo((long) (negative * 1_000_000.0));
        // PostgreSQL 15's numeric(5,-2) and numeric(2,4): no Decimal schema holds them (Avro's scale is 0..precision)
        assertThat(ColumnTypes.schema("numeric", ((5 << 16) | (-2 & 0x7ff)) + 4, true, ColumnTypes.Modes.DEBEZIUM).name())
                .isEqualTo(ColumnTypes.VARIABLE_SCALE_DECIMAL);
        assertThat(ColumnTypes.schema("numeric", ((2 << 16) | 4) + 4, true, ColumnTypes.Modes.DEBEZIUM).name())
                .isEqualTo(ColumnTypes.VARIABLE_SCALE_DECIMAL);
        // through the JSON converter with schemas, as a consumer reads them
        JsonNode v = value(out.get(0), withSchemas);
        assertThat(v.get("payload").get("after").get("price").textValue()).isEqualTo(
                java.util.Base64.getEncoder().encodeToString(new java.math.BigDecimal("1.500").unscaledValue().toByteArray()));
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
                col("ts", 1114, false)), TypeResolver.builtinsOnly());
        ChangeEvent e = event(Op.CREATE, dates, null, row(dates, "1", "294276-12-31 23:59:59")); // past int64 microseconds
        assertThatThrownBy(() -> records(e)).hasMessageContaining("field ts").hasMessageContaining("int64 microseconds");
    }

    /** date, timestamp, timestamptz (and their arrays) of ±infinity as Debezium's connector writes them when it streams. */
    private static final RelationInfo INFINITE = new RelationInfo(16392, new TableRef("public", "infinite"), 'd', List.of(
            col("id", 23, true), col("d", 1082, false), col("ts", 1114, false), col("tz", 1184, false), col("da", 1182, false),
            col("tsa", 1115, false)), TypeResolver.builtinsOnly());

    @Test
    void infiniteDatesAndTimestampsAreDebeziumsValues() throws Exception {
        // Debezium: PostgresValueConverter.POSITIVE_INFINITY_LOCAL_DATE / NEGATIVE_INFINITY_LOCAL_DATE as io.debezium.time.Date,
        // pgjdbc's PGStatement.DATE_POSITIVE_INFINITY / DATE_NEGATIVE_INFINITY as MicroTimestamp, "infinity" as ZonedTimestamp.
        int datePlus = (int) java.time.LocalDate.parse("-5877611-06-21").toEpochDay();
        int dateMinus = (int) java.time.LocalDate.parse("-5877611-06-22").toEpochDay();
        long tsPlus = org.postgresql.PGStatement.DATE_POSITIVE_INFINITY;
        long tsMinus = org.postgresql.PGStatement.DATE_NEGATIVE_INFINITY;
        ChangeEvent e = event(Op.CREATE, INFINITE, null, row(INFINITE, "1", "infinity", "infinity", "infinity", "{infinity,-infinity}",
                "{-infinity,2024-01-02 03:04:05}"));
        SourceRecord r = records(e).get(0);
        Struct after = ((Struct) r.value()).getStruct("after");
        assertThat(after.getInt32("d")).isEqualTo(datePlus).isEqualTo(-2147472692);
        assertThat(after.getInt64("ts")).isEqualTo(tsPlus).isEqualTo(9223372036825200000L);
        assertThat(after.getString("tz")).isEqualTo("infinity");
        assertThat(after.getArray("da")).containsExactly(datePlus, dateMinus);
        assertThat(after.getArray("tsa")).containsExactly(tsMinus, 1704164645000000L);
        JsonNode plainAfter = value(r, plain).get("after");
        assertThat(plainAfter).isEqualTo(JSON.readTree("{\"id\":1,\"d\":-2147472692,\"ts\":9223372036825200000,\"tz\":\"infinity\","
                + "\"da\":[-2147472692,-2147472691],\"tsa\":[-9223372036832400000,1704164645000000]}"));
        assertThat(value(r, withSchemas).get("payload").get("after")).isEqualTo(plainAfter);

        ChangeEvent neg = event(Op.CREATE, INFINITE, null, row(INFINITE, "2", "-infinity", "-infinity", "-infinity", null, null));
        Struct negAfter = ((Struct) records(neg).get(0).value()).getStruct("after");
        assertThat(negAfter.getInt32("d")).isEqualTo(dateMinus);
        assertThat(negAfter.getInt64("ts")).isEqualTo(tsMinus);
        assertThat(negAfter.getString("tz")).isEqualTo("-infinity");
        // Millrace's own JSON keeps the strings (docs/TYPES.md); only the Connect records take Debezium's numbers.
        assertThat(millraceValue(neg).get("after").get("d").textValue()).isEqualTo("-infinity");
    }

    @Test
    void aMultiDimensionalArrayIsRefusedNamingTheFieldAndWhy() {
        ChangeEvent e = event(Op.CREATE, ALL, null, row(ALL, "7", null, null, null, null, null, null, null, null, null, null, null, null,
                null, null, null, "{{1,2},{3,4}}", null));
        assertThatThrownBy(() -> records(e)).hasMessageContaining("field ia").hasMessageContaining("[[1,2],[3,4]]")
                .hasMessageContaining("multi-dimensional").hasMessageContaining("Debezium");
        ChangeEvent flat = event(Op.CREATE, ALL, null, row(ALL, "7", null, null, null, null, null, null, null, null, null, null, null, null,
                null, null, null, "{}", "{}"));
        assertThat(((Struct) records(flat).get(0).value()).getStruct("after").getArray("ia")).isEmpty();
    }

    // ---- transaction metadata (provide.transaction.metadata=true)

    private static final RelationInfo OTHER = new RelationInfo(16393, new TableRef("public", "other"), 'd', List.of(col("id", 23, true)),
            TypeResolver.builtinsOnly());

    private static ChangeEvent tx(Op op, RelationInfo rel, Object[] before, Object[] after, long xid, long lsn, long commit, long ordinal) {
        return new ChangeEvent(op, rel, before, after, Lsn.of(lsn), new Position(Lsn.of(commit), ordinal), xid, COMMIT_MICROS, false);
    }

    private static RecordMaker txMaker(boolean truncates) {
        return new RecordMaker("shop", new EnvelopeWriter(META, CLOCK, "9.9.9"), true, truncates, "shop.transaction");
    }

    private static List<String> shapes(List<SourceRecord> rs) {
        List<String> out = new ArrayList<>();
        for (SourceRecord r : rs) {
            Struct v = (Struct) r.value();
            if (r.topic().equals("shop.transaction")) {
                out.add(v.getString("status") + " " + v.getString("id"));
            } else if (v == null) {
                out.add("tombstone");
            } else {
                Struct b = v.getStruct("transaction");
                out.add(v.getString("op") + (b == null ? " -" : " " + b.getString("id") + " " + b.getInt64("total_order") + "/"
                        + b.getInt64("data_collection_order")));
            }
        }
        return out;
    }

    @Test
    void transactionMetadataIsDebeziumsBeginBlocksAndEnd() throws Exception {
        RecordMaker m = txMaker(false);
        List<SourceRecord> out = new ArrayList<>();
        Object[] old = new Object[ALL.columnCount()];
        old[0] = 6;
        m.add(tx(Op.CREATE, ALL, null, ROW, 770, 1000, 1100, 1), OFFSET, out);
        m.add(tx(Op.UPDATE, ALL, old, ROW, 770, 1010, 1100, 2), OFFSET, out); // a key change: two events, as Debezium counts
        m.add(tx(Op.CREATE, OTHER, null, new Object[] {1}, 770, 1020, 1100, 3), OFFSET, out);
        m.add(tx(Op.TRUNCATE, OTHER, null, null, 770, 1030, 1100, 4), OFFSET, out); // skipped (skipped.operations=t): not counted
        m.add(tx(Op.CREATE, OTHER, null, new Object[] {2}, 771, 1150, 1200, 1), OFFSET, out);
        m.transactions().complete(Lsn.of(1210), OFFSET, out);
        assertThat(shapes(out)).containsExactly("BEGIN 770:1000", "c 770:1000 1/1", "d 770:1010 2/2", "tombstone", "c 770:1010 3/3",
                "c 770:1020 4/1", "END 770:1100", "BEGIN 771:1150", "c 771:1150 1/1", "END 771:1200");
        assertThat(m.transactions().state()).isNull();

        SourceRecord begin = out.get(0);
        SourceRecord end = out.get(6);
        assertThat(begin.sourcePartition()).isEqualTo(Map.of("server", "shop"));
        assertThat(begin.sourceOffset()).isEqualTo(OFFSET);
        assertThat(key(begin)).isEqualTo(JSON.readTree("{\"id\":\"770:1000\"}"));
        long ms = COMMIT_MICROS / 1000;
        assertThat(value(begin, plain)).isEqualTo(JSON.readTree("{\"status\":\"BEGIN\",\"id\":\"770:1000\",\"event_count\":null,"
                + "\"data_collections\":null,\"ts_ms\":" + ms + "}"));
        assertThat(key(end)).isEqualTo(JSON.readTree("{\"id\":\"770:1100\"}"));
        assertThat(value(end, plain)).isEqualTo(JSON.readTree("{\"status\":\"END\",\"id\":\"770:1100\",\"event_count\":4,"
                + "\"data_collections\":[{\"data_collection\":\"public.all types\",\"event_count\":3},"
                + "{\"data_collection\":\"public.other\",\"event_count\":1}],\"ts_ms\":" + ms + "}"));

        JsonNode schema = value(end, withSchemas).get("schema");
        assertThat(schema.get("name").textValue()).isEqualTo("io.debezium.connector.common.TransactionMetadataValue");
        assertThat(schema.get("version").intValue()).isEqualTo(1);
        List<String> fields = new ArrayList<>();
        schema.get("fields").forEach(f -> fields.add(f.get("field").textValue() + ":" + f.get("type").textValue() + ":"
                + f.get("optional").booleanValue()));
        assertThat(fields).containsExactly("status:string:false", "id:string:false", "event_count:int64:true",
                "data_collections:array:true", "ts_ms:int64:false");
        assertThat(schema.get("fields").get(3).get("items").get("name").textValue()).isEqualTo("event.collection");
        byte[] keyWithSchema = withSchemas.fromConnectData(end.topic(), end.keySchema(), end.key());
        assertThat(JSON.readTree(keyWithSchema).get("schema").get("name").textValue())
                .isEqualTo("io.debezium.connector.common.TransactionMetadataKey");

        // A change record: the block filled, everything else Millrace's JSON; with schemas, Debezium's event.block.
        SourceRecord change = out.get(1);
        JsonNode v = value(change, plain);
        assertThat(v.get("transaction")).isEqualTo(JSON.readTree("{\"id\":\"770:1000\",\"total_order\":1,\"data_collection_order\":1}"));
        JsonNode expected = millraceValue(tx(Op.CREATE, ALL, null, ROW, 770, 1000, 1100, 1));
        ((com.fasterxml.jackson.databind.node.ObjectNode) expected).set("transaction", v.get("transaction"));
        assertThat(v).isEqualTo(expected);
        JsonNode envelopeSchema = value(change, withSchemas).get("schema");
        JsonNode block = envelopeSchema.get("fields").get(3);
        assertThat(block.get("field").textValue()).isEqualTo("transaction");
        assertThat(block.get("name").textValue()).isEqualTo("event.block");
        assertThat(value(change, withSchemas).get("payload").get("transaction")).isEqualTo(v.get("transaction"));
    }

    @Test
    void aCutTransactionHasOneBeginAndOneEndAcrossBatchesAndARestart() throws Exception {
        RecordMaker first = txMaker(true);
        List<SourceRecord> batch1 = new ArrayList<>();
        first.add(tx(Op.CREATE, OTHER, null, new Object[] {1}, 900, 5000, 9000, 1), OFFSET, batch1);
        first.add(tx(Op.CREATE, ALL, null, ROW, 900, 5100, 9000, 2), OFFSET, batch1);
        first.transactions().complete(Lsn.of(4000), OFFSET, batch1); // cut: the flush position is before its commit
        assertThat(shapes(batch1)).containsExactly("BEGIN 900:5000", "c 900:5000 1/1", "c 900:5100 2/1");
        String state = first.transactions().state();
        assertThat(state).isNotNull();

        // The task resumes on another worker from the committed offset, which holds the open transaction's counts.
        RecordMaker resumed = txMaker(true);
        resumed.transactions().restore(state);
        List<SourceRecord> batch2 = new ArrayList<>();
        resumed.add(tx(Op.CREATE, OTHER, null, new Object[] {2}, 900, 5200, 9000, 3), OFFSET, batch2);
        resumed.transactions().complete(Lsn.of(4000), OFFSET, batch2);
        assertThat(shapes(batch2)).containsExactly("c 900:5200 3/2"); // no second BEGIN, the counts go on
        List<SourceRecord> batch3 = new ArrayList<>(); // its commit arrives in a batch without its changes
        resumed.transactions().complete(Lsn.of(9100), OFFSET, batch3);
        assertThat(shapes(batch3)).containsExactly("END 900:9000");
        Struct end = (Struct) batch3.get(0).value();
        assertThat(end.getInt64("event_count")).isEqualTo(3L);
        assertThat(end.getArray("data_collections")).extracting(o -> ((Struct) o).getString("data_collection") + "="
                + ((Struct) o).getInt64("event_count")).containsExactly("public.other=2", "public.all types=1");
        assertThat(resumed.transactions().state()).isNull();

        // Without the restored state the resumed task would begin again and under-count: the state is what carries it.
        RecordMaker fresh = txMaker(true);
        List<SourceRecord> again = new ArrayList<>();
        fresh.add(tx(Op.CREATE, OTHER, null, new Object[] {2}, 900, 5200, 9000, 3), OFFSET, again);
        assertThat(shapes(again)).containsExactly("BEGIN 900:5200", "c 900:5200 1/1");
        assertThatThrownBy(() -> fresh.transactions().restore("{\"xid\":1}")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("commit_lsn");
    }

    @Test
    void snapshotRowsAreInNoTransactionAndSkippedTruncatesCountNothing() {
        RecordMaker m = txMaker(false);
        List<SourceRecord> out = new ArrayList<>();
        m.add(new ChangeEvent(Op.READ, ALL, null, ROW, Lsn.of(10), Position.START, 0, COMMIT_MICROS, true), OFFSET, out);
        m.add(new ChangeEvent(Op.READ, ALL, null, ROW, Lsn.of(20), new Position(Lsn.of(30), 1), 55, COMMIT_MICROS, true), OFFSET, out);
        m.transactions().complete(Lsn.of(40), OFFSET, out);
        assertThat(shapes(out)).containsExactly("r -", "r -");
        m.add(tx(Op.TRUNCATE, OTHER, null, null, 60, 100, 200, 1), OFFSET, out);
        m.transactions().complete(Lsn.of(210), OFFSET, out);
        assertThat(shapes(out)).containsExactly("r -", "r -", "BEGIN 60:100", "END 60:200"); // as Debezium: BEGIN and END, 0 events
        assertThat(((Struct) out.get(3).value()).getInt64("event_count")).isEqualTo(0L);
        List<SourceRecord> off = new ArrayList<>();
        maker.add(tx(Op.CREATE, OTHER, null, new Object[] {1}, 61, 300, 400, 1), OFFSET, off);
        assertThat(shapes(off)).containsExactly("c -"); // provide.transaction.metadata=false: the block is null
    }

    @Test
    void heartbeatCarriesTheOffset() throws Exception {
        SourceRecord h = maker.heartbeat("__debezium-heartbeat.shop", OFFSET, 42);
        assertThat(h.sourceOffset()).isEqualTo(OFFSET);
        assertThat(key(h)).isEqualTo(JSON.readTree("{\"serverName\":\"shop\"}"));
        assertThat(((Struct) h.value()).getInt64("ts_ms")).isEqualTo(42L);
    }
}
