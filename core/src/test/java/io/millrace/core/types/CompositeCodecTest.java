package io.millrace.core.types;

import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static io.millrace.core.types.JsonFormTest.json;
import static io.millrace.core.types.TextAndBinaryFormsTest.hex;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Composites: text and binary give one PgComposite over the attributes' codecs; text and JSON are record_out's. */
class CompositeCodecTest {
    private static final Map<Integer, TypeInfo> TYPES = Map.of(
            30001, new TypeInfo(30001, "public", "pair", 'c', 'C', 0, 0, 0,
                    List.of(new TypeInfo.Attribute("a", 23), new TypeInfo.Attribute("b", 25))),
            30002, new TypeInfo(30002, "public", "outer", 'c', 'C', 0, 0, 0,
                    List.of(new TypeInfo.Attribute("p", 30001), new TypeInfo.Attribute("r", 3904))),
            30003, new TypeInfo(30003, "public", "odd", 'c', 'C', 0, 0, 0, List.of(new TypeInfo.Attribute("x", 88888))),
            30004, new TypeInfo(30004, "public", "_pair", 'b', 'A', 30001, 0));
    private static final TypeResolver RESOLVER = TYPES::get;

    private static TypeCodec codec(int oid) {
        return Codecs.forType(TYPES.get(oid), RESOLVER);
    }

    private static PgComposite pair(Integer a, String b) {
        return new PgComposite(List.of(new PgComposite.Field("a", a), new PgComposite.Field("b", b)));
    }

    @Test
    void textAndBinaryGiveOneValue() {
        TypeCodec pair = codec(30001);
        String bin = "00000002" + "00000017" + "00000004" + "00000001" + "00000019" + "00000003" + "612062";
        assertThat(pair.decodeText("(1,\"a b\")")).isEqualTo(pair(1, "a b"));
        assertThat(pair.decodeBinary(hex(bin), 0, bin.length() / 2)).isEqualTo(pair(1, "a b"));
        assertThat(pair.toPgText(pair(1, "a b"))).isEqualTo("(1,\"a b\")");
        assertThat(json(pair, pair(1, "a b"))).isEqualTo("\"(1,\\\"a b\\\")\"");
        String nulls = "00000002" + "00000017" + "ffffffff" + "00000019" + "00000000";
        assertThat(pair.decodeBinary(hex(nulls), 0, nulls.length() / 2)).isEqualTo(pair(null, ""));
        assertThat(pair.decodeText("(,\"\")")).as("NULL is empty, the empty string quoted").isEqualTo(pair(null, ""));
        assertThat(pair.toPgText(pair(null, ""))).isEqualTo("(,\"\")");
        assertThat(pair.toPgText(pair(2, "q\"\\ (x), [y]"))).isEqualTo("(2,\"q\"\"\\\\ (x), [y]\")");
        assertThat(pair.decodeText("(2,\"q\"\"\\\\ (x), [y]\")")).isEqualTo(pair(2, "q\"\\ (x), [y]"));
        assertThat(pair.decodeText("(3,a]b)")).as("] needs no quotes in a record").isEqualTo(pair(3, "a]b"));
    }

    @Test
    void nestedCompositesRangesAndArrays() {
        TypeCodec outer = codec(30002);
        PgComposite v = new PgComposite(List.of(new PgComposite.Field("p", pair(1, "x")),
                new PgComposite.Field("r", PgRange.of(1, true, 5, false))));
        assertThat(outer.decodeText("(\"(1,x)\",\"[1,5)\")")).isEqualTo(v);
        assertThat(outer.toPgText(v)).isEqualTo("(\"(1,x)\",\"[1,5)\")");
        assertThat(codec(30004).decodeText("{\"(1,x)\",NULL}")).isEqualTo(PgArray.of(pair(1, "x"), null));
        assertThat(outer.supportsBinary()).isTrue();
        assertThat(codec(30003).supportsBinary()).as("an attribute of an unknown type").isFalse();
    }

    @Test
    void aCatalogThatDisagreesIsRefused() {
        TypeCodec pair = codec(30001);
        String three = "00000003" + "00000017" + "ffffffff" + "00000019" + "ffffffff" + "00000019" + "ffffffff";
        assertThatThrownBy(() -> pair.decodeBinary(hex(three), 0, three.length() / 2)).hasMessageContaining("3 fields where the catalog has 2");
        String wrongOid = "00000002" + "00000014" + "ffffffff" + "00000019" + "ffffffff";
        assertThatThrownBy(() -> pair.decodeBinary(hex(wrongOid), 0, wrongOid.length() / 2))
                .hasMessageContaining("field a has type oid 20 where the catalog has 23");
        assertThatThrownBy(() -> pair.decodeText("(1,x,y)")).hasMessageContaining("expected ')'");
        assertThatThrownBy(() -> pair.decodeText("(x,y)")).hasMessageContaining("field a: invalid int4 text value 'x'");
    }
}
