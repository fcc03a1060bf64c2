package io.millrace.core.sink;

import io.millrace.core.MillraceException;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.types.UnchangedToast;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reduces a run of changes to one keyed table (one shape, no truncate inside: {@link Runs}) to at most one outcome per
 * key, so the run can be applied set-wise in any order: a complete row to upsert, a key to delete, or a row with
 * unchanged TOAST values to be completed from the destination's row as it was before the run. Shared by the table
 * destinations; each keeps values and rows its own way (a subclass: {@link #encode}, {@link #complete}, ...).
 *
 * <p>Rules, applied in event order (INV: ORDER):
 * <ul>
 *   <li>insert / read / update: the key's outcome becomes the new row image (a delete before it is superseded, so
 *       delete-then-reinsert ends with the row present);</li>
 *   <li>delete: the key's outcome becomes "delete";</li>
 *   <li>update that changes the key: the old key becomes "delete", the new key gets the image;</li>
 *   <li>an image with unchanged TOAST columns takes them from the earlier image of the same (old) key in this run when
 *       there is one; otherwise it remembers the old key whose destination row holds them ({@link #partial}'s
 *       {@code from}): the unchanged-TOAST rule ({@link DurableTables}).</li>
 * </ul>
 * Keys are compared by {@link #keyText}, which denotes the value exactly.
 *
 * @param <R> a key's outcome as the destination keeps it
 */
public abstract class KeyedReducer<R> {
    protected final RelationInfo rel;
    protected final TableRef target;
    private final int[] keyIdx;
    private final int columns;
    /** Outcomes in the order keys were first seen: source order, which keeps index inserts local. */
    private final Map<String, R> rows;
    private int events;
    private boolean insertsOnly = true;
    private boolean readWhileStreaming;

    protected KeyedReducer(RelationInfo rel, TableRef target, int expected) {
        this.rel = rel;
        this.target = target;
        this.keyIdx = rel.keyIndexes();
        this.columns = rel.columnCount();
        this.rows = new LinkedHashMap<>(Math.max(16, expected * 4 / 3 + 1));
    }

    // ---- how the destination keeps values and rows ----

    /** Column {@code i}'s value (neither SQL NULL nor unchanged TOAST) as kept. */
    protected abstract Object encode(int i, Object value);

    /** SQL NULL as kept (compared by identity). */
    protected abstract Object sqlNull();

    /** An unchanged TOAST value as kept in a partial row (compared by identity). */
    protected abstract Object unchanged();

    /** The text of key column {@code j}'s kept value: the same value, the same text. */
    protected abstract String keyText(int j, Object kept);

    /** A complete row of kept values. */
    protected abstract R complete(Object[] vals);

    /** A row with unchanged TOAST values, to be completed from the destination's row of key {@code from}. */
    protected abstract R partial(Object[] vals, Object[] from);

    /** The delete of key {@code key} (kept values, key order). */
    protected abstract R delete(Object[] key);

    protected abstract boolean isDelete(R row);

    /** A complete or partial row's values (unchanged TOAST as {@link #unchanged()}). */
    protected abstract Object[] values(R row);

    /** A partial row's key of the destination row holding the unchanged values; else null. */
    protected abstract Object[] from(R row);

    // ---- the reduction ----

    /** Outcomes by key text, in the order keys were first seen. */
    public final Map<String, R> rows() {
        return rows;
    }

    public final int events() {
        return events;
    }

    /** Whether the run held only complete inserts and reads: every outcome is a complete new row. */
    public final boolean insertsOnly() {
        return insertsOnly;
    }

    /**
     * Whether the run held rows an online copy read while streaming (op r at a stream position, not the initial
     * snapshot's {@link io.millrace.core.Position#START}): the destination may hold some of them already.
     */
    public final boolean readWhileStreaming() {
        return readWhileStreaming;
    }

    public final void add(ChangeEvent e) {
        events++;
        if (e.op() == io.millrace.core.change.Op.READ && !io.millrace.core.Position.START.equals(e.position())) {
            readWhileStreaming = true;
        }
        switch (e.op()) {
            case CREATE, READ -> upsert(e, null, image(e, e.after(), "after"));
            case UPDATE -> {
                insertsOnly = false;
                Object[] after = image(e, e.after(), "after");
                Object[] oldKey = e.before() == null ? null : key(e, e.before(), "before");
                upsert(e, oldKey, after);
            }
            case DELETE -> {
                insertsOnly = false;
                if (e.before() == null) {
                    throw bad(e, "a delete without the old key");
                }
                Object[] k = key(e, e.before(), "before");
                rows.put(join(k), delete(k));
            }
            default -> throw new MillraceException(MillraceException.Kind.INTERNAL, "unexpected " + e.op()
                    + " in a keyed run of " + target);
        }
    }

    private void upsert(ChangeEvent e, Object[] oldKeyVals, Object[] vals) {
        Object[] newKeyVals = new Object[keyIdx.length];
        for (int j = 0; j < keyIdx.length; j++) {
            newKeyVals[j] = vals[keyIdx[j]];
            if (newKeyVals[j] == sqlNull() || newKeyVals[j] == unchanged()) {
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
                rows.put(oldKey, delete(oldKeyVals));
            }
            rows.put(newKey, complete(vals));
            return;
        }
        insertsOnly = false;
        R prev = rows.get(oldKey);
        if (!oldKey.equals(newKey)) {
            rows.put(oldKey, delete(oldKeyVals));
        }
        Object[] from;
        if (prev == null) {
            from = oldKeyVals; // the destination row as it was before this run holds the values
        } else if (isDelete(prev)) {
            throw bad(e, "an update with unchanged TOAST values of a row deleted earlier in the same batch");
        } else {
            Object[] earlier = values(prev);
            for (int i = 0; i < columns; i++) {
                if (vals[i] == unchanged()) {
                    vals[i] = earlier[i];
                }
            }
            from = from(prev);
        }
        rows.put(newKey, hasUnchanged(vals) ? partial(vals, from) : complete(vals));
    }

    /** A new array of the image's kept values (ChangeEvent arrays are never mutated). */
    private Object[] image(ChangeEvent e, Object[] values, String which) {
        if (values == null || values.length != columns) {
            throw bad(e, values == null ? "no " + which + " image" : "an " + which + " image of " + values.length
                    + " values for " + columns + " columns");
        }
        Object[] out = new Object[columns];
        for (int i = 0; i < columns; i++) {
            Object v = values[i];
            out[i] = v == null ? sqlNull() : v == UnchangedToast.INSTANCE ? unchanged() : encode(i, v);
        }
        return out;
    }

    private Object[] key(ChangeEvent e, Object[] values, String which) {
        if (values.length != columns) {
            throw bad(e, "a " + which + " image of " + values.length + " values for " + columns + " columns");
        }
        Object[] out = new Object[keyIdx.length];
        for (int j = 0; j < keyIdx.length; j++) {
            Object v = values[keyIdx[j]];
            if (v == null || v == UnchangedToast.INSTANCE) {
                throw bad(e, "a " + which + " image without a value for key column " + rel.column(keyIdx[j]).name());
            }
            out[j] = encode(keyIdx[j], v);
        }
        return out;
    }

    private boolean hasUnchanged(Object[] vals) {
        for (Object v : vals) {
            if (v == unchanged()) {
                return true;
            }
        }
        return false;
    }

    /** A key's text; the texts of several columns joined with NUL, which neither PostgreSQL text nor COPY text holds. */
    private String join(Object[] key) {
        if (key.length == 1) {
            return keyText(0, key[0]);
        }
        StringBuilder sb = new StringBuilder();
        for (int j = 0; j < key.length; j++) {
            sb.append(j > 0 ? "\0" : "").append(keyText(j, key[j]));
        }
        return sb.toString();
    }

    private MillraceException bad(ChangeEvent e, String what) {
        return new MillraceException(MillraceException.Kind.SINK, "table " + target + ": change at " + e.position()
                + " (" + e.op().code() + ") carries " + what + "; cannot apply it");
    }
}
