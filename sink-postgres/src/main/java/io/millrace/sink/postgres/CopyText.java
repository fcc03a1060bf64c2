package io.millrace.sink.postgres;

import org.postgresql.copy.CopyIn;

import java.nio.charset.StandardCharsets;
import java.sql.SQLException;

/**
 * Writes rows in COPY text format ({@code COPY ... FROM STDIN}, default delimiter tab, {@code \N} for NULL; fields
 * passed already escaped, {@link #escape}) or binary format ({@code COPY ... FROM STDIN (FORMAT binary)}: the
 * signature, then per row its field count ({@link #startRow}) and each field's length and send-form bytes) to a
 * {@link CopyIn}, buffered. Not thread-safe; one instance per COPY.
 */
final class CopyText {
    static final String NULL = "\\N";
    /** SQL NULL in binary format (compared by identity; an empty value is another array). */
    static final byte[] BINARY_NULL = new byte[0];
    private static final byte[] SIGNATURE = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', (byte) 0xFF, '\r', '\n', 0, 0, 0, 0, 0, 0, 0, 0, 0};
    private static final int FLUSH_AT = 1 << 20;

    private final CopyIn copy;
    private final boolean binary;
    private byte[] buf = new byte[FLUSH_AT + 4096];
    private int pos;
    private boolean firstField = true;
    private long rows;

    /** Text format. */
    CopyText(CopyIn copy) {
        this(copy, false);
    }

    CopyText(CopyIn copy, boolean binary) {
        this.copy = copy;
        this.binary = binary;
        if (binary) {
            System.arraycopy(SIGNATURE, 0, buf, 0, SIGNATURE.length); // signature, flags 0, header extension length 0
            pos = SIGNATURE.length;
        }
    }

    /** The COPY statement's option for this format: {@code ""} or {@code " (FORMAT binary)"}. */
    static String option(boolean binary) {
        return binary ? " (FORMAT binary)" : "";
    }

    /** Begins a row of {@code fields} fields (binary format: its field count). */
    void startRow(int fields) throws SQLException {
        if (binary) {
            ensure(2);
            buf[pos++] = (byte) (fields >>> 8);
            buf[pos++] = (byte) fields;
        }
    }

    /** Appends one field as a reduction keeps it: escaped text or {@link #NULL}; send-form bytes or {@link #BINARY_NULL}. */
    void value(Object kept) throws SQLException {
        if (!binary) {
            field((String) kept);
        } else if (kept == BINARY_NULL || kept == NULL) {
            int4Raw(-1);
        } else {
            byte[] b = (byte[]) kept;
            int4Raw(b.length);
            ensure(b.length);
            System.arraycopy(b, 0, buf, pos, b.length);
            pos += b.length;
        }
    }

    void nul() throws SQLException {
        if (binary) {
            int4Raw(-1);
        } else {
            field(NULL);
        }
    }

    void bool(boolean v) throws SQLException {
        if (binary) {
            int4Raw(1);
            put((byte) (v ? 1 : 0));
        } else {
            field(v ? "t" : "f");
        }
    }

    void int4(int v) throws SQLException {
        if (binary) {
            int4Raw(4);
            int4Raw(v);
        } else {
            field(Integer.toString(v));
        }
    }

    private void int4Raw(int v) throws SQLException {
        ensure(4);
        buf[pos++] = (byte) (v >>> 24);
        buf[pos++] = (byte) (v >>> 16);
        buf[pos++] = (byte) (v >>> 8);
        buf[pos++] = (byte) v;
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

    /** Appends already encoded fields: escaped values separated by tabs, UTF-8; binary: each field's length and bytes. */
    void fields(byte[] encoded) throws SQLException {
        if (!firstField && !binary) {
            put((byte) '\t');
        }
        firstField = false;
        ensure(encoded.length);
        System.arraycopy(encoded, 0, buf, pos, encoded.length);
        pos += encoded.length;
    }

    void endRow() throws SQLException {
        if (!binary) {
            put((byte) '\n');
        }
        firstField = true;
        rows++;
        if (pos >= FLUSH_AT) {
            flush();
        }
    }

    /** Ends the COPY; returns the number of rows the server took. */
    long finish() throws SQLException {
        if (binary) {
            put((byte) 0xFF); // the trailer: a field count of -1
            put((byte) 0xFF);
        }
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
