package io.millrace.sink.postgres;

import io.millrace.core.schema.TypeInfo;
import io.millrace.core.types.Codecs;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class TypeMappingTest {
    private static String map(int oid, int typmod) {
        return TypeMapping.sqlType(Codecs.builtin(oid), typmod);
    }

    @Test
    void builtInTypesKeepNameAndModifier() {
        assertThat(map(23, -1)).isEqualTo("pg_catalog.\"int4\"");
        assertThat(map(1700, ((12 << 16) | 2) + 4)).isEqualTo("pg_catalog.\"numeric\"(12,2)");
        assertThat(map(1700, -1)).isEqualTo("pg_catalog.\"numeric\"");
        assertThat(map(1043, 44)).isEqualTo("pg_catalog.\"varchar\"(40)");
        assertThat(map(1042, 5)).isEqualTo("pg_catalog.\"bpchar\"(1)");
        assertThat(map(1184, 3)).isEqualTo("pg_catalog.\"timestamptz\"(3)");
        assertThat(map(1560, 8)).isEqualTo("pg_catalog.\"bit\"(8)");
        assertThat(map(1015, 14)).isEqualTo("pg_catalog.\"varchar\"(10)[]");
        // arrays of int2 and oid to the catalog, but their text form is theirs ("1 2 3"): kept as they are
        assertThat(map(22, -1)).isEqualTo("pg_catalog.\"int2vector\"");
        assertThat(map(1006, -1)).isEqualTo("pg_catalog.\"int2vector\"[]");
        assertThat(map(30, -1)).isEqualTo("pg_catalog.\"oidvector\"");
    }

    @Test
    void numericNegativeScale() {
        // numeric(5,-2) (PostgreSQL 15+): scale stored as 11-bit two's complement
        int typmod = ((5 << 16) | (-2 & 0x7ff)) + 4;
        assertThat(TypeMapping.modifier("numeric", typmod)).isEqualTo("(5,-2)");
    }

    @Test
    void intervalFieldsAndPrecision() {
        int fullRange = 0x7fff;
        int dayToSecond = (1 << 3) | (1 << 10) | (1 << 11) | (1 << 12);
        assertThat(TypeMapping.modifier("interval", (fullRange << 16) | 3)).isEqualTo("(32767,3)");
        assertThat(TypeMapping.modifier("interval", (dayToSecond << 16) | 0xffff)).isEqualTo("(" + dayToSecond + ")");
        assertThat(TypeMapping.modifier("interval", (fullRange << 16) | 0xffff)).isEmpty();
    }

    @Test
    void enumsDomainsAndUnknownTypes() {
        TypeInfo mood = new TypeInfo(90001, "public", "mood", 'e', 'E', 0, 0);
        TypeInfo moodArray = new TypeInfo(90002, "public", "_mood", 'b', 'A', 90001, 0);
        TypeInfo posInt = new TypeInfo(90003, "public", "posint", 'd', 'N', 0, 23);
        TypeInfo citext = new TypeInfo(90004, "public", "citext", 'b', 'S', 0, 0);
        TypeInfo point = new TypeInfo(600, "pg_catalog", "point", 'b', 'G', 0, 0);
        TypeInfo pointArray = new TypeInfo(1017, "pg_catalog", "_point", 'b', 'A', 600, 0);
        TypeInfo regclass = new TypeInfo(2205, "pg_catalog", "regclass", 'b', 'N', 0, 0);
        assertThat(TypeMapping.sqlType(mood, -1)).isEqualTo("text");
        assertThat(TypeMapping.sqlType(moodArray, -1)).isEqualTo("text[]");
        assertThat(TypeMapping.sqlType(posInt, -1)).isEqualTo("pg_catalog.\"int4\"");
        assertThat(TypeMapping.sqlType(citext, -1)).isEqualTo("text");
        assertThat(TypeMapping.sqlType(point, -1)).isEqualTo("pg_catalog.\"point\"");
        assertThat(TypeMapping.sqlType(pointArray, -1)).isEqualTo("pg_catalog.\"point\"[]");
        assertThat(TypeMapping.sqlType(regclass, -1)).isEqualTo("text");
    }
}
