package io.millrace.sink.postgres;

import io.millrace.core.MillraceException;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.types.UnchangedToast;

import java.util.HashMap;
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
 * Values are kept already rendered for COPY ({@link CopyText#escape}); {@code null} in
 * {@link Row#vals} marks an unchanged TOAST value, {@link CopyText#NULL} is SQL NULL.
 */
final class KeyedReduction {
    /** One key's outcome. */
    static final class Row {
        /** Delete: the key values (key order). Otherwise: all columns; null = unchanged TOAST. */
        final String[] vals;
        /** Key (key order) of the pre-run destination row holding the unchanged values; null when complete. */
        final String[] from;
        final boolean delete;

        Row(String[] vals, String[] from, boolean delete) {
            this.vals = vals;
            this.from = from;
            this.delete = delete;
        }
    }

    private final RelationInfo rel;
    private final TableRef target;
    private final int[] keyIdx;
    private final int columns;
    final Map<String, Row> rows;
    private int events;

    KeyedReduction(RelationInfo rel, TableRef target, int expected) {
        this.rel = rel;
        this.target = target;
        this.keyIdx = rel.keyIndexes();
        this.columns = rel.columnCount();
        this.rows = new HashMap<>(Math.max(16, expected * 4 / 3 + 1));
    }

    int events() {
        return events;
    }

    void add(ChangeEvent e) {
        events++;
        switch (e.op()) {
            case CREATE, READ -> upsert(e, null, image(e, e.after(), "after"));
            case UPDATE -> {
                String[] after = image(e, e.after(), "after");
                String[] oldKey = e.before() == null ? null : key(e, e.before(), "before");
                upsert(e, oldKey, after);
            }
            case DELETE -> {
                if (e.before() == null) {
                    throw bad(e, "a delete without the old key");
                }
                String[] k = key(e, e.before(), "before");
                rows.put(join(k), new Row(k, null, true));
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
        Row prev = rows.get(oldKey);
        if (!oldKey.equals(newKey)) {
            rows.put(oldKey, new Row(oldKeyVals, null, true));
        }
        String[] from = null;
        if (hasUnchanged(vals)) {
            if (prev == null) {
                from = oldKeyVals; // the destination row as it was before this run holds the values
            } else if (prev.delete) {
                throw bad(e, "an update with unchanged TOAST values of a row deleted earlier in the same batch");
            } else {
                for (int i = 0; i < columns; i++) {
                    if (vals[i] == null) {
                        vals[i] = prev.vals[i];
                    }
                }
                from = hasUnchanged(vals) ? prev.from : null;
            }
        }
        rows.put(newKey, new Row(vals, from, false));
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
}
