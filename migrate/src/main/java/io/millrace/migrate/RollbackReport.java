package io.millrace.migrate;

import java.time.Duration;

/**
 * What {@link Migration#rollback} did.
 *
 * @param writeUnavailable the measured window in which neither database took the applications' writes: from the target's
 *                         fence to the source's fence lifted
 * @param markerLsn        the target position of the rollback's marker; the source holds every transaction the target
 *                         committed before it
 * @param sessionsEnded    target sessions ended by its fence
 * @param sequences        source sequences set past the target's value
 * @param reverseSlot      the target's slot the reverse stream read; dropped once {@code migrate reverse} has stopped
 */
public record RollbackReport(Duration writeUnavailable, String markerLsn, int sessionsEnded, int sequences, String reverseSlot) {

    /** For the terminal. */
    public String render() {
        return "rollback done: write-unavailable window " + writeUnavailable.toMillis() + " ms (target fenced, marker at " + markerLsn
                + ", " + sessionsEnded + " target session(s) ended, " + sequences + " sequence(s) set past the target's on the source).\n"
                + "The source takes writes again: switch the applications back to it now. The target stays read-only"
                + " (default_transaction_read_only = on; ALTER DATABASE ... RESET default_transaction_read_only lifts it).\n"
                + "'millrace migrate reverse' stops by itself and drops slot '" + reverseSlot + "' on the target.\n";
    }
}
