package io.millrace.core.event;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.Codecs;
import io.millrace.core.types.UnchangedToast;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class EnvelopeWriterTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Clock CLOCK = Clock.fixed(Instant.parse("2024-05-06T07:08:09.123456789Z"), ZoneOffset.UTC);
    private static final long COMMIT_MICROS = 1_700_000_000_123_456L;
    private static final SourceMeta META = new SourceMeta("shop", "shopdb");

    private final EnvelopeWriter writer = new EnvelopeWriter(META, CLOCK, "9.9.9");

    private static TypeInfo type(int oid) {
        TypeInfo t = Codecs.builtin(oid);
        assertThat(t).as("built-in type %d", oid).isNotNull();
        return t;
    }

    private static RelationInfo relation(String table, char identity, ColumnInfo... columns) {
        return new RelationInfo(16384, new TableRef("public", table), identity, List.of(columns), TypeResolver.builtinsOnly());
    }

    private static ColumnInfo col(String name, int oid, boolean key) {
        return new ColumnInfo(name, type(oid), -1, key);
    }

    /** orders(id int4 key, name text, paid bool). */
    private static final RelationInfo ORDERS = relation("orders", 'd', col("id", 23, true), col("name", 25, false),
            col("paid", 16, false));

    private static Object[] row(RelationInfo rel, String... texts) {
        Object[] r = new Object[texts.length];
        for (int i = 0; i < texts.length; i++) {
            r[i] = texts[i] == null ? null : rel.codec(i).decodeText(texts[i]);
        }
        return r;
    }

    private static ChangeEvent event(Op op, RelationInfo rel, Object[] before, Object[] after) {
        return new ChangeEvent(op, rel, before, after, Lsn.parse("16/B374D848"),
                new Position(Lsn.parse("16/B374D900"), 3), 770, COMMIT_MICROS, false);
    }

    private JsonNode value(ChangeEvent e) throws IOException {
        byte[] bytes = writer.valueBytes(e);
        return JSON.readTree(bytes);
    }

    private JsonNode key(ChangeEvent e) throws IOException {
        return JSON.readTree(writer.keyBytes(e));
    }

    @Test
    void insertHasTheWholeDebeziumEnvelope() throws IOException {
        ChangeEvent e = event(Op.CREATE, ORDERS, null, row(ORDERS, "1", "tea", "t"));
        String json = new String(writer.valueBytes(e), StandardCharsets.UTF_8);
        long lsn = Lsn.parse("16/B374D848").value();
        long commitLsn = Lsn.parse("16/B374D900").value();
        assertThat(json).isEqualTo("{\"before\":null,\"after\":{\"id\":1,\"name\":\"tea\",\"paid\":true},"
                + "\"source\":{\"version\":\"9.9.9\",\"connector\":\"postgresql\",\"name\":\"shop\",\"ts_ms\":1700000000123,"
                + "\"snapshot\":\"false\",\"db\":\"shopdb\",\"sequence\":\"[null,\\\"" + lsn + "\\\"]\","
                + "\"ts_us\":1700000000123456,\"ts_ns\":1700000000123456000,\"schema\":\"public\",\"table\":\"orders\","
                + "\"txId\":770,\"lsn\":" + lsn + ",\"xmin\":null,\"commit_lsn\":" + commitLsn + ",\"ordinal\":3,\"table_oid\":16384},"
                + "\"transaction\":null,\"op\":\"c\",\"ts_ms\":1714979289123,\"ts_us\":1714979289123456,"
                + "\"ts_ns\":1714979289123456789}");
        JsonNode v = JSON.readTree(json);
        assertThat(v.get("source").get("lsn").asLong()).isEqualTo(0x16B374D848L);
        assertThat(v.get("source").get("sequence").asText()).isEqualTo("[null,\"" + 0x16B374D848L + "\"]");
        assertThat(key(e).toString()).isEqualTo("{\"id\":1}");
    }

    @Test
    void updateCarriesTheOldImageAsGiven() throws IOException {
        // REPLICA IDENTITY DEFAULT with a changed key: the old image holds the key only
        ChangeEvent e = event(Op.UPDATE, ORDERS, row(ORDERS, "1", null, null), row(ORDERS, "2", "tea", "f"));
        JsonNode v = value(e);
        assertThat(v.get("op").asText()).isEqualTo("u");
        assertThat(v.get("before").toString()).isEqualTo("{\"id\":1,\"name\":null,\"paid\":null}");
        assertThat(v.get("after").toString()).isEqualTo("{\"id\":2,\"name\":\"tea\",\"paid\":false}");
        assertThat(key(e).toString()).as("key of the new row").isEqualTo("{\"id\":2}");

        // key unchanged: pgoutput sends no old image
        ChangeEvent plain = event(Op.UPDATE, ORDERS, null, row(ORDERS, "1", "tea", "f"));
        assertThat(value(plain).get("before").isNull()).isTrue();

        // REPLICA IDENTITY FULL: the whole old row
        RelationInfo full = relation("orders", 'f', col("id", 23, true), col("name", 25, false), col("paid", 16, false));
        ChangeEvent f = event(Op.UPDATE, full, row(full, "1", "tea", "t"), row(full, "1", "coffee", "t"));
        assertThat(value(f).get("before").toString()).isEqualTo("{\"id\":1,\"name\":\"tea\",\"paid\":true}");
    }

    @Test
    void deleteHasNoAfterAndItsKeyComesFromBefore() throws IOException {
        ChangeEvent e = event(Op.DELETE, ORDERS, row(ORDERS, "7", null, null), null);
        JsonNode v = value(e);
        assertThat(v.get("op").asText()).isEqualTo("d");
        assertThat(v.get("after").isNull()).isTrue();
        assertThat(v.get("before").get("id").asInt()).isEqualTo(7);
        assertThat(key(e).toString()).isEqualTo("{\"id\":7}");
    }

    @Test
    void snapshotReadIsMarkedAndHasNoTransaction() throws IOException {
        ChangeEvent e = new ChangeEvent(Op.READ, ORDERS, null, row(ORDERS, "5", "x", "t"), Lsn.parse("0/1A2B3C"),
                Position.START, 0, COMMIT_MICROS, true);
        JsonNode v = value(e);
        assertThat(v.get("op").asText()).isEqualTo("r");
        JsonNode s = v.get("source");
        assertThat(s.get("snapshot").asText()).isEqualTo("true");
        assertThat(s.get("txId").isNull()).as("xid 0 is no transaction").isTrue();
        assertThat(s.get("lsn").asLong()).isEqualTo(0x1A2B3CL);
        assertThat(s.get("commit_lsn").asLong()).isZero();
        assertThat(s.get("ordinal").asLong()).isZero();
        assertThat(key(e).toString()).isEqualTo("{\"id\":5}");
    }

    @Test
    void truncateHasNoRowsAndNoKey() throws IOException {
        ChangeEvent e = event(Op.TRUNCATE, ORDERS, null, null);
        JsonNode v = value(e);
        assertThat(v.get("op").asText()).isEqualTo("t");
        assertThat(v.get("before").isNull()).isTrue();
        assertThat(v.get("after").isNull()).isTrue();
        assertThat(v.get("source").get("table").asText()).isEqualTo("orders");
        assertThat(new String(writer.keyBytes(e), StandardCharsets.UTF_8)).isEqualTo("null");
    }

    @Test
    void unchangedToastIsDebeziumsPlaceholderNeverAValue() throws IOException {
        Object[] after = row(ORDERS, "1", null, "t");
        after[1] = UnchangedToast.INSTANCE;
        ChangeEvent e = event(Op.UPDATE, ORDERS, null, after);
        JsonNode v = value(e);
        assertThat(v.get("after").get("name").asText()).isEqualTo("__debezium_unavailable_value")
                .isEqualTo(EnvelopeWriter.UNAVAILABLE_VALUE);
        assertThat(v.get("after").get("paid").asBoolean()).isTrue();
    }

    @Test
    void underReplicaIdentityFullAnUnchangedToastValueIsCopiedFromTheOldImageAsDebeziumDoes() throws IOException {
        RelationInfo docs = relation("docs", 'f', col("id", 23, true), col("v", 23, false), col("body", 25, false),
                col("note", 25, false));
        Object[] before = row(docs, "1", "1", "a long body", null);
        Object[] after = row(docs, "1", "2", null, null);
        after[2] = UnchangedToast.INSTANCE;
        JsonNode v = value(event(Op.UPDATE, docs, before, after));
        assertThat(v.get("after").get("body").asText()).isEqualTo("a long body");
        assertThat(v.get("after").get("v").asInt()).isEqualTo(2);
        assertThat(v.get("after").get("note").isNull()).as("a NULL stays NULL").isTrue();
        assertThat(v.get("before").get("body").asText()).isEqualTo("a long body");
        assertThat(v.toString()).doesNotContain(EnvelopeWriter.UNAVAILABLE_VALUE);
    }

    @Test
    void unchangedToastedKeyColumnTakesTheOldImage() throws IOException {
        RelationInfo docs = relation("docs", 'd', col("slug", 25, true), col("body", 25, false));
        Object[] after = {UnchangedToast.INSTANCE, docs.codec(1).decodeText("new body")};
        Object[] before = {docs.codec(0).decodeText("a-long-slug"), null};
        assertThat(key(event(Op.UPDATE, docs, before, after)).toString()).isEqualTo("{\"slug\":\"a-long-slug\"}");
        // without an old image the placeholder is all there is: said so, not invented
        assertThat(key(event(Op.UPDATE, docs, null, after)).toString())
                .isEqualTo("{\"slug\":\"__debezium_unavailable_value\"}");
    }

    @Test
    void compositeKeyInColumnOrderAndNoKeyIsNull() throws IOException {
        RelationInfo lines = relation("order_lines", 'd', col("qty", 23, false), col("order_id", 20, true),
                col("line", 23, true));
        ChangeEvent e = event(Op.CREATE, lines, null, row(lines, "4", "9000000000", "2"));
        assertThat(key(e).toString()).isEqualTo("{\"order_id\":9000000000,\"line\":2}");

        RelationInfo logs = relation("logs", 'n', col("msg", 25, false));
        ChangeEvent n = event(Op.CREATE, logs, null, row(logs, "hello"));
        assertThat(new String(writer.keyBytes(n), StandardCharsets.UTF_8)).isEqualTo("null");
        ChangeEvent d = event(Op.DELETE, logs, null, null);
        assertThat(new String(writer.keyBytes(d), StandardCharsets.UTF_8)).isEqualTo("null");
    }

    @Test
    void valuesAreTheCodecsJson() throws IOException {
        // numeric, timestamptz, jsonb, bytea, int8[], text with characters JSON must escape, json kept as typed
        int[] oids = {1700, 1184, 3802, 17, 1016, 25, 114};
        String[] texts = {"12345678901234567890.000123", "2024-02-29 23:59:59.123456+00", "{\"a\": [1, 2.5, null]}",
                "\\x00ff10", "{1,NULL,-9223372036854775808}", "quote \" backslash \\ newline \n tab \t é ✓",
                "{\"b\":\n  [true]}"};
        ColumnInfo[] cols = new ColumnInfo[oids.length];
        for (int i = 0; i < oids.length; i++) {
            cols[i] = col("c" + i, oids[i], i == 0);
        }
        RelationInfo rel = relation("mixed", 'd', cols);
        Object[] values = row(rel, texts);
        JsonNode after = value(event(Op.CREATE, rel, null, values)).get("after");
        for (int i = 0; i < oids.length; i++) {
            ByteArrayOutputStream alone = new ByteArrayOutputStream();
            try (JsonGenerator g = new JsonFactory().createGenerator(alone)) {
                rel.codec(i).writeJson(g, values[i]);
            }
            assertThat(after.get("c" + i)).as("column c%d (%s)", i, rel.codec(i).typeName())
                    .isEqualTo(JSON.readTree(alone.toByteArray()));
        }
        assertThat(after.get("c5").asText()).isEqualTo(texts[5]);
        assertThat(new String(writer.valueBytes(event(Op.CREATE, rel, null, values)), StandardCharsets.UTF_8))
                .as("one line: control characters are escaped").doesNotContain("\n");
    }

    @Test
    void lsnAbove2To63IsWrittenExactly() throws IOException {
        Lsn huge = new Lsn(0xFFFFFFFF_00000010L);
        ChangeEvent e = new ChangeEvent(Op.CREATE, ORDERS, null, row(ORDERS, "1", "a", "t"), huge,
                new Position(huge, 1), 5, COMMIT_MICROS, false);
        JsonNode s = value(e).get("source");
        assertThat(s.get("lsn").bigIntegerValue().toString()).isEqualTo(Long.toUnsignedString(huge.value()));
        assertThat(s.get("sequence").asText()).isEqualTo("[null,\"" + Long.toUnsignedString(huge.value()) + "\"]");
    }

    @Test
    void rowThatDoesNotFitItsRelationFailsNamingTheTable() {
        ChangeEvent e = event(Op.CREATE, ORDERS, null, new Object[] {1});
        assertThatThrownBy(() -> writer.valueBytes(e)).isInstanceOf(MillraceException.class)
                .hasMessageContaining("public.orders").hasMessageContaining("1 values")
                .satisfies(t -> assertThat(((MillraceException) t).kind()).isEqualTo(MillraceException.Kind.INTERNAL));
    }

    @Test
    void aValueOfTheWrongJavaTypeFailsNamingTheColumn() {
        Object[] after = row(ORDERS, "1", "a", "t");
        after[2] = new Object();
        assertThatThrownBy(() -> writer.valueBytes(event(Op.CREATE, ORDERS, null, after)))
                .isInstanceOf(MillraceException.class).hasMessageContaining("'paid'").hasMessageContaining("public.orders");
    }

    @Test
    void aNewRelationInstanceWithOtherColumnsIsFollowed() throws IOException {
        RelationInfo v1 = relation("t", 'd', col("id", 23, true), col("a", 25, false));
        RelationInfo v2 = relation("t", 'd', col("id", 23, true), col("a", 25, false), col("b", 25, false));
        assertThat(value(event(Op.CREATE, v1, null, row(v1, "1", "x"))).get("after").toString())
                .isEqualTo("{\"id\":1,\"a\":\"x\"}");
        assertThat(value(event(Op.CREATE, v2, null, row(v2, "1", "x", "y"))).get("after").toString())
                .isEqualTo("{\"id\":1,\"a\":\"x\",\"b\":\"y\"}");
        assertThat(value(event(Op.CREATE, v1, null, row(v1, "2", "z"))).get("after").toString())
                .isEqualTo("{\"id\":2,\"a\":\"z\"}");
    }

    @Test
    void streamingWritesSeveralEventsOnOneGenerator() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (JsonGenerator g = new JsonFactory().createGenerator(out)) {
            g.setRootValueSeparator(null);
            for (int i = 0; i < 3; i++) {
                writer.writeValue(g, event(Op.CREATE, ORDERS, null, row(ORDERS, Integer.toString(i), "n" + i, "t")));
                g.writeRaw('\n');
            }
        }
        String[] lines = out.toString(StandardCharsets.UTF_8).split("\n");
        assertThat(lines).hasSize(3);
        for (int i = 0; i < 3; i++) {
            assertThat(JSON.readTree(lines[i]).get("after").get("id").asInt()).isEqualTo(i);
        }
    }

    @Test
    void versionIsKnownOrSaysUnknown() {
        assertThat(EnvelopeWriter.VERSION).isNotBlank();
        assertThat(new String(new EnvelopeWriter(META).valueBytes(event(Op.CREATE, ORDERS, null, row(ORDERS, "1", "a", "t"))),
                StandardCharsets.UTF_8)).contains("\"version\":\"" + EnvelopeWriter.VERSION + "\"");
    }
}
