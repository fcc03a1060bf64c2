package io.millrace.core.types;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.HexFormat;
import java.util.Objects;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** Java values of the server's text and binary forms, and toPgText round trips, without a server. */
class TextAndBinaryFormsTest {

    static TypeCodec c(String name) {
        for (int oid = 1; oid < 10000; oid++) {
            if (Codecs.builtin(oid) != null && Codecs.builtin(oid).name().equals(name)) {
                return Codecs.forType(Codecs.builtin(oid), Codecs.builtins());
            }
        }
        throw new AssertionError("no built-in " + name);
    }

    static byte[] hex(String h) {
        return HexFormat.of().parseHex(h);
    }

    static Object bin(String type, String hexBytes) {
        byte[] b = hex(hexBytes);
        // decode from the middle of a larger buffer, as the decoder does with tuple data
        byte[] padded = new byte[b.length + 7];
        System.arraycopy(b, 0, padded, 3, b.length);
        return c(type).decodeBinary(padded, 3, b.length);
    }

    /** decodeText(text) is {@code expected}, toPgText gives back {@code text}, and that decodes to the same value. */
    static void roundTrip(String type, String text, Object expected) {
        TypeCodec codec = c(type);
        Object v = codec.decodeText(text);
        assertThat(Objects.deepEquals(v, expected)).as("%s '%s' decodes to %s, got %s", type, text, expected, v).isTrue();
        String back = codec.toPgText(v);
        assertThat(Objects.deepEquals(codec.decodeText(back), v)).as("%s toPgText '%s'", type, back).isTrue();
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "int2|-32768", "int2|32767", "int4|-2147483648", "int4|2147483647", "int8|-9223372036854775808",
        "int8|9223372036854775807", "oid|4294967295", "oid|0", "float8|NaN", "float8|Infinity", "float8|-Infinity",
        "float8|0.1", "float8|-0", "float8|1.7976931348623157e+308", "float8|5e-324", "float4|3.4028235e+38", "float4|1e-45",
        "float4|NaN", "numeric|NaN", "numeric|Infinity", "numeric|-Infinity", "numeric|1.500", "numeric|-0.000001",
        "date|0044-03-15 BC", "date|5874897-12-31", "date|infinity", "date|-infinity", "date|4713-01-01 BC",
        "time|24:00:00", "time|00:00:00.000001", "timetz|24:00:00-15:59", "timetz|12:00:00-03:30:15",
        "timestamp|294276-12-31 23:59:59.999999", "timestamp|4713-01-01 00:00:00 BC", "timestamp|-infinity",
        "timestamptz|2024-01-02 03:04:05.123456+05:30", "timestamptz|0044-03-15 12:00:00-04:56:02 BC",
        "interval|-178956970 years -8 mons -2147483648 days -2562047788:00:54.775808", "interval|00:00:00",
        "interval|1 year 2 mons 3 days 04:05:06.789", "interval|-1 years -2 mons +3 days -04:05:06", "interval|infinity",
        "money|-$92,233,720,368,547,758.08", "money|$92,233,720,368,547,758.07", "bit|", "varbit|10101",
        "inet|::ffff:1.2.3.4/120", "macaddr8|08:00:2b:ff:fe:01:02:03"})
    void serverTextRoundTrips(String type, String text) {
        TypeCodec codec = c(type);
        Object v = codec.decodeText(text == null ? "" : text);
        assertThat(codec.decodeText(codec.toPgText(v))).isEqualTo(v);
    }

    @Test
    void integersAndOid() {
        roundTrip("int2", "-32768", (short) -32768);
        roundTrip("int4", "2147483647", Integer.MAX_VALUE);
        roundTrip("int8", "-9223372036854775808", Long.MIN_VALUE);
        roundTrip("oid", "4294967295", 4294967295L);
        assertThat(bin("int2", "8000")).isEqualTo((short) -32768);
        assertThat(bin("int4", "ffffffff")).isEqualTo(-1);
        assertThat(bin("int8", "8000000000000000")).isEqualTo(Long.MIN_VALUE);
        assertThat(bin("oid", "ffffffff")).isEqualTo(4294967295L);
        assertThat(bin("bool", "01")).isEqualTo(true);
        roundTrip("bool", "f", false);
    }

    @Test
    void floats() {
        roundTrip("float8", "NaN", Double.NaN);
        roundTrip("float8", "-Infinity", Double.NEGATIVE_INFINITY);
        roundTrip("float8", "0.1", 0.1);
        roundTrip("float8", "-0", -0.0);
        roundTrip("float4", "0.1", 0.1f);
        assertThat(bin("float8", "3fb999999999999a")).isEqualTo(0.1);
        assertThat(bin("float4", "7fc00000")).isEqualTo(Float.NaN);
        assertThat(bin("float8", "fff0000000000000")).isEqualTo(Double.NEGATIVE_INFINITY);
    }

    @Test
    void numericKeepsItsScaleAndSpecials() {
        roundTrip("numeric", "1.500", new BigDecimal("1.500"));
        roundTrip("numeric", "0.00", new BigDecimal("0.00"));
        roundTrip("numeric", "NaN", PgNumericSpecial.NAN);
        roundTrip("numeric", "Infinity", PgNumericSpecial.POSITIVE_INFINITY);
        roundTrip("numeric", "-Infinity", PgNumericSpecial.NEGATIVE_INFINITY);
        String huge = "1" + "0".repeat(300);
        roundTrip("numeric", huge, new BigDecimal(huge));
        assertThat(c("numeric").toPgText(new BigDecimal("1E+3"))).isEqualTo("1000");
        // numeric_send: ndigits, weight, sign, dscale, base-10000 digits
        assertThat(bin("numeric", "0002" + "0000" + "0000" + "0003" + "0001" + "1388")).isEqualTo(new BigDecimal("1.500"));
        assertThat(bin("numeric", "0001" + "004b" + "0000" + "0000" + "0001")).isEqualTo(new BigDecimal(huge));
        assertThat(bin("numeric", "0001" + "ffb5" + "4000" + "012c" + "0001")).isEqualTo(new BigDecimal("-1E-300"));
        assertThat(bin("numeric", "0000" + "0000" + "0000" + "0002")).isEqualTo(new BigDecimal("0.00"));
        assertThat(bin("numeric", "0000" + "0000" + "c000" + "0000")).isEqualTo(PgNumericSpecial.NAN);
        assertThat(bin("numeric", "0000" + "0000" + "d000" + "0000")).isEqualTo(PgNumericSpecial.POSITIVE_INFINITY);
        assertThat(bin("numeric", "0000" + "0000" + "f000" + "0000")).isEqualTo(PgNumericSpecial.NEGATIVE_INFINITY);
        // 5 digits (the BigInteger path): 1234 5678 9012 3456 7890 . with weight 2 -> 123456789012.34567890, dscale 8
        assertThat(bin("numeric", "0005" + "0002" + "0000" + "0008" + "04d2" + "162e" + "2334" + "0d80" + "1ed2"))
                .isEqualTo(new BigDecimal("123456789012.34567890"));
    }

    @Test
    void money() {
        roundTrip("money", "$1,234.56", new BigDecimal("1234.56"));
        roundTrip("money", "-$1,234.56", new BigDecimal("-1234.56"));
        roundTrip("money", "-$92,233,720,368,547,758.08", BigDecimal.valueOf(Long.MIN_VALUE, 2));
        roundTrip("money", "($5.00)", new BigDecimal("-5.00"));
        assertThat(c("money").toPgText(new BigDecimal("-1234.56"))).isEqualTo("-1234.56");
        assertThat(bin("money", "ffffffffffffff9c")).isEqualTo(new BigDecimal("-1.00"));
    }

    @Test
    void strings() {
        roundTrip("text", "", "");
        roundTrip("text", "héllo ☃ 😀", "héllo ☃ 😀");
        roundTrip("bpchar", "ab   ", "ab   ");
        assertThat(bin("text", "68c3a9")).isEqualTo("hé");
        assertThat(bin("jsonb", "017b7d")).isEqualTo("{}");
        assertThat(bin("json", "7b7d")).isEqualTo("{}");
    }

    @Test
    void bytea() {
        roundTrip("bytea", "\\x", new byte[0]);
        roundTrip("bytea", "\\x00ff5C", new byte[] {0, -1, 0x5c});
        assertThat(c("bytea").toPgText(new byte[] {0, -1, 0x5c})).isEqualTo("\\x00ff5c");
        // escape format: printable ASCII as is, backslash doubled, others as octal
        assertThat((byte[]) c("bytea").decodeText("a\\\\b\\000\\377")).containsExactly('a', '\\', 'b', 0, -1);
        assertThat((byte[]) c("bytea").decodeText("")).isEmpty();
        assertThat((byte[]) bin("bytea", "00ff")).containsExactly(0, -1);
    }

    @Test
    void uuid() {
        UUID u = UUID.fromString("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
        roundTrip("uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", u);
        roundTrip("uuid", "{A0EEBC99-9C0B4EF8-BB6D6BB9-BD380A11}", u);
        roundTrip("uuid", "a0eebc999c0b4ef8bb6d6bb9bd380a11", u);
        assertThat(bin("uuid", "a0eebc999c0b4ef8bb6d6bb9bd380a11")).isEqualTo(u);
    }

    @Test
    void dates() {
        roundTrip("date", "2024-02-29", LocalDate.of(2024, 2, 29));
        roundTrip("date", "0044-03-15 BC", LocalDate.of(-43, 3, 15));
        roundTrip("date", "0001-12-31 BC", LocalDate.of(0, 12, 31));
        roundTrip("date", "5874897-12-31", LocalDate.of(5874897, 12, 31));
        roundTrip("date", "infinity", PgInfinity.POSITIVE);
        assertThat(c("date").toPgText(LocalDate.of(-43, 3, 15))).isEqualTo("0044-03-15 BC");
        assertThat(c("date").toPgText(LocalDate.of(12345, 1, 2))).isEqualTo("12345-01-02");
        assertThat(bin("date", "00000000")).isEqualTo(LocalDate.of(2000, 1, 1));
        assertThat(bin("date", "ffffffff")).isEqualTo(LocalDate.of(1999, 12, 31));
        assertThat(bin("date", "7fffffff")).isEqualTo(PgInfinity.POSITIVE);
        assertThat(bin("date", "80000000")).isEqualTo(PgInfinity.NEGATIVE);
    }

    @Test
    void times() {
        roundTrip("time", "24:00:00", new PgTime(86_400_000_000L));
        roundTrip("time", "12:34:56.5", new PgTime(45_296_500_000L));
        assertThat(c("time").toPgText(new PgTime(1))).isEqualTo("00:00:00.000001");
        assertThat(bin("time", "0000000000000001")).isEqualTo(new PgTime(1));
        roundTrip("timetz", "12:00:00+05:30", new PgTimeTz(43_200_000_000L, 19_800));
        roundTrip("timetz", "12:00:00-03:30:15", new PgTimeTz(43_200_000_000L, -12_615));
        assertThat(c("timetz").toPgText(new PgTimeTz(0, -12_615))).isEqualTo("00:00:00-03:30:15");
        // timetz_send: micros, then the zone in seconds WEST of UTC (+05:30 is -19800 on the wire)
        assertThat(bin("timetz", "0000000a0eebb000" + "ffffb2a8")).isEqualTo(new PgTimeTz(43_200_000_000L, 19_800));
        assertThat(new PgTimeTz(3_600_000_000L, 7_200).utcMicros()).isEqualTo(82_800_000_000L);
    }

    @Test
    void timestamps() {
        roundTrip("timestamp", "2024-01-02 03:04:05.123456", LocalDateTime.of(2024, 1, 2, 3, 4, 5, 123_456_000));
        roundTrip("timestamp", "0044-03-15 12:00:00 BC", LocalDateTime.of(-43, 3, 15, 12, 0));
        roundTrip("timestamp", "294276-12-31 23:59:59.999999", LocalDateTime.of(294276, 12, 31, 23, 59, 59, 999_999_000));
        roundTrip("timestamp", "-infinity", PgInfinity.NEGATIVE);
        roundTrip("timestamptz", "2024-01-02 03:04:05.123456+05:30", Instant.parse("2024-01-01T21:34:05.123456Z"));
        roundTrip("timestamptz", "1920-06-01 12:00:00+00:19:32", Instant.parse("1920-06-01T11:40:28Z"));
        roundTrip("timestamptz", "0044-03-15 12:00:00-04:56:02 BC", LocalDateTime.of(-43, 3, 15, 16, 56, 2).toInstant(java.time.ZoneOffset.UTC));
        assertThat(c("timestamptz").toPgText(Instant.parse("2024-01-02T03:04:05.5Z"))).isEqualTo("2024-01-02 03:04:05.5+00");
        assertThat(c("timestamptz").toPgText(LocalDateTime.of(-43, 3, 15, 12, 0).toInstant(java.time.ZoneOffset.UTC)))
                .isEqualTo("0044-03-15 12:00:00+00 BC");
        assertThat(c("timestamp").toPgText(LocalDateTime.of(2024, 1, 2, 3, 4))).isEqualTo("2024-01-02 03:04:00");
        assertThat(bin("timestamptz", "0000000000000000")).isEqualTo(Instant.parse("2000-01-01T00:00:00Z"));
        assertThat(bin("timestamptz", "ffffffffffffffff")).isEqualTo(Instant.parse("1999-12-31T23:59:59.999999Z"));
        assertThat(bin("timestamp", "7fffffffffffffff")).isEqualTo(PgInfinity.POSITIVE);
        assertThat(bin("timestamp", "8000000000000000")).isEqualTo(PgInfinity.NEGATIVE);
    }

    @Test
    void intervals() {
        roundTrip("interval", "1 year 2 mons 3 days 04:05:06.789", new PgInterval(14, 3, 14_706_789_000L));
        roundTrip("interval", "-1 years -2 mons +3 days -04:05:06", new PgInterval(-14, 3, -14_706_000_000L));
        roundTrip("interval", "1 day -00:00:01", new PgInterval(0, 1, -1_000_000L));
        roundTrip("interval", "-2562047788:00:54.775808", new PgInterval(0, 0, Long.MIN_VALUE));
        roundTrip("interval", "infinity", PgInterval.POSITIVE_INFINITY);
        roundTrip("interval", "-infinity", PgInterval.NEGATIVE_INFINITY);
        // byte for byte what interval_out prints
        assertThat(c("interval").toPgText(new PgInterval(-14, 3, -14_706_000_000L))).isEqualTo("-1 years -2 mons +3 days -04:05:06");
        assertThat(c("interval").toPgText(new PgInterval(1, -1, 1))).isEqualTo("1 mon -1 days +00:00:00.000001");
        assertThat(c("interval").toPgText(new PgInterval(0, 0, 0))).isEqualTo("00:00:00");
        assertThat(c("interval").toPgText(new PgInterval(12, 1, 0))).isEqualTo("1 year 1 day");
        ByteBuffer b = ByteBuffer.allocate(16).putLong(-1).putInt(2).putInt(-3);
        assertThat(c("interval").decodeBinary(b.array(), 0, 16)).isEqualTo(new PgInterval(-3, 2, -1));
    }

    @Test
    void networkAndBits() {
        assertThat(bin("inet", "02" + "20" + "00" + "04" + "c0a80001")).isEqualTo("192.168.0.1");
        assertThat(bin("inet", "02" + "18" + "00" + "04" + "c0a80000")).isEqualTo("192.168.0.0/24");
        assertThat(bin("cidr", "02" + "20" + "01" + "04" + "c0a80001")).isEqualTo("192.168.0.1/32");
        assertThat(bin("inet", "03" + "80" + "00" + "10" + "00000000000000000000000000000001")).isEqualTo("::1");
        assertThat(bin("inet", "03" + "80" + "00" + "10" + "20010db8000000000001000000000001")).isEqualTo("2001:db8::1:0:0:1");
        assertThat(bin("inet", "03" + "60" + "00" + "10" + "00000000000000000000ffff01020304")).isEqualTo("::ffff:1.2.3.4/96");
        assertThat(bin("cidr", "03" + "00" + "01" + "10" + "00000000000000000000000000000000")).isEqualTo("::/0");
        assertThat(bin("macaddr", "08002b010203")).isEqualTo("08:00:2b:01:02:03");
        assertThat(bin("macaddr8", "08002bfffe010203")).isEqualTo("08:00:2b:ff:fe:01:02:03");
        assertThat(bin("varbit", "00000009" + "aa80")).isEqualTo("101010101");
        assertThat(bin("varbit", "00000000")).isEqualTo("");
        roundTrip("inet", "2001:db8::/32", "2001:db8::/32");
    }

    @Test
    void arrays() {
        roundTrip("_int4", "{}", PgArray.EMPTY);
        roundTrip("_int4", "{1,NULL,3}", PgArray.of(1, null, 3));
        roundTrip("_int4", "[0:2]={1,2,3}", new PgArray(new int[] {3}, new int[] {0}, new Object[] {1, 2, 3}));
        roundTrip("_int4", "[-5:-4][1:2]={{1,NULL},{3,4}}", new PgArray(new int[] {2, 2}, new int[] {-5, 1}, new Object[] {1, null, 3, 4}));
        roundTrip("_int4", "{{{1,2},{3,4}},{{5,6},{7,8}}}", new PgArray(new int[] {2, 2, 2}, new int[] {1, 1, 1},
                new Object[] {1, 2, 3, 4, 5, 6, 7, 8}));
        roundTrip("_text", "{\"\",NULL,\"NULL\",\"a b\",\"q\\\"uote\",\"back\\\\slash\",\"{}\",\",\",ü}",
                PgArray.of("", null, "NULL", "a b", "q\"uote", "back\\slash", "{}", ",", "ü"));
        roundTrip("_text", "{  spaced  , \" q \" ,a\\ b}", PgArray.of("spaced", " q ", "a b"));
        roundTrip("_bytea", "{\"\\\\x0001\",NULL}", PgArray.of(new byte[] {0, 1}, null));
        roundTrip("_timestamptz", "{\"2024-01-02 03:04:05+00\",infinity}",
                PgArray.of(Instant.parse("2024-01-02T03:04:05Z"), PgInfinity.POSITIVE));
        assertThat(c("_text").toPgText(PgArray.of("", null, "NULL", "a b", "q\"uote", "back\\slash", "x")))
                .isEqualTo("{\"\",NULL,\"NULL\",\"a b\",\"q\\\"uote\",\"back\\\\slash\",x}");
        assertThat(c("_int4").toPgText(new PgArray(new int[] {1, 2}, new int[] {0, 1}, new Object[] {1, 2})))
                .isEqualTo("[0:0][1:2]={{1,2}}");
        // array_send: ndim, flags, element oid, (dim, lbound) per dimension, then (len, bytes) per element
        String send = "00000002" + "00000001" + "00000017" + "00000002" + "00000000" + "00000001" + "00000001"
                + "00000004" + "00000007" + "ffffffff";
        assertThat(bin("_int4", send)).isEqualTo(new PgArray(new int[] {2, 1}, new int[] {0, 1}, new Object[] {7, null}));
        assertThat(bin("_int4", "00000000" + "00000000" + "00000017")).isEqualTo(PgArray.EMPTY);
    }

    /** The types the postgres destination COPYs in binary (CodecsIT checks each encoder byte for byte against the server). */
    @Test
    void theTypesThatEncodeBinary() {
        java.util.Set<String> encoding = new java.util.TreeSet<>();
        for (int oid = 1; oid < 10000; oid++) {
            var t = Codecs.builtin(oid);
            if (t != null && Codecs.forType(t, Codecs.builtins()).encodesBinary()) {
                encoding.add(t.name());
            }
        }
        assertThat(encoding).containsExactlyInAnyOrder("bool", "int2", "int4", "int8", "float4", "float8", "numeric", "date",
                "timestamp", "timestamptz", "text", "varchar", "bpchar", "name", "json", "jsonb", "bytea", "uuid");
        assertThat(c("numeric").encodeBinary(new BigDecimal("-12.340"))).isEqualTo(hex("0002000040000003000c0d48"));
    }
}
