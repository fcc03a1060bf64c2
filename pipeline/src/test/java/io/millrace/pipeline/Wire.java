package io.millrace.pipeline;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** pgoutput protocol v1 messages, byte for byte as the walsender sends them (PostgreSQL docs, "Logical Replication Message Formats"). */
public final class Wire {
    public static final int INT8 = 20;
    public static final int TEXT = 25;

    private Wire() {
    }

    private interface Body {
        void write(DataOutputStream o) throws IOException;
    }

    private static byte[] msg(char type, Body body) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        try (DataOutputStream o = new DataOutputStream(b)) {
            o.writeByte(type);
            body.write(o);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return b.toByteArray();
    }

    private static void cstring(DataOutputStream o, String s) throws IOException {
        o.write(s.getBytes(StandardCharsets.UTF_8));
        o.writeByte(0);
    }

    public static byte[] begin(long finalLsn, long xid) {
        return msg('B', o -> {
            o.writeLong(finalLsn);
            o.writeLong(0);
            o.writeInt((int) xid);
        });
    }

    public static byte[] commit(long commitLsn, long endLsn) {
        return msg('C', o -> {
            o.writeByte(0);
            o.writeLong(commitLsn);
            o.writeLong(endLsn);
            o.writeLong(0);
        });
    }

    /** A transactional logical decoding message ({@code pg_logical_emit_message(true, prefix, content)}). */
    public static byte[] message(long lsn, String prefix, String content) {
        return msg('M', o -> {
            o.writeByte(1);
            o.writeLong(lsn);
            cstring(o, prefix);
            byte[] b = content.getBytes(StandardCharsets.UTF_8);
            o.writeInt(b.length);
            o.write(b);
        });
    }

    /** Table public.{@code name}: column "id" int8 (the key), then "v" text. */
    public static byte[] relation(int oid, String name) {
        return msg('R', o -> {
            o.writeInt(oid);
            cstring(o, "public");
            cstring(o, name);
            o.writeByte('d');
            o.writeShort(2);
            o.writeByte(1);
            cstring(o, "id");
            o.writeInt(INT8);
            o.writeInt(-1);
            o.writeByte(0);
            cstring(o, "v");
            o.writeInt(TEXT);
            o.writeInt(-1);
        });
    }

    /**
     * Table public.{@code name} with REPLICA IDENTITY FULL (pgoutput flags every column as key then): "id" int8, "v" text,
     * and "m" of the type {@code typeOid} (a user type: an enum, say).
     */
    public static byte[] fullRelation(int oid, String name, int typeOid) {
        return msg('R', o -> {
            o.writeInt(oid);
            cstring(o, "public");
            cstring(o, name);
            o.writeByte('f');
            o.writeShort(3);
            for (Object[] c : new Object[][]{{"id", INT8}, {"v", TEXT}, {"m", typeOid}}) {
                o.writeByte(1);
                cstring(o, (String) c[0]);
                o.writeInt((Integer) c[1]);
                o.writeInt(-1);
            }
        });
    }

    /** An insert of (id, v, m) in text format, for {@link #fullRelation}. */
    public static byte[] insert3(int oid, long id, String v, String m) {
        return msg('I', o -> {
            o.writeInt(oid);
            o.writeByte('N');
            o.writeShort(3);
            for (String s : new String[]{Long.toString(id), v, m}) {
                byte[] b = s.getBytes(StandardCharsets.UTF_8);
                o.writeByte('t');
                o.writeInt(b.length);
                o.write(b);
            }
        });
    }

    /** An insert of (id, v) in text format; {@code id} is written as given, so a non-number fails to decode. */
    public static byte[] insert(int oid, String id, String v) {
        return msg('I', o -> {
            o.writeInt(oid);
            o.writeByte('N');
            o.writeShort(2);
            for (String s : new String[]{id, v}) {
                if (s == null) {
                    o.writeByte('n');
                } else {
                    byte[] b = s.getBytes(StandardCharsets.UTF_8);
                    o.writeByte('t');
                    o.writeInt(b.length);
                    o.write(b);
                }
            }
        });
    }

    // ---- protocol v2: a large transaction streamed while in progress -------------------------------

    public static byte[] streamStart(long xid, boolean first) {
        return msg('S', o -> {
            o.writeInt((int) xid);
            o.writeByte(first ? 1 : 0);
        });
    }

    public static byte[] streamStop() {
        return msg('E', o -> {
        });
    }

    public static byte[] streamCommit(long xid, long commitLsn, long endLsn) {
        return msg('c', o -> {
            o.writeInt((int) xid);
            o.writeByte(0);
            o.writeLong(commitLsn);
            o.writeLong(endLsn);
            o.writeLong(0);
        });
    }

    public static byte[] streamAbort(long xid) {
        return msg('A', o -> {
            o.writeInt((int) xid);
            o.writeInt((int) xid);
        });
    }

    /** {@link #relation} inside a stream block: the transaction id follows the type. */
    public static byte[] streamed(long xid, byte[] message) {
        byte[] out = new byte[message.length + 4];
        out[0] = message[0];
        out[1] = (byte) (xid >>> 24);
        out[2] = (byte) (xid >>> 16);
        out[3] = (byte) (xid >>> 8);
        out[4] = (byte) xid;
        System.arraycopy(message, 1, out, 5, message.length - 1);
        return out;
    }
}
