package io.millrace.pgoutput;

import io.millrace.core.MillraceException;

import java.nio.charset.StandardCharsets;

/**
 * Reads the protocol's big-endian integers and NUL-terminated UTF-8 strings from a slice of an
 * array. Every read checks bounds: running past the end is a {@link MillraceException.Kind#DECODE}
 * error naming the message and the offset, never an {@link ArrayIndexOutOfBoundsException}.
 *
 * <p>Not thread-safe; one reader per message.
 */
final class ByteReader {
    private final byte[] data;
    private final int start;
    private final int end;
    private int pos;
    private String what = "pgoutput message";

    ByteReader(byte[] data, int offset, int length) {
        if (data == null) {
            throw new MillraceException(MillraceException.Kind.DECODE, "pgoutput message is null");
        }
        if (offset < 0 || length < 0 || offset > data.length - length) {
            throw new MillraceException(MillraceException.Kind.DECODE, "pgoutput message slice [" + offset + ", +" + length
                    + ") lies outside its " + data.length + "-byte buffer");
        }
        this.data = data;
        this.start = offset;
        this.end = offset + length;
        this.pos = offset;
    }

    /** Names the message being read, for error messages ("Insert message"). */
    void describe(String what) {
        this.what = what;
    }

    String what() {
        return what;
    }

    byte[] array() {
        return data;
    }

    /** Absolute position in {@link #array()}. */
    int position() {
        return pos;
    }

    /** Position relative to the message start. */
    int offsetInMessage() {
        return pos - start;
    }

    int length() {
        return end - start;
    }

    int remaining() {
        return end - pos;
    }

    private void need(int n, String field) {
        need(n, field, -1);
    }

    /** {@code field} and {@code index} name what is read; the message is only built on failure (hot path). */
    private void need(int n, String field, int index) {
        if (n < 0 || end - pos < n) {
            throw error("truncated: " + field + (index >= 0 ? " " + index : "") + " needs " + n + " byte(s) at offset "
                    + (pos - start) + " but only " + (end - pos) + " remain");
        }
    }

    int u8(String field) {
        return u8(field, -1);
    }

    /** Reads a byte of the {@code index}-th element of a list, e.g. the kind of tuple column {@code index}. */
    int u8(String field, int index) {
        need(1, field, index);
        return data[pos++] & 0xFF;
    }

    int u16(String field) {
        need(2, field);
        int v = ((data[pos] & 0xFF) << 8) | (data[pos + 1] & 0xFF);
        pos += 2;
        return v;
    }

    int i32(String field) {
        return i32(field, -1);
    }

    int i32(String field, int index) {
        need(4, field, index);
        int v = ((data[pos] & 0xFF) << 24) | ((data[pos + 1] & 0xFF) << 16) | ((data[pos + 2] & 0xFF) << 8)
                | (data[pos + 3] & 0xFF);
        pos += 4;
        return v;
    }

    /** An unsigned 32-bit value such as a TransactionId. */
    long u32(String field) {
        return i32(field) & 0xFFFFFFFFL;
    }

    long i64(String field) {
        need(8, field);
        long hi = i32(field) & 0xFFFFFFFFL;
        long lo = i32(field) & 0xFFFFFFFFL;
        return (hi << 32) | lo;
    }

    /** A NUL-terminated UTF-8 string. */
    String cstring(String field) {
        return cstring(field, -1);
    }

    String cstring(String field, int index) {
        for (int i = pos; i < end; i++) {
            if (data[i] == 0) {
                String s = new String(data, pos, i - pos, StandardCharsets.UTF_8);
                pos = i + 1;
                return s;
            }
        }
        throw error("truncated: " + field + (index >= 0 ? " " + index : "") + " at offset " + (pos - start)
                + " has no terminating NUL byte");
    }

    /** Skips {@code n} bytes and returns the absolute position where they start. */
    int skip(int n, String field) {
        return skip(n, field, -1);
    }

    int skip(int n, String field, int index) {
        need(n, field, index);
        int at = pos;
        pos += n;
        return at;
    }

    byte[] bytes(int n, String field) {
        int at = skip(n, field);
        byte[] out = new byte[n];
        System.arraycopy(data, at, out, 0, n);
        return out;
    }

    /** Fails when bytes are left over: a sign that the message was read with the wrong layout. */
    void expectEnd() {
        if (pos != end) {
            throw error((end - pos) + " unexpected byte(s) after the last field at offset " + (pos - start) + " (message length "
                    + (end - start) + ")");
        }
    }

    MillraceException error(String detail) {
        return new MillraceException(MillraceException.Kind.DECODE, "cannot decode " + what + " (" + (end - start)
                + " bytes): " + detail);
    }
}
