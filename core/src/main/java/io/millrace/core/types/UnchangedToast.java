package io.millrace.core.types;

/**
 * The value of a TOASTed column that an UPDATE did not change: pgoutput sends no value for it
 * ({@code 'u'}). It is never replaced by a fake value; sinks keep the destination's current value.
 */
public final class UnchangedToast {
    public static final UnchangedToast INSTANCE = new UnchangedToast();

    private UnchangedToast() {
    }

    /** Whether {@code row} (null: none) holds an unchanged TOAST value: an update's new image that is not a whole row. */
    public static boolean in(Object[] row) {
        if (row == null) {
            return false;
        }
        for (Object v : row) {
            if (v == INSTANCE) {
                return true;
            }
        }
        return false;
    }

    @Override
    public String toString() {
        return "<unchanged-toast>";
    }
}
