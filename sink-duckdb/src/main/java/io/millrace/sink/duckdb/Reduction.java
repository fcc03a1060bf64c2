package io.millrace.sink.duckdb;

import io.millrace.core.MillraceException;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.types.UnchangedToast;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reduces a run of changes to one keyed table (one shape, no truncate inside) to at most one outcome
 * per key, so the run can be merged set-wise: a complete row to upsert, a key to delete, or a row with
 * unchanged TOAST values to be completed from the destination's row as it was before the run.
 *
 * <p>Rules, in event order (INV: ORDER): insert / read / update make the key's outcome the new image
 * (superseding an earlier delete); delete makes it "delete"; an update that changes the key deletes
 * the old key and gives the new key the image; an image with unchanged TOAST values takes them from an
 * earlier image of the same (old) key in this run, else remembers the old key whose destination row
 * holds them ({@link Row#from}).
 *
 * <p>Values are the codecs' Java values; {@code null} is SQL NULL and {@link #UNCHANGED} marks an
 * unchanged TOAST value. Keys are compared by their PostgreSQL text form ({@code toPgText}), which
 * denotes the value exactly.
 */
final class Reduction {
    /** Marks an unchanged TOAST value (compared by identity). */
    static final Object UNCHANGED = UnchangedToast.INSTANCE;

    /** One key's outcome. */
    static final class Row {
        /** Delete: the key values (key order). Otherwise all column values. */
        final Object[] vals;
        /** Partial row: the key (key order) of the pre-run destination row holding the unchanged values; else null. */
        final Object[] from;
        final boolean delete;

        Row(Object[] vals, Object[] from, boolean delete) {
            this.vals = vals;
            this.from = from;
            this.delete = delete;
        }
    }

    private final RelationInfo rel;
    private final TableRef target;
    private final int[] keyIdx;
    private final int columns;
    /** Outcomes in the order keys were first seen. */
    final Map<String, Row> rows;
    int deletes;
    int partials;

    Reduction(RelationInfo rel, TableRef target, int expected) {
        this.rows = new LinkedHashMap<>(Math.max(16, expected * 4 / 3 + 1));
        this.rel = rel;
        this.target = target;
        this.keyIdx = rel.keyIndexes();
        this.columns = rel.columnCount();
    }

    void add(ChangeEvent e) {
        switch (e.op()) {
            case CREATE, READ -> upsert(e, null, image(e, e.after(), "after"));
            case UPDATE -> upsert(e, e.before() == null ? null : key(e, e.before()), image(e, e.after(), "after"));
            case DELETE -> {
                if (e.before() == null) {
                    throw bad(e, "a delete without the old key");
                }
                Object[] k = key(e, e.before());
                rows.put(join(k), new Row(k, null, true));
            }
            default -> throw new MillraceException(MillraceException.Kind.INTERNAL, "unexpected " + e.op()
                    + " in a keyed run of " + target);
        }
    }

    /** Counts outcomes; call once after the last {@link #add}. */
    void finish() {
        for (Row r : rows.values()) {
            if (r.delete) {
                deletes++;
            } else if (r.from != null) {
                partials++;
            }
        }
    }

    private void upsert(ChangeEvent e, Object[] oldKeyVals, Object[] vals) {
        Object[] newKeyVals = new Object[keyIdx.length];
        for (int j = 0; j < keyIdx.length; j++) {
            newKeyVals[j] = vals[keyIdx[j]];
            if (newKeyVals[j] == null || newKeyVals[j] == UNCHANGED) {
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
                rows.put(oldKey, new Row(oldKeyVals, null, true));
            }
            rows.put(newKey, new Row(vals, null, false));
            return;
        }
        Row prev = rows.get(oldKey);
        if (!oldKey.equals(newKey)) {
            rows.put(oldKey, new Row(oldKeyVals, null, true));
        }
        Object[] from;
        if (prev == null) {
            from = oldKeyVals; // the destination row as it was before this run holds the values
        } else if (prev.delete) {
            throw bad(e, "an update with unchanged TOAST values of a row deleted earlier in the same batch");
        } else {
            for (int i = 0; i < columns; i++) {
                if (vals[i] == UNCHANGED) {
                    vals[i] = prev.vals[i];
                }
            }
            from = prev.from;
        }
        rows.put(newKey, new Row(vals, hasUnchanged(vals) ? from : null, false));
    }

    /** A copy of the image (ChangeEvent arrays are never mutated; unchanged values get filled in here). */
    private Object[] image(ChangeEvent e, Object[] values, String which) {
        if (values == null || values.length != columns) {
            throw bad(e, values == null ? "no " + which + " image" : "an " + which + " image of " + values.length
                    + " values for " + columns + " columns");
        }
        return values.clone();
    }

    private Object[] key(ChangeEvent e, Object[] values) {
        if (values.length != columns) {
            throw bad(e, "a before image of " + values.length + " values for " + columns + " columns");
        }
        Object[] out = new Object[keyIdx.length];
        for (int j = 0; j < keyIdx.length; j++) {
            Object v = values[keyIdx[j]];
            if (v == null || v == UnchangedToast.INSTANCE) {
                throw bad(e, "a before image without a value for key column " + rel.column(keyIdx[j]).name());
            }
            out[j] = v;
        }
        return out;
    }

    static boolean hasUnchanged(Object[] vals) {
        for (Object v : vals) {
            if (v == UNCHANGED) {
                return true;
            }
        }
        return false;
    }

    /** PostgreSQL text never contains NUL, so joining with it is unambiguous. */
    private String join(Object[] key) {
        if (key.length == 1) {
            return rel.codec(keyIdx[0]).toPgText(key[0]);
        }
        StringBuilder sb = new StringBuilder();
        for (int j = 0; j < key.length; j++) {
            sb.append(j > 0 ? "\0" : "").append(rel.codec(keyIdx[j]).toPgText(key[j]));
        }
        return sb.toString();
    }

    private MillraceException bad(ChangeEvent e, String what) {
        return new MillraceException(MillraceException.Kind.SINK, "table " + target + ": change at " + e.position()
                + " (" + e.op().code() + ") carries " + what + "; cannot apply it");
    }
}
