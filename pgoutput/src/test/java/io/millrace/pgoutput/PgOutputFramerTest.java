package io.millrace.pgoutput;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;
import io.millrace.pgoutput.PgOutputBytes.Col;
import io.millrace.pgoutput.PgOutputMessage.Begin;
import io.millrace.pgoutput.PgOutputMessage.Commit;
import io.millrace.pgoutput.PgOutputMessage.Delete;
import io.millrace.pgoutput.PgOutputMessage.Insert;
import io.millrace.pgoutput.PgOutputMessage.LogicalMessage;
import io.millrace.pgoutput.PgOutputMessage.Origin;
import io.millrace.pgoutput.PgOutputMessage.RelationMessage;
import io.millrace.pgoutput.PgOutputMessage.StreamAbort;
import io.millrace.pgoutput.PgOutputMessage.StreamCommit;
import io.millrace.pgoutput.PgOutputMessage.StreamStart;
import io.millrace.pgoutput.PgOutputMessage.StreamStop;
import io.millrace.pgoutput.PgOutputMessage.Truncate;
import io.millrace.pgoutput.PgOutputMessage.TypeMessage;
import io.millrace.pgoutput.PgOutputMessage.Update;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static io.millrace.pgoutput.PgOutputBytes.UNCHANGED;
import static io.millrace.pgoutput.PgOutputBytes.begin;
import static io.millrace.pgoutput.PgOutputBytes.commit;
import static io.millrace.pgoutput.PgOutputBytes.delete;
import static io.millrace.pgoutput.PgOutputBytes.insert;
import static io.millrace.pgoutput.PgOutputBytes.message;
import static io.millrace.pgoutput.PgOutputBytes.relation;
import static io.millrace.pgoutput.PgOutputBytes.streamAbort;
import static io.millrace.pgoutput.PgOutputBytes.streamCommit;
import static io.millrace.pgoutput.PgOutputBytes.streamStart;
import static io.millrace.pgoutput.PgOutputBytes.streamStop;
import static io.millrace.pgoutput.PgOutputBytes.truncate;
import static io.millrace.pgoutput.PgOutputBytes.typeMsg;
import static io.millrace.pgoutput.PgOutputBytes.update;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PgOutputFramerTest {
    static final int INT4 = 23;
    static final int TEXT = 25;
    static final int BYTEA = 17;
    static final int T1 = 16384;
    static final int T2 = 16390;
    static final long TS = 789_000_000_000_000L; // 2025-01-01-ish in PostgreSQL micros

    private final PgOutputFramer framer = new PgOutputFramer(TypeResolver.builtinsOnly());

    private PgOutputMessage frame(byte[] msg) {
        return framer.frame(msg, 0, msg.length);
    }

    private RelationInfo describeT1() {
        return ((RelationMessage) frame(relation(null, T1, "public", "t1", 'd',
                Col.key("id", INT4), Col.of("name", TEXT), Col.of("body", TEXT)))).relation();
    }

    // ---- transaction control ------------------------------------------------------------------

    @Test
    void beginAndCommitConvertTimestampsToUnixEpochAndReadUnsignedXids() {
        Begin b = (Begin) frame(begin(0x16_B374D848L, 0, 0xFFFF_FFF0L));
        assertThat(b.finalLsn()).isEqualTo(Lsn.parse("16/B374D848"));
        assertThat(b.commitTimeMicros()).isEqualTo(946_684_800_000_000L); // 2000-01-01T00:00:00Z
        assertThat(b.xid()).isEqualTo(4_294_967_280L);

        Commit c = (Commit) frame(commit(0x1_0000_0010L, 0x1_0000_0040L, TS));
        assertThat(c.flags()).isZero();
        assertThat(c.commitLsn()).isEqualTo(Lsn.parse("1/10"));
        assertThat(c.endLsn()).isEqualTo(Lsn.parse("1/40"));
        assertThat(c.commitTimeMicros()).isEqualTo(TS + PgOutputBytes.PG_EPOCH_MICROS);
    }

    @Test
    void timestampsBeforeThePostgresEpochStayExact() {
        Begin b = (Begin) frame(begin(1, -1, 7));
        assertThat(b.commitTimeMicros()).isEqualTo(946_684_799_999_999L);
    }

    @Test
    void origin() {
        frame(begin(100, TS, 5));
        Origin o = (Origin) frame(PgOutputBytes.origin(0xABCDEFL, "node_a"));
        assertThat(o.originLsn()).isEqualTo(Lsn.of(0xABCDEF));
        assertThat(o.name()).isEqualTo("node_a");
    }

    // ---- relations and types ------------------------------------------------------------------

    @Test
    void relationMessageFillsTheCache() {
        RelationInfo rel = describeT1();
        assertThat(rel.oid()).isEqualTo(T1);
        assertThat(rel.table()).isEqualTo(new TableRef("public", "t1"));
        assertThat(rel.replicaIdentity()).isEqualTo('d');
        assertThat(rel.columns()).extracting(c -> c.name()).containsExactly("id", "name", "body");
        assertThat(rel.columns()).extracting(c -> c.key()).containsExactly(true, false, false);
        assertThat(rel.column(0).type().name()).isEqualTo("int4");
        assertThat(rel.column(1).type().name()).isEqualTo("text");
        assertThat(rel.column(0).typeMod()).isEqualTo(-1);
        assertThat(rel.keyIndexes()).containsExactly(0);
        assertThat(framer.relation(T1)).isSameAs(rel);
        assertThat(framer.relation(T2)).isNull();
    }

    @Test
    void emptyNamespaceMeansPgCatalog() {
        RelationInfo rel = ((RelationMessage) frame(relation(null, 1259, "", "pg_class", 'n', Col.of("x", INT4)))).relation();
        assertThat(rel.table()).isEqualTo(new TableRef("pg_catalog", "pg_class"));
        TypeMessage t = (TypeMessage) frame(typeMsg(null, 3000, "", "sometype"));
        assertThat(t.namespace()).isEqualTo("pg_catalog");
    }

    @Test
    void typesComeFromBuiltinsThenTheResolverElseUnknown() {
        TypeInfo mood = new TypeInfo(70001, "public", "mood", 'e', 'E', 0, 0);
        List<Integer> asked = new ArrayList<>();
        PgOutputFramer f = new PgOutputFramer(oid -> {
            asked.add(oid);
            return oid == 70001 ? mood : null;
        });
        byte[] msg = relation(null, T1, "public", "t", 'f', Col.of("a", INT4), Col.of("m", 70001), Col.of("x", 70002));
        RelationInfo rel = ((RelationMessage) f.frame(msg, 0, msg.length)).relation();
        assertThat(rel.column(0).type().name()).isEqualTo("int4");
        assertThat(rel.column(1).type()).isEqualTo(mood);
        assertThat(rel.column(2).type()).isEqualTo(new TypeInfo(70002, "pg_catalog", "unknown_oid_70002", 'b', 'X', 0, 0));
        assertThat(asked).containsExactly(70001, 70002); // built-ins never reach the resolver
        assertThat(rel.codec(2)).isNotNull(); // the fallback codec
    }

    @Test
    void typeMessageOutsideAndInsideAStreamBlock() {
        TypeMessage t = (TypeMessage) frame(typeMsg(null, 70001, "public", "mood"));
        assertThat(t).isEqualTo(new TypeMessage(0, 70001, "public", "mood"));
        frame(streamStart(900, true));
        t = (TypeMessage) frame(typeMsg(900L, 70001, "public", "mood"));
        assertThat(t).isEqualTo(new TypeMessage(900, 70001, "public", "mood"));
    }

    // ---- row messages -------------------------------------------------------------------------

    @Test
    void insertFramesEveryTupleKindWithoutDecoding() {
        RelationInfo rel = ((RelationMessage) frame(relation(null, T1, "public", "t1", 'd',
                Col.key("id", INT4), Col.of("a", TEXT), Col.of("b", TEXT), Col.of("c", BYTEA)))).relation();
        frame(begin(100, TS, 5));
        Insert ins = (Insert) frame(insert(null, T1, "1", null, UNCHANGED, new byte[] {1, 2, 3}));
        assertThat(ins.xid()).isZero();
        assertThat(ins.relation()).isSameAs(rel);
        RawTuple t = ins.newTuple();
        assertThat(t.columnCount()).isEqualTo(4);
        assertThat(List.of(t.kind(0), t.kind(1), t.kind(2), t.kind(3))).containsExactly('t', 'n', 'u', 'b');
        assertThat(new String(t.valueBytes(0), StandardCharsets.UTF_8)).isEqualTo("1");
        assertThat(t.valueBytes(1)).isNull();
        assertThat(t.valueBytes(2)).isNull();
        assertThat(t.valueBytes(3)).containsExactly(1, 2, 3);
    }

    @Test
    void framesAMessageInTheMiddleOfALargerBuffer() {
        describeT1();
        byte[] msg = insert(null, T1, "7", "seven", "x");
        byte[] big = new byte[msg.length + 20];
        java.util.Arrays.fill(big, (byte) 'Z');
        System.arraycopy(msg, 0, big, 10, msg.length);
        Insert ins = (Insert) framer.frame(big, 10, msg.length);
        assertThat(new String(ins.newTuple().valueBytes(1), StandardCharsets.UTF_8)).isEqualTo("seven");
        assertThat(ins.newTuple().byteSize()).isGreaterThanOrEqualTo(msg.length - 6);
    }

    @Test
    void byteSizeGrowsWithTheValues() {
        describeT1();
        Insert small = (Insert) frame(insert(null, T1, "1", "a", "b"));
        Insert big = (Insert) frame(insert(null, T1, "1", "a", "b".repeat(10_000)));
        assertThat(big.newTuple().byteSize() - small.newTuple().byteSize()).isEqualTo(9_999);
    }

    @Test
    void updateWithoutWithKeyAndWithWholeOldTuple() {
        RelationInfo rel = describeT1();
        Update plain = (Update) frame(update(null, T1, "1", "n", UNCHANGED));
        assertThat(plain.oldKind()).isEqualTo((char) 0);
        assertThat(plain.oldTuple()).isNull();
        assertThat(plain.relation()).isSameAs(rel);
        assertThat(plain.newTuple().kind(2)).isEqualTo('u');

        Update keyChange = (Update) frame(update(null, T1, 'K', new Object[] {"1", null, null}, new Object[] {"2", "n", "b"}));
        assertThat(keyChange.oldKind()).isEqualTo('K');
        assertThat(keyChange.oldTuple().kind(0)).isEqualTo('t');
        assertThat(keyChange.oldTuple().kind(1)).isEqualTo('n');
        assertThat(new String(keyChange.oldTuple().valueBytes(0), StandardCharsets.UTF_8)).isEqualTo("1");
        assertThat(new String(keyChange.newTuple().valueBytes(0), StandardCharsets.UTF_8)).isEqualTo("2");

        Update full = (Update) frame(update(null, T1, 'O', new Object[] {"2", "n", "b"}, new Object[] {"2", "m", "b"}));
        assertThat(full.oldKind()).isEqualTo('O');
        assertThat(new String(full.oldTuple().valueBytes(1), StandardCharsets.UTF_8)).isEqualTo("n");
        assertThat(new String(full.newTuple().valueBytes(1), StandardCharsets.UTF_8)).isEqualTo("m");
    }

    @Test
    void deleteWithKeyOrWholeRow() {
        describeT1();
        Delete k = (Delete) frame(delete(null, T1, 'K', "1", null, null));
        assertThat(k.oldKind()).isEqualTo('K');
        assertThat(k.oldTuple().kind(0)).isEqualTo('t');
        Delete o = (Delete) frame(delete(null, T1, 'O', "1", "a", "b"));
        assertThat(o.oldKind()).isEqualTo('O');
        assertThat(new String(o.oldTuple().valueBytes(2), StandardCharsets.UTF_8)).isEqualTo("b");
    }

    @Test
    void truncateOfSeveralTablesWithOptions() {
        RelationInfo r1 = describeT1();
        RelationInfo r2 = ((RelationMessage) frame(relation(null, T2, "s", "t2", 'f', Col.of("v", TEXT)))).relation();
        Truncate t = (Truncate) frame(truncate(null, true, false, T1, T2));
        assertThat(t.relations()).containsExactly(r1, r2);
        assertThat(t.cascade()).isTrue();
        assertThat(t.restartIdentity()).isFalse();
        t = (Truncate) frame(truncate(null, false, true, T2));
        assertThat(t.relations()).containsExactly(r2);
        assertThat(t.cascade()).isFalse();
        assertThat(t.restartIdentity()).isTrue();
        assertThat(t.xid()).isZero();
    }

    @Test
    void logicalMessagesTransactionalOrNot() {
        LogicalMessage m = (LogicalMessage) frame(message(null, true, 0x5000, "millrace", "x".getBytes(StandardCharsets.UTF_8)));
        assertThat(m.xid()).isZero();
        assertThat(m.transactional()).isTrue();
        assertThat(m.lsn()).isEqualTo(Lsn.of(0x5000));
        assertThat(m.prefix()).isEqualTo("millrace");
        assertThat(m.content()).containsExactly('x');
        m = (LogicalMessage) frame(message(null, false, 0x5001, "p", new byte[0]));
        assertThat(m.transactional()).isFalse();
        assertThat(m.content()).isEmpty();
    }

    // ---- relation changes mid-stream ----------------------------------------------------------

    @Test
    void aRelationMessageReplacesTheShapeButEarlierFramesKeepTheirs() {
        RelationInfo v1 = ((RelationMessage) frame(relation(null, T1, "public", "t1", 'd',
                Col.key("id", INT4), Col.of("name", TEXT)))).relation();
        Insert before = (Insert) frame(insert(null, T1, "1", "a"));

        // ALTER TABLE t1 ADD COLUMN extra text
        RelationInfo v2 = ((RelationMessage) frame(relation(null, T1, "public", "t1", 'd',
                Col.key("id", INT4), Col.of("name", TEXT), Col.of("extra", TEXT)))).relation();
        Insert after = (Insert) frame(insert(null, T1, "2", "b", "e"));

        assertThat(v2).isNotSameAs(v1);
        assertThat(before.relation()).isSameAs(v1);
        assertThat(v1.columnCount()).isEqualTo(2); // the old instance is not touched
        assertThat(after.relation()).isSameAs(v2);
        assertThat(framer.relation(T1)).isSameAs(v2);
        assertThat(before.newTuple().columnCount()).isEqualTo(2);
        assertThat(after.newTuple().columnCount()).isEqualTo(3);

        // ALTER TABLE t1 DROP COLUMN name
        RelationInfo v3 = ((RelationMessage) frame(relation(null, T1, "public", "t1", 'd',
                Col.key("id", INT4), Col.of("extra", TEXT)))).relation();
        Delete del = (Delete) frame(delete(null, T1, 'K', "2", null));
        assertThat(del.relation()).isSameAs(v3);
        assertThat(v3.columns()).extracting(c -> c.name()).containsExactly("id", "extra");
    }

    // ---- streamed transactions (protocol v2+) -------------------------------------------------

    @Test
    void streamBlocksCarryXidsAndInterleaveWithOrdinaryTransactions() {
        StreamStart s1 = (StreamStart) frame(streamStart(700, true));
        assertThat(s1).isEqualTo(new StreamStart(700, true));
        RelationInfo rel = ((RelationMessage) frame(relation(700L, T1, "public", "t1", 'd',
                Col.key("id", INT4), Col.of("name", TEXT), Col.of("body", TEXT)))).relation();
        Insert i1 = (Insert) frame(insert(700L, T1, "1", "a", "b"));
        Insert sub = (Insert) frame(insert(701L, T1, "2", "a", "b")); // a subtransaction's change
        Update u1 = (Update) frame(update(700L, T1, "1", "z", UNCHANGED));
        Delete d1 = (Delete) frame(delete(700L, T1, 'K', "2", null, null));
        LogicalMessage m1 = (LogicalMessage) frame(message(700L, true, 0x9000, "millrace", new byte[] {'w'}));
        Truncate t1 = (Truncate) frame(truncate(700L, false, false, T1));
        assertThat(frame(streamStop())).isEqualTo(new StreamStop());
        assertThat(i1.xid()).isEqualTo(700);
        assertThat(sub.xid()).isEqualTo(701);
        assertThat(u1.xid()).isEqualTo(700);
        assertThat(d1.xid()).isEqualTo(700);
        assertThat(m1.xid()).isEqualTo(700);
        assertThat(t1.xid()).isEqualTo(700);
        assertThat(i1.relation()).isSameAs(rel);

        // an ordinary transaction between two blocks: no xid field in its messages
        frame(begin(0x8000, TS, 702));
        Insert plain = (Insert) frame(insert(null, T1, "3", "c", "d"));
        assertThat(plain.xid()).isZero();
        assertThat(new String(plain.newTuple().valueBytes(1), StandardCharsets.UTF_8)).isEqualTo("c");
        frame(commit(0x8000, 0x8100, TS));

        // second block of 700 and a block of another streamed transaction
        assertThat(frame(streamStart(700, false))).isEqualTo(new StreamStart(700, false));
        Insert i2 = (Insert) frame(insert(700L, T1, "4", "e", "f"));
        assertThat(i2.xid()).isEqualTo(700);
        frame(streamStop());
        frame(streamStart(710, true));
        Insert other = (Insert) frame(insert(710L, T1, "5", "g", "h"));
        assertThat(other.xid()).isEqualTo(710);
        frame(streamStop());

        assertThat(frame(streamAbort(700, 701))).isEqualTo(new StreamAbort(700, 701, null, 0));
        StreamCommit c = (StreamCommit) frame(streamCommit(700, 0x9100, 0x9200, TS));
        assertThat(c).isEqualTo(new StreamCommit(700, 0, Lsn.of(0x9100), Lsn.of(0x9200), TS + PgOutputBytes.PG_EPOCH_MICROS));
        // protocol v4, streaming 'parallel'
        StreamAbort a = (StreamAbort) frame(streamAbort(710, 710, 0x9300, TS + 5));
        assertThat(a).isEqualTo(new StreamAbort(710, 710, Lsn.of(0x9300), TS + 5 + PgOutputBytes.PG_EPOCH_MICROS));
    }

    @Test
    void streamBlocksOutOfOrderAreDecodeErrors() {
        assertDecodeError(streamStop(), "Stream Stop without a Stream Start");
        frame(streamStart(1, true));
        assertDecodeError(streamStart(2, true), "not allowed inside the block of streamed transaction xid 1");
        assertDecodeError(begin(1, 1, 3), "not allowed inside the block");
        assertDecodeError(commit(1, 1, 1), "not allowed inside the block");
        assertDecodeError(streamCommit(1, 1, 1, 1), "not allowed inside the block");
        assertDecodeError(streamAbort(1, 1), "not allowed inside the block");
    }

    // ---- malformed input ----------------------------------------------------------------------

    @Test
    void unknownMessageTypeIsADecodeErrorNamingTheByte() {
        assertDecodeError(new byte[] {'Z', 0, 0}, "unknown message type 'Z' (0x5a)");
        assertDecodeError(new byte[] {0}, "unknown message type 0x00");
        assertDecodeError(new byte[] {(byte) 0xFF}, "unknown message type 0xff");
    }

    @Test
    void twoPhaseMessagesAreRejectedWithTheFix() {
        for (char c : new char[] {'b', 'P', 'K', 'r', 'p'}) {
            assertDecodeError(new byte[] {(byte) c, 0, 0, 0, 0}, "two_phase");
        }
    }

    @Test
    void rowForAnUndescribedRelationNamesTheOidAndTheTransaction() {
        frame(begin(0x1234_5678L, TS, 42));
        assertDecodeError(insert(null, 99999, "1"), "relation oid 99999 has not been described",
                "xid 42", "final LSN 0/12345678");
        frame(streamStart(43, true));
        assertDecodeError(update(43L, 99999, "1"), "relation oid 99999", "streamed transaction xid 43");
        assertDecodeError(truncate(43L, false, false, 99999), "relation oid 99999");
    }

    @Test
    void everyTruncationOfEveryMessageIsADecodeError() {
        describeT1();
        List<byte[]> valid = validMessagesOutsideAStream();
        for (byte[] msg : valid) {
            framerKnowingT1().frame(msg, 0, msg.length); // valid as a whole
            for (int len = 0; len < msg.length; len++) {
                if (msg[0] == 'A' && len == 9) {
                    continue; // a v4-parallel Stream Abort cut after subXid is a valid v2 Stream Abort
                }
                PgOutputFramer f = framerKnowingT1();
                int n = len;
                assertThatThrownBy(() -> f.frame(msg, 0, n))
                        .as("message %s cut to %d of %d bytes", (char) msg[0], n, msg.length)
                        .isInstanceOfSatisfying(MillraceException.class,
                                e -> assertThat(e.kind()).isEqualTo(MillraceException.Kind.DECODE));
            }
        }
    }

    @Test
    void trailingBytesAreADecodeError() {
        describeT1();
        for (byte[] msg : validMessagesOutsideAStream()) {
            if (msg[0] == 'A') {
                continue; // Stream Abort's length tells v2 from v4-parallel; see below
            }
            byte[] longer = java.util.Arrays.copyOf(msg, msg.length + 1);
            assertDecodeError(framerKnowingT1(), longer, "unexpected byte");
        }
        byte[] abort = java.util.Arrays.copyOf(streamAbort(1, 1), 9 + 8);
        assertDecodeError(abort, "8 unexpected byte(s)");
    }

    @Test
    void badTupleDataIsADecodeError() {
        describeT1();
        byte[] badKind = PgOutputBytes.type('I').i32(T1).i8('N').i16(1).i8('x').build();
        assertDecodeError(badKind, "unknown kind byte 'x'");
        byte[] negative = PgOutputBytes.type('I').i32(T1).i8('N').i16(1).i8('t').i32(-5).build();
        assertDecodeError(negative, "negative length -5");
        byte[] tooLong = PgOutputBytes.type('I').i32(T1).i8('N').i16(1).i8('t').i32(1000).raw(new byte[3]).build();
        assertDecodeError(tooLong, "truncated");
        byte[] badTag = PgOutputBytes.type('I').i32(T1).i8('X').tuple("1").build();
        assertDecodeError(badTag, "expected new tuple tag 'N'");
        byte[] badUpdate = PgOutputBytes.type('U').i32(T1).i8('K').tuple("1").i8('K').tuple("1").build();
        assertDecodeError(badUpdate, "expected tuple tag 'N'");
        byte[] badDelete = PgOutputBytes.type('D').i32(T1).i8('N').tuple("1").build();
        assertDecodeError(badDelete, "expected tuple tag 'K' or 'O'");
        byte[] badIdentity = PgOutputBytes.type('R').i32(T1).str("public").str("t").i8('q').i16(0).build();
        assertDecodeError(badIdentity, "unknown replica identity 'q'");
        byte[] noNul = PgOutputBytes.type('O').i64(1).raw("abc".getBytes(StandardCharsets.UTF_8)).build();
        assertDecodeError(noNul, "no terminating NUL");
        assertDecodeError(new byte[0], "empty");
    }

    @Test
    void badSlicesAreDecodeErrors() {
        byte[] msg = begin(1, 1, 1);
        for (int[] slice : new int[][] {{-1, 3}, {0, msg.length + 1}, {msg.length, 1}, {2, -1}}) {
            assertThatThrownBy(() -> framer.frame(msg, slice[0], slice[1]))
                    .isInstanceOfSatisfying(MillraceException.class,
                            e -> assertThat(e.kind()).isEqualTo(MillraceException.Kind.DECODE));
        }
        assertThatThrownBy(() -> framer.frame(null, 0, 0)).isInstanceOf(MillraceException.class);
    }

    @Test
    void resolverFailuresAreNamed() {
        PgOutputFramer f = new PgOutputFramer(oid -> {
            throw new IllegalStateException("catalog gone");
        });
        byte[] msg = relation(null, T1, "public", "t", 'd', Col.of("m", 70001));
        assertThatThrownBy(() -> f.frame(msg, 0, msg.length))
                .isInstanceOfSatisfying(MillraceException.class, e -> {
                    assertThat(e.kind()).isEqualTo(MillraceException.Kind.DECODE);
                    assertThat(e.getMessage()).contains("70001", "\"m\"", "public.t", "catalog gone");
                });
        MillraceException connection = new MillraceException(MillraceException.Kind.CONNECTION, "down");
        PgOutputFramer g = new PgOutputFramer(oid -> {
            throw connection;
        });
        assertThatThrownBy(() -> g.frame(msg, 0, msg.length)).isSameAs(connection);
    }

    // ---- helpers ------------------------------------------------------------------------------

    static List<byte[]> validMessagesOutsideAStream() {
        return List.of(
                begin(0x100, TS, 9),
                commit(0x100, 0x180, TS),
                PgOutputBytes.origin(5, "origin"),
                relation(null, T1, "public", "t1", 'd', Col.key("id", INT4), Col.of("name", TEXT), Col.of("body", TEXT)),
                typeMsg(null, 70001, "public", "mood"),
                insert(null, T1, "1", null, UNCHANGED),
                insert(null, T1, "1", new byte[] {0, 0, 0, 1}, "x"),
                update(null, T1, "1", "a", UNCHANGED),
                update(null, T1, 'K', new Object[] {"1", null, null}, new Object[] {"2", "a", "b"}),
                update(null, T1, 'O', new Object[] {"1", "a", "b"}, new Object[] {"1", "c", "b"}),
                delete(null, T1, 'K', "1", null, null),
                delete(null, T1, 'O', "1", "a", "b"),
                truncate(null, true, true, T1),
                message(null, true, 0x200, "millrace", new byte[] {1, 2}),
                streamStart(5, true),
                streamCommit(5, 0x300, 0x380, TS),
                streamAbort(5, 6),
                streamAbort(5, 6, 0x400, TS));
    }

    private static PgOutputFramer framerKnowingT1() {
        PgOutputFramer f = new PgOutputFramer(TypeResolver.builtinsOnly());
        byte[] rel = relation(null, T1, "public", "t1", 'd', Col.key("id", INT4), Col.of("name", TEXT), Col.of("body", TEXT));
        f.frame(rel, 0, rel.length);
        return f;
    }

    private void assertDecodeError(byte[] msg, String... fragments) {
        assertDecodeError(framer, msg, fragments);
    }

    private static void assertDecodeError(PgOutputFramer f, byte[] msg, String... fragments) {
        assertThatThrownBy(() -> f.frame(msg, 0, msg.length))
                .isInstanceOfSatisfying(MillraceException.class, e -> {
                    assertThat(e.kind()).isEqualTo(MillraceException.Kind.DECODE);
                    assertThat(e.getMessage()).contains(fragments);
                });
    }
}
