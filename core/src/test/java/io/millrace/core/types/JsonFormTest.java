package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.millrace.core.schema.TypeInfo;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.UUID;

import static io.millrace.core.types.TextAndBinaryFormsTest.c;
import static org.assertj.core.api.Assertions.assertThat;

/** The JSON form of each type, as docs/TYPES.md documents it (Debezium-like). */
class JsonFormTest {
    private static final JsonFactory JSON = new JsonFactory();

    static String json(String type, Object value) {
        return json(c(type), value);
    }

    static String json(TypeCodec codec, Object value) {
        StringWriter w = new StringWriter();
        try (JsonGenerator g = JSON.createGenerator(w)) {
            codec.writeJson(g, value);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return w.toString();
    }

    /** Decodes the server's text and writes the value's JSON. */
    static String jsonOf(String type, String serverText) {
        return json(type, c(type).decodeText(serverText));
    }

    @Test
    void booleansAndNumbers() {
        assertThat(jsonOf("bool", "t")).isEqualTo("true");
        assertThat(jsonOf("int2", "-32768")).isEqualTo("-32768");
        assertThat(jsonOf("int4", "42")).isEqualTo("42");
        assertThat(jsonOf("int8", "9223372036854775807")).isEqualTo("9223372036854775807");
        assertThat(jsonOf("oid", "4294967295")).isEqualTo("4294967295");
        assertThat(jsonOf("float8", "1.5")).isEqualTo("1.5");
        assertThat(jsonOf("float8", "NaN")).isEqualTo("\"NaN\"");
        assertThat(jsonOf("float8", "Infinity")).isEqualTo("\"Infinity\"");
        assertThat(jsonOf("float8", "-Infinity")).isEqualTo("\"-Infinity\"");
        assertThat(jsonOf("float4", "0.1")).isEqualTo("0.1");
        assertThat(jsonOf("float4", "-Infinity")).isEqualTo("\"-Infinity\"");
    }

    @Test
    void decimalsAreStringsOfThePlainDecimal() {
        assertThat(jsonOf("numeric", "1.500")).isEqualTo("\"1.500\"");
        assertThat(jsonOf("numeric", "-0.000001")).isEqualTo("\"-0.000001\"");
        assertThat(json("numeric", new BigDecimal("1E+3"))).isEqualTo("\"1000\"");
        assertThat(jsonOf("numeric", "NaN")).isEqualTo("\"NaN\"");
        assertThat(jsonOf("numeric", "Infinity")).isEqualTo("\"Infinity\"");
        assertThat(jsonOf("numeric", "-Infinity")).isEqualTo("\"-Infinity\"");
        assertThat(jsonOf("money", "-$1,234.56")).isEqualTo("\"-1234.56\"");
    }

    @Test
    void stringsBytesUuids() {
        assertThat(jsonOf("text", "a\"b\\c ☃")).isEqualTo("\"a\\\"b\\\\c ☃\"");
        assertThat(jsonOf("json", "{\"a\": 1}")).isEqualTo("\"{\\\"a\\\": 1}\"");
        assertThat(jsonOf("jsonb", "{\"a\": 1}")).isEqualTo("\"{\\\"a\\\": 1}\"");
        assertThat(jsonOf("bytea", "\\x000102ff")).isEqualTo("\"AAEC/w==\"");
        assertThat(json("uuid", UUID.fromString("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"))).isEqualTo("\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"");
        assertThat(jsonOf("inet", "::ffff:1.2.3.4/96")).isEqualTo("\"::ffff:1.2.3.4/96\"");
        assertThat(jsonOf("macaddr", "08:00:2b:01:02:03")).isEqualTo("\"08:00:2b:01:02:03\"");
        assertThat(jsonOf("varbit", "0101")).isEqualTo("\"0101\"");
    }

    @Test
    void datesAndTimes() {
        assertThat(jsonOf("date", "1970-01-02")).isEqualTo("1");
        assertThat(jsonOf("date", "1969-12-31")).isEqualTo("-1");
        assertThat(json("date", LocalDate.of(-43, 3, 15))).isEqualTo(String.valueOf(LocalDate.of(-43, 3, 15).toEpochDay()));
        assertThat(jsonOf("date", "infinity")).isEqualTo("\"infinity\"");
        assertThat(jsonOf("date", "-infinity")).isEqualTo("\"-infinity\"");
        assertThat(jsonOf("time", "00:00:01.000002")).isEqualTo("1000002");
        assertThat(jsonOf("time", "24:00:00")).isEqualTo("86400000000");
        assertThat(jsonOf("timetz", "12:00:00+05:30")).isEqualTo("\"06:30:00.000000Z\"");
        assertThat(jsonOf("timetz", "23:00:00.5-02")).isEqualTo("\"01:00:00.500000Z\"");
        assertThat(jsonOf("timestamp", "1970-01-01 00:00:00.000001")).isEqualTo("1");
        assertThat(jsonOf("timestamp", "2024-01-02 03:04:05.123456")).isEqualTo("1704164645123456");
        assertThat(jsonOf("timestamp", "-infinity")).isEqualTo("\"-infinity\"");
        assertThat(json("timestamp", LocalDateTime.of(294276, 12, 31, 23, 59, 59, 999_999_000)))
                .as("past int64 micros since 1970: still the exact number").isEqualTo("9224318015999999999");
        assertThat(jsonOf("timestamptz", "2024-01-02 08:34:05.123456+05:30")).isEqualTo("\"2024-01-02T03:04:05.123456Z\"");
        assertThat(jsonOf("timestamptz", "2024-01-02 03:04:05+00")).isEqualTo("\"2024-01-02T03:04:05Z\"");
        assertThat(jsonOf("timestamptz", "2024-01-02 03:04:05.5+00")).isEqualTo("\"2024-01-02T03:04:05.500000Z\"");
        assertThat(jsonOf("timestamptz", "0044-03-15 12:00:00+00 BC")).isEqualTo("\"-0043-03-15T12:00:00Z\"");
        assertThat(jsonOf("timestamptz", "10000-01-01 00:00:00+00")).isEqualTo("\"+10000-01-01T00:00:00Z\"");
        assertThat(jsonOf("timestamptz", "infinity")).isEqualTo("\"infinity\"");
        for (String t : new String[] {"2024-01-02T03:04:05.123456Z", "1969-12-31T23:59:59.999999Z", "0001-01-01T00:00:00Z"}) {
            assertThat(json("timestamptz", Instant.parse(t))).isEqualTo("\"" + t + "\"");
        }
    }

    @Test
    void intervalsAreIso8601() {
        assertThat(jsonOf("interval", "1 year 2 mons 3 days 04:05:06.789")).isEqualTo("\"P1Y2M3DT4H5M6.789S\"");
        assertThat(jsonOf("interval", "00:00:00")).isEqualTo("\"PT0S\"");
        assertThat(jsonOf("interval", "-1 years -2 mons +3 days -04:05:06")).isEqualTo("\"P-1Y-2M3DT-4H-5M-6S\"");
        assertThat(jsonOf("interval", "1 mon")).isEqualTo("\"P1M\"");
        assertThat(jsonOf("interval", "-00:00:00.5")).isEqualTo("\"PT-0.5S\"");
        assertThat(jsonOf("interval", "infinity")).isEqualTo("\"infinity\"");
    }

    @Test
    void arraysNestPerDimension() {
        assertThat(jsonOf("_int4", "{1,NULL,3}")).isEqualTo("[1,null,3]");
        assertThat(jsonOf("_int4", "[0:1][0:1]={{1,2},{3,4}}")).isEqualTo("[[1,2],[3,4]]");
        assertThat(jsonOf("_int4", "{}")).isEqualTo("[]");
        assertThat(jsonOf("_text", "{a,\"b c\",NULL}")).isEqualTo("[\"a\",\"b c\",null]");
        assertThat(jsonOf("_numeric", "{1.50,NaN}")).isEqualTo("[\"1.50\",\"NaN\"]");
        assertThat(jsonOf("_timestamptz", "{\"2024-01-02 03:04:05+00\",-infinity}")).isEqualTo("[\"2024-01-02T03:04:05Z\",\"-infinity\"]");
    }

    @Test
    void unknownTypesAreTheirText() {
        TypeCodec regclass = Codecs.forType(new TypeInfo(2205, "pg_catalog", "regclass", 'b', 'N', 0, 0), Codecs.builtins());
        assertThat(json(regclass, regclass.decodeText("pg_class"))).isEqualTo("\"pg_class\"");
    }
}
