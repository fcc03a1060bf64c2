package io.millrace.sink.postgres;

import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.KeyedReducer;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The keyed reduction ({@link KeyedReducer}: its rules) as the postgres destination keeps it: values already rendered
 * for COPY ({@link CopyText#escape}, SQL NULL as {@link CopyText#NULL}, an unchanged TOAST value as {@code null}); a
 * complete row is kept as one encoded COPY line, so a large batch holds few objects (the garbage collector copies live
 * objects, and a 100k-row batch is live until it is applied).
 */
final class KeyedReduction extends KeyedReducer<KeyedReduction.Row> {
    /** One key's outcome. */
    static final class Row {
        /** A complete row: its columns as a COPY text line (UTF-8, tab-separated, no newline); else null. */
        final byte[] line;
        /** Delete: the key values (key order). Partial row: all columns, null = unchanged TOAST. Else null. */
        final String[] vals;
        /** Key (key order) of the pre-run destination row holding the unchanged values; null unless partial. */
        final String[] from;
        final boolean delete;

        private Row(byte[] line, String[] vals, String[] from, boolean delete) {
            this.line = line;
            this.vals = vals;
            this.from = from;
            this.delete = delete;
        }

        /** The row's column values, escaped; null entries are unchanged TOAST values. Not for deletes. */
        String[] values() {
            if (vals != null) {
                return vals;
            }
            // Escaped values contain no raw tab: splitting the line gives them back.
            return new String(line, StandardCharsets.UTF_8).split("\t", -1);
        }
    }

    private final LineBuffer buf = new LineBuffer();

    KeyedReduction(RelationInfo rel, TableRef target, int expected) {
        super(rel, target, expected);
    }

    @Override
    protected Object encode(int i, Object value) {
        return CopyText.escape(rel.codec(i).toPgText(value));
    }

    @Override
    protected Object sqlNull() {
        return CopyText.NULL;
    }

    @Override
    protected Object unchanged() {
        return null;
    }

    @Override
    protected String keyText(int j, Object kept) {
        return (String) kept; // escaped text denotes the value exactly
    }

    @Override
    protected Row complete(Object[] vals) {
        return new Row(buf.line(vals), null, null, false);
    }

    @Override
    protected Row partial(Object[] vals, Object[] from) {
        return new Row(null, strings(vals), strings(from), false);
    }

    @Override
    protected Row delete(Object[] key) {
        return new Row(null, strings(key), null, true);
    }

    @Override
    protected boolean isDelete(Row row) {
        return row.delete;
    }

    @Override
    protected Object[] values(Row row) {
        return row.values();
    }

    @Override
    protected Object[] from(Row row) {
        return row.from;
    }

    private static String[] strings(Object[] vals) {
        return vals instanceof String[] s ? s : Arrays.copyOf(vals, vals.length, String[].class);
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
