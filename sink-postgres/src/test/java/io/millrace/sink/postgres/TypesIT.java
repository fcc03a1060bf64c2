package io.millrace.sink.postgres;

import io.millrace.core.Secret;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeInfo;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.testkit.Events;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Column types and values: a source table made with SQL in one schema is described from the catalog
 * (as the stream would), its rows decoded with the codecs from the server's text, written by the
 * sink into another schema, and compared with the original as text.
 */
class TypesIT {
    private static final String DB = "types";
    private static EmbeddedPg pg;

    /** column name → SQL type; every type the test covers. */
    private static final Map<String, String> COLUMNS = new LinkedHashMap<>();

    static {
        COLUMNS.put("id", "int PRIMARY KEY");
        COLUMNS.put("i2", "int2");
        COLUMNS.put("i8", "int8");
        COLUMNS.put("n_12_2", "numeric(12,2)");
        COLUMNS.put("n_free", "numeric");
        COLUMNS.put("n_neg", "numeric(5,-2)");
        COLUMNS.put("f4", "float4");
        COLUMNS.put("f8", "float8");
        COLUMNS.put("vc40", "varchar(40)");
        COLUMNS.put("vc", "varchar");
        COLUMNS.put("ch3", "char(3)");
        COLUMNS.put("qchar", "\"char\"");
        COLUMNS.put("t", "text");
        COLUMNS.put("b", "bytea");
        COLUMNS.put("bo", "bool");
        COLUMNS.put("d", "date");
        COLUMNS.put("tm3", "time(3)");
        COLUMNS.put("ttz0", "timetz(0)");
        COLUMNS.put("ts", "timestamp");
        COLUMNS.put("tstz3", "timestamptz(3)");
        COLUMNS.put("iv", "interval");
        COLUMNS.put("iv_ds3", "interval day to second(3)");
        COLUMNS.put("iv_year", "interval year");
        COLUMNS.put("iv_p2", "interval(2)");
        COLUMNS.put("bit5", "bit(5)");
        COLUMNS.put("vb8", "varbit(8)");
        COLUMNS.put("u", "uuid");
        COLUMNS.put("js", "json");
        COLUMNS.put("jb", "jsonb");
        COLUMNS.put("ip", "inet");
        COLUMNS.put("net", "cidr");
        COLUMNS.put("mac", "macaddr");
        COLUMNS.put("pt", "point");
        COLUMNS.put("r", "int4range");
        COLUMNS.put("tsv", "tsvector");
        COLUMNS.put("m", "money");
        COLUMNS.put("x", "xml");
        COLUMNS.put("ia", "int4[]");
        COLUMNS.put("vca", "varchar(10)[]");
        COLUMNS.put("ta", "text[]");
        COLUMNS.put("mood", "src.mood");
        COLUMNS.put("moods", "src.mood[]");
        COLUMNS.put("pos", "src.posint");
        COLUMNS.put("ext", "src.pair");
    }

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase(DB);
        List<String> defs = new ArrayList<>();
        COLUMNS.forEach((name, type) -> defs.add(name + " " + type));
        pg.execute(DB, "CREATE SCHEMA src", "CREATE TYPE src.mood AS ENUM ('sad', 'ok', 'happy')",
                "CREATE DOMAIN src.posint AS int4 CHECK (VALUE > 0)", "CREATE TYPE src.pair AS (a int, b text)",
                "CREATE TABLE src.t (" + String.join(", ", defs) + ")",
                "INSERT INTO src.t VALUES (1, -32768, 9223372036854775807, 1234567890.12, 'NaN', 12300, 'NaN', '-Infinity',"
                        + " 'tab\tnew\nline\\back', '', 'a  ', 'x', E'quote\"s ''and'' \\\\ ünïcødé \u00e9', '\\x00ff5c0a',"
                        + " true, 'infinity', '24:00:00', '23:59:59+05:30', '1999-12-31 23:59:59.999999', '2024-02-29 12:00:00.123+00',"
                        + " '-1 year +2 mons -3 days 04:05:06.789', '1 day 02:03:04.567', '3 years', '1.25 seconds',"
                        + " B'10101', B'101', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{ \"k\" : [1, 2.50] }', '{\"b\": 1, \"a\": [true, null]}',"
                        + " '2001:db8::1/64', '10.0.0.0/8', '08:00:2b:01:02:03', '(1.5,-2)', '[1,10)', 'a fat cat',"
                        + " 1234.56, '<a x=\"1\">t</a>', '{1,NULL,3}', '{\"a,b\",\"c\\\"d\"}', '{\"\",NULL,\"NULL\",\"x y\"}',"
                        + " 'happy', '{sad,ok}', 42, '(1,\"x, y\")')",
                "INSERT INTO src.t (id, f8, f4, t, ia, ta, d, ts, tstz3) VALUES (2, 1e-300, 1.17549435e-38, NULL, '{}', '{{a,b},{c,d}}',"
                        + " '4713-01-01 BC', '-infinity', '0001-01-01 00:00:00+00')",
                "INSERT INTO src.t (id, f8) VALUES (3, '-0')");
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    static Connection connect() throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", "postgres");
        p.setProperty("options", PostgresSink.SESSION_OPTIONS);
        return DriverManager.getConnection(pg.jdbcUrl(DB), p);
    }

    /** The source table as the stream would describe it, with types resolved from the catalog. */
    static RelationInfo relation(char replicaIdentity, boolean keyFlagsOnAll) throws SQLException {
        return relation("src.t", replicaIdentity, keyFlagsOnAll);
    }

    static RelationInfo relationOf(String table) throws SQLException {
        return relation(table, 'd', false);
    }

    private static RelationInfo relation(String table, char replicaIdentity, boolean keyFlagsOnAll) throws SQLException {
        Map<Integer, TypeInfo> types = new HashMap<>();
        List<ColumnInfo> cols = new ArrayList<>();
        try (Connection c = connect(); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT t.oid::int, n.nspname, t.typname, t.typtype, t.typcategory,"
                    + " t.typelem::int, t.typbasetype::int FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace")) {
                while (rs.next()) {
                    types.put(rs.getInt(1), new TypeInfo(rs.getInt(1), rs.getString(2), rs.getString(3),
                            rs.getString(4).charAt(0), rs.getString(5).charAt(0), rs.getInt(6), rs.getInt(7)));
                }
            }
            try (ResultSet rs = s.executeQuery("SELECT attname, atttypid::int, atttypmod FROM pg_attribute"
                    + " WHERE attrelid = '" + table + "'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum")) {
                while (rs.next()) {
                    String name = rs.getString(1);
                    cols.add(new ColumnInfo(name, types.get(rs.getInt(2)), rs.getInt(3), keyFlagsOnAll || name.equals("id")));
                }
            }
        }
        String[] name = table.split("\\.");
        return new RelationInfo(77_777 + name[1].length(), new TableRef(name[0], name[1]), replicaIdentity, cols, types::get);
    }

    /** Rows of {@code table} decoded with the relation's codecs from the server's text output. */
    static List<Object[]> decodedRows(RelationInfo rel, String table) throws SQLException {
        List<Object[]> out = new ArrayList<>();
        try (Connection c = connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery(selectText(rel, table))) {
            while (rs.next()) {
                Object[] row = new Object[rel.columnCount()];
                for (int i = 0; i < row.length; i++) {
                    String text = rs.getString(i + 1);
                    row[i] = text == null ? null : rel.codec(i).decodeText(text);
                }
                out.add(row);
            }
        }
        return out;
    }

    static String selectText(RelationInfo rel, String table) {
        List<String> cols = new ArrayList<>();
        for (ColumnInfo c : rel.columns()) {
            cols.add(c.name() + "::text");
        }
        return "SELECT " + String.join(", ", cols) + " FROM " + table + " ORDER BY 1";
    }

    static List<String> textRows(RelationInfo rel, String table) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Connection c = connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery(selectText(rel, table))) {
            while (rs.next()) {
                StringBuilder b = new StringBuilder();
                for (int i = 1; i <= rel.columnCount(); i++) {
                    b.append(i == 1 ? "" : " | ").append(rel.column(i - 1).name()).append('=').append(rs.getString(i));
                }
                out.add(b.toString());
            }
        }
        return out;
    }

    static Map<String, String> formatTypes(String table) throws SQLException {
        Map<String, String> m = new LinkedHashMap<>();
        try (Connection c = connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = '"
                     + table + "'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum")) {
            while (rs.next()) {
                m.put(rs.getString(1), rs.getString(2));
            }
        }
        return m;
    }

    @Test
    void columnTypesFollowTheSourceAndValuesRoundTrip() throws Exception {
        RelationInfo rel = relation('d', false);
        Events ev = new Events();
        List<ChangeEvent> batch = new ArrayList<>();
        for (Object[] row : decodedRows(rel, "src.t")) {
            batch.add(ev.read(rel, row));
        }
        try (PostgresSink sink = new PostgresSink(new PostgresSinkConfig("types", pg.jdbcUrl(DB), "postgres", Secret.NONE,
                "dst", null))) {
            sink.open();
            sink.write(batch, ev.checkpoint("types"));
        }
        Map<String, String> expected = formatTypes("src.t");
        expected.put("mood", "text");
        expected.put("moods", "text[]");
        expected.put("pos", "integer");
        expected.put("ext", "text");
        assertThat(formatTypes("dst.t")).isEqualTo(expected);
        assertThat(textRows(rel, "dst.t")).isEqualTo(textRows(rel, "src.t")).hasSize(3);
    }

    @Test
    void rowsWithoutKeyAreFoundByEveryColumnType() throws Exception {
        RelationInfo rel = relation('f', true); // as pgoutput sends REPLICA IDENTITY FULL: all columns flagged
        Events ev = new Events();
        List<Object[]> rows = decodedRows(rel, "src.t");
        List<ChangeEvent> inserts = new ArrayList<>();
        for (Object[] row : rows) {
            inserts.add(ev.insert(rel, row));
        }
        try (PostgresSink sink = new PostgresSink(new PostgresSinkConfig("types-full", pg.jdbcUrl(DB), "postgres",
                Secret.NONE, "dst_full", null))) {
            sink.open();
            sink.write(inserts, ev.checkpoint("types-full"));
            assertThat(textRows(rel, "dst_full.t")).isEqualTo(textRows(rel, "src.t"));
            // Update row 1 (matched on all its old values, whatever their types), delete rows 2 and 3.
            Object[] changed = rows.get(0).clone();
            changed[rel.columns().indexOf(rel.columns().stream().filter(c -> c.name().equals("t")).findFirst().orElseThrow())]
                    = "changed";
            sink.write(List.of(ev.update(rel, rows.get(0), changed), ev.delete(rel, rows.get(1)), ev.delete(rel, rows.get(2))),
                    ev.checkpoint("types-full"));
        }
        List<String> left = textRows(rel, "dst_full.t");
        assertThat(left).hasSize(1);
        assertThat(left.get(0)).contains(" | t=changed | ");
    }

    /**
     * A table whose every column type the destination COPYs in binary (send forms, {@code TypeCodec#encodeBinary}):
     * edge values and random numerics, timestamps and floats go in by a direct COPY, then updates, a key change, an
     * update with an unchanged TOAST value and deletes go through the staging table; the destination equals the
     * source as text after each, and both batches went in binary format (text format is what the other tests cover).
     */
    @Test
    void theTypesCopiedInBinaryRoundTripThroughBothPaths() throws Exception {
        String cols = "id int PRIMARY KEY, i2 int2, i8 int8, n_12_2 numeric(12,2), n_free numeric, n_neg numeric(5,-2), f4 float4,"
                + " f8 float8, vc40 varchar(40), ch3 char(3), t text, b bytea, bo bool, d date, ts timestamp, tstz3 timestamptz(3),"
                + " tstz timestamptz, u uuid, js json, jb jsonb, nm name";
        pg.execute(DB, "DROP TABLE IF EXISTS src.bin, src.bin2", "CREATE TABLE src.bin (" + cols + ")", "CREATE TABLE src.bin2 (" + cols + ")",
                "INSERT INTO src.bin VALUES (1, -32768, -9223372036854775808, -9999999999.99, 'NaN', -99900, 'NaN', '-Infinity', 'tab\tünï',"
                        + " 'a  ', E'quote\"s \\\\ é', '\\x00ff5c0a', false, '4713-01-01 BC', '294276-12-31 23:59:59.999999',"
                        + " '-infinity', 'infinity', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{ \"k\" : [1, 2.50] }', '{\"b\": 1, \"a\": [true, null]}',"
                        + " 'n')",
                "INSERT INTO src.bin (id, n_free, f8, t, vc40) VALUES (2, 'Infinity', '-0', '', '')",
                "INSERT INTO src.bin (id, n_free) VALUES (3, '-Infinity')",
                // random values, the same shape in both tables: bin2's are the updates
                "INSERT INTO src.bin SELECT i, (random() * 60000 - 30000)::int2, (random() * 9e18)::int8 * (CASE WHEN i % 2 = 0 THEN -1 ELSE 1 END),"
                        + " round((random() * 2e10 - 1e10)::numeric, 2), (random() * 10 ^ (random() * 60 - 30))::numeric * (i % 3 - 1),"
                        + " round((random() * 9e6)::numeric, -2), random()::float4, (random() - 0.5) * 10 ^ (random() * 600 - 300),"
                        + " md5(i::text), left(md5(i::text), 2), repeat(md5(i::text), 1 + i % 5), decode(md5(i::text), 'hex'), i % 2 = 0,"
                        + " date '2000-01-01' + (random() * 1e6 - 5e5)::int, timestamp '2000-01-01' + random() * interval '100000 days' - interval '50000 days',"
                        + " now() - random() * interval '10000 days', timestamptz '1970-01-01' + random() * interval '30000 days',"
                        + " md5(i::text)::uuid, json_build_object('i', i), jsonb_build_object('i', i, 'v', random()), 'n' || i"
                        + " FROM generate_series(4, 400) i",
                "INSERT INTO src.bin2 SELECT * FROM src.bin",
                "UPDATE src.bin2 SET i2 = i2 / 2, n_free = n_free * 3, f8 = f8 / 7, t = t || 'x', tstz = tstz + interval '1.5 days',"
                        + " jb = jb || '{\"u\": 1}', d = d + 1, n_12_2 = n_12_2 / 3");
        RelationInfo rel = relationOf("src.bin");
        Events ev = new Events();
        Map<Integer, Object[]> before = byId(decodedRows(rel, "src.bin"));
        int tIdx = columnIndex(rel, "t");
        try (PostgresSink sink = new PostgresSink(new PostgresSinkConfig("types-bin", pg.jdbcUrl(DB), "postgres", Secret.NONE,
                "dst_bin", null))) {
            sink.open();
            List<ChangeEvent> inserts = new ArrayList<>();
            before.values().forEach(row -> inserts.add(ev.insert(rel, row)));
            sink.write(inserts, ev.checkpoint("types-bin"));
            assertThat(textRows(rel, "dst_bin.bin")).isEqualTo(textRows(rel, "src.bin")).hasSize(400);

            // the same changes on the source, and as events
            pg.execute(DB, "UPDATE src.bin b SET (i2, n_free, f8, t, tstz, jb, d, n_12_2) = (SELECT i2, n_free, f8, t, tstz, jb, d, n_12_2"
                    + " FROM src.bin2 c WHERE c.id = b.id) WHERE id % 2 = 1 AND id % 5 <> 0", "UPDATE src.bin SET id = 10002 WHERE id = 2",
                    "UPDATE src.bin SET i2 = 7 WHERE id = 4", "DELETE FROM src.bin WHERE id % 5 = 0");
            Map<Integer, Object[]> after = byId(decodedRows(rel, "src.bin"));
            List<ChangeEvent> changes = new ArrayList<>();
            for (int id : before.keySet()) {
                if (id % 5 == 0) {
                    changes.add(ev.delete(rel, Events.keyImage(rel, id)));
                } else if (id == 2) {
                    changes.add(ev.update(rel, Events.keyImage(rel, 2), after.get(10002)));
                } else if (id == 4) {
                    Object[] partial = after.get(4).clone();
                    partial[tIdx] = io.millrace.core.types.UnchangedToast.INSTANCE;
                    changes.add(ev.update(rel, partial));
                } else if (id % 2 == 1) {
                    changes.add(ev.update(rel, after.get(id)));
                }
            }
            sink.write(changes, ev.checkpoint("types-bin"));
            assertThat(sink.copyFormats()).as("changes COPYed in binary, in text").containsExactly(400L + changes.size(), 0L);
        }
        assertThat(textRows(rel, "dst_bin.bin")).isEqualTo(textRows(rel, "src.bin")).hasSize(400 - 80);
    }

    /**
     * A destination table made with the source's own types (an enum key, an enum, its array, a domain, a composite — as
     * {@code millrace migrate} makes it, or a user does): updates, a key change, an unchanged TOAST value and deletes
     * reach it through the staging table, which holds those types as text. A migrate user's first UPDATE of a table
     * with an enum column stopped the follow: {@code column "mood" is of type mood but expression is of type text}.
     */
    @Test
    void aTableWithTheSourcesOwnTypesTakesChangesThroughTheStagingTable() throws Exception {
        String cols = "id src.mood PRIMARY KEY, n int, other src.mood, moods src.mood[], pos src.posint, ext src.pair, t text";
        pg.execute(DB, "DROP TABLE IF EXISTS src.own", "CREATE TABLE src.own (" + cols + ")",
                "INSERT INTO src.own VALUES ('sad', 1, 'ok', '{sad,happy}', 5, '(1,\"x, y\")', 'one'), ('ok', 2, NULL, '{}', 6, NULL, 'two'),"
                        + " ('happy', 3, 'sad', NULL, 7, '(2,z)', 'three')",
                "CREATE SCHEMA IF NOT EXISTS dst_own", "DROP TABLE IF EXISTS dst_own.own", "CREATE TABLE dst_own.own (" + cols + ")");
        RelationInfo rel = relationOf("src.own");
        Events ev = new Events();
        List<Object[]> rows = decodedRows(rel, "src.own");
        try (PostgresSink sink = new PostgresSink(new PostgresSinkConfig("types-own", pg.jdbcUrl(DB), "postgres", Secret.NONE,
                "dst_own", null))) {
            sink.open();
            List<ChangeEvent> inserts = new ArrayList<>();
            rows.forEach(r -> inserts.add(ev.insert(rel, r)));
            sink.write(inserts, ev.checkpoint("types-own"));
            Object[] sadBefore = rows.stream().filter(r -> "sad".equals(String.valueOf(r[0]))).findFirst().orElseThrow();
            pg.execute(DB, "UPDATE src.own SET other = 'happy', moods = '{ok}', pos = 8, ext = '(3,w)' WHERE id = 'happy'",
                    "UPDATE src.own SET n = 20 WHERE id = 'ok'", "DELETE FROM src.own WHERE id = 'ok'", "UPDATE src.own SET id = 'ok', n = 10 WHERE id = 'sad'");
            List<Object[]> after = decodedRows(rel, "src.own");
            Object[] happy = after.stream().filter(r -> "happy".equals(String.valueOf(r[0]))).findFirst().orElseThrow();
            Object[] moved = after.stream().filter(r -> "ok".equals(String.valueOf(r[0]))).findFirst().orElseThrow();
            Object[] okBefore = rows.stream().filter(r -> "ok".equals(String.valueOf(r[0]))).findFirst().orElseThrow();
            Object[] okUpdated = okBefore.clone();
            okUpdated[1] = 20;
            Object[] partial = happy.clone();
            partial[6] = io.millrace.core.types.UnchangedToast.INSTANCE;
            sink.write(List.of(ev.update(rel, partial), ev.update(rel, okUpdated), ev.delete(rel, Events.keyImage(rel, okBefore[0])),
                    ev.update(rel, Events.keyImage(rel, sadBefore[0]), moved)), ev.checkpoint("types-own"));
        }
        assertThat(textRows(rel, "dst_own.own")).isEqualTo(textRows(rel, "src.own")).hasSize(2);
    }

    private static Map<Integer, Object[]> byId(List<Object[]> rows) {
        Map<Integer, Object[]> m = new java.util.TreeMap<>();
        rows.forEach(r -> m.put((Integer) r[0], r));
        return m;
    }

    private static int columnIndex(RelationInfo rel, String name) {
        for (int i = 0; i < rel.columnCount(); i++) {
            if (rel.column(i).name().equals(name)) {
                return i;
            }
        }
        throw new AssertionError("no column " + name);
    }
}
