package io.millrace.core.types;

import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.util.List;
import java.util.Map;

import static io.millrace.core.types.JsonFormTest.json;
import static io.millrace.core.types.TextAndBinaryFormsTest.bin;
import static io.millrace.core.types.TextAndBinaryFormsTest.c;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Ranges and multiranges: text and binary give one PgRange / PgMultirange; text and JSON are range_out's. */
class RangeCodecsTest {

    private static void same(TypeCodec codec, String text, String hexBytes, Object value) {
        assertThat(codec.decodeText(text)).as("%s text %s", codec.typeName(), text).isEqualTo(value);
        assertThat(codec.decodeBinary(TextAndBinaryFormsTest.hex(hexBytes), 0, hexBytes.length() / 2)).isEqualTo(value);
        assertThat(codec.toPgText(value)).isEqualTo(text);
        assertThat(json(codec, value)).isEqualTo("\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"");
    }

    @Test
    void builtInRanges() {
        // flags 0x02 = lower inclusive; each bound: int32 length + int4
        same(c("int4range"), "[1,10)", "02" + "00000004" + "00000001" + "00000004" + "0000000a", PgRange.of(1, true, 10, false));
        same(c("int4range"), "empty", "01", PgRange.EMPTY);
        same(c("int4range"), "(,5)", "08" + "00000004" + "00000005", PgRange.of(null, false, 5, false));
        same(c("int4range"), "(,)", "18", PgRange.of(null, false, null, false));
        same(c("daterange"), "[2000-01-01,infinity)", "02" + "00000004" + "00000000" + "00000004" + "7fffffff",
                PgRange.of(LocalDate.of(2000, 1, 1), true, PgInfinity.POSITIVE, false));
        same(c("numrange"), "[1.5,2.5]", "06" + "0000000c" + "000200000000000100011388" + "0000000c" + "000200000000000100021388",
                PgRange.of(new BigDecimal("1.5"), true, new BigDecimal("2.5"), true));
        // a bound with a space is quoted; timestamptz in UTC, as the source's session prints it
        assertThat(c("tstzrange").decodeText("[\"2024-01-02 03:04:05+00\",)"))
                .isEqualTo(PgRange.of(Instant.parse("2024-01-02T03:04:05Z"), true, null, false));
        assertThat(c("tstzrange").decodeText("[\"2024-01-02 08:34:05+05:30\",)"))
                .as("the same instant printed in another zone").isEqualTo(c("tstzrange").decodeText("[\"2024-01-02 03:04:05+00\",)"));
        assertThat(c("tstzrange").toPgText(c("tstzrange").decodeText("[\"2024-01-02 08:34:05+05:30\",)")))
                .isEqualTo("[\"2024-01-02 03:04:05+00\",)");
    }

    @Test
    void multiranges() {
        String r13 = "00000011" + "02" + "00000004" + "00000001" + "00000004" + "00000003";
        String r57 = "00000011" + "02" + "00000004" + "00000005" + "00000004" + "00000007";
        same(c("int4multirange"), "{[1,3),[5,7)}", "00000002" + r13 + r57,
                new PgMultirange(List.of(PgRange.of(1, true, 3, false), PgRange.of(5, true, 7, false))));
        same(c("int4multirange"), "{}", "00000000", new PgMultirange(List.of()));
        assertThat(c("int4multirange").decodeText(" { [1,3) , empty } "))
                .isEqualTo(new PgMultirange(List.of(PgRange.of(1, true, 3, false))));
        assertThat(c("_int4multirange").decodeText("{\"{[1,3)}\",NULL}"))
                .isEqualTo(PgArray.of(new PgMultirange(List.of(PgRange.of(1, true, 3, false))), null));
    }

    @Test
    void userRangesOverTheirSubtypeWithRangeOutQuoting() {
        Map<Integer, TypeInfo> types = Map.of(
                20001, new TypeInfo(20001, "public", "textrange", 'r', 'R', 0, 0, 25, List.of()),
                20002, new TypeInfo(20002, "public", "textmultirange", 'm', 'R', 0, 0, 20001, List.of()),
                20003, new TypeInfo(20003, "public", "gonerange", 'r', 'R', 0, 0, 88888, List.of()));
        TypeResolver resolver = types::get;
        TypeCodec text = Codecs.forType(types.get(20001), resolver);
        same(text, "[\"a b\",\"c\"\"d\")", "02" + "00000003" + "612062" + "00000003" + "632264",
                PgRange.of("a b", true, "c\"d", false));
        same(text, "[\"\",\"x\\\\y\"]", "06" + "00000000" + "00000003" + "785c79", PgRange.of("", true, "x\\y", true));
        assertThat(text.decodeText("[a\\,b,c]")).as("backslash escapes outside quotes").isEqualTo(PgRange.of("a,b", true, "c", true));
        assertThat(Codecs.forType(types.get(20002), resolver).decodeText("{[a,b)}"))
                .isEqualTo(new PgMultirange(List.of(PgRange.of("a", true, "b", false))));
        TypeCodec gone = Codecs.forType(types.get(20003), resolver);
        assertThat(gone.supportsBinary()).as("a range whose subtype is unknown").isFalse();
    }

    @Test
    void floatBoundsPrintAsTheServerDoes() {
        TypeInfo fr = new TypeInfo(20004, "public", "floatrange", 'r', 'R', 0, 0, 701, List.of());
        TypeCodec codec = Codecs.forType(fr, Codecs.builtins());
        assertThat(codec.toPgText(codec.decodeText("[1e+20,1.5e-05)"))).isEqualTo("[1e+20,1.5e-05)");
    }

    @Test
    void malformedRangesAreRefused() {
        assertThatThrownBy(() -> c("int4range").decodeText("[1,2")).hasMessageContaining("invalid int4range text value '[1,2'");
        assertThatThrownBy(() -> c("int4range").decodeText("[1,x)")).hasMessageContaining("bound: invalid int4 text value 'x'");
        assertThatThrownBy(() -> c("int4range").decodeText("[1,2)x")).hasMessageContaining("unexpected text");
        assertThatThrownBy(() -> bin("int4range", "02" + "00000004" + "00000001")).hasMessageContaining("ends before a bound");
        assertThatThrownBy(() -> bin("int4range", "01" + "00")).hasMessageContaining("data after an empty range");
        assertThatThrownBy(() -> bin("int4multirange", "00000002" + "00000001" + "01")).hasMessageContaining("bad range count");
    }
}
