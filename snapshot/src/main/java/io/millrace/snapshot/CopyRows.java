package io.millrace.snapshot;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.RelationInfo;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyOut;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * Reads the rows of one {@code COPY (SELECT ...) TO STDOUT} and decodes them with the relation's codecs, in binary
 * format where every column's codec reads the type's binary send form, in text format otherwise.
 *
 * <p>Binary saves both sides work: the server skips each type's output function (timestamps and numerics are the
 * expensive ones) and the reader makes no string per value. Each row decodes to the same values either way (the
 * codecs' text and binary forms are tested against each other). {@code source.binary: off} keeps text, as for the
 * stream.
 *
 * <p>Binary format (PostgreSQL's "COPY" page): an 11-byte signature, a 32-bit flags field and a 32-bit header
 * extension length with its bytes, then per row a 16-bit field count and per field a 32-bit length ({@code -1} for
 * NULL) and the value's bytes, and a field count of {@code -1} at the end. The server sends every row in a CopyData
 * message of its own (the header with the first); a row split across messages is refused, not guessed at.
 */
public final class CopyRows {
    private static final byte[] SIGNATURE = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', (byte) 0xFF, '\r', '\n', 0};

    /** Receives each decoded row with its size on the wire. */
    @FunctionalInterface
    public interface Rows {
        /** Returns false to stop reading (the rest of the copy is read and dropped: see {@link CopyRows#read}). */
        boolean row(Object[] values, int wireBytes) throws InterruptedException;
    }

    private CopyRows() {
    }

    /** Whether {@code r}'s rows can be read in binary: every column's codec decodes the binary form. */
    public static boolean binaryReadable(RelationInfo r) {
        for (int i = 0; i < r.columnCount(); i++) {
            if (!r.codec(i).supportsBinary()) {
                return false;
            }
        }
        return true;
    }

    /**
     * Runs {@code COPY (select) TO STDOUT}, binary when {@code binary} and {@link #binaryReadable}, and hands each row to
     * {@code rows}. {@code what} names the copy in errors, e.g. {@code "during the snapshot"}. Returns the bytes read.
     *
     * <p>When {@code rows} stops the copy early, or decoding fails, the rest of the copy is read and dropped, so that the
     * connection and its transaction stay usable (a snapshot reader reads its next chunk in the same transaction).
     * pgjdbc's {@code cancelCopy} would leave the server's "canceling statement" error for the connection's next
     * statement, which aborts the transaction. Callers bound {@code select} to a chunk, which bounds what is dropped.
     */
    public static long read(Connection c, String select, RelationInfo r, boolean binary, String what, Rows rows)
            throws SQLException, InterruptedException {
        boolean bin = binary && binaryReadable(r);
        CopyOut out = c.unwrap(PGConnection.class).getCopyAPI().copyOut("COPY (" + select + ") TO STDOUT" + (bin ? " (FORMAT binary)" : ""));
        long bytes = 0;
        Throwable failed = null;
        try {
            String[] fields = bin ? null : new String[r.columnCount()];
            boolean first = true;
            byte[] msg;
            while ((msg = out.readFromCopy()) != null) {
                bytes += msg.length;
                Object[] values;
                if (bin) {
                    int off = first ? header(msg, r) : 0;
                    first = false;
                    if (off == msg.length || isTrailer(msg, off)) {
                        continue;
                    }
                    values = binaryRow(msg, off, r, what);
                } else {
                    values = textRow(msg, fields, r, what);
                }
                if (!rows.row(values, msg.length)) {
                    return bytes;
                }
            }
        } catch (RuntimeException | SQLException | InterruptedException | Error e) {
            failed = e;
            throw e;
        } finally {
            if (out.isActive()) {
                drain(out, failed);
            }
        }
        return bytes;
    }

    /** Reads what is left of a copy stopped early; a failure while doing so is added to {@code failed}, if any. */
    private static void drain(CopyOut out, Throwable failed) throws SQLException {
        try {
            while (out.readFromCopy() != null) {
                // dropped
            }
        } catch (SQLException | RuntimeException e) {
            if (failed == null) {
                throw e;
            }
            failed.addSuppressed(e);
        }
    }

    private static Object[] textRow(byte[] row, String[] fields, RelationInfo r, String what) {
        int n = CopyText.split(row, row.length, fields);
        if (n != fields.length) {
            throw new MillraceException(Kind.DECODE, "COPY of " + r.table() + " returned " + n + " columns, expected " + fields.length);
        }
        Object[] values = new Object[n];
        for (int i = 0; i < n; i++) {
            if (fields[i] != null) {
                try {
                    values[i] = r.codec(i).decodeText(fields[i]);
                } catch (RuntimeException e) {
                    throw cannotDecode(r, i, what, e);
                }
            }
        }
        return values;
    }

    /** The offset after the file header at the start of the first message. */
    private static int header(byte[] msg, RelationInfo r) {
        if (msg.length < SIGNATURE.length + 8) {
            throw malformed(r, "a header of " + msg.length + " bytes");
        }
        for (int i = 0; i < SIGNATURE.length; i++) {
            if (msg[i] != SIGNATURE[i]) {
                throw malformed(r, "no PGCOPY signature");
            }
        }
        int extension = int32(msg, SIGNATURE.length + 4);
        int off = SIGNATURE.length + 8 + extension;
        if (extension < 0 || off > msg.length) {
            throw malformed(r, "a header extension of " + extension + " bytes");
        }
        return off;
    }

    private static boolean isTrailer(byte[] msg, int off) {
        return msg.length - off == 2 && msg[off] == (byte) 0xFF && msg[off + 1] == (byte) 0xFF;
    }

    private static Object[] binaryRow(byte[] msg, int off, RelationInfo r, String what) {
        if (msg.length - off < 2) {
            throw malformed(r, "a row of " + (msg.length - off) + " bytes");
        }
        int n = ((msg[off] & 0xFF) << 8) | (msg[off + 1] & 0xFF);
        if (n != r.columnCount()) {
            throw new MillraceException(Kind.DECODE, "COPY of " + r.table() + " returned " + n + " columns, expected " + r.columnCount());
        }
        int p = off + 2;
        Object[] values = new Object[n];
        for (int i = 0; i < n; i++) {
            if (p + 4 > msg.length) {
                throw malformed(r, "a row cut short at column " + (i + 1));
            }
            int len = int32(msg, p);
            p += 4;
            if (len < 0) {
                continue; // NULL
            }
            if (p + len > msg.length) {
                throw malformed(r, "a row cut short in column " + (i + 1));
            }
            try {
                values[i] = r.codec(i).decodeBinary(msg, p, len);
            } catch (RuntimeException e) {
                throw cannotDecode(r, i, what, e);
            }
            p += len;
        }
        if (p != msg.length) {
            throw malformed(r, "a row with " + (msg.length - p) + " bytes after its last column");
        }
        return values;
    }

    private static int int32(byte[] b, int p) {
        return ((b[p] & 0xFF) << 24) | ((b[p + 1] & 0xFF) << 16) | ((b[p + 2] & 0xFF) << 8) | (b[p + 3] & 0xFF);
    }

    private static MillraceException cannotDecode(RelationInfo r, int i, String what, RuntimeException e) {
        return new MillraceException(Kind.DECODE, "cannot decode column " + r.column(i).name() + " of " + r.table() + " (type "
                + r.codec(i).typeName() + ") " + what + ": " + e.getMessage(), e);
    }

    private static MillraceException malformed(RelationInfo r, String what) {
        return new MillraceException(Kind.DECODE, "binary COPY of " + r.table() + " is malformed: " + what
                + "; set source.binary: off to copy in text");
    }
}
