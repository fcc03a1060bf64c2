package io.millrace.core.sink;

import java.util.List;
import java.util.Objects;

/**
 * The known gap of online snapshots that keyed sinks report (docs/ARCHITECTURE.md): an update that keeps unchanged
 * TOAST values and moves a row the copy has not brought yet to a key in a part of the table already copied cannot be
 * rebuilt, and no chunk reads that key again. The sinks say so, with the fix, rather than staying silent.
 */
public final class MovedKeys {
    private MovedKeys() {
    }

    /**
     * The new key of a partial row (comma-joined values) when its update changed the key, else null.
     *
     * @param keyIdx key column positions in {@code vals}
     * @param from   the old key (key order)
     * @param vals   the row's column values
     */
    public static String newKey(int[] keyIdx, Object[] from, Object[] vals) {
        for (int j = 0; j < keyIdx.length; j++) {
            if (!Objects.deepEquals(from[j], vals[keyIdx[j]])) {
                StringBuilder key = new StringBuilder();
                for (int i = 0; i < keyIdx.length; i++) {
                    key.append(i == 0 ? "" : ",").append(vals[keyIdx[i]]);
                }
                return key.toString();
            }
        }
        return null;
    }

    /** The warning for {@code moved} new keys of {@code table}'s rows left to its online copy (the first ten shown). */
    public static String warning(String destination, Object target, Object table, List<String> moved) {
        return "destination '" + destination + "': " + moved.size() + " update(s) of " + target + " kept unchanged TOAST values"
                + " and changed the key of a row the online snapshot of " + table + " had not copied yet (new keys: "
                + moved.subList(0, Math.min(10, moved.size())) + "). A new key in a part of the table already copied stays"
                + " missing: when the copy has landed, check these keys, or copy the table again (millrace snapshot CONFIG"
                + " --table " + table + ")";
    }
}
