package io.millrace.snapshot;

import io.millrace.core.MillraceException;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.source.Catalog;
import io.millrace.source.CatalogTypeResolver;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Binary COPY decodes every row to the same values as text COPY: many types with their edge values and NULLs, on a
 * real server. A table with a type Millrace reads only as text is copied in text even when binary is asked for.
 */
class CopyRowsIT {
    private static EmbeddedPg pg;
    private static Connection c;

    @BeforeAll
    static void start() throws SQLException {
        pg = EmbeddedPg.builder().major(15).start();
        pg.execute("postgres",
                "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
                "CREATE DOMAIN posint AS int CHECK (VALUE > 0)",
                "CREATE TABLE t (id int PRIMARY KEY, i2 int2, i8 int8, n numeric, n2 numeric(12,3), f4 float4, f8 float8, b bool,"
                        + " s text, vc varchar(20), ch char(3), by bytea, d date, ts timestamp, tz timestamptz, tm time, ttz timetz,"
                        + " iv interval, u uuid, j json, jb jsonb, ip inet, cid cidr, mac macaddr, ia int4[], ta text[], m mood,"
                        + " p posint, mo money, o oid)",
                "INSERT INTO t VALUES (1, -32768, 9223372036854775807, 'NaN', 123456789.125, 'NaN', '-0', true,"
                        + " E'tab\\there\\nnew line \\\\ back', 'héllo', 'ab', '\\x00ff10', 'infinity', '-infinity', '2024-02-29 23:59:59.999999+05:30',"
                        + " '24:00:00', '00:00:01+14', '-1 year 2 mons 3 days 04:05:06.789', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',"
                        + " '{\"a\": [1, 2.50, null]}', '{\"b\": {\"c\": \"é\"}}', '192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03',"
                        + " '{{1,NULL},{3,4}}', ARRAY['x', NULL, 'a\"b', ''], 'happy', 7, '-12.34', 4294967295)",
                "INSERT INTO t VALUES (2, 0, 0, '-0.000100', 0, 'Infinity', 1e308, false, '', NULL, NULL, '\\x', '0001-01-01',"
                        + " '4713-01-01 00:00:00 BC', 'infinity', '00:00', '23:59:59.5-07', '0', '00000000-0000-0000-0000-000000000000',"
                        + " 'null', '[]', '::1', '::/0', 'ff:ff:ff:ff:ff:ff', '{}', '{}', 'sad', 1, 0, 0)",
                "INSERT INTO t (id) VALUES (3)",
                "INSERT INTO t SELECT g, g, g * 1000, g / 7.0, g, g / 3.0, g / 9.0, g % 2 = 0, 'row ' || g, 'v' || g, 'c', '\\xdeadbeef',"
                        + " '2020-01-01'::date + g, '2020-01-01'::timestamp + g * interval '1 second', now(), '12:00', '12:00+01',"
                        + " g * interval '1 minute', gen_random_uuid(), '{}', jsonb_build_object('g', g), '10.1.2.3', '10.1.0.0/16',"
                        + " '01:02:03:04:05:06', ARRAY[g, g + 1], ARRAY['s' || g], 'ok', g, g, g FROM generate_series(4, 500) g",
                "CREATE TABLE pts (id int PRIMARY KEY, p point, r int4range, k regclass)", // regclass: text only
                "INSERT INTO pts VALUES (1, '(1.5,-2)', '[1,10)', 'pg_class'), (2, NULL, 'empty', NULL)");
        c = pg.connect("postgres");
    }

    @AfterAll
    static void stop() throws SQLException {
        if (c != null) {
            c.close();
        }
        if (pg != null) {
            pg.close();
        }
    }

