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
    void aValueTheCatalogCannotNameIsRefused() {
        TypeCodec pair = codec(30001);
        String three = "00000003" + "00000017" + "ffffffff" + "00000019" + "ffffffff" + "00000019" + "ffffffff";
        assertThatThrownBy(() -> pair.decodeBinary(hex(three), 0, three.length() / 2))
                .hasMessageContaining("3 fields where the type has 2 ([a, b], read from the catalog again; shapes met: [[a, b]])");
        String wrongOid = "00000002" + "00000014" + "ffffffff" + "00000019" + "ffffffff";
        assertThatThrownBy(() -> pair.decodeBinary(hex(wrongOid), 0, wrongOid.length() / 2))
                .hasMessageContaining("fields of type oids [20, 25] (the shape with [a, b] has [23, 25]) where the type has 2");
        String tooLong = "00000002" + "00000017" + "00000063" + "00000001" + "00000019" + "ffffffff";
        assertThatThrownBy(() -> pair.decodeBinary(hex(tooLong), 0, tooLong.length() / 2)).hasMessageContaining("field 1 length 99 runs past the end");
        assertThatThrownBy(() -> pair.decodeText("(1,x,y)")).hasMessageContaining("3 fields where the type has 2");
        assertThatThrownBy(() -> pair.decodeText("(x,y)")).hasMessageContaining("field a: invalid int4 text value 'x'");
    }

    /** A catalog whose answers the test changes, as ALTER TYPE would; it counts the times it is read again. */
    private static final class Catalog implements TypeResolver {
        final java.util.Map<Integer, TypeInfo> types = new java.util.concurrent.ConcurrentHashMap<>(TYPES);
        final java.util.concurrent.atomic.AtomicInteger rereads = new java.util.concurrent.atomic.AtomicInteger();

        @Override
        public TypeInfo resolve(int oid) {
            return types.get(oid);
        }

        @Override
        public TypeInfo reread(int oid) {
            rereads.incrementAndGet();
            return types.get(oid);
        }

        void pair(TypeInfo.Attribute... attributes) {
            types.put(30001, new TypeInfo(30001, "public", "pair", 'c', 'C', 0, 0, 0, List.of(attributes)));
        }
    }

    private static final TypeInfo.Attribute A = new TypeInfo.Attribute("a", 23, 1, false);
    private static final TypeInfo.Attribute B = new TypeInfo.Attribute("b", 25, 2, false);

    /**
     * ALTER TYPE ... ADD ATTRIBUTE twice while streaming, both before the decoder reads the values between them: the
     * codec reads the type again for the first value of each new shape (once), names the fields of a value written between
     * the two (the catalog numbers attributes in the order they were added), and keeps decoding values of the old shape (a
     * transaction that began before the ALTER).
     */
    @Test
    void attributesAddedAfterTheCodecWasMadeAreReadAgainOncePerShape() {
        Catalog catalog = new Catalog();
        catalog.pair(A, B);
        TypeCodec pair = Codecs.forType(catalog.types.get(30001), catalog);
        assertThat(pair.decodeText("(1,x)")).isEqualTo(pair(1, "x"));
        catalog.pair(A, B, new TypeInfo.Attribute("c", 20, 3, false), new TypeInfo.Attribute("d", 25, 4, false));
        PgComposite three = new PgComposite(List.of(new PgComposite.Field("a", 2), new PgComposite.Field("b", "y"),
                new PgComposite.Field("c", 5L)));
        assertThat(pair.decodeText("(2,y,5)")).as("written between the two ALTERs").isEqualTo(three);
        String bin = "00000003" + "00000017" + "00000004" + "00000002" + "00000019" + "00000001" + "79" + "00000014" + "00000008"
                + "0000000000000005";
        assertThat(pair.decodeBinary(hex(bin), 0, bin.length() / 2)).isEqualTo(three);
        assertThat(pair.decodeText("(3,z)")).as("the old shape still decodes").isEqualTo(pair(3, "z"));
        assertThat(pair.decodeText("(4,w,6,v)")).isEqualTo(new PgComposite(List.of(new PgComposite.Field("a", 4),
                new PgComposite.Field("b", "w"), new PgComposite.Field("c", 6L), new PgComposite.Field("d", "v"))));
        assertThat(pair.toPgText(three)).isEqualTo("(2,y,5)");
        assertThat(pair.toPgText(pair(3, "z"))).isEqualTo("(3,z)");
        assertThat(catalog.rereads).as("read again once per new shape").hasValue(2);
        assertThatThrownBy(() -> pair.decodeText("(4,w,6,v,8)")).hasMessageContaining("5 fields where the type has 4 ([a, b, c, d],"
                + " read from the catalog again; shapes met: [[a, b], [a, b, c], [a, b, c, d]])");
    }

    /**
     * An attribute dropped while streaming: a value of the current shape decodes as such, one of another count written
     * between an ADD and a DROP cannot be named for certain (which attributes it had depends on when each change was made)
     * and is refused. (A value of the current count written before the changes is read as today's shape: the limit.)
     */
    @Test
    void afterADropOnlyTheCurrentShapeIsCertain() {
        Catalog catalog = new Catalog();
        catalog.pair(A, B);
        TypeCodec pair = Codecs.forType(catalog.types.get(30001), catalog);
        catalog.pair(A, new TypeInfo.Attribute("........pg.dropped.2........", 0, 2, true), new TypeInfo.Attribute("c", 20, 3, false),
                new TypeInfo.Attribute("d", 20, 4, false));
        assertThat(pair.decodeText("(1,5,6)")).isEqualTo(new PgComposite(List.of(new PgComposite.Field("a", 1),
                new PgComposite.Field("c", 5L), new PgComposite.Field("d", 6L))));
        assertThatThrownBy(() -> pair.decodeText("(1,x,5)")).as("a, b, c or a, c, d? three fields are read as today's three")
                .hasMessageContaining("field c: invalid int8 text value 'x'");
        assertThatThrownBy(() -> pair.decodeText("(2,x,5,6)")).hasMessageContaining("4 fields where the type has 3 ([a, c, d]")
                .hasMessageContaining("attributes were dropped or changed");
    }
}
