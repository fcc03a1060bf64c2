package io.millrace.source;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one wording of "the slot is in use", whether the preflight saw it in {@code pg_replication_slots} or the
 * walsender refused {@code START_REPLICATION} (SQLSTATE 55006) because another client claimed the slot in between.
 */
public final class SlotInUse {
    /** PostgreSQL's text: {@code replication slot "x" is active for PID 1234}. */
    private static final Pattern PID = Pattern.compile("active for PID (\\d+)");

    private SlotInUse() {
    }

    public static String detail(String slot, Integer pid) {
        return "slot '" + slot + "' is in use by " + (pid == null ? "another process" : "process " + pid) + " (another Millrace or replication client)";
    }

    public static String fix(Integer pid) {
        return pid == null ? "stop that process or choose another source.slot"
                : "stop that process (SELECT pg_terminate_backend(" + pid + ");) or choose another source.slot";
    }

    /** The error, worded as the preflight's failed check is ({@code detail. Fix: fix}). */
    static MillraceException error(String slot, Integer pid, Throwable cause) {
        return new MillraceException(Kind.SLOT_IN_USE, detail(slot, pid) + ". Fix: " + fix(pid), cause);
    }

    /** The PID named in the server's refusal, or null when the text does not name one. */
    static Integer pidIn(String serverMessage) {
        Matcher m = serverMessage == null ? null : PID.matcher(serverMessage);
        return m != null && m.find() ? Integer.valueOf(m.group(1)) : null;
    }
}
