package io.millrace.engine.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import io.millrace.core.MillraceException;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static io.millrace.engine.e2e.E2e.JSON;
import static io.millrace.engine.e2e.E2e.q;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every supported type, with its edge values, through the whole engine: snapshot rows, then rows
 * inserted, updated (one leaving a TOASTed value unchanged) and deleted while streaming, into a
 * postgres destination (compared with the source column by column as text) and a jsonl destination
 * (each line JSON; chosen columns in their documented JSON form). On PostgreSQL 14, 15 and 17, with
 * values in binary and in text.
 */
class TypesEndToEndIT {
    private static final Duration WAIT = Duration.ofSeconds(60);

    /** One server per major, started on first use; the previous major's is stopped then. */
    private static final Map<Integer, EmbeddedPg> SERVERS = new HashMap<>();

    static EmbeddedPg server(int major) {
        E2e.init();
        EmbeddedPg pg = SERVERS.get(major);
        if (pg == null) {
            SERVERS.values().forEach(EmbeddedPg::close);
            SERVERS.clear();
            pg = EmbeddedPg.builder().major(major).start();
            SERVERS.put(major, pg);
        }
        return pg;
    }

    @AfterAll
    static void stopServers() {
        SERVERS.values().forEach(EmbeddedPg::close);
        SERVERS.clear();
    }

    static Stream<Arguments> cases() {
        return Stream.of(Arguments.of(14, "on"), Arguments.of(14, "off"), Arguments.of(15, "on"), Arguments.of(15, "off"),
                Arguments.of(17, "on"), Arguments.of(17, "off"));
    }

    // ------------------------------------------------------------------ the columns and their values

    /**
     * A column: its type and a list of SQL expressions; row k takes value k modulo the list's length.
     * {@code json} (parallel to {@code values}, may be null or hold nulls) is the JSON form each value
     * must take in the events (docs/EVENTS.md, "Column values"; the codecs' writeJson).
     */
    record Col(String name, String type, List<String> values, List<String> json) {
        String value(int row) {
            return values.get(row % values.size());
        }

        String json(int row) {
            return json == null ? null : json.get(row % values.size());
        }
    }

    private static Col col(String name, String type, String... values) {
        return new Col(name, type, List.of(values), null);
    }

    /** A column whose values are all string literals, with the JSON form of each ({@code null}: not checked). */
    private static Col colJson(String name, String type, String[] values, String... json) {
        if (json.length != values.length) {
            throw new IllegalArgumentException(name + ": " + values.length + " values but " + json.length + " JSON forms");
        }
        return new Col(name, type, List.of(values), java.util.Arrays.asList(json));
    }

    private static String[] lits(String... s) {
        return Stream.of(s).map(E2e::q).toArray(String[]::new);
    }

