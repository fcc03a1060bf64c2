package io.millrace.sink.postgres;

import io.millrace.core.MillraceException;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.types.UnchangedToast;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reduces a run of changes to one keyed table (same shape, no truncate inside) to at most one
 * outcome per key, so the run can be applied set-wise in any order: a full row to upsert, a key to
 * delete, or a row with unchanged TOAST values that must be completed from the destination's row
 * as it was before the run.
 *
 * <p>Rules, applied in event order (INV: ORDER):
 * <ul>
 *   <li>insert / read / update: the key's outcome becomes the new row image (a delete before it is
 *       superseded, so delete-then-reinsert ends with the row present);</li>
 *   <li>delete: the key's outcome becomes "delete";</li>
 *   <li>update that changes the key: the old key becomes "delete", the new key gets the image;</li>
 *   <li>an image with unchanged TOAST columns takes them from the earlier image of the same (old) key
 *       in this run when there is one; otherwise it remembers the old key whose destination row holds
 *       them ({@link Row#from}).</li>
 * </ul>
 * Values are kept already rendered for COPY ({@link CopyText#escape}); a complete row is kept as
 * one encoded COPY line, so a large batch holds few objects (the garbage collector copies live
 * objects, and a 100k-row batch is live until it is applied).
 */
final class KeyedReduction {
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

    private final RelationInfo rel;
    private final TableRef target;
    private final int[] keyIdx;
    private final int columns;
    /** Outcomes in the order keys were first seen: source order, which keeps index inserts local. */
    final Map<String, Row> rows;
    private final LineBuffer buf = new LineBuffer();
    private int events;
    private boolean insertsOnly = true;

    KeyedReduction(RelationInfo rel, TableRef target, int expected) {
        this.rel = rel;
        this.target = target;
        this.keyIdx = rel.keyIndexes();
        this.columns = rel.columnCount();
        this.rows = new LinkedHashMap<>(Math.max(16, expected * 4 / 3 + 1));
    }

    int events() {
        return events;
    }

    /** Whether the run held only complete inserts and reads: every outcome is a complete new row. */
    boolean insertsOnly() {
        return insertsOnly;
    }

    void add(ChangeEvent e) {
        events++;
        switch (e.op()) {
            case CREATE, READ -> upsert(e, null, image(e, e.after(), "after"));
            case UPDATE -> {
                insertsOnly = false;
                String[] after = image(e, e.after(), "after");
                String[] oldKey = e.before() == null ? null : key(e, e.before(), "before");
                upsert(e, oldKey, after);
            }
            case DELETE -> {
                insertsOnly = false;
                if (e.before() == null) {
                    throw bad(e, "a delete without the old key");
                }
                String[] k = key(e, e.before(), "before");
                rows.put(join(k), new Row(null, k, null, true));
            }
            default -> throw new MillraceException(MillraceException.Kind.INTERNAL, "unexpected " + e.op()
                    + " in a keyed run of " + target);
        }
    }

    private void upsert(ChangeEvent e, String[] oldKeyVals, String[] vals) {
        String[] newKeyVals = new String[keyIdx.length];
        for (int j = 0; j < keyIdx.length; j++) {
            newKeyVals[j] = vals[keyIdx[j]];
            if (newKeyVals[j] == null || newKeyVals[j] == CopyText.NULL) {
                throw bad(e, "a row whose key column " + rel.column(keyIdx[j]).name() + " has no value");
            }
        }
        String newKey = join(newKeyVals);
        String oldKey = newKey;
        if (oldKeyVals != null) {
            oldKey = join(oldKeyVals);
        } else {
            oldKeyVals = newKeyVals;
        }
        if (!hasUnchanged(vals)) {
            if (!oldKey.equals(newKey)) {
                rows.put(oldKey, new Row(null, oldKeyVals, null, true));
            }
            rows.put(newKey, new Row(buf.line(vals), null, null, false));
            return;
        }
        insertsOnly = false;
        Row prev = rows.get(oldKey);
        if (!oldKey.equals(newKey)) {
            rows.put(oldKey, new Row(null, oldKeyVals, null, true));
        }
        String[] from;
        if (prev == null) {
            from = oldKeyVals; // the destination row as it was before this run holds the values
        } else if (prev.delete) {
            throw bad(e, "an update with unchanged TOAST values of a row deleted earlier in the same batch");
        } else {
            String[] earlier = prev.values();
            for (int i = 0; i < columns; i++) {
                if (vals[i] == null) {
                    vals[i] = earlier[i];
                }
            }
            from = prev.from;
        }
        rows.put(newKey, hasUnchanged(vals) ? new Row(null, vals, from, false) : new Row(buf.line(vals), null, null, false));
    }

    private String[] image(ChangeEvent e, Object[] values, String which) {
        if (values == null || values.length != columns) {
            throw bad(e, values == null ? "no " + which + " image" : "an " + which + " image of " + values.length
                    + " values for " + columns + " columns");
        }
        String[] out = new String[columns];
        for (int i = 0; i < columns; i++) {
            Object v = values[i];
            if (v == null) {
                out[i] = CopyText.NULL;
            } else if (v != UnchangedToast.INSTANCE) {
                out[i] = CopyText.escape(rel.codec(i).toPgText(v));
            }
        }
        return out;
    }

    private String[] key(ChangeEvent e, Object[] values, String which) {
        if (values.length != columns) {
            throw bad(e, "a " + which + " image of " + values.length + " values for " + columns + " columns");
        }
        String[] out = new String[keyIdx.length];
        for (int j = 0; j < keyIdx.length; j++) {
            Object v = values[keyIdx[j]];
            if (v == null || v == UnchangedToast.INSTANCE) {
                throw bad(e, "a " + which + " image without a value for key column " + rel.column(keyIdx[j]).name());
            }
            out[j] = CopyText.escape(rel.codec(keyIdx[j]).toPgText(v));
        }
        return out;
    }

    private static boolean hasUnchanged(String[] vals) {
        for (String v : vals) {
            if (v == null) {
                return true;
            }
        }
        return false;
    }

    /** Escaped values contain no raw tab, so joining with one is unambiguous. */
    private static String join(String[] key) {
        return key.length == 1 ? key[0] : String.join("\t", key);
    }

    private MillraceException bad(ChangeEvent e, String what) {
        return new MillraceException(MillraceException.Kind.SINK, "table " + target + ": change at " + e.position()
                + " (" + e.op().code() + ") carries " + what + "; cannot apply it");
    }

    /** Encodes escaped values as one tab-separated UTF-8 line, reusing one scratch buffer. */
    private static final class LineBuffer {
        private byte[] scratch = new byte[256];

        byte[] line(String[] vals) {
            int pos = 0;
            for (int i = 0; i < vals.length; i++) {
                String v = vals[i];
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
