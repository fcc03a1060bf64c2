package io.millrace.pgoutput;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.Codecs;
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

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Splits a pgoutput stream into {@link PgOutputMessage}s, protocol versions 1 to 4, one message per
 * call. Row messages are framed, not decoded: their tuples become {@link RawTuple}s that point into
 * the message bytes, and decoding the values is left to {@link RawTuple#decode} (the decoder pool).
 *
 * <h2>State kept in stream order</h2>
 * <ul>
 *   <li><b>Relation cache</b> (oid to {@link RelationInfo}). A Relation message replaces the entry with a
 *       new immutable {@code RelationInfo}; row messages framed before keep the one they were framed
 *       with, so a column added or dropped mid-stream decodes correctly from the next Relation message
 *       on. A row message for an oid the stream has not described is a DECODE error.</li>
 *   <li><b>Stream block</b>. Between {@code StreamStart} and {@code StreamStop} (protocol v2+) Relation,
 *       Type, Insert, Update, Delete, Truncate and logical messages carry an extra leading xid; outside
 *       they do not. The framer tracks which case applies. Inside a block, the xid of a change is the
 *       xid of the (sub)transaction that made it, which a {@code StreamAbort} of a subtransaction
 *       names.</li>
 * </ul>
 *
 * <h2>Threads</h2>
 * Not thread-safe: one thread (the framer stage) owns an instance and calls {@link #frame} in stream
 * order. The messages it returns are immutable and may be handed to other threads; so may the
 * {@link RelationInfo}s. After a reconnect, use a new framer: the server sends every Relation message
 * again in a new session.
 *
 * <h2>Buffers</h2>
 * The framer does not copy row data: the returned {@link RawTuple}s keep a reference to {@code data}.
 * The caller must not modify or reuse that array after passing it to {@link #frame}.
 *
 * <h2>Errors</h2>
 * Any input the framer cannot read (truncated, trailing bytes, an unknown message type, a row for an
 * undescribed relation, a stream block out of order) is a {@link MillraceException} of kind
 * {@link MillraceException.Kind#DECODE}; nothing is skipped silently (INV: NO-SILENT-ERROR).
 * Exceptions that the {@link TypeResolver} throws as {@code MillraceException} pass through unchanged.
 */
public final class PgOutputFramer {
    /** Microseconds from the Unix epoch to the PostgreSQL epoch, 2000-01-01 00:00:00 UTC. */
    static final long PG_EPOCH_OFFSET_MICROS = 946_684_800_000_000L;

    private final TypeResolver resolver;
    /** oid to the relation's current shape, in stream order. */
    private final Map<Integer, RelationInfo> relations = new HashMap<>();

    /** Between StreamStart and StreamStop: messages carry a leading xid. */
    private boolean inStreamBlock;
    private long streamXid;
    /** Between Begin and Commit, for error context. */
    private boolean inTransaction;
    private long txXid;
    private Lsn txFinalLsn;

    public PgOutputFramer(TypeResolver resolver) {
        this.resolver = Objects.requireNonNull(resolver, "resolver");
    }

    /** The relation's current shape in the stream, or {@code null} when no Relation message described it yet. */
    public RelationInfo relation(int oid) {
        return relations.get(oid);
    }

    /** The relations described so far (by Relation messages), by oid. */
    public java.util.Collection<RelationInfo> relations() {
        return java.util.List.copyOf(relations.values());
    }

    /**
     * Takes a relation described to another framer: pgoutput describes a relation once per session, so one
     * first described inside a streamed transaction that committed is not described again to the main stream.
     */
    public void learn(RelationInfo relation) {
        relations.put(relation.oid(), relation);
    }

    /**
     * Frames one pgoutput message: the payload of one XLogData message of the walsender, or one
     * {@code data} row of {@code pg_logical_slot_get_binary_changes}.
     *
     * @throws MillraceException of kind DECODE when the bytes are not a valid message in this state
     */
    public PgOutputMessage frame(byte[] data, int offset, int length) {
        ByteReader r = new ByteReader(data, offset, length);
        try {
            if (length == 0) {
                throw r.error("the message is empty");
            }
            int type = r.u8("message type");
            return switch (type) {
                case 'B' -> begin(named(r, "Begin message"));
                case 'C' -> commit(named(r, "Commit message"));
                case 'O' -> origin(named(r, "Origin message"));
                case 'R' -> relationMessage(named(r, "Relation message"));
                case 'Y' -> typeMessage(named(r, "Type message"));
                case 'I' -> insert(named(r, "Insert message"));
                case 'U' -> update(named(r, "Update message"));
                case 'D' -> delete(named(r, "Delete message"));
                case 'T' -> truncate(named(r, "Truncate message"));
                case 'M' -> logicalMessage(named(r, "logical decoding Message"));
                case 'S' -> streamStart(named(r, "Stream Start message"));
                case 'E' -> streamStop(named(r, "Stream Stop message"));
                case 'c' -> streamCommit(named(r, "Stream Commit message"));
                case 'A' -> streamAbort(named(r, "Stream Abort message"));
                case 'b', 'P', 'K', 'r', 'p' -> throw r.error("two-phase message type " + RawTuple.describeByte(type)
                        + " (protocol v3) is not supported: create the slot without two_phase and do not pass the"
                        + " 'two_phase' option");
                default -> throw r.error("unknown message type " + RawTuple.describeByte(type) + " " + context());
            };
        } catch (MillraceException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new MillraceException(MillraceException.Kind.DECODE, "cannot decode " + r.what() + " (" + length
                    + " bytes) " + context() + ": " + e, e);
        }
    }

    private static ByteReader named(ByteReader r, String what) {
        r.describe(what);
        return r;
    }

    private PgOutputMessage begin(ByteReader r) {
        noStreamBlock(r);
        Lsn finalLsn = Lsn.of(r.i64("final LSN"));
        long time = timestamp(r.i64("commit timestamp"));
        long xid = r.u32("xid");
        r.expectEnd();
        inTransaction = true;
        txXid = xid;
        txFinalLsn = finalLsn;
        return new Begin(finalLsn, time, xid);
    }

    private PgOutputMessage commit(ByteReader r) {
        noStreamBlock(r);
        int flags = r.u8("flags");
        Lsn commitLsn = Lsn.of(r.i64("commit LSN"));
        Lsn endLsn = Lsn.of(r.i64("end LSN"));
        long time = timestamp(r.i64("commit timestamp"));
        r.expectEnd();
        inTransaction = false;
        return new Commit(flags, commitLsn, endLsn, time);
    }

    private PgOutputMessage origin(ByteReader r) {
        Lsn originLsn = Lsn.of(r.i64("origin LSN"));
        String name = r.cstring("origin name");
        r.expectEnd();
        return new Origin(originLsn, name);
    }

    private PgOutputMessage relationMessage(ByteReader r) {
        streamXid(r);
        int oid = r.i32("relation oid");
        String namespace = r.cstring("namespace");
        String name = r.cstring("relation name");
        int replicaIdentity = r.u8("replica identity");
        if (replicaIdentity != 'd' && replicaIdentity != 'n' && replicaIdentity != 'f' && replicaIdentity != 'i') {
            throw r.error("relation " + name + " (oid " + Integer.toUnsignedString(oid) + ") has unknown replica identity "
                    + RawTuple.describeByte(replicaIdentity));
        }
        int columnCount = r.u16("column count");
        if (name.isEmpty()) {
            throw r.error("relation oid " + Integer.toUnsignedString(oid) + " has an empty name");
        }
        TableRef table = new TableRef(namespace.isEmpty() ? "pg_catalog" : namespace, name);
        List<ColumnInfo> columns = new ArrayList<>(Math.min(columnCount, r.remaining()));
        for (int i = 0; i < columnCount; i++) {
            int flags = r.u8("flags of column", i);
            String column = r.cstring("name of column", i);
            int typeOid = r.i32("type oid of column", i);
            int typeMod = r.i32("type modifier of column", i);
            columns.add(new ColumnInfo(column, typeOf(typeOid, table, column), typeMod, (flags & 1) != 0));
        }
        r.expectEnd();
        RelationInfo relation;
        try {
            relation = new RelationInfo(oid, table, (char) replicaIdentity, columns, resolver);
        } catch (MillraceException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new MillraceException(MillraceException.Kind.DECODE, "cannot set up the columns of table " + table
                    + " (oid " + Integer.toUnsignedString(oid) + ") " + context() + ": " + e.getMessage(), e);
        }
        relations.put(oid, relation);
        return new RelationMessage(relation);
    }

    /** Built-in types first, then the resolver (enums, domains, extension types), else an unknown type. */
    private TypeInfo typeOf(int oid, TableRef table, String column) {
        TypeInfo type = Codecs.builtin(oid);
        if (type == null) {
            try {
                type = resolver.resolve(oid);
            } catch (MillraceException e) {
                throw e;
            } catch (RuntimeException e) {
                throw new MillraceException(MillraceException.Kind.DECODE, "cannot resolve type oid "
                        + Integer.toUnsignedString(oid) + " of column \"" + column + "\" of table " + table + ": "
                        + e.getMessage(), e);
            }
        }
        if (type == null) {
            type = new TypeInfo(oid, "pg_catalog", "unknown_oid_" + Integer.toUnsignedString(oid), 'b', 'X', 0, 0);
        }
        return type;
    }

    private PgOutputMessage typeMessage(ByteReader r) {
        long xid = streamXid(r);
        int oid = r.i32("type oid");
        String namespace = r.cstring("namespace");
        String name = r.cstring("type name");
        r.expectEnd();
        return new TypeMessage(xid, oid, namespace.isEmpty() ? "pg_catalog" : namespace, name);
    }

    private PgOutputMessage insert(ByteReader r) {
        long xid = streamXid(r);
        RelationInfo relation = cachedRelation(r, r.i32("relation oid"));
        expectTupleTag(r, 'N', "new tuple");
        RawTuple tuple = RawTuple.read(r);
        r.expectEnd();
        return new Insert(xid, relation, tuple);
    }

    private PgOutputMessage update(ByteReader r) {
        long xid = streamXid(r);
        RelationInfo relation = cachedRelation(r, r.i32("relation oid"));
        int tag = r.u8("tuple tag");
        char oldKind = 0;
        RawTuple oldTuple = null;
        if (tag == 'K' || tag == 'O') {
            oldKind = (char) tag;
            oldTuple = RawTuple.read(r);
            tag = r.u8("new tuple tag");
        }
        if (tag != 'N') {
            throw r.error("expected tuple tag 'N'" + (oldKind == 0 ? ", 'K' or 'O'" : "") + " but found "
                    + RawTuple.describeByte(tag));
        }
        RawTuple newTuple = RawTuple.read(r);
        r.expectEnd();
        return new Update(xid, relation, oldKind, oldTuple, newTuple);
    }

    private PgOutputMessage delete(ByteReader r) {
        long xid = streamXid(r);
        RelationInfo relation = cachedRelation(r, r.i32("relation oid"));
        int tag = r.u8("tuple tag");
        if (tag != 'K' && tag != 'O') {
            throw r.error("expected tuple tag 'K' or 'O' but found " + RawTuple.describeByte(tag));
        }
        RawTuple oldTuple = RawTuple.read(r);
        r.expectEnd();
        return new Delete(xid, relation, (char) tag, oldTuple);
    }

    private PgOutputMessage truncate(ByteReader r) {
        long xid = streamXid(r);
        int count = r.i32("relation count");
        int options = r.u8("options");
        if (count < 0 || count > r.remaining() / 4) {
            throw r.error("relation count " + count + " does not match the " + r.remaining() + " bytes left");
        }
        List<RelationInfo> list = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            list.add(cachedRelation(r, r.i32("relation oid", i)));
        }
        r.expectEnd();
        return new Truncate(xid, list, (options & 1) != 0, (options & 2) != 0);
    }

    private PgOutputMessage logicalMessage(ByteReader r) {
        long xid = streamXid(r);
        int flags = r.u8("flags");
        Lsn lsn = Lsn.of(r.i64("message LSN"));
        String prefix = r.cstring("prefix");
        int length = r.i32("content length");
        if (length < 0) {
            throw r.error("negative content length " + length);
        }
        byte[] content = r.bytes(length, "content");
        r.expectEnd();
        return new LogicalMessage(xid, (flags & 1) != 0, lsn, prefix, content);
    }

    private PgOutputMessage streamStart(ByteReader r) {
        noStreamBlock(r);
        long xid = r.u32("xid");
        int first = r.u8("first segment flag");
        r.expectEnd();
        inStreamBlock = true;
        streamXid = xid;
        return new StreamStart(xid, first == 1);
    }

    private PgOutputMessage streamStop(ByteReader r) {
        if (!inStreamBlock) {
            throw r.error("Stream Stop without a Stream Start before it " + context());
        }
        r.expectEnd();
        inStreamBlock = false;
        return new StreamStop();
    }

    private PgOutputMessage streamCommit(ByteReader r) {
        noStreamBlock(r);
        long xid = r.u32("xid");
        int flags = r.u8("flags");
        Lsn commitLsn = Lsn.of(r.i64("commit LSN"));
        Lsn endLsn = Lsn.of(r.i64("end LSN"));
        long time = timestamp(r.i64("commit timestamp"));
        r.expectEnd();
        return new StreamCommit(xid, flags, commitLsn, endLsn, time);
    }

    private PgOutputMessage streamAbort(ByteReader r) {
        noStreamBlock(r);
        long xid = r.u32("xid");
        long subXid = r.u32("subtransaction xid");
        Lsn abortLsn = null;
        long abortTime = 0;
        // Protocol v4 with streaming 'parallel' appends the abort LSN and time; the length tells which.
        if (r.remaining() == 16) {
            abortLsn = Lsn.of(r.i64("abort LSN"));
            abortTime = timestamp(r.i64("abort timestamp"));
        }
        r.expectEnd();
        return new StreamAbort(xid, subXid, abortLsn, abortTime);
    }

    /** Inside a stream block the message starts with the (sub)transaction's xid; outside it does not. */
    private long streamXid(ByteReader r) {
        return inStreamBlock ? r.u32("xid") : 0;
    }

    private void noStreamBlock(ByteReader r) {
        if (inStreamBlock) {
            throw r.error("not allowed inside the block of streamed transaction xid " + streamXid
                    + " (no Stream Stop came before it)");
        }
    }

    private static void expectTupleTag(ByteReader r, int expected, String what) {
        int tag = r.u8(what + " tag");
        if (tag != expected) {
            throw r.error("expected " + what + " tag " + RawTuple.describeByte(expected) + " but found "
                    + RawTuple.describeByte(tag));
        }
    }

    private RelationInfo cachedRelation(ByteReader r, int oid) {
        RelationInfo relation = relations.get(oid);
        if (relation == null) {
            throw r.error("relation oid " + Integer.toUnsignedString(oid) + " has not been described by a Relation message "
                    + context() + "; known relation oids: " + relations.keySet());
        }
        return relation;
    }

    private String context() {
        if (inStreamBlock) {
            return "(in a block of streamed transaction xid " + streamXid + ")";
        }
        if (inTransaction) {
            return "(in transaction xid " + txXid + ", final LSN " + txFinalLsn + ")";
        }
        return "(outside a transaction)";
    }

    private static long timestamp(long pgMicros) {
        return pgMicros + PG_EPOCH_OFFSET_MICROS;
    }
}
