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
 */
public record Checkpoint(int version, Identity identity, Lsn flushLsn, Position applied, SnapshotProgress snapshot) {
    public static final int VERSION = 1;

    public Checkpoint {
        if (version != VERSION) {
            throw new IllegalArgumentException("checkpoint format version " + version + " is not supported (this build reads "
                    + VERSION + ")");
        }
    }

    public Checkpoint advance(Lsn newFlushLsn, Position newApplied) {
        return new Checkpoint(version, identity, newFlushLsn, newApplied, snapshot);
    }

    public Checkpoint withSnapshot(SnapshotProgress progress) {
        return new Checkpoint(version, identity, flushLsn, applied, progress);
    }
}
