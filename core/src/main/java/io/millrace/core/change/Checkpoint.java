package io.millrace.core.change;

import io.millrace.core.Lsn;
import io.millrace.core.Position;

/**
 * The durable position of one destination. Written by the sink together with the data it covers
 * (in the same transaction where the sink has one; after fsync otherwise).
 *
 * @param version  format version, {@link #VERSION}
 * @param identity what this checkpoint belongs to (INV: IDENTITY)
 * @param flushLsn end LSN of the last source transaction applied in full: the slot may be confirmed
 *                 up to here, never further (INV: DURABLE); streaming restarts here (INV: RESUME)
 * @param applied  position of the last change applied (may be inside a transaction that a batch cut);
 *                 on restart, changes at or before it are skipped (INV: RESUME)
 * @param snapshot the initial snapshot's progress
 * @param online   online (watermark) snapshots not yet landed in full, each with its remaining key ranges
 */
public record Checkpoint(int version, Identity identity, Lsn flushLsn, Position applied, SnapshotProgress snapshot,
                         java.util.List<OnlineTask> online) {
    public static final int VERSION = 1;

    public Checkpoint {
        if (version != VERSION) {
            throw new IllegalArgumentException("checkpoint format version " + version + " is not supported (this build reads "
                    + VERSION + ")");
        }
        online = online == null ? java.util.List.of() : java.util.List.copyOf(online);
    }

    /** A checkpoint with no online snapshot under way. */
    public Checkpoint(int version, Identity identity, Lsn flushLsn, Position applied, SnapshotProgress snapshot) {
        this(version, identity, flushLsn, applied, snapshot, java.util.List.of());
    }

    public Checkpoint advance(Lsn newFlushLsn, Position newApplied) {
        return new Checkpoint(version, identity, newFlushLsn, newApplied, snapshot, online);
    }

    public Checkpoint withSnapshot(SnapshotProgress progress) {
        return new Checkpoint(version, identity, flushLsn, applied, progress, online);
    }

    /**
     * The tables ({@code schema.table}) an online snapshot is still copying: a destination may lack rows of
     * them that a later chunk brings, so an update with unchanged TOAST values of such a row is not an error.
     */
    public java.util.Set<String> copying() {
        java.util.Set<String> t = new java.util.HashSet<>();
        for (OnlineTask task : online) {
            t.add(task.table());
        }
        return t;
    }

    public Checkpoint withOnline(java.util.List<OnlineTask> tasks) {
        return new Checkpoint(version, identity, flushLsn, applied, snapshot, tasks);
    }
}
