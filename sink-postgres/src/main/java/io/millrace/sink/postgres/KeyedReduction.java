package io.millrace.sink.postgres;

import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.KeyedReducer;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The keyed reduction ({@link KeyedReducer}: its rules) as the postgres destination keeps it: values already rendered
 * for COPY — in text format escaped ({@link CopyText#escape}, SQL NULL as {@link CopyText#NULL}), in binary format each
 * column's send form ({@link io.millrace.core.types.TypeCodec#encodeBinary}, SQL NULL as {@link CopyText#BINARY_NULL}) —
 * and an unchanged TOAST value as {@code null}; a complete row is kept as one encoded COPY line, so a large batch holds
 * few objects (the garbage collector copies live objects, and a 100k-row batch is live until it is applied).
 */
final class KeyedReduction extends KeyedReducer<KeyedReduction.Row> {
    /** One key's outcome. */
    static final class Row {
        /**
         * A complete row: its columns as a COPY line (text: UTF-8, tab-separated, no newline; binary: each field's int32
         * length and bytes, without the field count); else null.
         */
        final byte[] line;
        /** Delete: the key values (key order). Partial row: all columns, null = unchanged TOAST. Else null. */
        final Object[] vals;
        /** Key (key order) of the pre-run destination row holding the unchanged values; null unless partial. */
        final Object[] from;
        final boolean delete;

        private Row(byte[] line, Object[] vals, Object[] from, boolean delete) {
            this.line = line;
            this.vals = vals;
            this.from = from;
            this.delete = delete;
        }
    }

    private final boolean binary;
    private final LineBuffer buf = new LineBuffer();

    /** {@code binary}: every column's codec {@link io.millrace.core.types.TypeCodec#encodesBinary encodes binary}. */
    KeyedReduction(RelationInfo rel, TableRef target, int expected, boolean binary) {
        super(rel, target, expected);
        this.binary = binary;
    }

    boolean binary() {
        return binary;
    }

    @Override
    protected Object encode(int i, Object value) {
        return binary ? rel.codec(i).encodeBinary(value) : CopyText.escape(rel.codec(i).toPgText(value));
    }

    @Override
    protected Object sqlNull() {
        return binary ? CopyText.BINARY_NULL : CopyText.NULL;
    }

    @Override
    protected Object unchanged() {
        return null;
    }

    @Override
    protected String keyText(int j, Object kept) {
        // escaped text denotes the value exactly; so do the send form's bytes, one char each
        return binary ? new String((byte[]) kept, StandardCharsets.ISO_8859_1) : (String) kept;
    }

    @Override
    protected Row complete(Object[] vals) {
        return new Row(binary ? binaryLine(vals) : buf.line(vals), null, null, false);
    }

    @Override
    protected Row partial(Object[] vals, Object[] from) {
        return new Row(null, vals, from, false);
    }

    @Override
    protected Row delete(Object[] key) {
        return new Row(null, key, null, true);
    }

    @Override
    protected boolean isDelete(Row row) {
        return row.delete;
    }

    /** The row's column values as kept; null entries are unchanged TOAST values. Not for deletes. */
    @Override
    protected Object[] values(Row row) {
        if (row.vals != null) {
            return row.vals;
        }
        if (!binary) {
            // Escaped values contain no raw tab: splitting the line gives them back.
            return new String(row.line, StandardCharsets.UTF_8).split("\t", -1);
        }
        Object[] out = new Object[rel.columnCount()];
        ByteBuffer b = ByteBuffer.wrap(row.line);
        for (int i = 0; i < out.length; i++) {
            int n = b.getInt();
            if (n < 0) {
                out[i] = CopyText.BINARY_NULL;
            } else {
                byte[] v = new byte[n];
                b.get(v);
                out[i] = v;
            }
        }
        return out;
    }

    @Override
    protected Object[] from(Row row) {
        return row.from;
    }

    private static byte[] binaryLine(Object[] vals) {
        int n = 0;
        for (Object v : vals) {
            n += 4 + ((byte[]) v).length; // BINARY_NULL is empty
        }
        byte[] out = new byte[n];
        int p = 0;
        for (Object v : vals) {
            byte[] b = (byte[]) v;
            int len = v == CopyText.BINARY_NULL ? -1 : b.length;
            out[p] = (byte) (len >>> 24);
            out[p + 1] = (byte) (len >>> 16);
            out[p + 2] = (byte) (len >>> 8);
            out[p + 3] = (byte) len;
            System.arraycopy(b, 0, out, p + 4, b.length);
            p += 4 + b.length;
        }
        return out;
    }

    /** Encodes escaped values as one tab-separated UTF-8 line, reusing one scratch buffer. */
    private static final class LineBuffer {
        private byte[] scratch = new byte[256];

        byte[] line(Object[] vals) {
            int pos = 0;
            for (int i = 0; i < vals.length; i++) {
                String v = (String) vals[i];
                int n = v.length();
                if (pos + n + 1 > scratch.length) {
                    scratch = java.util.Arrays.copyOf(scratch, Math.max(scratch.length * 2, pos + n * 3 + 1));
                }
                if (i > 0) {
                    scratch[pos++] = '\t';
                }
                for (int c = 0; c < n; c++) {
                    char ch = v.charAt(c);
                    if (ch >= 0x80) {
                        byte[] b = v.substring(c).getBytes(StandardCharsets.UTF_8);
                        if (pos + b.length + 1 > scratch.length) {
                            scratch = java.util.Arrays.copyOf(scratch, Math.max(scratch.length * 2, pos + b.length + 1));
                        }
                        System.arraycopy(b, 0, scratch, pos, b.length);
                        pos += b.length;
                        break;
                    }
                    scratch[pos++] = (byte) ch;
                }
            }
            return java.util.Arrays.copyOf(scratch, pos);
        }
    }
}
