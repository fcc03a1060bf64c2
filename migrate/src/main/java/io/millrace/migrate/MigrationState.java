package io.millrace.migrate;

/**
 * The step a migration has reached, recorded durably on the target ({@code <state_schema>.migration}, one row per step,
 * appended in its own committed transaction before the step's effect is relied on), so that after a crash or a Ctrl-C
 * {@code migrate status} names it and {@code migrate cutover} or {@code migrate abort} finishes it.
 *
 * <pre>
 * NONE ─► SCHEMA_CREATED ─► FOLLOWING ─► FENCING ─► FENCED ─► CUT_OVER ─► ROLLING_BACK ─► ROLLED_BACK
 *              │                │           │          │       (migrate rollback, after cutover --reverse)
 *              └────────────────┴───────────┴──────────┴──► ABORTED  (migrate abort: the source is unfenced)
 * </pre>
 */
public enum MigrationState {
    /** Nothing recorded on the target: no migration started there. */
    NONE(false),
    /** Set by the schema step once the tables, sequences and key constraints exist on the target (the copy may start). */
    SCHEMA_CREATED(false),
    /** Set once the copy is done and the secondary indexes and constraints exist: the target follows the source. */
    FOLLOWING(false),
    /**
     * Set by cutover before it fences the source: from here the source may be read-only. A crash here leaves a source that
     * may be fenced; {@code migrate cutover} goes on, {@code migrate abort} unfences it.
     */
    FENCING(true),
    /** Set once the source is fenced and the fence marker is durable on the target: the target holds every write before it. */
    FENCED(true),
    /** Set once the target's sequences are past the source's and identity columns are restored: the target is the primary. */
    CUT_OVER(true),
    /** Set by {@code migrate abort}: the source takes writes again, unless something other than this migration fenced it. */
    ABORTED(false),
    /**
     * Set by {@code migrate rollback} before it fences the target: from here both databases may be read-only until the
     * reverse stream brought the target's writes to the source; {@code migrate rollback} again finishes it.
     */
    ROLLING_BACK(true),
    /** Set once the source holds every write of the target, its sequences are past the target's and its fence is lifted. */
    ROLLED_BACK(false);

    private final boolean sourceMayBeFenced;

    MigrationState(boolean sourceMayBeFenced) {
        this.sourceMayBeFenced = sourceMayBeFenced;
    }

    /** Whether the source may be read-only in this state (cutover stays fenced: writes go to the target now). */
    public boolean sourceMayBeFenced() {
        return sourceMayBeFenced;
    }
}
