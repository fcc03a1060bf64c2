package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;

/**
 * tid, pg_snapshot and txid_snapshot: the value is the server's canonical text ({@code (0,1)},
 * {@code 10:20:10,14,15}), the binary decoders print it as tidout / pg_snapshot_out do. (xid,
 * xid8 and cid are numbers: {@link NumberCodecs.Int}.) And int2vector and oidvector, the catalog's
 * fixed vectors (pg_index.indkey): arrays of int2 and oid with a text form of their own.
 */
final class SystemCodecs {
    private SystemCodecs() {
    }

    /** tid: uint32 block and uint16 offset, printed {@code (block,offset)}. */
    static final class Tid extends NetCodecs.TextValued {
        Tid() {
            super("tid");
        }

        @Override
        boolean allowed(char c) {
            return c >= '0' && c <= '9' || c == '(' || c == ')' || c == ',';
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 6);
            return "(" + Integer.toUnsignedString(i32(buf, off)) + "," + u16(buf, off + 4) + ")";
        }
    }

    /** pg_snapshot / txid_snapshot: int32 count, int64 xmin and xmax, then the in-progress xids; printed {@code xmin:xmax:xip,...}. */
    static final class Snapshot extends NetCodecs.TextValued {
        Snapshot(String name) {
            super(name);
        }

        @Override
        boolean allowed(char c) {
            return c >= '0' && c <= '9' || c == ':' || c == ',';
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            if (len < 20 || off < 0 || off + len > buf.length) {
                throw badBinary(buf, off, len, "shorter than the 20-byte header");
            }
            int n = i32(buf, off);
            if (n < 0 || len != 20 + 8L * n) {
                throw badBinary(buf, off, len, "count " + n + " does not match the length");
            }
            StringBuilder sb = new StringBuilder().append(Long.toUnsignedString(i64(buf, off + 4))).append(':')
                    .append(Long.toUnsignedString(i64(buf, off + 12))).append(':');
            for (int i = 0; i < n; i++) {
                sb.append(i == 0 ? "" : ",").append(Long.toUnsignedString(i64(buf, off + 20 + 8 * i)));
            }
            return sb.toString();
        }
    }

    /**
     * int2vector and oidvector: one dimension, lower bound 0, no NULLs. Text is the elements separated by spaces
     * ({@code 1 2 3}; an array's braces are not accepted by their input functions), binary is array_send's.
     */
    static final class Vector extends BaseCodec {
        private final TypeCodec element;
        private final ArrayCodec array;

        Vector(String name, TypeCodec element) {
            super(name);
            this.element = element;
            this.array = new ArrayCodec(name, element, ' ');
        }

        @Override
        public Object decodeText(String text) {
            String t = text.strip();
            if (t.isEmpty()) {
                return PgArray.EMPTY;
            }
            String[] parts = t.split(" +");
            Object[] elements = new Object[parts.length];
            for (int i = 0; i < parts.length; i++) {
                try {
                    elements[i] = element.decodeText(parts[i]);
                } catch (IllegalArgumentException e) {
                    throw badText(text, "element: " + e.getMessage(), e);
                }
            }
            return new PgArray(new int[] {elements.length}, new int[] {0}, elements);
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            // an empty vector is sent as one dimension of length 0 (an empty array has none)
            if (len == 20 && off >= 0 && off + len <= buf.length && i32(buf, off) == 1 && i32(buf, off + 12) == 0) {
                return PgArray.EMPTY;
            }
            return array.decodeBinary(buf, off, len);
        }

        @Override
        public String toPgText(Object value) {
            if (!(value instanceof PgArray a) || a.ndims() > 1) {
                throw wrongValue(value);
            }
            StringBuilder sb = new StringBuilder();
            for (Object v : a.elements()) {
                if (v == null) {
                    throw new IllegalArgumentException(name + " cannot hold a NULL element");
                }
                sb.append(sb.isEmpty() ? "" : " ").append(element.toPgText(v));
            }
            return sb.toString();
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            array.writeJson(gen, value);
        }
    }
}
