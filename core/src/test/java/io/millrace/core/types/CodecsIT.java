package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.schema.TypeInfo;
import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.StringWriter;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every codec against a real server: for each type and a list of edge values, the server's text
 * (its output function, via {@code format('%s', v)}; note {@code v::text} is not always that:
 * inet's cast to text always prints the netmask, bpchar's trims) and binary ({@code typsend(v)})
 * forms decode to equal values, and the value rendered back with {@code toPgText} makes the server
 * print the very same text.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CodecsIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String[] ZONES = {"UTC", "Asia/Kolkata", "America/St_Johns", "America/New_York", "Europe/Amsterdam",
        "Pacific/Chatham"};

    /** Types whose JSON form is the server's text as a string (docs/TYPES.md). */
    private static final java.util.Set<String> JSON_IS_SERVER_TEXT = java.util.Set.of("pg_lsn", "point", "line", "lseg", "box", "path",
            "polygon", "circle", "int4range", "int8range", "numrange", "daterange", "tsrange", "tstzrange", "floatrange", "textrange",
            "moodrange", "posrange", "int4multirange", "int8multirange", "nummultirange", "datemultirange", "tsmultirange", "tstzmultirange",
            "floatmultirange", "textmultirange", "pair", "everything", "rowtype", "tsvector", "tsquery");

    private final Map<Integer, EmbeddedPg> servers = new LinkedHashMap<>();

    @BeforeAll
    void start() {
        for (int major : new int[] {17, 15, 14}) {
            EmbeddedPg pg = EmbeddedPg.builder().major(major).start();
            servers.put(major, pg);
            pg.execute("postgres",
                    "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'with space', 'quo\"te', 'NULL', 'back\\slash', 'ünï', '')",
                    "CREATE SCHEMA \"Odd Schema\"",
                    "CREATE TYPE \"Odd Schema\".\"Color\" AS ENUM ('red', 'green')",
                    "CREATE DOMAIN posint AS int4 CHECK (VALUE > 0)",
                    "CREATE DOMAIN email AS text CHECK (VALUE LIKE '%@%')",
                    "CREATE DOMAIN price AS numeric(10,2)",
                    "CREATE DOMAIN moment AS timestamptz",
                    "CREATE DOMAIN happy_mood AS mood CHECK (VALUE <> 'sad')",
                    "CREATE DOMAIN posint2 AS posint",
                    "CREATE DOMAIN intlist AS int4[]",
                    "CREATE TYPE pair AS (a int4, b text)",
                    "CREATE TYPE floatrange AS RANGE (subtype = float8)",
                    "CREATE TYPE textrange AS RANGE (subtype = text, collation = \"C\")",
                    "CREATE TYPE moodrange AS RANGE (subtype = mood)",
                    "CREATE DOMAIN posrange AS int4range CHECK (NOT isempty(VALUE))",
                    "CREATE TYPE everything AS (i int8, gone int, f float8, t text, ts timestamptz, r int4range, p point, arr int4[],"
                            + " m mood, n numeric, nested pair, b bytea, e email)",
                    "ALTER TYPE everything DROP ATTRIBUTE gone",
                    "CREATE TABLE rowtype (x int, y text, z numeric[])");
        }
    }

    @AfterAll
    void stop() {
        servers.values().forEach(EmbeddedPg::close);
    }

    // ------------------------------------------------------------------ the cases

    /** SQL type → value expressions (each is cast to the type). */
    private static Map<String, List<String>> cases(int major, boolean xml) {
        Map<String, List<String>> m = new LinkedHashMap<>();
        m.put("bool", List.of("true", "false"));
        m.put("int2", List.of("-32768", "32767", "0", "-1"));
        m.put("int4", List.of("-2147483648", "2147483647", "0", "42"));
        m.put("int8", List.of("'-9223372036854775808'", "9223372036854775807", "0", "-1"));
        m.put("oid", List.of("0", "4294967295", "16384"));
        m.put("float4", List.of("'NaN'", "'Infinity'", "'-Infinity'", "0.1", "'-0'", "0", "'3.4028235e38'", "'1.4e-45'",
                "'1.17549435e-38'", "123.456", "'-1e30'", "16777217"));
        m.put("float8", List.of("'NaN'", "'Infinity'", "'-Infinity'", "0.1", "'-0'", "0", "'1.7976931348623157e308'",
                "'4.9e-324'", "'2.2250738585072014e-308'", "'0.30000000000000004'", "1e22", "123456789.123", "'-1e-5'",
                "'1e15'", "'1e16'", "'123456789012345678'"));
        List<String> numeric = new ArrayList<>(List.of("0", "'0.00'", "'-0.5'", "'1.500'", "'NaN'", "9999", "10000", "0.0001",
                "0.00001", "'99999999.99999999'", "'-123456789012345678901234567890.123456789012345678901234567890'",
                "'1e300'", "'1e-300'", "'-1e300'", "'1e1000'", "'1.0e-1000'", "'12345678.9'", "'0.000000000001'",
                "'100000000000000000000'", "'9999999999999999'", "'10000000000000000'", "'-0.0001000'"));
        numeric.addAll(List.of("'Infinity'", "'-Infinity'")); // numeric infinity exists since PostgreSQL 14
        m.put("numeric", numeric);
        m.put("numeric(10,2)", List.of("'12345678.91'", "'-0.01'", "0"));
        m.put("money", List.of("0", "'1234.56'", "'-1234.56'", "'-92233720368547758.08'", "'92233720368547758.07'", "'0.01'",
                "'-0.01'", "'1000000'"));
        List<String> strings = List.of("''", "'hello'", "'héllo ☃ 😀 中文'", "'\"quoted\" ''single'''", "'back\\slash'",
                "'NULL'", "'null'", "' spaced '", "'{braces}'", "'comma,sep'", "E'line1\\nline2\\ttab'", "'x'");
        m.put("text", strings);
        m.put("varchar", strings);
        m.put("varchar(5)", List.of("'abc'", "''", "'ünïcö'"));
        m.put("char(5)", List.of("'abc'", "''", "'abcde'", "'ü'"));
        m.put("bpchar", List.of("'abc  '", "'x'"));
        m.put("name", List.of("'pg_catalog'", "''", "'Ünï Name'"));
        m.put("bytea", List.of("'\\x'", "'\\x00ff10'", "'\\x5c22'", "convert_to('héllo ☃', 'UTF8')", "decode(repeat('ab', 300), 'hex')",
                "'\\x000102030405060708090a0b0c0d0e0f7f80fe'"));
        m.put("uuid", List.of("'00000000-0000-0000-0000-000000000000'", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
                "'ffffffff-ffff-ffff-ffff-ffffffffffff'", "'{A0EEBC99-9C0B4EF8-BB6D6BB9-BD380A11}'"));
        List<String> json = List.of("'{\"a\": [1, 2.5, \"x\"], \"b\": null}'", "'\"str\"'", "'null'", "'{\"k\":\"é \\\"q\\\" \\\\ ☃\"}'",
                "'[]'", "'  {\"spaced\" :  true }  '", "'1e400'");
        m.put("json", json);
        m.put("jsonb", json);
        if (xml) {
            m.put("xml", List.of("'<a b=\"1\">text &amp; more ☃</a>'", "'<x/>'", "'plain text'"));
        }
        m.put("date", List.of("'infinity'", "'-infinity'", "'2024-02-29'", "'0044-03-15 BC'", "'4713-01-01 BC'", "'5874897-12-31'",
                "'0001-01-01'", "'0001-12-31 BC'", "'1970-01-01'", "'2000-01-01'", "'1999-12-31'", "'1900-02-28'", "'10000-01-01'"));
        m.put("time", List.of("'00:00:00'", "'24:00:00'", "'23:59:59.999999'", "'12:34:56.5'", "'00:00:00.000001'", "'12:00:00.12'"));
        m.put("time(2)", List.of("'12:34:56.789'"));
        m.put("timetz", List.of("'00:00:00+00'", "'24:00:00-15:59'", "'12:34:56.789+05:30'", "'23:59:59.999999-03:30:15'",
                "'00:00:00.000001+15:59:59'", "'10:00:00-01'"));
        List<String> ts = List.of("'infinity'", "'-infinity'", "'2024-01-02 03:04:05.123456'", "'0044-03-15 12:00:00 BC'",
                "'4713-01-01 00:00:00 BC'", "'294276-12-31 23:59:59.999999'", "'2000-01-01 00:00:00'", "'1970-01-01 00:00:00.000001'",
                "'1969-12-31 23:59:59.999999'", "'1900-02-28 23:59:59'", "'1920-06-01 12:00:00'", "'2024-03-10 02:30:00'",
                "'0001-01-01 00:00:00'", "'0001-12-31 23:59:59.5 BC'", "'10000-01-01 00:00:00'");
        m.put("timestamp", ts);
        m.put("timestamp(0)", List.of("'2024-01-02 03:04:05.6'"));
        List<String> tstz = new ArrayList<>(ts);
        tstz.addAll(List.of("'2024-01-02 03:04:05+05:30'", "'2024-07-01 00:00:00-03:30:15'"));
        tstz.remove("'294276-12-31 23:59:59.999999'"); // out of range once shifted east of UTC
        tstz.add("'294276-12-31 00:00:00+00'");
        m.put("timestamptz", tstz);
        List<String> iv = new ArrayList<>(List.of("'0'", "'1 year 2 mons 3 days 04:05:06.789'", "'-1 year -2 mons +3 days -04:05:06'",
                "'1 day -00:00:01'", "'-00:00:00.000001'", "'178956970 years 7 mons'", "'-178956970 years -8 mons'",
                "'2147483647 days'", "'-2147483648 days'", "'1 mon'", "'-1 mons'", "'1000:00:00'", "'1 year'", "'-1 day'",
                "'1 mon -1 day'", "'-1 mon +1 day'", "'-1 mon -1 day +00:00:01'", "'P1Y2M3DT4H5M6.5S'", "'@ 3 days 4 hours ago'",
                "'596523:14:07.999999'", "'-596523:14:07.999999'"));
        if (major >= 15) { // hours beyond int32 since PostgreSQL 15
            iv.addAll(List.of("'2562047788:00:54.775807'", "'-2562047788:00:54.775807'"));
        }
        if (major >= 17) {
            iv.addAll(List.of("'infinity'", "'-infinity'"));
        }
        m.put("interval", iv);
        m.put("inet", List.of("'192.168.0.1'", "'192.168.0.0/24'", "'10.1.2.3/8'", "'::1'", "'::'", "'2001:db8::1'", "'2001:db8::/32'",
                "'::ffff:1.2.3.4'", "'::1.2.3.4'", "'2001:db8:0:0:1:0:0:1'", "'1:0:0:2:0:0:0:3'", "'0.0.0.0/0'",
                "'255.255.255.255'", "'::2'", "'1::'", "'1:2:3:4:5:6:7:8/64'", "'::ffff:0:0/96'", "'fe80::1:2'",
                "'1:0:1:0:1:0:1:0'", "'0:0:1::'", "'::ffff:1.2.3.4/128'", "'::/0'", "'ABCD:EF01::'", "'1:2:3:4:5:6:0:0'",
                "'0:0:0:0:0:1:0:0'"));
        m.put("cidr", List.of("'192.168.0.0/24'", "'10.0.0.0/8'", "'192.168.1.5/32'", "'192.168.1.5'", "'2001:db8::/32'", "'::/0'",
                "'::1/128'", "'0.0.0.0/0'", "'::ffff:1.2.3.4/128'"));
        m.put("macaddr", List.of("'08:00:2b:01:02:03'", "'ff:ff:ff:ff:ff:ff'", "'08-00-2B-01-02-0A'", "'00:00:00:00:00:00'"));
        m.put("macaddr8", List.of("'08:00:2b:01:02:03:04:05'", "'08:00:2b:01:02:03'", "'ff:ff:ff:ff:ff:ff:ff:ff'"));
        m.put("bit", List.of("B'0'", "B'1'"));
        m.put("bit(4)", List.of("B'1010'", "B'0000'"));
        m.put("bit(9)", List.of("B'101010101'", "B'100000001'"));
        m.put("varbit", List.of("B''", "B'1'", "B'111100001111'", "B'10000000100000001'"));
        m.put("pg_lsn", List.of("'0/0'", "'16/B374D848'", "'FFFFFFFF/FFFFFFFF'", "'0/1'", "'1/0'"));
        List<String> f = List.of("0", "'-0'", "1.5", "-2", "0.1", "1e14", "1e15", "123456789012345", "1.5e-5", "0.0001", "0.00012",
                "1e-300", "'1.7976931348623157e308'", "'4.9e-324'", "'2.2250738585072014e-308'", "'0.30000000000000004'", "1e22",
                "1e23", "2e-3", "'NaN'", "'Infinity'", "'-Infinity'", "123456789.123", "'5e-324'", "'1.0E-5'", "100");
        List<String> points = new ArrayList<>();
        for (int i = 0; i < f.size(); i++) {
            points.add("point(" + f.get(i) + "::float8, " + f.get(f.size() - 1 - i) + "::float8)");
        }
        m.put("point", points);
        m.put("line", List.of("'{1,-1,0}'", "'{1.5,0,-2.25e-5}'", "line(point(0,0), point(1e20,3))", "'[(0,0),(1,1)]'"));
        m.put("lseg", List.of("'[(0,0),(1,1)]'", "'[(-1.5,1e300),(0.1,-0)]'"));
        m.put("box", List.of("'(1,1),(0,0)'", "'(0,0),(1,1)'", "'(-1.5,1e-300),(0.1,2e20)'"));
        m.put("path", List.of("'[(0,0),(1,1),(2,0)]'", "'((0,0),(1,1),(2,0))'", "'[(1.5,-2)]'", "'((0.1,0.2))'"));
        m.put("polygon", List.of("'((0,0),(1,1),(2,0))'", "'((1.5,-2))'", "'((0.1,1e300),(-0,5e-324))'"));
        m.put("circle", List.of("'<(0,0),1>'", "'<(1.5,-2),0.1>'", "'<(1e300,-1e-300),0>'"));
        List<String> ints = List.of("'[1,5)'", "'empty'", "'(,5]'", "'[1,)'", "'(,)'", "'[3,3]'", "'(1,2)'", "'[-2147483648,2147483647)'");
        m.put("int4range", ints);
        m.put("int8range", List.of("'[1,5)'", "'empty'", "'(,5]'", "'[-9223372036854775808,9223372036854775807)'"));
        m.put("numrange", List.of("'[1.50,2.5]'", "'(,0.001)'", "'[-1e30,1e30)'", "'empty'", "'(0,)'", "'[1,1]'"));
        m.put("daterange", List.of("'[2024-01-01,2024-02-01)'", "'[-infinity,infinity)'", "'(,2024-01-01]'", "'empty'",
                "'[0044-03-15 BC,0001-01-01)'"));
        List<String> tsr = List.of("'[\"2024-01-02 03:04:05.5\",\"2024-01-03 00:00:00\")'", "'[-infinity,)'", "'(,infinity]'",
                "'[\"0044-03-15 12:00:00 BC\",)'", "'empty'", "'[\"2000-01-01 00:00:00.000001\",\"2000-01-01 00:00:00.000001\"]'");
        m.put("tsrange", tsr);
        m.put("tstzrange", List.of("'[\"2024-01-02 03:04:05+05:30\",)'", "'(,infinity]'", "'empty'",
                "'[\"2024-07-01 00:00:00-03:30:15\",\"2024-07-02 00:00:00.5+00\")'", "'[\"0044-03-15 12:00:00 BC\",)'"));
        m.put("floatrange", List.of("'[1.5,1e20)'", "'(-Infinity,Infinity)'", "'[-0,0.1]'", "'empty'", "'[1.5e-05,)'"));
        m.put("textrange", List.of("'[a,b)'", "textrange('a b', 'c\"d')", "textrange('', 'x\\y')", "textrange('(', ']')",
                "textrange(',', 'z', '[]')", "'(,)'", "textrange('NULL', 'null')", "textrange(E'\\t', 'ü')"));
        m.put("moodrange", List.of("'[sad,happy)'", "'[\"with space\",)'"));
        m.put("posrange", List.of("'[1,5)'"));
        m.put("int4multirange", List.of("'{}'", "'{[1,3),[5,7)}'", "'{(,1],[3,)}'", "'{[1,3),[2,7)}'", "'{empty,[1,2)}'"));
        m.put("int8multirange", List.of("'{}'", "'{[1,3),[5,7)}'"));
        m.put("nummultirange", List.of("'{[1.5,2.5],(3,)}'"));
        m.put("datemultirange", List.of("'{[2024-01-01,2024-02-01),[2024-03-01,infinity)}'"));
        m.put("tsmultirange", List.of("'{[\"2024-01-02 03:04:05.5\",\"2024-01-03 00:00:00\"),[\"2025-01-01 00:00:00\",)}'"));
        m.put("tstzmultirange", List.of("'{[\"2024-01-02 03:04:05+05:30\",\"2024-01-03 00:00:00+00\")}'", "'{}'"));
        m.put("floatmultirange", List.of("'{[1.5,1e20),[1e21,)}'"));
        m.put("textmultirange", List.of("'{[a,b),[\"c d\",\"e,f\")}'"));
        m.put("pair", List.of("ROW(1, 'a b')", "ROW(NULL, '\"x\"')", "ROW(1, '')", "ROW(NULL, NULL)",
                "ROW(2, 'back\\slash (paren), comma [x]')", "ROW(-1, 'NULL')"));
        m.put("everything", List.of("ROW(1, 1.5e-5, 'x y', '2024-01-02 03:04:05+05:30', '[1,5)', '(1,2)', '{1,NULL}', 'with space', 1.50,"
                + " ROW(1, 'q\"'), '\\x00ff', 'a@b')", "ROW(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
                "ROW(-9223372036854775808, 'NaN', '', 'infinity', 'empty', '(1e20,-0)', '{}', '', 'NaN', ROW(NULL, ''), '\\x', '@')"));
        m.put("rowtype", List.of("ROW(1, 'y', '{1.5,1e20}')", "ROW(NULL, '(,)', NULL)"));
        m.put("tsvector", List.of("'a fat cat'", "''", "to_tsvector('english', 'The fat cats ate the fat rats')",
                "'a:1A,2B,3C,4 b:16383'", "$$'it''s' 'back\\slash' 'ünï' 'with space':1$$", "setweight(to_tsvector('simple', 'x y'), 'B')"));
        m.put("tsquery", List.of("'fat & rat'", "'fat & (rat | !cat)'", "'!(a | b)'", "'a <-> b'", "'a <2> (b | c)'",
                "'(a <-> b) <-> c'", "'a <-> (b <-> c)'", "'a:*AB & b:C'", "'a:D'", "$$'it''s' | 'back\\slash'$$",
                "'!a & !(b & c)'", "'a | b & c'", "'(a | b) & c'", "'!!a'", "'a <0> b'", "to_tsquery('english', 'cats & !rats')",
                "phraseto_tsquery('english', 'the fat cats ate')", "''"));
        m.put("xid", List.of("'0'", "'4294967295'", "'1234'"));
        m.put("cid", List.of("'0'", "'4294967295'"));
        m.put("xid8", List.of("'0'", "'9223372036854775807'", "'4294967296'"));
        m.put("int2vector", List.of("'1 2 3'", "''", "'-32768 32767'", "'5'", "(SELECT indkey FROM pg_index WHERE indrelid = 'pg_class'::regclass LIMIT 1)"));
        m.put("oidvector", List.of("'1 2'", "''", "'4294967295 0'"));
        m.put("tid", List.of("'(0,1)'", "'(4294967295,65535)'", "'(12,0)'"));
        m.put("pg_snapshot", List.of("'10:20:10,14,15'", "'10:10:'", "'1:9223372036854775807:5'"));
        m.put("txid_snapshot", List.of("'10:20:10,14,15'", "'10:10:'"));
        m.put("mood", List.of("'sad'", "'with space'", "'quo\"te'", "'NULL'", "'back\\slash'", "'ünï'", "''"));
        m.put("\"Odd Schema\".\"Color\"", List.of("'red'", "'green'"));
        m.put("posint", List.of("1", "2147483647"));
        m.put("posint2", List.of("7"));
        m.put("email", List.of("'a@b.c'", "'ü@ë'"));
        m.put("price", List.of("'12345678.91'", "'-0.01'", "0"));
        m.put("moment", List.of("'2024-01-02 03:04:05.123456+02'", "'infinity'", "'0044-03-15 12:00:00 BC'"));
        m.put("happy_mood", List.of("'happy'", "'with space'"));
        m.put("intlist", List.of("'{1,2,3}'", "'{}'", "'[0:1]={1,NULL}'"));

        // arrays: every type's values as a 1-D array, with a NULL
        Map<String, List<String>> arrays = new LinkedHashMap<>();
        for (Map.Entry<String, List<String>> e : m.entrySet()) {
            String t = e.getKey();
            if (t.equals("intlist")) {
                continue;
            }
            List<String> withNull = new ArrayList<>();
            for (String v : e.getValue()) {
                withNull.add("(" + v + ")::" + t);
            }
            String all = "ARRAY[" + String.join(", ", withNull) + "]";
            arrays.put(t + "[]", List.of(all, "ARRAY[NULL, " + withNull.get(0) + "]", "'{}'",
                    "ARRAY[" + withNull.get(0) + "]", "array_fill(" + withNull.get(0) + ", ARRAY[2, 3], ARRAY[0, -1])"));
        }
        m.putAll(arrays);
        m.put("int4[]", List.of("'{}'", "'{1,2,3}'", "'{{1,2},{3,4}}'", "'[0:2]={1,2,3}'", "'[-5:-4][1:2]={{1,NULL},{3,4}}'",
                "'{NULL}'", "'{NULL,NULL}'", "'{{{1,2},{3,4}},{{5,6},{7,8}}}'", "'{{{{{{1}}}}}}'", "'[-2147483648:-2147483647]={5,6}'",
                "ARRAY[-2147483648, 2147483647]"));
        m.put("text[]", List.of("'{\"\",NULL,\"NULL\",\"a b\",\"q\\\"uote\",\"back\\\\slash\",\"{}\",\",\",ü}'", "'{{a,b},{c,NULL}}'",
                "ARRAY[E'tab\\there', E'nl\\n', ' lead', 'trail ', 'nUlL', E'\\\\', '\"']", "'{  spaced  ,  \" q \"  }'",
                "'[1:1][3:4]={{x,y}}'"));
        m.put("mood[]", List.of("'{sad,NULL,\"with space\",\"quo\\\"te\",\"NULL\",\"back\\\\slash\",ünï,\"\"}'", "'{{sad,ok},{happy,NULL}}'"));
        m.put("posint[]", List.of("'{1,2,NULL}'", "'[0:0]={5}'"));
        m.put("email[]", List.of("'{a@b,NULL}'"));
        m.put("numeric[]", List.of("'{NaN,1.5,-0.001,1e20,NULL}'", "'{{1,2},{3,4}}'"));
        return m;
    }

    /** Types without a codec: text only, values kept as their text. */
    private static Map<String, List<String>> fallbackCases() {
        Map<String, List<String>> m = new LinkedHashMap<>();
        m.put("regclass", List.of("'pg_class'"));
        m.put("regtype", List.of("'int4'"));
        m.put("regclass[]", List.of("ARRAY['pg_class'::regclass, NULL]"));
        return m;
    }

    // ------------------------------------------------------------------ tests

    @ParameterizedTest(name = "PostgreSQL {0}")
    @ValueSource(ints = {17, 15, 14})
    void builtinTableMatchesTheCatalog(int major) throws Exception {
        try (Connection c = connect(major)) {
            CatalogResolver catalog = new CatalogResolver(c);
            int known = 0;
            for (int oid = 1; oid < 10000; oid++) {
                TypeInfo ours = Codecs.builtin(oid);
                if (ours != null) {
                    known++;
                    assertThat(catalog.resolve(oid)).as("pg_type of oid %d", oid).isEqualTo(ours);
                    assertThat(Codecs.builtins().resolve(oid)).isSameAs(ours);
                }
            }
            assertThat(known).isEqualTo(2 * 60);
        }
    }

    @ParameterizedTest(name = "PostgreSQL {0}")
    @ValueSource(ints = {17, 15, 14})
    void textAndBinaryDecodeAlikeAndToPgTextRoundTripsThroughTheServer(int major) throws Exception {
        List<String> failures = new ArrayList<>();
        int checked = 0;
        try (Connection c = connect(major)) {
            CatalogResolver catalog = new CatalogResolver(c);
            boolean xml = supportsXml(c);
            for (Map.Entry<String, List<String>> e : cases(major, xml).entrySet()) {
                checked += check(c, catalog, e.getKey(), e.getValue(), failures, true);
            }
            // the zone-dependent types under zones with odd offsets (+05:30, -03:30, LMT -04:56:02, +00:19:32, +13:45)
            for (String zone : ZONES) {
                exec(c, "SET TimeZone = '" + zone + "'");
                for (String t : List.of("timestamptz", "timestamptz[]", "timetz", "moment", "tstzrange", "tstzmultirange", "tstzrange[]")) {
                    checked += check(c, catalog, t + " @" + zone, cases(major, xml).get(t), failures, true);
                }
            }
            exec(c, "SET TimeZone = 'UTC'");
            // the old bytea escape output format decodes too
            exec(c, "SET bytea_output = 'escape'");
            checked += check(c, catalog, "bytea", cases(major, xml).get("bytea"), failures, true);
            checked += check(c, catalog, "bytea[]", cases(major, xml).get("bytea[]"), failures, true);
            exec(c, "SET bytea_output = 'hex'");
            for (Map.Entry<String, List<String>> e : fallbackCases().entrySet()) {
                checked += check(c, catalog, e.getKey(), e.getValue(), failures, false);
            }
        }
        assertThat(failures).as("%d values checked on PostgreSQL %d", checked, major).isEmpty();
        assertThat(checked).isGreaterThan(500);
    }

    @ParameterizedTest(name = "PostgreSQL {0}")
    @ValueSource(ints = {17, 15, 14})
    void randomValuesDecodeAlike(int major) throws Exception {
        long seed = Long.getLong("millrace.seed", System.nanoTime());
        System.out.println("CodecsIT.randomValuesDecodeAlike seed=" + seed + " (rerun with -Dmillrace.seed=" + seed + ")");
        Random r = new Random(seed);
        Map<String, List<String>> m = new LinkedHashMap<>();
        List<String> numerics = new ArrayList<>();
        List<String> floats = new ArrayList<>();
        List<String> timestamps = new ArrayList<>();
        List<String> intervals = new ArrayList<>();
        List<String> inets = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            BigInteger unscaled = new BigInteger(1 + r.nextInt(400), r);
            BigDecimal d = new BigDecimal(r.nextBoolean() ? unscaled : unscaled.negate(), r.nextInt(200) - 60);
            numerics.add("'" + d.toString() + "'");
            double f = Double.longBitsToDouble(r.nextLong());
            floats.add("'" + f + "'");
            long micros = (long) (r.nextDouble() * 2e17) - 21_000_000_000_000_000L + r.nextInt(1_000_000);
            timestamps.add("to_timestamp(0) + make_interval(secs => " + Math.floorDiv(micros, 1_000_000) + ") + make_interval(secs => "
                    + Math.floorMod(micros, 1_000_000) + " / 1000000.0)");
            intervals.add("make_interval(months => " + (r.nextInt(2_000_000) - 1_000_000) + ", days => " + (r.nextInt(200_000) - 100_000)
                    + ") + make_interval(secs => " + (r.nextLong() % 100_000_000_000L) + " / 1000000.0)");
            byte[] a = new byte[16];
            r.nextBytes(a);
            for (int k = 0; k < 16; k++) {
                if (r.nextInt(3) == 0) {
                    a[k] = 0;
                }
            }
            StringBuilder v6 = new StringBuilder();
            for (int k = 0; k < 16; k += 2) {
                v6.append(k == 0 ? "" : ":").append(Integer.toHexString(((a[k] & 0xff) << 8) | (a[k + 1] & 0xff)));
            }
            inets.add("'" + v6 + "/" + r.nextInt(129) + "'");
        }
        m.put("numeric", numerics);
        m.put("float8", floats);
        List<String> points = new ArrayList<>();
        for (int i = 0; i + 1 < floats.size(); i += 2) {
            points.add("point(" + floats.get(i) + "::float8, " + floats.get(i + 1) + "::float8)");
        }
        for (int i = 0; i < 100; i++) { // short decimals and the ties between doubles, where shortest digits are subtle
            points.add("point('" + (r.nextInt(2000) - 1000) + "e" + (r.nextInt(600) - 300) + "'::float8, '" + r.nextInt(10)
                    + "e" + (r.nextInt(40) - 20) + "'::float8)");
        }
        m.put("point", points);
        m.put("timestamptz", timestamps);
        m.put("interval", intervals);
        m.put("inet", inets);
        List<String> failures = new ArrayList<>();
        try (Connection c = connect(major)) {
            CatalogResolver catalog = new CatalogResolver(c);
            exec(c, "SET TimeZone = 'America/New_York'");
            for (Map.Entry<String, List<String>> e : m.entrySet()) {
                check(c, catalog, e.getKey(), e.getValue(), failures, true);
            }
        }
        assertThat(failures).as("seed " + seed).isEmpty();
    }

    // ------------------------------------------------------------------ the check

    /**
     * For each value: decodeText(v::text) equals decodeBinary(typsend(v)), and encodeBinary of it is typsend(v) byte for
     * byte where the codec encodes binary; decodeText(toPgText(value))
     * equals the value; the server, given toPgText(value), prints v::text again; writeJson writes
     * valid JSON. Returns the number of values checked.
     */
    private static int check(Connection c, CatalogResolver catalog, String label, List<String> exprs, List<String> failures,
            boolean binary) throws SQLException {
        String type = label.contains(" @") ? label.substring(0, label.indexOf(" @")) : label;
        int oid = catalog.oidOf(type);
        TypeInfo info = catalog.resolve(oid);
        TypeCodec codec = Codecs.forType(info, catalog);
        if (codec.supportsBinary() != binary) {
            failures.add(label + ": supportsBinary() is " + codec.supportsBinary());
            return 0;
        }
        String send;
        String arg = "v";
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT typsend::regproc::text, CASE WHEN typtype = 'd' THEN format_type(typbasetype, NULL) END FROM pg_type WHERE oid = ?")) {
            ps.setLong(1, oid & 0xFFFFFFFFL);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                send = rs.getString(1);
                if (rs.getString(2) != null) {
                    arg = "v::" + rs.getString(2); // polymorphic send functions (enum_send) need the base type
                }
            }
        }
        StringBuilder sql = new StringBuilder("SELECT format('%s', v), ").append(binary ? send + "(" + arg + ")" : "NULL::bytea")
                .append(" FROM (VALUES ");
        for (int i = 0; i < exprs.size(); i++) {
            sql.append(i == 0 ? "" : ", ").append('(').append(i).append(", (").append(exprs.get(i)).append(")::").append(type).append(')');
        }
        sql.append(") t(i, v) ORDER BY i");
        List<String> texts = new ArrayList<>();
        List<Object> values = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql.toString())) {
            int i = 0;
            while (rs.next()) {
                String expr = exprs.get(i++);
                String text = rs.getString(1);
                String where = label + " " + expr + " (server text '" + text + "')";
                Object fromText;
                try {
                    fromText = codec.decodeText(text);
                } catch (RuntimeException ex) {
                    failures.add(where + ": decodeText failed: " + ex);
                    continue;
                }
                if (binary) {
                    byte[] bytes = rs.getBytes(2);
                    try {
                        Object fromBinary = codec.decodeBinary(bytes, 0, bytes.length);
                        if (!Objects.deepEquals(fromText, fromBinary)) {
                            failures.add(where + ": text gives " + show(fromText) + " but binary gives " + show(fromBinary));
                        }
                        // what the postgres destination COPYs in binary: exactly the server's own send form
                        if (codec.encodesBinary() && !java.util.Arrays.equals(bytes, codec.encodeBinary(fromText))) {
                            failures.add(where + ": encodeBinary gives " + show(codec.encodeBinary(fromText)) + ", the server sends "
                                    + show(bytes));
                        }
                    } catch (RuntimeException ex) {
                        failures.add(where + ": decodeBinary failed: " + ex);
                    }
                }
                String pgText;
                try {
                    pgText = codec.toPgText(fromText);
                    Object again = codec.decodeText(pgText);
                    if (!Objects.deepEquals(fromText, again)) {
                        failures.add(where + ": toPgText gives '" + pgText + "' which decodes to " + show(again));
                    }
                    StringWriter w = new StringWriter();
                    try (JsonGenerator g = JSON.getFactory().createGenerator(w)) {
                        codec.writeJson(g, fromText);
                    }
                    com.fasterxml.jackson.databind.JsonNode json = JSON.readTree(w.toString());
                    boolean utc = !label.contains(" @") || label.endsWith(" @UTC");
                    if (utc && JSON_IS_SERVER_TEXT.contains(type) && !(json.isTextual() && json.asText().equals(text))) {
                        failures.add(where + ": JSON " + json + " is not the server's text");
                    }
                } catch (Exception ex) {
                    failures.add(where + ": toPgText/writeJson failed: " + ex);
                    continue;
                }
                texts.add(text);
                values.add(pgText);
            }
            if (i != exprs.size()) {
                failures.add(label + ": server returned " + i + " rows for " + exprs.size() + " values");
            }
        } catch (SQLException ex) {
            failures.add(label + ": the test's query failed: " + ex.getMessage());
            return 0;
        }
        // the server reads our text back as the same value
        String back = "SELECT format('%s', CAST(u AS " + type + ")) FROM unnest(?::text[]) WITH ORDINALITY AS t(u, i) ORDER BY i";
        try (PreparedStatement ps = c.prepareStatement(back)) {
            Array arr = c.createArrayOf("text", values.toArray());
            ps.setArray(1, arr);
            try (ResultSet rs = ps.executeQuery()) {
                for (int i = 0; rs.next(); i++) {
                    if (!Objects.equals(texts.get(i), rs.getString(1))) {
                        failures.add(label + ": toPgText '" + values.get(i) + "' reads back as '" + rs.getString(1)
                                + "', expected '" + texts.get(i) + "'");
                    }
                }
            }
        } catch (SQLException ex) {
            failures.add(label + ": the server rejects our toPgText output " + values + ": " + ex.getMessage());
        }
        return texts.size();
    }

    private static String show(Object v) {
        if (v instanceof byte[] b) {
            return "bytes" + java.util.Arrays.toString(b);
        }
        return v == null ? "null" : v.getClass().getSimpleName() + "(" + v + ")";
    }

    private Connection connect(int major) throws SQLException {
        Connection c = servers.get(major).connect("postgres");
        exec(c, "SET DateStyle = 'ISO, MDY'", "SET IntervalStyle = 'postgres'", "SET extra_float_digits = 3",
                "SET lc_monetary = 'C'", "SET TimeZone = 'UTC'", "SET bytea_output = 'hex'", "SET client_encoding = 'UTF8'");
        return c;
    }

    private static void exec(Connection c, String... sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            for (String q : sql) {
                s.execute(q);
            }
        }
    }

    private static boolean supportsXml(Connection c) {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT '<x/>'::xml::text")) {
            return rs.next();
        } catch (SQLException e) {
            return false;
        }
    }
}
