package io.millrace.core.types;

/**
 * tid, pg_snapshot and txid_snapshot: the value is the server's canonical text ({@code (0,1)},
 * {@code 10:20:10,14,15}), the binary decoders print it as tidout / pg_snapshot_out do. (xid,
 * xid8 and cid are numbers: {@link NumberCodecs.Int}.)
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
}
