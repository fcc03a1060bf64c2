package io.millrace.core.types;

/**
 * The value of a TOASTed column that an UPDATE did not change: pgoutput sends no value for it
 * ({@code 'u'}). It is never replaced by a fake value; sinks keep the destination's current value.
 */
public final class UnchangedToast {
    public static final UnchangedToast INSTANCE = new UnchangedToast();

    private UnchangedToast() {
    }

    @Override
    public String toString() {
        return "<unchanged-toast>";
    }
}
