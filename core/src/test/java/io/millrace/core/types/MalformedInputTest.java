package io.millrace.core.types;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static io.millrace.core.types.TextAndBinaryFormsTest.c;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Bad input never decodes to a wrong value: it throws an IllegalArgumentException naming the type and the value. */
class MalformedInputTest {

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "bool|maybe", "int2|32768", "int2|-32769", "int4|12x", "int4|2147483648", "int4|''", "int4|+", "int8|9223372036854775808",
        "int8|1.5", "oid|-1", "oid|4294967296", "float8|0x1p3", "float8|1.0d", "float8|abc", "float4|' 1'", "numeric|1.2.3",
        "numeric|nan", "numeric|1e", "money|abc", "money|$1.234", "bytea|\\xzz", "bytea|\\x0", "bytea|\\q", "uuid|xyz",
        "uuid|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", "uuid|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g", "date|2024-13-01",
        "date|2023-02-29", "date|2024-01-01x", "date|0000-01-01 BC", "date|tomorrow", "time|25:00:00", "time|24:00:01",
        "time|12:60:00", "time|12:00", "time|12:00:00.1234567", "timetz|12:00:00", "timetz|12:00:00+16",
        "timestamp|2024-01-01", "timestamp|2024-01-01 10:00:00+00", "timestamp|2024-01-01T10:00:00",
        "timestamptz|2024-01-01 10:00:00", "timestamptz|2024-01-01 24:00:00+00", "timestamptz|2024-02-30 00:00:00+00",
        "interval|1 fortnight", "interval|1", "interval|1 day 2 days 12:00:00 13:00:00", "interval|''",
        "interval|99999999999 days", "inet|hello", "cidr|''", "macaddr|zz:00:00:00:00:00", "bit|102", "varbit|x",
        "_int4|{1,2", "_int4|1,2}", "_int4|{{1,2},{3}}", "_int4|{{1,2},3}", "_int4|{1,{2}}", "_int4|[1:3]={1,2}",
        "_int4|{1,x}", "_int4|{1}x", "_int4|{\"1}", "_int4|{,}", "_int4|{{}}", "_int4|[0:1]{1,2}", "_text|{a\"b}"})
    void badTextNamesTypeAndValue(String type, String text) {
        assertThatThrownBy(() -> c(type).decodeText(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(type)
                .hasMessageContaining("'" + text + "'");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "bool|02", "bool|", "int2|000000", "int4|000000", "int8|00000000", "oid|00", "float8|0000", "uuid|00",
        "date|000000", "time|ffffffffffffffff", "timetz|0000000000000000", "interval|00", "numeric|0001",
        "numeric|0001000000000000", "numeric|00010000000000002710", "numeric|000000001234000000", "jsonb|027b7d",
        "inet|0220000400", "inet|04200004c0a80001", "macaddr|0800", "varbit|00000009aa", "_int4|00000001",
        "_int4|000000010000000000000017", "_int4|00000001000000000000001700000002000000010000000400000001",
        "_int4|0000000100000000000000170000000100000001000000080000000100000002"})
    void badBinaryNamesTypeAndBytes(String type, String hex) {
        byte[] b = hex == null ? new byte[0] : TextAndBinaryFormsTest.hex(hex);
        assertThatThrownBy(() -> c(type).decodeBinary(b, 0, b.length))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("invalid " + type + " binary value");
    }

    @Test
    void wrongJavaValueIsRefusedByName() {
        assertThatThrownBy(() -> c("int4").toPgText("42")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("int4").hasMessageContaining("java.lang.String");
        assertThatThrownBy(() -> c("int2").toPgText(70000)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("int2");
        assertThatThrownBy(() -> c("money").toPgText(new java.math.BigDecimal("1.234"))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("money");
        assertThatThrownBy(() -> c("timestamptz").toPgText(java.time.LocalDateTime.now())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("timestamptz");
    }

    @Test
    void longValuesAreCutInMessages() {
        String big = "x".repeat(10_000);
        assertThatThrownBy(() -> c("int4").decodeText(big)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("(10000 chars)").satisfies(e -> org.assertj.core.api.Assertions.assertThat(e.getMessage().length()).isLessThan(400));
    }
}
