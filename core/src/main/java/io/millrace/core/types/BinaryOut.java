package io.millrace.core.types;

/** Big-endian integers for the binary (send) formats, as PostgreSQL's {@code pq_send*} write them. */
final class BinaryOut {
    private BinaryOut() {
    }

    /** The low 16 bits of {@code v} at {@code b[at]}. */
    static void int2(byte[] b, int at, int v) {
        b[at] = (byte) (v >>> 8);
        b[at + 1] = (byte) v;
    }

    static byte[] int8(long v) {
        byte[] b = new byte[8];
        for (int i = 7; i >= 0; i--, v >>>= 8) {
            b[i] = (byte) v;
        }
        return b;
    }
}
