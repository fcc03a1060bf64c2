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
 * @param verified         the comparison made with the source fenced (included in the window), or null when not asked
 * @param reverseSlot      with {@code --reverse}, the slot on the target that {@code migrate reverse} streams back from;
 *                         null without
 * @param neverCompared    without {@code verified}: the tables no verify pass had compared before the cutover
 */
public record CutoverReport(Duration writeUnavailable, String fenceLsn, long lagBytesAtFence, int sessionsEnded, int sequences,
                            VerifyReport verified, String reverseSlot, java.util.List<String> neverCompared) {

    public CutoverReport {
        neverCompared = java.util.List.copyOf(neverCompared);
    }

    /** A report where every table was compared, or {@code verified} says which were not. */
    public CutoverReport(Duration writeUnavailable, String fenceLsn, long lagBytesAtFence, int sessionsEnded, int sequences,
                         VerifyReport verified, String reverseSlot) {
        this(writeUnavailable, fenceLsn, lagBytesAtFence, sessionsEnded, sequences, verified, reverseSlot, java.util.List.of());
    }

    /** For the terminal. */
    public String render() {
        return "cutover done: write-unavailable window " + writeUnavailable.toMillis() + " ms (fence at " + fenceLsn + ", "
                + lagBytesAtFence + " bytes behind then, " + sessionsEnded + " source session(s) ended, " + sequences
                + " sequence(s) set past the source" + (verified == null ? "" : "; verified with the source fenced: "
                + verified.chunks() + " chunk(s)" + (verified.unchanged() > 0 ? " (" + verified.unchanged()
                + " unchanged since the last pass)" : "") + ", " + verified.rows() + " row(s) equal in " + verified.took().toMillis() + " ms"
                + (verified.skipped().isEmpty() ? "" : "; not compared: " + String.join(", ", verified.skipped())))
                + ").\nThe source stays read-only (default_transaction_read_only = on)."
                + " Switch the applications to the target now.\n"
                + (neverCompared.isEmpty() ? "" : "No comparison was made of " + String.join(", ", neverCompared) + " before the"
                + " cutover ('millrace migrate verify' while following, or 'cutover --verify' with the source fenced, compares them).\n")
                + (reverseSlot == null ? "" : "The target keeps their writes for the way back in slot '" + reverseSlot
                + "': run 'millrace migrate reverse CONFIG' to stream them into the source (it retains WAL on the target until read).\n");
    }
}
