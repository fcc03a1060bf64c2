package io.millrace.core.types;

import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** How {@link Codecs#forType} picks codecs: built-ins, enums, domains, arrays, unknown types. */
class CodecsTest {
    private static final Map<Integer, TypeInfo> USER_TYPES = Map.of(
            16400, new TypeInfo(16400, "public", "mood", 'e', 'E', 0, 0),
            16401, new TypeInfo(16401, "public", "_mood", 'b', 'A', 16400, 0),
            16402, new TypeInfo(16402, "public", "posint", 'd', 'N', 0, 23),
            16403, new TypeInfo(16403, "public", "_posint", 'b', 'A', 16402, 0),
            16404, new TypeInfo(16404, "public", "posint2", 'd', 'N', 0, 16402),
            16405, new TypeInfo(16405, "public", "intlist", 'd', 'A', 23, 1007),
            16406, new TypeInfo(16406, "Odd Schema", "Color", 'e', 'E', 0, 0),
            16407, new TypeInfo(16407, "public", "pair", 'c', 'C', 0, 0),
            16408, new TypeInfo(16408, "public", "_pair", 'b', 'A', 16407, 0),
            16409, new TypeInfo(16409, "public", "loop", 'd', 'N', 0, 16409));
    private static final TypeResolver USER = oid -> USER_TYPES.get(oid);

    private static TypeCodec codec(int oid) {
        TypeInfo t = USER_TYPES.containsKey(oid) ? USER_TYPES.get(oid) : Codecs.builtin(oid);
        return Codecs.forType(t, USER);
    }

    @Test
    void builtInCodecsAreCachedPerOid() {
        for (int oid : new int[] {16, 20, 23, 25, 1700, 1184, 1007, 1009, 3807}) {
            TypeCodec a = Codecs.forType(Codecs.builtin(oid), USER);
            TypeCodec b = Codecs.forType(Codecs.builtin(oid), null);
            assertThat(a).isSameAs(b);
            assertThat(a.typeName()).isEqualTo(Codecs.builtin(oid).name());
        }
    }

    @Test
    void builtinKnowsEachSupportedTypeAndItsArrayAndNothingElse() {
        String[] names = {"bool", "int2", "int4", "int8", "oid", "float4", "float8", "numeric", "money", "text", "varchar", "bpchar",
            "name", "bytea", "uuid", "json", "jsonb", "xml", "date", "time", "timetz", "timestamp", "timestamptz", "interval",
            "inet", "cidr", "macaddr", "macaddr8", "bit", "varbit", "pg_lsn", "point", "line", "lseg", "box", "path", "polygon", "circle",
            "int4range", "int8range", "numrange", "daterange", "tsrange", "tstzrange", "int4multirange", "int8multirange", "nummultirange",
            "datemultirange", "tsmultirange", "tstzmultirange", "tsvector", "tsquery",
            "xid", "cid", "xid8", "tid", "pg_snapshot", "txid_snapshot", "int2vector", "oidvector"};
        int found = 0;
        for (int oid = 0; oid < 10000; oid++) {
            TypeInfo t = Codecs.builtin(oid);
            if (t != null) {
                found++;
                assertThat(t.oid()).isEqualTo(oid);
                assertThat(t.schema()).isEqualTo("pg_catalog");
                if (t.isArray() && oid != 22 && oid != 30) { // int2vector and oidvector: arrays of int2 and oid to the catalog
                    assertThat(t.name()).isEqualTo("_" + Codecs.builtin(t.elementOid()).name());
                }
                assertThat(Codecs.builtins().resolve(oid)).isSameAs(t);
            }
        }
        assertThat(found).isEqualTo(2 * names.length);
        for (String n : names) {
            boolean present = false;
            for (int oid = 0; oid < 10000; oid++) {
                TypeInfo t = Codecs.builtin(oid);
                present |= t != null && t.name().equals(n);
            }
            assertThat(present).as(n).isTrue();
        }
        assertThat(Codecs.builtin(2205)).as("regclass").isNull();
        assertThat(Codecs.builtin(0)).isNull();
        assertThat(Codecs.builtin(-1)).isNull();
        assertThat(Codecs.builtin(Integer.MAX_VALUE)).isNull();
        assertThat(Codecs.builtins().resolve(16400)).isNull();
    }

    @Test
    void enumsDecodeAsTheirLabel() {
        TypeCodec mood = codec(16400);
        assertThat(mood.typeName()).isEqualTo("public.mood");
        assertThat(mood.decodeText("happy")).isEqualTo("happy");
        assertThat(mood.decodeBinary("ünï".getBytes(java.nio.charset.StandardCharsets.UTF_8), 0, 5)).isEqualTo("ünï");
        assertThat(mood.toPgText("sad")).isEqualTo("sad");
        assertThat(codec(16406).typeName()).isEqualTo("\"Odd Schema\".\"Color\"");
    }

    @Test
    void domainsLookThroughToTheirBaseType() {
        TypeCodec posint = codec(16402);
        assertThat(posint.typeName()).isEqualTo("public.posint");
        assertThat(posint.decodeText("42")).isEqualTo(42);
        assertThat(posint.decodeBinary(new byte[] {0, 0, 1, 0}, 0, 4)).isEqualTo(256);
        assertThat(codec(16404).decodeText("7")).as("domain over a domain").isEqualTo(7);
        assertThat(codec(16405).decodeText("{1,2}")).as("domain over an array").isEqualTo(PgArray.of(1, 2));
    }

    @Test
    void arraysOfUserTypesUseTheElementCodec() {
        assertThat(codec(16401).decodeText("{sad,\"with space\",NULL}")).isEqualTo(PgArray.of("sad", "with space", null));
        assertThat(codec(16403).decodeText("{1,NULL}")).isEqualTo(PgArray.of(1, null));
        assertThat(codec(16403).supportsBinary()).isTrue();
    }

    @Test
    void unknownTypesKeepTheirTextAndRefuseBinary() {
        TypeCodec pair = codec(16407);
        assertThat(pair.supportsBinary()).isFalse();
        assertThat(pair.decodeText("(1,\"a b\")")).isEqualTo(new PgUnknown("public.pair", "(1,\"a b\")"));
        assertThat(pair.toPgText(new PgUnknown("public.pair", "(1,x)"))).isEqualTo("(1,x)");
        assertThatThrownBy(() -> pair.decodeBinary(new byte[4], 0, 4)).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("public.pair");

        TypeCodec pairs = codec(16408);
        assertThat(pairs.supportsBinary()).isFalse();
        assertThat(pairs.decodeText("{\"(1,x)\",NULL}")).isEqualTo(PgArray.of(new PgUnknown("public.pair", "(1,x)"), null));

        TypeCodec regclass = Codecs.forType(new TypeInfo(2205, "pg_catalog", "regclass", 'b', 'N', 0, 0), USER);
        assertThat(regclass.supportsBinary()).isFalse();
        assertThat(regclass.decodeText("pg_class")).isEqualTo(new PgUnknown("regclass", "pg_class"));

        TypeCodec nothing = Codecs.forType(new TypeInfo(99999, "public", "gone", 'd', 'N', 0, 88888), USER);
        assertThat(nothing.supportsBinary()).as("domain whose base is unknown").isFalse();
        assertThat(Codecs.forType(USER_TYPES.get(16409), USER).supportsBinary()).as("domain cycle").isFalse();
    }

    @Test
    void boxArraysSplitOnSemicolons() {
        TypeInfo box = new TypeInfo(603, "pg_catalog", "box", 'b', 'G', 600, 0);
        TypeInfo boxes = new TypeInfo(1020, "pg_catalog", "_box", 'b', 'A', 603, 0);
        TypeCodec c = Codecs.forType(boxes, oid -> oid == 603 ? box : null);
        assertThat(c.decodeText("{(1,1),(0,0);(3,3),(2,2)}"))
                .isEqualTo(PgArray.of(new PgGeometry.Box(new PgGeometry.Point(1, 1), new PgGeometry.Point(0, 0)),
                        new PgGeometry.Box(new PgGeometry.Point(3, 3), new PgGeometry.Point(2, 2))));
        assertThat(c.toPgText(c.decodeText("{(1,1),(0,0);(3,3),(2,2)}"))).isEqualTo("{(1,1),(0,0);(3,3),(2,2)}");
    }
}
