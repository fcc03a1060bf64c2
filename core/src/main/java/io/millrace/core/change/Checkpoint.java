package io.millrace.core.change;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.schema.TableRef;

import java.util.Collections;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;

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
 * @param tables   the source tables the destination holds, by oid, each under the name the destination holds it as
 *                 ({@link SourceTables#follow}): a rename keeps the oid, so the destination follows it, across restarts too
 */
public record Checkpoint(int version, Identity identity, Lsn flushLsn, Position applied, SnapshotProgress snapshot,
                         List<OnlineTask> online, SortedMap<Integer, TableRef> tables) {
    public static final int VERSION = 1;

    public Checkpoint {
        if (version != VERSION) {
            throw new IllegalArgumentException("checkpoint format version " + version + " is not supported (this build reads "
                    + VERSION + ")");
        }
        online = online == null ? List.of() : List.copyOf(online);
        tables = tables == null || tables.isEmpty() ? Collections.emptySortedMap() : Collections.unmodifiableSortedMap(new TreeMap<>(tables));
    }

    /** A checkpoint that holds no source table yet. */
    public Checkpoint(int version, Identity identity, Lsn flushLsn, Position applied, SnapshotProgress snapshot, List<OnlineTask> online) {
        this(version, identity, flushLsn, applied, snapshot, online, null);
    }

    /** A checkpoint with no online snapshot under way, holding no source table yet. */
    public Checkpoint(int version, Identity identity, Lsn flushLsn, Position applied, SnapshotProgress snapshot) {
        this(version, identity, flushLsn, applied, snapshot, List.of());
    }

    public Checkpoint advance(Lsn newFlushLsn, Position newApplied) {
        return new Checkpoint(version, identity, newFlushLsn, newApplied, snapshot, online, tables);
    }

    public Checkpoint withSnapshot(SnapshotProgress progress) {
        return new Checkpoint(version, identity, flushLsn, applied, progress, online, tables);
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

    public Checkpoint withOnline(List<OnlineTask> tasks) {
        return new Checkpoint(version, identity, flushLsn, applied, snapshot, tasks, tables);
    }

    /** This checkpoint holding {@code held} (see {@link SourceTables#follow}). */
    public Checkpoint withTables(SortedMap<Integer, TableRef> held) {
        return held.equals(tables) ? this : new Checkpoint(version, identity, flushLsn, applied, snapshot, online, held);
    }
}