    private static String str(String s) {
        try {
            return JSON.writeValueAsString(s);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static String epochDay(int year, int month, int day) {
        return Long.toString(LocalDate.of(year, month, day).toEpochDay());
    }

    private static String epochMicros(LocalDateTime t) {
        // not a long for the largest timestamps: PostgreSQL counts from 2000, the JSON form from 1970
        return java.math.BigInteger.valueOf(t.toEpochSecond(ZoneOffset.UTC)).multiply(java.math.BigInteger.valueOf(1_000_000))
                .add(java.math.BigInteger.valueOf(t.getNano() / 1000)).toString();
    }

    static final String HUGE = "9".repeat(1000) + "." + "9".repeat(300);
    static final String TINY = "0." + "0".repeat(999) + "1";

    static final List<Col> COLUMNS = List.of(
            colJson("c_bool", "bool", lits("true", "false"), "true", "false"),
            colJson("c_int2", "int2", lits("-32768", "32767", "0"), "-32768", "32767", "0"),
            colJson("c_int4", "int4", lits("-2147483648", "2147483647", "0"), "-2147483648", "2147483647", "0"),
            colJson("c_int8", "int8", lits("-9223372036854775808", "9223372036854775807", "0"),
                    "-9223372036854775808", "9223372036854775807", "0"),
            colJson("c_oid", "oid", lits("0", "4294967295", "1"), "0", "4294967295", "1"),
            colJson("c_float4", "float4", lits("NaN", "Infinity", "-Infinity", "3.4028235e38", "1.1754944e-38", "-0", "0.1", "1e-45"),
                    str("NaN"), str("Infinity"), str("-Infinity"), "3.4028235e38", "1.1754944e-38", null, "0.1", "1e-45"),
            colJson("c_float8", "float8", lits("NaN", "Infinity", "-Infinity", "1.7976931348623157e308", "5e-324", "-0", "0.1",
                            "2.2250738585072014e-308"),
                    str("NaN"), str("Infinity"), str("-Infinity"), "1.7976931348623157e308", "5e-324", null, "0.1",
                    "2.2250738585072014e-308"),
            colJson("c_numeric", "numeric", lits("NaN", "Infinity", "-Infinity", HUGE, TINY, "-0.000", "123.4500",
                            "-12345678901234567890.123456789"),
                    str("NaN"), str("Infinity"), str("-Infinity"), str(HUGE), str(TINY), str("0.000"), str("123.4500"),
                    str("-12345678901234567890.123456789")),
            col("c_numeric_12_2", "numeric(12,2)", lits("NaN", "9999999999.99", "-9999999999.99", "0.00", "0.01")),
            colJson("c_text", "text", lits("", "Grüße, 日本語 🎉 ünïcödé", "back\\slash \\\\ and \\N and \\x41", "quotes ' and \" and ''",
                            "tab\there\nnewline\r\ncrlf", "NULL", " "),
                    str(""), str("Grüße, 日本語 🎉 ünïcödé"), str("back\\slash \\\\ and \\N and \\x41"), str("quotes ' and \" and ''"),
                    str("tab\there\nnewline\r\ncrlf"), str("NULL"), str(" ")),
            col("c_varchar", "varchar(10)", lits("", "0123456789", "ñ日本語🎉abcde", "a\\b", "\t")),
            colJson("c_bpchar", "char(5)", lits("ab", "", "abcde", "é日"), str("ab   "), str("     "), str("abcde"), str("é日   ")),
            col("c_name", "name", lits("pg_catalog", "n".repeat(63), "Ünïcode name")),
            colJson("c_bytea", "bytea", lits("\\x", "\\x00ff10", "\\xdeadbeef00"), str(""), str("AP8Q"),
                    str(Base64.getEncoder().encodeToString(new byte[] {(byte) 0xde, (byte) 0xad, (byte) 0xbe, (byte) 0xef, 0}))),
            colJson("c_uuid", "uuid", lits("00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
                            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"),
                    str("00000000-0000-0000-0000-000000000000"), str("ffffffff-ffff-ffff-ffff-ffffffffffff"),
                    str("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")),
            colJson("c_json", "json", lits("{\"a\": 1,  \"b\": [true, null]}", "[]", "\"\\u00e9 str\"", "null", "{\"k\":\"v\",\"k\":\"dup\"}"),
                    str("{\"a\": 1,  \"b\": [true, null]}"), str("[]"), str("\"\\u00e9 str\""), str("null"), str("{\"k\":\"v\",\"k\":\"dup\"}")),
            colJson("c_jsonb", "jsonb", lits("{\"a\": 1,  \"b\": [true, null]}", "[]", "\"\\u00e9 str \\\\ \\\"q\\\"\"", "null",
                            "{\"k\":\"v\",\"k\":\"dup\", \"n\": 1.50}"),
                    str("{\"a\": 1, \"b\": [true, null]}"), str("[]"), str("\"é str \\\\ \\\"q\\\"\""), str("null"),
                    str("{\"k\": \"dup\", \"n\": 1.50}")),
            colJson("c_date", "date", lits("4713-01-01 BC", "5874897-12-31", "infinity", "-infinity", "2000-02-29", "1970-01-01"),
                    epochDay(-4712, 1, 1), epochDay(5874897, 12, 31), str("infinity"), str("-infinity"), epochDay(2000, 2, 29), "0"),
            colJson("c_time", "time", lits("24:00:00", "00:00:00", "23:59:59.999999", "12:34:56.000001"),
                    "86400000000", "0", "86399999999", "45296000001"),
            colJson("c_timetz", "timetz", lits("24:00:00+00", "00:00:00-15:59", "12:34:56.789012+05:30", "23:59:59.999999+15:59"),
                    null, str("15:59:00.000000Z"), str("07:04:56.789012Z"), str("08:00:59.999999Z")),
            colJson("c_timestamp", "timestamp", lits("4713-01-01 00:00:00 BC", "294276-12-31 23:59:59.999999", "infinity", "-infinity",
                            "2024-02-29 12:00:00.000001", "1970-01-01 00:00:00"),
                    epochMicros(LocalDateTime.of(-4712, 1, 1, 0, 0)), epochMicros(LocalDateTime.of(294276, 12, 31, 23, 59, 59, 999_999_000)),
                    str("infinity"), str("-infinity"), epochMicros(LocalDateTime.of(2024, 2, 29, 12, 0, 0, 1000)), "0"),
            colJson("c_timestamptz", "timestamptz", lits("4713-01-01 00:00:00+00 BC", "294276-12-31 23:59:59.999999+00", "infinity",
                            "-infinity", "2024-02-29 12:00:00.000001+05:30", "1969-12-31 23:59:59.999999+00"),
                    str("-4712-01-01T00:00:00Z"), str("+294276-12-31T23:59:59.999999Z"), str("infinity"), str("-infinity"),
                    str("2024-02-29T06:30:00.000001Z"), str("1969-12-31T23:59:59.999999Z")),
            colJson("c_interval", "interval", lits("-1 years -2 mons +3 days -04:05:06.789", "178000000 years", "-178000000 years",
                            "1 day -1 second", "0", "-00:00:00.000001"),
                    str("P-1Y-2M3DT-4H-5M-6.789S"), str("P178000000Y"), str("P-178000000Y"), str("P1DT-1S"), str("PT0S"),
                    str("PT-0.000001S")),
            colJson("c_inet", "inet", lits("::1", "2001:db8::ff00:42:8329/64", "192.168.0.1/24", "0.0.0.0/0", "::ffff:1.2.3.4"),
                    str("::1"), str("2001:db8::ff00:42:8329/64"), str("192.168.0.1/24"), str("0.0.0.0/0"), str("::ffff:1.2.3.4")),
            colJson("c_cidr", "cidr", lits("10.0.0.0/8", "2001:db8::/32", "::/0", "192.168.1.255/32"),
                    str("10.0.0.0/8"), str("2001:db8::/32"), str("::/0"), str("192.168.1.255/32")),
            col("c_macaddr", "macaddr", lits("08:00:2b:01:02:03", "ff:ff:ff:ff:ff:ff", "00:00:00:00:00:00")),
            col("c_macaddr8", "macaddr8", lits("08:00:2b:01:02:03:04:05", "ff:ff:ff:ff:ff:ff:ff:ff")),
            colJson("c_bit", "bit(8)", lits("10101010", "00000000", "11111111"), str("10101010"), str("00000000"), str("11111111")),
            col("c_varbit", "varbit", lits("", "1", "10".repeat(50))),
            colJson("c_money", "money", lits("-92233720368547758.08", "92233720368547758.07", "0", "1234.56"),
                    str("-92233720368547758.08"), str("92233720368547758.07"), str("0.00"), str("1234.56")),
            colJson("c_int2vector", "int2vector", lits("1 2 3", "", "-32768"), "[1,2,3]", "[]", "[-32768]"),
            colJson("c_oidvector", "oidvector", lits("4294967295 0", "26"), "[4294967295,0]", "[26]"),
            col("c_xml", "xml", lits("<a b=\"1\">x &amp; y</a>", "text <b/> fragment", "<r>日本語 🎉</r>")),
            colJson("c_enum", "e2e_mood", lits("sad", "it's \"complicated\", really", "happy"),
                    str("sad"), str("it's \"complicated\", really"), str("happy")),
            colJson("c_posint", "e2e_posint", lits("1", "2147483647"), "1", "2147483647"),
            colJson("c_label", "e2e_label", lits("", "domain text ✓"), str(""), str("domain text ✓")),
            colJson("a_int4", "int4[]", lits("{}", "{1,NULL,-2147483648,2147483647}", "[0:2]={1,2,3}", "{NULL}"),
                    "[]", "[1,null,-2147483648,2147483647]", null, "[null]"),
            new Col("a_text", "text[]", List.of("ARRAY['a,b', 'q\"uote', 'back\\slash', NULL, '', 'NULL', ' spaced ', '{braces}', 'uni 🎉']",
                    "'{}'", "ARRAY[NULL]::text[]"),
                    List.of("[\"a,b\",\"q\\\"uote\",\"back\\\\slash\",null,\"\",\"NULL\",\" spaced \",\"{braces}\",\"uni 🎉\"]", "[]", "[null]")),
            colJson("a_int2d", "int[][]", lits("{{1,2},{3,4}}", "{{NULL,2},{3,NULL}}", "{{1,2,3}}"),
                    "[[1,2],[3,4]]", "[[null,2],[3,null]]", "[[1,2,3]]"),
            new Col("a_timestamptz", "timestamptz[]", List.of("ARRAY['infinity','-infinity','2024-01-01 00:00:00.5+00', NULL]::timestamptz[]",
                    "'{}'"), List.of("[\"infinity\",\"-infinity\",\"2024-01-01T00:00:00.500000Z\",null]", "[]")),
            colJson("a_numeric", "numeric[]", lits("{NaN,Infinity,-Infinity,1.50,-0.000001,NULL}", "{}"),
                    "[\"NaN\",\"Infinity\",\"-Infinity\",\"1.50\",\"-0.000001\",null]", "[]"),
            new Col("a_enum", "e2e_mood[]", List.of("ARRAY['sad', 'it''s \"complicated\", really', NULL]::e2e_mood[]", "'{}'"),
                    List.of("[\"sad\",\"it's \\\"complicated\\\", really\",null]", "[]")),
            col("c_big", "text", "NULL"),
            col("c_bigjson", "jsonb", "NULL"));

    /** Rows the value lists produce before they repeat. */
    static final int N = COLUMNS.stream().mapToInt(c -> c.values().size()).max().orElseThrow();

    /**
     * Composite, range, multirange, geometric, text-search and pg_lsn columns and arrays of them, in
     * a table of their own, replicated in binary and in text alike.
     */
    static final String OTHER_TABLE = "CREATE TABLE public.other_types (id int PRIMARY KEY, c_tsvector tsvector, c_tsquery tsquery,"
            + " c_point point, c_line line, c_lseg lseg, c_box box, c_path path, c_polygon polygon, c_circle circle, c_lsn pg_lsn,"
            + " c_range int4range, c_numrange numrange, c_tstzrange tstzrange, c_daterange daterange, c_multi int4multirange,"
            + " c_userrange public.e2e_floatrange, c_pair public.e2e_pair, a_box box[], a_range int4range[], a_pair public.e2e_pair[],"
            + " a_point point[], a_multi int4multirange[], a_tsvector tsvector[])";

    static final String OTHER_ROWS = "INSERT INTO public.other_types VALUES"
            + " (1, 'a fat cat sat:2B on a mat', 'fat & (rat | !cat)', '(1.5,-2)', '{1,-1,0.5}', '[(0,0),(1,1e20)]', '(1,1),(0,0)',"
            + " '[(0,0),(1,1),(2,0)]', '((0,0),(1,1),(2,0))', '<(1,2),0.1>', '16/B374D848', '[1,10)', '(1.50,2.5]',"
            + " '[\"2024-01-02 03:04:05+05:30\",)', '[2024-01-01,infinity)', '{[1,3),[5,7)}', '[1.5,1e20)',"
            + " ROW(1, 'a \"b\", c', '[1,5)'), ARRAY['(1,1),(0,0)', '(3,3),(2,2)']::box[], ARRAY['[1,2)', 'empty', NULL]::int4range[],"
            + " ARRAY[ROW(2, '', NULL)::public.e2e_pair, NULL], ARRAY[point(0.1, '-0'::float8), NULL], ARRAY['{}', '{(,1)}']::int4multirange[],"
            + " ARRAY['x:1A', '']::tsvector[]),"
            + " (2, '', '', '(0,0)', '{0,1,-1e-300}', '[(0,0),(0,0)]', '(0,0),(0,0)', '((NaN,Infinity))', '((-Infinity,0))',"
            + " '<(0,0),0>', '0/0', 'empty', '(,)', '(,infinity]', 'empty', '{}', 'empty', ROW(NULL, NULL, NULL), '{}', '{}', '{}', '{}',"
            + " '{}', '{}'),"
            + " (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
            + " NULL, NULL, NULL)";

    /** A type Millrace still reads only as text: binary: on refuses a table with it. */
    static final String TEXT_ONLY_TABLE = "CREATE TABLE public.text_only (id int PRIMARY KEY, c_regclass regclass)";

    static String createTable() {
        return "CREATE TABLE public.all_types (id int PRIMARY KEY, "
                + COLUMNS.stream().map(c -> c.name() + " " + c.type()).collect(Collectors.joining(", ")) + ")";
    }

    static String insert(int id, int row) {
        return "INSERT INTO public.all_types (id, " + COLUMNS.stream().map(Col::name).collect(Collectors.joining(", "))
                + ") VALUES (" + id + ", " + COLUMNS.stream().map(c -> c.value(row)).collect(Collectors.joining(", ")) + ")";
    }

    static String insertNulls(int id) {
        return "INSERT INTO public.all_types (id) VALUES (" + id + ")";
    }

    /** A row whose text and jsonb are far beyond 8 kB and incompressible: stored out of line (TOAST). */
    static String insertToasted(int id, long seed) {
        Random r = new Random(seed);
        byte[] bytes = new byte[12_000];
        r.nextBytes(bytes);
        String big = Base64.getEncoder().encodeToString(bytes);
        r.nextBytes(bytes);
        String bigJson = "{\"blob\": \"" + Base64.getEncoder().encodeToString(bytes) + "\", \"n\": " + id + "}";
        return "INSERT INTO public.all_types (id, c_int4, c_text, c_big, c_bigjson) VALUES (" + id + ", " + id + ", 'toast', "
                + q(big) + ", " + q(bigJson) + ")";
    }

    static String updateAll(int id, int row) {
        return "UPDATE public.all_types SET " + COLUMNS.stream().filter(c -> !c.name().startsWith("c_big"))
                .map(c -> c.name() + " = " + c.value(row)).collect(Collectors.joining(", ")) + " WHERE id = " + id;
    }

    static String updateToNull(int id) {
        return "UPDATE public.all_types SET " + COLUMNS.stream().map(c -> c.name() + " = NULL").collect(Collectors.joining(", "))
                + " WHERE id = " + id;
    }

    // ------------------------------------------------------------------ the test

    @ParameterizedTest(name = "PostgreSQL {0}, source.binary {1}")
    @MethodSource("cases")
    void everyTypeArrivesAsInTheSource(int major, String binary, @TempDir Path dir) throws Exception {
        EmbeddedPg pg = server(major);
        String src = "types_" + binary;
        String dst = "types_" + binary + "_dst";
        pg.createDatabase(src);
        pg.createDatabase(dst);
        // Session defaults far from the usual ones, on both sides: the engine must read and write the
        // same values whatever the databases' settings (pgjdbc fixes DateStyle and extra_float_digits
        // at connect; these others it leaves to the server).
        for (String db : List.of(src, dst)) {
            pg.execute("postgres", "ALTER DATABASE " + db + " SET IntervalStyle = 'iso_8601'",
                    "ALTER DATABASE " + db + " SET bytea_output = 'escape'",
                    "ALTER DATABASE " + db + " SET TimeZone = 'Asia/Kathmandu'",
                    "ALTER DATABASE " + db + " SET DateStyle = 'SQL, DMY'",
                    "ALTER DATABASE " + db + " SET extra_float_digits = 0");
        }
        List<String> tables = List.of("public.all_types", "public.other_types");
        Path events = dir.resolve("events");

        try (Connection s = pg.connect(src); Connection d = pg.connect(dst)) {
            assertThat(E2e.queryString(d, "SHOW bytea_output")).isEqualTo("escape");
            assertThat(E2e.queryString(s, "SHOW IntervalStyle")).isEqualTo("iso_8601");
            E2e.exec(s, "CREATE TYPE public.e2e_mood AS ENUM ('sad', 'it''s \"complicated\", really', 'happy')",
                    "CREATE DOMAIN public.e2e_posint AS int4 CHECK (VALUE > 0)",
                    "CREATE DOMAIN public.e2e_label AS text",
                    "CREATE TYPE public.e2e_floatrange AS RANGE (subtype = float8)",
                    "CREATE TYPE public.e2e_pair AS (a int4, b text, r int4range)",
                    createTable(), OTHER_TABLE, TEXT_ONLY_TABLE);
            // the snapshot: rows 1..N, a row of NULLs, a TOASTed row
            for (int k = 0; k < N; k++) {
                E2e.exec(s, insert(1 + k, k));
            }
            E2e.exec(s, insertNulls(50), insertToasted(60, 60));
            E2e.exec(s, OTHER_ROWS);

            if (binary.equals("on")) {
                // With a text-only type in the publication, binary: on refuses to start, naming the column.
                String refused = E2e.yaml(pg, src, "types_refused", List.of("public.all_types", "public.other_types",
                        "public.text_only"), "on", dst, dir.resolve("refused"));
                RunningEngine r = RunningEngine.start(refused, dir);
                Throwable t = r.awaitEnd(WAIT);
                assertThat(t).isInstanceOf(MillraceException.class).hasMessageContaining("source.binary")
                        .hasMessageContaining("text_only.c_regclass");
                assertThat(((MillraceException) t).kind()).isEqualTo(MillraceException.Kind.CONFIG);
            }

            String yaml = E2e.yaml(pg, src, "types_" + binary, tables, binary, dst, events);
            try (RunningEngine engine = RunningEngine.start(yaml, dir)) {
                engine.awaitStreaming(WAIT);
                // streamed: the same values again, a NULL row and a TOASTed row
                List<String> inserts = new ArrayList<>();
                for (int k = 0; k < N; k++) {
                    inserts.add(insert(101 + k, k));
                }
                inserts.add(insertNulls(150));
                inserts.add(insertToasted(160, 160));
                E2e.tx(s, inserts.toArray(String[]::new));
                E2e.tx(s, updateAll(1, 1));                                  // every column changes (TOAST columns stay NULL)
                E2e.exec(s, "UPDATE public.all_types SET c_int4 = 42 WHERE id = 60"); // TOASTed columns unchanged (snapshot row)
                E2e.exec(s, "UPDATE public.all_types SET c_int2 = 7 WHERE id = 160"); // TOASTed columns unchanged (streamed row)
                E2e.tx(s, updateAll(50, 0), updateToNull(102));              // NULLs to values and back
                E2e.exec(s, "UPDATE public.all_types SET id = 3000 WHERE id = 3"); // the key changes
                E2e.tx(s, "DELETE FROM public.all_types WHERE id = 2", "DELETE FROM public.all_types WHERE id = 103",
                        "DELETE FROM public.all_types WHERE id = 160");
                E2e.exec(s, OTHER_ROWS.replace("(1, 'a fat", "(11, 'a fat").replace("(2, '', '', '(0,0)'", "(12, '', '', '(0,0)'")
                                .replace("(3, NULL", "(13, NULL"),
                        "UPDATE public.other_types SET c_point = '(9,9)', c_pair = ROW(3, 'u', '(,5]'), c_range = '(,5]',"
                                + " a_box = ARRAY['(0,0),(-1,-1)']::box[] WHERE id = 1");
                E2e.exec(s, "INSERT INTO public.all_types (id, c_text) VALUES (999, 'last')");

                E2e.awaitSame(s, d, E2e.refs(tables), WAIT);
                List<JsonNode> all = E2e.awaitEvent(events, e -> E2e.isTable(e, "all_types") && E2e.row(e).path("id").asInt() == 999,
                        "for the last insert (id 999)", WAIT);
                checkEvents(all);
            }
        }
    }

    /** The JSON forms of the chosen columns, in snapshot reads and streamed inserts, and the TOAST placeholder. */
    private static void checkEvents(List<JsonNode> all) throws Exception {
        Map<String, JsonNode> byOpAndId = new HashMap<>();
        for (JsonNode e : all) {
            if (E2e.isTable(e, "all_types")) {
                String key = e.path("op").asText() + ":" + E2e.row(e).path("id").asInt();
                // the last event for a key wins (id 1 is read by the snapshot and later updated: "r:1", "u:1")
                byOpAndId.put(key, e);
            }
        }
        for (int k = 0; k < N; k++) {
            checkRow(byOpAndId, "r:" + (1 + k), k);
            checkRow(byOpAndId, "c:" + (101 + k), k); // 103 was deleted later; its insert event stays
        }
        checkRow(byOpAndId, "u:1", 1);
        checkRow(byOpAndId, "u:50", 0);

        // NULLs everywhere: every column is present, and null
        for (String key : List.of("r:50", "c:150", "u:102")) {
            JsonNode after = event(byOpAndId, key).path("after");
            for (Col c : COLUMNS) {
                assertThat(after.has(c.name())).as("%s: field %s present", key, c.name()).isTrue();
                assertThat(after.get(c.name()).isNull()).as("%s: %s is null", key, c.name()).isTrue();
            }
        }

        // TOASTed and unchanged: the documented placeholder, never a made-up value
        for (String key : List.of("u:60", "u:160")) {
            JsonNode after = event(byOpAndId, key).path("after");
            assertThat(after.path("c_big").asText()).as("%s c_big", key).isEqualTo("__debezium_unavailable_value");
            assertThat(after.path("c_bigjson").asText()).as("%s c_bigjson", key).isEqualTo("__debezium_unavailable_value");
        }
        // TOASTed values in inserts arrive whole
        JsonNode toast = event(byOpAndId, "c:160").path("after");
        assertThat(toast.path("c_big").asText()).hasSize(16_000);
        JsonNode doc = JSON.readTree(toast.path("c_bigjson").asText());
        assertThat(doc.path("blob").asText()).hasSize(16_000);
        assertThat(event(byOpAndId, "r:60").path("after").path("c_big").asText()).hasSize(16_000);

        // delete under REPLICA IDENTITY DEFAULT: the key only
        JsonNode del = event(byOpAndId, "d:2").path("before");
        assertThat(del.path("id").asInt()).isEqualTo(2);
        assertThat(del.path("c_text").isNull()).isTrue();
        // the key change: one update, the old key in before
        JsonNode moved = event(byOpAndId, "u:3000");
        assertThat(moved.path("before").path("id").asInt()).isEqualTo(3);

        for (int id : new int[] {1, 11}) { // read by the snapshot, inserted while streaming
            JsonNode other = all.stream().filter(e -> E2e.isTable(e, "other_types") && !e.path("op").asText().equals("u")
                    && e.path("after").path("id").asInt() == id).findFirst().orElseThrow().path("after");
            // docs/TYPES.md: these types' JSON is the server's text (timestamptz bounds in UTC), in binary and in text
            assertThat(other.path("c_tsvector").asText()).isEqualTo("'a' 'cat' 'fat' 'mat' 'on' 'sat':2B");
            assertThat(other.path("c_tsquery").asText()).isEqualTo("'fat' & ( 'rat' | !'cat' )");
            assertThat(other.path("c_point").asText()).isEqualTo("(1.5,-2)");
            assertThat(other.path("c_lseg").asText()).isEqualTo("[(0,0),(1,1e+20)]");
            assertThat(other.path("c_circle").asText()).isEqualTo("<(1,2),0.1>");
            assertThat(other.path("c_lsn").asText()).isEqualTo("16/B374D848");
            assertThat(other.path("c_range").asText()).isEqualTo("[1,10)");
            assertThat(other.path("c_numrange").asText()).isEqualTo("(1.50,2.5]");
            assertThat(other.path("c_tstzrange").asText()).isEqualTo("[\"2024-01-01 21:34:05+00\",)");
            assertThat(other.path("c_multi").asText()).isEqualTo("{[1,3),[5,7)}");
            assertThat(other.path("c_userrange").asText()).isEqualTo("[1.5,1e+20)");
            assertThat(other.path("c_pair").asText()).isEqualTo("(1,\"a \"\"b\"\", c\",\"[1,5)\")");
            assertThat(other.path("a_box").toString()).isEqualTo("[\"(1,1),(0,0)\",\"(3,3),(2,2)\"]");
            assertThat(other.path("a_range").toString()).isEqualTo("[\"[1,2)\",\"empty\",null]");
            assertThat(other.path("a_pair").toString()).isEqualTo("[\"(2,\\\"\\\",)\",null]");
            assertThat(other.path("a_point").toString()).isEqualTo("[\"(0.1,-0)\",null]");
        }
    }

    private static JsonNode event(Map<String, JsonNode> byOpAndId, String key) {
        JsonNode e = byOpAndId.get(key);
        if (e == null) {
            throw new AssertionError("no event " + key + " (op:id) among " + new java.util.TreeSet<>(byOpAndId.keySet()));
        }
        return e;
    }

    private static void checkRow(Map<String, JsonNode> byOpAndId, String key, int row) throws Exception {
        JsonNode after = event(byOpAndId, key).path("after");
        for (Col c : COLUMNS) {
            String want = c.json(row);
            if (want == null) {
                continue;
            }
            JsonNode expected = JSON.readTree(want);
            JsonNode actual = after.get(c.name());
            assertThat(actual).as("event %s, column %s (%s) for value %s", key, c.name(), c.type(), E2e.shorten(c.value(row)))
                    .isNotNull();
            if (!sameJson(expected, actual, c.type())) {
                throw new AssertionError("event " + key + ", column " + c.name() + " (" + c.type() + ") for value "
                        + E2e.shorten(c.value(row)) + ": expected JSON " + E2e.shorten(expected.toString()) + " but was "
                        + E2e.shorten(actual.toString()));
            }
        }
    }

    /**
     * JSON equality with numbers compared by value: 1.5 and 1.50 are the same number; for float4 and
     * float8 two texts that denote the same float (1e-45 and 1.4E-45 as float4) are the same.
     */
    static boolean sameJson(JsonNode a, JsonNode b, String type) {
        if (a.isNumber() && b.isNumber()) {
            if (type.startsWith("float4")) {
                return Float.compare(a.floatValue(), b.floatValue()) == 0;
            }
            if (type.startsWith("float8")) {
                return Double.compare(a.doubleValue(), b.doubleValue()) == 0;
            }
            return a.decimalValue().compareTo(b.decimalValue()) == 0;
        }
        if (a.isArray() && b.isArray()) {
            if (a.size() != b.size()) {
                return false;
            }
            for (int i = 0; i < a.size(); i++) {
                if (!sameJson(a.get(i), b.get(i), type)) {
                    return false;
                }
            }
            return true;
        }
        return a.equals(b);
    }

    static TableRef table(String name) {
        return TableRef.parse(name);
    }
}
