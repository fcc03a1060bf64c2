package io.millrace.pgoutput;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.types.PgArray;
import io.millrace.core.types.PgInterval;
import io.millrace.core.types.PgUnknown;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TypeResolver;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.pgoutput.PgOutputMessage.Begin;
import io.millrace.pgoutput.PgOutputMessage.Commit;
import io.millrace.pgoutput.PgOutputMessage.Insert;
import io.millrace.pgoutput.PgOutputMessage.RelationMessage;
import io.millrace.pgoutput.PgOutputMessage.StreamAbort;
import io.millrace.pgoutput.PgOutputMessage.StreamCommit;
import io.millrace.pgoutput.PgOutputMessage.StreamStart;
import io.millrace.pgoutput.PgOutputMessage.StreamStop;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.UUID;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Reads real pgoutput bytes from a server ({@code pg_logical_slot_peek_binary_changes}) after a
 * workload that covers every row-message shape, relation changes mid-stream, TOAST, origins, logical
 * messages, truncate and streamed transactions (committed, aborted, with an aborted subtransaction,
 * and two interleaved), and checks what the framer makes of them. One server per concrete class.
 *
 * <p>Each stream read is also saved under {@code target/pgoutput-recordings/} (one base64 message per
 * line), the format RecordedStreamTest replays.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class AbstractPgOutputIT {
    static final String DB = "postgres";
    static final int BIG_ROWS = 2000;

    EmbeddedPg pg;
    long bigCommittedXid;
    long bigAbortedXid;
    long bigSubXactTopXid;
    long concurrentA;
    long concurrentB;

    abstract int major();

    @BeforeAll
    void startServerAndRunWorkload() throws Exception {
        pg = EmbeddedPg.builder().major(major()).start();
        pg.execute(DB,
                "CREATE TABLE items (id int PRIMARY KEY, name text, body text)",
                "ALTER TABLE items ALTER COLUMN body SET STORAGE EXTERNAL", // out of line, uncompressed: TOASTed above ~2 kB
                "CREATE TABLE full_t (id int PRIMARY KEY, v text)",
                "ALTER TABLE full_t REPLICA IDENTITY FULL",
                "CREATE TABLE big (id int PRIMARY KEY, payload text)",
                "CREATE TYPE mood AS ENUM ('sad', 'happy')",
                "CREATE DOMAIN posint AS int CHECK (VALUE > 0)",
                "CREATE TABLE typed (id int PRIMARY KEY, b bool, i2 int2, i8 int8, n numeric(10,3), f8 float8, vc varchar(10),"
                        + " ch char(3), by bytea, u uuid, j jsonb, d date, ts timestamptz, iv interval, m mood, p posint,"
                        + " ms mood[], ia int4[], ta text[])",
                "CREATE PUBLICATION pub FOR TABLE items, full_t, big, typed",
                "SELECT pg_create_logical_replication_slot('s', 'pgoutput')");
        pg.execute(DB,
                "INSERT INTO items VALUES (1, 'a', repeat('x', 5000))",
                "UPDATE items SET name = 'b' WHERE id = 1", // body untouched: unchanged TOAST
                "UPDATE items SET id = 2 WHERE id = 1",      // key change: old key tuple
                "INSERT INTO full_t VALUES (1, 'p')",
                "UPDATE full_t SET v = 'q'",
                "DELETE FROM full_t",
                "DELETE FROM items WHERE id = 2",
                "SELECT pg_replication_origin_create('node_a')");
        try (Connection c = pg.connect(DB); Statement s = c.createStatement()) {
            s.execute("SELECT pg_replication_origin_session_setup('node_a')");
            c.setAutoCommit(false);
            s.execute("SELECT pg_replication_origin_xact_setup('0/ABCDEF', now())");
            s.execute("INSERT INTO items VALUES (50, 'o', 'from origin')");
            c.commit();
            c.setAutoCommit(true);
            s.execute("SELECT pg_replication_origin_session_reset()");
        }
        pg.execute(DB,
                "ALTER TABLE items ADD COLUMN extra int",
                "INSERT INTO items VALUES (3, 'c', 'short', 7)",
                "ALTER TABLE items DROP COLUMN name",
                "INSERT INTO items VALUES (4, 'short2', 8)",
                "SELECT pg_logical_emit_message(true, 'millrace', 'x')",
                "SELECT pg_logical_emit_message(false, 'millrace', 'nt')",
                "TRUNCATE full_t");
        try (Connection c = pg.connect(DB); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            bigCommittedXid = xid(s);
            s.execute(bigInsert(1, BIG_ROWS));
            c.commit();
            bigAbortedXid = xid(s);
            s.execute(bigInsert(10_001, 10_000 + BIG_ROWS));
            c.rollback();
            bigSubXactTopXid = xid(s);
            s.execute(bigInsert(20_001, 20_000 + BIG_ROWS));
            s.execute("SAVEPOINT sp");
            s.execute(bigInsert(30_001, 30_000 + BIG_ROWS));
            s.execute("ROLLBACK TO SAVEPOINT sp");
            c.commit();
        }
        // Two large transactions in flight at once, and a small one committing between them.
        try (Connection a = pg.connect(DB); Connection b = pg.connect(DB);
             Statement sa = a.createStatement(); Statement sb = b.createStatement()) {
            a.setAutoCommit(false);
            b.setAutoCommit(false);
            concurrentA = xid(sa);
            sa.execute(bigInsert(40_001, 40_500));
            concurrentB = xid(sb);
            sb.execute(bigInsert(50_001, 51_000));
            pg.execute(DB, "INSERT INTO items VALUES (60, 'small', NULL)");
            sa.execute(bigInsert(40_501, 41_000));
            b.commit();
            a.commit();
        }
        pg.execute(DB, "SET TIME ZONE 'Europe/Berlin'; INSERT INTO typed VALUES (1, true, -2, 9000000000, 12.34, 1.5, 'héllo', 'ab',"
                + " '\\x0102ff', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"k\": [1, 2]}', '2024-02-29',"
                + " '2024-02-29 13:34:56.789+01', '1 year 2 days 3 seconds', 'happy', 5, '{sad,happy}', '{1,NULL,3}',"
                + " '{\"a b\",NULL,c}')");
    }

    @AfterAll
    void stopServer() {
        if (pg != null) {
            pg.close();
        }
    }

    /** What every read must reassemble to, one line per committed transaction, in commit order. */
    static List<String> expectedUnits() {
        return List.of(
                "I items(id,name,body)[1, a, <5000 chars>]",
                "U items(id,name,body)[1, b, toast]",
                "U items(id,name,body)K[1, null, null] -> [2, b, toast]",
                "I full_t(id,v)[1, p]",
                "U full_t(id,v)O[1, p] -> [1, q]",
                "D full_t(id,v)O[1, q]",
                "D items(id,name,body)K[2, null, null]",
                "O node_a 0/ABCDEF | I items(id,name,body)[50, o, from origin]",
                "I items(id,name,body,extra)[3, c, short, 7]",
                "I items(id,body,extra)[4, short2, 8]",
                "M tx millrace x",
                "M nontx millrace nt",
                "T [full_t]",
                "I big #1..#" + BIG_ROWS,
                "I big #20001..#" + (20_000 + BIG_ROWS),
                "I items(id,body,extra)[60, small, null]",
                "I big #50001..#51000",
                "I big #40001..#41000",
                "I typed #1");
    }

    // ---- tests --------------------------------------------------------------------------------

    @Test
    void protocolV1Text() throws Exception {
        List<PgOutputMessage> messages = read("v1-text", "proto_version", "1", "publication_names", "pub", "messages", "true");
        assertThat(StreamTrace.units(messages)).containsExactlyElementsOf(expectedUnits());
        assertThat(messages).noneMatch(m -> m instanceof StreamStart);
        assertTransactionFrames(messages);
        Insert first = messages.stream().filter(m -> m instanceof Insert).map(m -> (Insert) m).findFirst().orElseThrow();
        assertThat(List.of(first.newTuple().kind(0), first.newTuple().kind(1), first.newTuple().kind(2))).containsExactly('t', 't', 't');
        assertThat(new String(first.newTuple().valueBytes(0), StandardCharsets.UTF_8)).isEqualTo("1");
        assertThat(first.relation().column(0).type().oid()).isEqualTo(23);
        assertThat(first.relation().column(0).key()).isTrue();
        assertThat(first.relation().replicaIdentity()).isEqualTo('d');
    }

    @Test
    void protocolV1Binary() throws Exception {
        List<PgOutputMessage> messages = read("v1-binary", "proto_version", "1", "publication_names", "pub", "messages", "true",
                "binary", "true");
        assertThat(StreamTrace.units(messages)).containsExactlyElementsOf(expectedUnits());
        Insert first = messages.stream().filter(m -> m instanceof Insert).map(m -> (Insert) m).findFirst().orElseThrow();
        assertThat(first.newTuple().kind(0)).isEqualTo('b');
        assertThat(first.newTuple().valueBytes(0)).containsExactly(0, 0, 0, 1); // int4send
    }

    @Test
    void protocolV2StreamingReassemblesToTheSameTransactions() throws Exception {
        List<PgOutputMessage> messages = read("v2-streaming", "proto_version", "2", "publication_names", "pub", "messages", "true",
                "streaming", "on");
        assertStreamed(messages);
        assertThat(messages).filteredOn(m -> m instanceof StreamAbort).allMatch(m -> ((StreamAbort) m).abortLsn() == null);
    }

    static Object[] expectedTypedRow() {
        return new Object[] {1, true, (short) -2, 9_000_000_000L, new BigDecimal("12.340"), 1.5d, "héllo", "ab ",
                new byte[] {1, 2, (byte) 0xff}, UUID.fromString("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), "{\"k\": [1, 2]}",
                LocalDate.of(2024, 2, 29), Instant.parse("2024-02-29T12:34:56.789Z"), new PgInterval(12, 2, 3_000_000L),
                "happy", 5, PgArray.of("sad", "happy"), PgArray.of(1, null, 3), PgArray.of("a b", null, "c")};
    }

    private static Insert typedInsert(List<PgOutputMessage> messages) {
        return messages.stream().filter(m -> m instanceof Insert i && i.relation().table().table().equals("typed"))
                .map(m -> (Insert) m).findFirst().orElseThrow();
    }

    @Test
    void valuesOfManyTypesDecodeAlikeFromTextAndBinary() throws Exception {
        Insert text = typedInsert(read("typed-text", "proto_version", "1", "publication_names", "pub"));
        Insert binary = typedInsert(read("typed-binary", "proto_version", "1", "publication_names", "pub", "binary", "true"));
        for (int i = 0; i < text.newTuple().columnCount(); i++) {
            assertThat(text.newTuple().kind(i)).isEqualTo('t');
            assertThat(binary.newTuple().kind(i)).isEqualTo('b');
        }
        assertThat(text.relation().column(14).type().name()).isEqualTo("mood");   // from the resolver
        assertThat(text.relation().column(15).type().isDomain()).isTrue();
        assertThat(text.newTuple().decode(text.relation())).containsExactly(expectedTypedRow());
        assertThat(binary.newTuple().decode(binary.relation())).containsExactly(expectedTypedRow());
    }

    @Test
    void withoutTheCatalogAnEnumIsUnknownTextAndCannotBeReadInBinary() throws Exception {
        Insert text = typedInsert(read(TypeResolver.builtinsOnly(), "typed-text-nocatalog", "proto_version", "1",
                "publication_names", "pub"));
        assertThat(text.relation().column(14).type().name()).startsWith("unknown_oid_");
        Object[] values = text.newTuple().decode(text.relation());
        assertThat(values[14]).isInstanceOf(PgUnknown.class);
        assertThat(((PgUnknown) values[14]).text()).isEqualTo("happy");

        Insert binary = typedInsert(read(TypeResolver.builtinsOnly(), "typed-binary-nocatalog", "proto_version", "1",
                "publication_names", "pub", "binary", "true"));
        assertThatThrownBy(() -> binary.newTuple().decode(binary.relation()))
                .isInstanceOfSatisfying(MillraceException.class, e -> {
                    assertThat(e.kind()).isEqualTo(MillraceException.Kind.DECODE);
                    assertThat(e.getMessage()).contains("\"m\"", "public.typed", "unknown_oid_", "binary");
                });
    }

    /** Streaming checks that hold for every protocol version from 2 on. */
    void assertStreamed(List<PgOutputMessage> messages) {
        assertThat(StreamTrace.units(messages)).containsExactlyElementsOf(expectedUnits());

        List<StreamStart> starts = messages.stream().filter(m -> m instanceof StreamStart).map(m -> (StreamStart) m).toList();
        List<Long> blockXids = starts.stream().map(StreamStart::xid).distinct().toList();
        assertThat(blockXids).containsExactly(bigCommittedXid, bigAbortedXid, bigSubXactTopXid, concurrentA, concurrentB);
        for (long xid : blockXids) {
            assertThat(starts.stream().filter(s -> s.xid() == xid).map(StreamStart::firstSegment).toList())
                    .as("segments of xid %d", xid).startsWith(true).containsOnlyOnce(true);
        }
        // blocks of the two concurrent transactions interleave: A, then B, then A again
        List<Long> sequence = starts.stream().map(StreamStart::xid).filter(x -> x == concurrentA || x == concurrentB).toList();
        assertThat(sequence.indexOf(concurrentB)).isGreaterThan(0);
        assertThat(sequence.lastIndexOf(concurrentA)).isGreaterThan(sequence.indexOf(concurrentB));

        // inside blocks every change carries an xid; a whole-transaction abort and a subtransaction abort
        List<StreamAbort> aborts = messages.stream().filter(m -> m instanceof StreamAbort).map(m -> (StreamAbort) m).toList();
        assertThat(aborts).anyMatch(a -> a.xid() == bigAbortedXid && a.subXid() == bigAbortedXid);
        StreamAbort sub = aborts.stream().filter(a -> a.xid() == bigSubXactTopXid).findFirst().orElseThrow();
        assertThat(sub.subXid()).isNotEqualTo(bigSubXactTopXid);
        List<Integer> subRows = new ArrayList<>();
        boolean inBlock = false;
        for (PgOutputMessage m : messages) {
            if (m instanceof StreamStart) {
                inBlock = true;
            } else if (m instanceof StreamStop) {
                inBlock = false;
            } else if (m instanceof Insert i && inBlock) {
                assertThat(i.xid()).isNotZero();
                if (i.xid() == sub.subXid()) {
                    subRows.add((Integer) i.newTuple().decode(i.relation())[0]);
                }
            } else if (m instanceof Insert i) {
                assertThat(i.xid()).isZero();
            }
        }
        assertThat(subRows).isNotEmpty().allMatch(id -> id > 30_000 && id <= 30_000 + BIG_ROWS);

        List<StreamCommit> commits = messages.stream().filter(m -> m instanceof StreamCommit).map(m -> (StreamCommit) m).toList();
        assertThat(commits).extracting(StreamCommit::xid).containsExactly(bigCommittedXid, bigSubXactTopXid, concurrentB, concurrentA);
        assertThat(commits).allSatisfy(c -> {
            assertThat(c.endLsn()).isGreaterThan(c.commitLsn());
            assertRecent(c.commitTimeMicros());
        });
        // the small transaction that committed while A was in flight comes between A's blocks and A's commit
        int firstA = messages.indexOf(starts.stream().filter(s -> s.xid() == concurrentA).findFirst().orElseThrow());
        int commitA = messages.indexOf(commits.get(3));
        int small = indexOfUnit(messages, "I items(id,body,extra)[60, small, null]");
        assertThat(small).isBetween(firstA, commitA);
    }

    // ---- helpers ------------------------------------------------------------------------------

    /** Begin/Commit pairs: matching LSNs, ordered, recent timestamps converted to the Unix epoch. */
    static void assertTransactionFrames(List<PgOutputMessage> messages) {
        assertTransactionFramesOrdered(messages);
        messages.stream().filter(m -> m instanceof Commit).forEach(m -> assertRecent(((Commit) m).commitTimeMicros()));
        assertThat(messages.stream().filter(m -> m instanceof Commit).count()).isGreaterThanOrEqualTo(expectedUnits().size() - 1);
    }

    /** Begin/Commit pairs: matching LSNs and times, commit LSNs increasing, times after 2020 (epoch converted). */
    static void assertTransactionFramesOrdered(List<PgOutputMessage> messages) {
        Begin open = null;
        Lsn last = Lsn.ZERO;
        for (PgOutputMessage m : messages) {
            if (m instanceof Begin b) {
                assertThat(open).isNull();
                open = b;
                assertThat(b.xid()).isPositive();
            } else if (m instanceof Commit c) {
                assertThat(open).isNotNull();
                assertThat(c.commitLsn()).isEqualTo(open.finalLsn());
                assertThat(c.endLsn()).isGreaterThan(c.commitLsn());
                assertThat(c.commitLsn()).isGreaterThan(last);
                assertThat(c.commitTimeMicros()).isEqualTo(open.commitTimeMicros())
                        .isGreaterThan(1_577_836_800_000_000L); // 2020-01-01 in Unix micros
                last = c.commitLsn();
                open = null;
            }
        }
        assertThat(open).isNull();
    }

    static void assertRecent(long unixMicros) {
        long now = System.currentTimeMillis() * 1000;
        assertThat(unixMicros).isBetween(now - 3_600_000_000L, now + 60_000_000L);
    }

    private static int indexOfUnit(List<PgOutputMessage> messages, String line) {
        for (int i = 0; i < messages.size(); i++) {
            PgOutputMessage m = messages.get(i);
            if (!(m instanceof RelationMessage) && m instanceof Insert && StreamTrace.describe(m).equals(line)) {
                return i;
            }
        }
        return -1;
    }

    /** Peeks at the slot with these pgoutput options, saves the recording, frames every message. */
    List<PgOutputMessage> read(String name, String... options) throws SQLException, IOException {
        return read(new CatalogTypeResolver(pg, DB), name, options);
    }

    List<PgOutputMessage> read(TypeResolver resolver, String name, String... options) throws SQLException, IOException {
        List<byte[]> raw = new ArrayList<>();
        try (Connection c = pg.connect(DB); Statement s = c.createStatement()) {
            s.execute("SET logical_decoding_work_mem = '64kB'");
            StringBuilder sql = new StringBuilder("SELECT data FROM pg_logical_slot_peek_binary_changes('s', NULL, NULL");
            for (String o : options) {
                sql.append(", ").append(Ident.literal(o));
            }
            try (ResultSet rs = s.executeQuery(sql.append(')').toString())) {
                while (rs.next()) {
                    raw.add(rs.getBytes(1));
                }
            }
        }
        Path dir = Paths.get("target", "pgoutput-recordings");
        Files.createDirectories(dir);
        Files.write(dir.resolve("pg" + major() + "-" + name + ".b64"),
                raw.stream().map(b -> Base64.getEncoder().encodeToString(b)).collect(Collectors.toList()));
        PgOutputFramer framer = new PgOutputFramer(resolver);
        List<PgOutputMessage> messages = new ArrayList<>(raw.size());
        for (byte[] b : raw) {
            messages.add(framer.frame(b, 0, b.length));
        }
        return messages;
    }

    static long xid(Statement s) throws SQLException {
        try (ResultSet rs = s.executeQuery("SELECT txid_current() % 4294967296")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static String bigInsert(int from, int to) {
        return "INSERT INTO big SELECT g, repeat(md5(g::text), 4) FROM generate_series(" + from + ", " + to + ") g";
    }
}