    private static RelationInfo relation(String table) throws SQLException {
        return Catalog.relation(c, TableRef.parse("public." + table), new CatalogTypeResolver(() -> {
            try {
                return pg.connect("postgres");
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }));
    }

    private static List<Object[]> read(RelationInfo r, String select, boolean binary, long[] bytes) throws Exception {
        return read(c, r, select, binary, bytes);
    }

    private static List<Object[]> read(Connection conn, RelationInfo r, String select, boolean binary, long[] bytes) throws Exception {
        List<Object[]> rows = new ArrayList<>();
        bytes[0] = CopyRows.read(conn, select, r, binary, "in a test", (values, wire) -> rows.add(values));
        return rows;
    }

    @Test
    void binaryRowsEqualTextRows() throws Exception {
        RelationInfo r = relation("t");
        assertThat(CopyRows.binaryReadable(r)).as("every column of t has a binary codec").isTrue();
        String select = "SELECT * FROM ONLY public.t ORDER BY id";
        long[] textBytes = new long[1];
        long[] binBytes = new long[1];
        List<Object[]> text = read(r, select, false, textBytes);
        List<Object[]> binary = read(r, select, true, binBytes);
        assertThat(text).hasSize(500);
        assertThat(binary).hasSize(500);
        for (int k = 0; k < text.size(); k++) {
            for (int i = 0; i < r.columnCount(); i++) {
                Object t = text.get(k)[i];
                Object b = binary.get(k)[i];
                // Equal as values, and as the text PostgreSQL would read back (arrays compare by their text).
                assertThat(b == null ? null : r.codec(i).toPgText(b)).as("row %d column %s", k + 1, r.column(i).name())
                        .isEqualTo(t == null ? null : r.codec(i).toPgText(t));
                if (!(t instanceof Object[]) && t != null && t.getClass() != byte[].class) {
                    assertThat(b).as("row %d column %s", k + 1, r.column(i).name()).isEqualTo(t);
                } else if (t != null && t.getClass() == byte[].class) {
                    assertThat(Arrays.equals((byte[]) t, (byte[]) b)).isTrue();
                }
            }
        }
        assertThat(binBytes[0]).as("the binary copy was binary (other sizes on the wire)").isNotEqualTo(textBytes[0]);
    }

    @Test
    void noRowsAndOnlyNulls() throws Exception {
        RelationInfo r = relation("t");
        long[] bytes = new long[1];
        assertThat(read(r, "SELECT * FROM ONLY public.t WHERE false", true, bytes)).isEmpty();
        List<Object[]> nulls = read(r, "SELECT * FROM ONLY public.t WHERE id = 3", true, bytes);
        assertThat(nulls).hasSize(1);
        assertThat(Arrays.stream(nulls.get(0)).skip(1)).allMatch(v -> v == null);
    }

    @Test
    void aTypeReadOnlyAsTextIsCopiedInText() throws Exception {
        RelationInfo r = relation("pts");
        long[] bytes = new long[1];
        List<Object[]> asked = read(r, "SELECT * FROM ONLY public.pts ORDER BY id", true, bytes);
        List<Object[]> text = read(r, "SELECT * FROM ONLY public.pts ORDER BY id", false, bytes);
        assertThat(asked).hasSize(2);
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < r.columnCount(); i++) {
                assertThat(asked.get(k)[i]).isEqualTo(text.get(k)[i]);
            }
        }
    }

    @Test
    void aValueTheCodecCannotReadNamesTheColumn() throws SQLException {
        RelationInfo r = relation("t");
        // A copy that fails mid-stream leaves its connection unusable: a connection of its own (the engine drops it too).
        try (Connection own = pg.connect("postgres")) {
            // A select whose columns do not match the relation's: the bytes of an int8 read by the int2 codec.
            assertThatThrownBy(() -> read(own, r, "SELECT id, i8 AS i2, i8, n, n2, f4, f8, b, s, vc, ch, by, d, ts, tz, tm, ttz, iv, u, j, jb, ip, cid, mac, ia, ta, m,"
                    + " p, mo, o FROM public.t WHERE id = 1", true, new long[1]))
                    .isInstanceOf(MillraceException.class).hasMessageContaining("column i2 of public.t (type int2) in a test");
        }
    }

    /**
     * A copy stopped early (the consumer returns false) or failing mid-stream leaves its connection usable: the next
     * query on it answers, in its transaction too (pgjdbc's cancelCopy left the server's "canceling statement" error for
     * the next statement, which also aborts the transaction).
     */
    @Test
    void theConnectionAnswersAfterACopyStoppedEarlyOrFailing() throws Exception {
        RelationInfo r = relation("t");
        for (int variant = 0; variant < 4; variant++) {
            boolean binary = variant % 2 == 0;
            try (Connection own = pg.connect("postgres")) {
                own.setAutoCommit(variant < 2); // and inside a transaction, as a snapshot reader reads its chunks
                int[] seen = {0};
                CopyRows.read(own, "SELECT t.* FROM ONLY public.t CROSS JOIN generate_series(1, 200) g", r, binary, "in a test",
                        (values, wire) -> ++seen[0] < 3);
                assertThat(seen[0]).isEqualTo(3);
                assertThat(selectOne(own)).as("after an early stop, variant %d", variant).isEqualTo(1);
                assertThatThrownBy(() -> read(own, r, "SELECT id, i8 AS i2, i8, n, n2, f4, f8, b, s, vc, ch, by, d, ts, tz, tm, ttz, iv, u, j,"
                        + " jb, ip, cid, mac, ia, ta, m, p, mo, o FROM ONLY public.t CROSS JOIN generate_series(1, 200) g", binary, new long[1]))
                        .isInstanceOf(MillraceException.class);
                assertThat(selectOne(own)).as("after a failed copy, variant %d", variant).isEqualTo(1);
            }
        }
    }

    private static int selectOne(Connection conn) throws SQLException {
        try (java.sql.Statement s = conn.createStatement(); java.sql.ResultSet rs = s.executeQuery("SELECT 1")) {
            rs.next();
            return rs.getInt(1);
        }
    }
}
