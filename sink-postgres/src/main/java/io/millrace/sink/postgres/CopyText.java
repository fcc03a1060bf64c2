package io.millrace.sink.postgres;

import org.postgresql.copy.CopyIn;

import java.nio.charset.StandardCharsets;
import java.sql.SQLException;

/**
 * Writes rows in COPY text format ({@code COPY ... FROM STDIN}, default delimiter tab, {@code \N}
 * for NULL) to a {@link CopyIn}, buffered. Fields are passed already escaped ({@link #escape}).
 * Not thread-safe; one instance per COPY.
 */
final class CopyText {
    static final String NULL = "\\N";
    private static final int FLUSH_AT = 1 << 20;

    private final CopyIn copy;
    private byte[] buf = new byte[FLUSH_AT + 4096];
    private int pos;
    private boolean firstField = true;
    private long rows;

    CopyText(CopyIn copy) {
        this.copy = copy;
    }

    /** Escapes a value for COPY text format: backslash, newline, carriage return and tab. */
    static String escape(String s) {
        int n = s.length();
        int i = 0;
        while (i < n) {
            char c = s.charAt(i);
            if (c == '\\' || c == '\n' || c == '\r' || c == '\t') {
                break;
            }
            i++;
        }
        if (i == n) {
            return s;
        }
        StringBuilder b = new StringBuilder(n + 8);
        b.append(s, 0, i);
        for (; i < n; i++) {
            char c = s.charAt(i);
            switch (c) {
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> b.append(c);
            }
        }
        return b.toString();
    }

    /** Appends one field, already escaped (or {@link #NULL}). */
    void field(String escaped) throws SQLException {
        if (!firstField) {
            put((byte) '\t');
        }
        firstField = false;
        int n = escaped.length();
        ensure(n);
        for (int i = 0; i < n; i++) {
            char c = escaped.charAt(i);
            if (c >= 0x80) {
                // Rare: encode the rest of the string in one go.
                byte[] b = escaped.substring(i).getBytes(StandardCharsets.UTF_8);
                ensure(b.length);
                System.arraycopy(b, 0, buf, pos, b.length);
                pos += b.length;
                return;
            }
            buf[pos++] = (byte) c;
        }
    }

    /** Appends already encoded fields: escaped values separated by tabs, UTF-8. */
    void fields(byte[] encoded) throws SQLException {
        if (!firstField) {
            put((byte) '\t');
        }
        firstField = false;
        ensure(encoded.length);
        System.arraycopy(encoded, 0, buf, pos, encoded.length);
        pos += encoded.length;
    }

    void endRow() throws SQLException {
        put((byte) '\n');
        firstField = true;
        rows++;
        if (pos >= FLUSH_AT) {
            flush();
        }
    }

    /** Ends the COPY; returns the number of rows the server took. */
    long finish() throws SQLException {
        flush();
        return copy.endCopy();
    }

    /** Abandons the COPY after a failure (the server discards it). */
    void cancel() {
        try {
            if (copy.isActive()) {
                copy.cancelCopy();
            }
        } catch (SQLException ignored) {
            // the transaction is rolled back by the caller anyway
        }
    }

    long rows() {
        return rows;
    }

    private void put(byte b) throws SQLException {
        ensure(1);
        buf[pos++] = b;
    }

    private void ensure(int n) throws SQLException {
        if (pos + n > buf.length) {
            flush();
            if (n > buf.length) {
                buf = new byte[n + 4096];
            }
        }
    }

    private void flush() throws SQLException {
        if (pos > 0) {
            copy.writeToCopy(buf, 0, pos);
            pos = 0;
        }
    }
}
