package io.millrace.pgoutput;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Builds pgoutput messages byte by byte, as the server writes them (src/backend/replication/logical/proto.c),
 * for tests. Shipped in the module's test-jar so other modules can feed a framer without a server.
 *
 * <p>Methods that take a {@code Long xid} write the leading xid of messages inside a stream block
 * when it is non-null, and leave it out when {@code null} (outside a block, or protocol v1).
 */
public final class PgOutputBytes {
    /** Marks an unchanged TOASTed column ({@code 'u'}) in {@link #tuple}. */
    public static final Object UNCHANGED = new Object();
    /** Microseconds from the Unix epoch to 2000-01-01. */
    public static final long PG_EPOCH_MICROS = 946_684_800_000_000L;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    public static PgOutputBytes type(char c) {
        return new PgOutputBytes().i8(c);
    }

    public PgOutputBytes i8(int v) {
        out.write(v);
        return this;
    }

    public PgOutputBytes i16(int v) {
        out.write(v >>> 8);
        out.write(v);
        return this;
    }

    public PgOutputBytes i32(long v) {
        out.write((int) (v >>> 24));
        out.write((int) (v >>> 16));
        out.write((int) (v >>> 8));
        out.write((int) v);
        return this;
    }

    public PgOutputBytes i64(long v) {
        return i32(v >>> 32).i32(v);
    }

    public PgOutputBytes str(String s) {
        out.writeBytes(s.getBytes(StandardCharsets.UTF_8));
        out.write(0);
        return this;
    }

    public PgOutputBytes raw(byte[] b) {
        out.writeBytes(b);
        return this;
    }

    public PgOutputBytes xid(Long xid) {
        return xid == null ? this : i32(xid);
    }

    /**
     * A TupleData: {@code null} is 'n', {@link #UNCHANGED} is 'u', a {@code String} is 't' (UTF-8),
     * a {@code byte[]} is 'b'.
     */
    public PgOutputBytes tuple(Object... columns) {
        i16(columns.length);
        for (Object c : columns) {
            if (c == null) {
                i8('n');
            } else if (c == UNCHANGED) {
                i8('u');
            } else if (c instanceof String s) {
                byte[] b = s.getBytes(StandardCharsets.UTF_8);
                i8('t').i32(b.length).raw(b);
            } else if (c instanceof byte[] b) {
                i8('b').i32(b.length).raw(b);
            } else {
                throw new IllegalArgumentException("tuple column must be null, UNCHANGED, String or byte[]: " + c);
            }
        }
        return this;
    }

    public byte[] build() {
        return out.toByteArray();
    }

    // ---- whole messages -------------------------------------------------------------------------

    /** One column of a Relation message. */
    public record Col(String name, int typeOid, int typeMod, boolean key) {
        public static Col key(String name, int typeOid) {
            return new Col(name, typeOid, -1, true);
        }

        public static Col of(String name, int typeOid) {
            return new Col(name, typeOid, -1, false);
        }
    }

    public static byte[] begin(long finalLsn, long pgTimeMicros, long xid) {
        return type('B').i64(finalLsn).i64(pgTimeMicros).i32(xid).build();
    }

    public static byte[] commit(long commitLsn, long endLsn, long pgTimeMicros) {
        return type('C').i8(0).i64(commitLsn).i64(endLsn).i64(pgTimeMicros).build();
    }

    public static byte[] origin(long lsn, String name) {
        return type('O').i64(lsn).str(name).build();
    }

    public static byte[] relation(Long xid, int oid, String namespace, String name, char replicaIdentity, Col... cols) {
        PgOutputBytes b = type('R').xid(xid).i32(oid).str(namespace).str(name).i8(replicaIdentity).i16(cols.length);
        for (Col c : cols) {
            b.i8(c.key() ? 1 : 0).str(c.name()).i32(c.typeOid()).i32(c.typeMod());
        }
        return b.build();
    }

    public static byte[] typeMsg(Long xid, int oid, String namespace, String name) {
        return type('Y').xid(xid).i32(oid).str(namespace).str(name).build();
    }

    public static byte[] insert(Long xid, int oid, Object... newTuple) {
        return type('I').xid(xid).i32(oid).i8('N').tuple(newTuple).build();
    }

    /** An Update without an old tuple. */
    public static byte[] update(Long xid, int oid, Object... newTuple) {
        return type('U').xid(xid).i32(oid).i8('N').tuple(newTuple).build();
    }

    /** An Update with an old tuple of kind 'K' or 'O'. */
    public static byte[] update(Long xid, int oid, char oldKind, Object[] oldTuple, Object[] newTuple) {
        return type('U').xid(xid).i32(oid).i8(oldKind).tuple(oldTuple).i8('N').tuple(newTuple).build();
    }

    public static byte[] delete(Long xid, int oid, char oldKind, Object... oldTuple) {
        return type('D').xid(xid).i32(oid).i8(oldKind).tuple(oldTuple).build();
    }

    public static byte[] truncate(Long xid, boolean cascade, boolean restartIdentity, int... oids) {
        PgOutputBytes b = type('T').xid(xid).i32(oids.length).i8((cascade ? 1 : 0) | (restartIdentity ? 2 : 0));
        for (int oid : oids) {
            b.i32(oid);
        }
        return b.build();
    }

    public static byte[] message(Long xid, boolean transactional, long lsn, String prefix, byte[] content) {
        return type('M').xid(xid).i8(transactional ? 1 : 0).i64(lsn).str(prefix).i32(content.length).raw(content).build();
    }

    public static byte[] streamStart(long xid, boolean first) {
        return type('S').i32(xid).i8(first ? 1 : 0).build();
    }

    public static byte[] streamStop() {
        return type('E').build();
    }

    public static byte[] streamCommit(long xid, long commitLsn, long endLsn, long pgTimeMicros) {
        return type('c').i32(xid).i8(0).i64(commitLsn).i64(endLsn).i64(pgTimeMicros).build();
    }

    /** Stream Abort of protocol v2..v4 without the parallel-streaming fields. */
    public static byte[] streamAbort(long xid, long subXid) {
        return type('A').i32(xid).i32(subXid).build();
    }

    /** Stream Abort of protocol v4 with {@code streaming 'parallel'}. */
    public static byte[] streamAbort(long xid, long subXid, long abortLsn, long pgTimeMicros) {
        return type('A').i32(xid).i32(subXid).i64(abortLsn).i64(pgTimeMicros).build();
    }
}
