package io.millrace.migrate;

import java.time.Duration;

/**
 * What {@link Migration#cutover} did.
 *
 * @param writeUnavailable the measured window in which the source refused writes and the target was not yet the primary:
 *                         from the fence to the end of the cutover (sequences set, identity columns restored, recorded)
 * @param fenceLsn         the source position of the fence marker; the target holds every transaction committed before it
 * @param lagBytesAtFence  how far the target was behind when the fence went up
 * @param sessionsEnded    source sessions ended by the fence
 * @param sequences        target sequences set past the source's value
 */
public record CutoverReport(Duration writeUnavailable, String fenceLsn, long lagBytesAtFence, int sessionsEnded, int sequences) {

    /** For the terminal. */
    public String render() {
        return "cutover done: write-unavailable window " + writeUnavailable.toMillis() + " ms (fence at " + fenceLsn + ", "
                + lagBytesAtFence + " bytes behind then, " + sessionsEnded + " source session(s) ended, " + sequences
                + " sequence(s) set past the source).\nThe source stays read-only (default_transaction_read_only = on)."
                + " Switch the applications to the target now.\n";
    }
}
