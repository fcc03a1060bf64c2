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
 * @param slotLost the last time the slot was lost and replaced ({@code source.on_slot_lost: resnapshot}), or null: why
 *                 {@code flushLsn} jumped to a new slot's position (INV: IDENTITY — the re-binding is deliberate and recorded)
 * @param shapes   the shape each source table held here was last written in, by oid ({@link SourceShapes}): a table whose
 *                 first Relation message of a run shows another shape changed where the stream does not show it
 *                 (while Millrace was stopped), and is copied again
 * @param rules    the transforms each source table held here was last written under, by oid: a fingerprint of its rule
 *                 (columns, masks, row filter, rename, and the salt where a mask hashes) made by the engine's transforms.
 *                 A table whose rule differs at a start was written under rules changed while Millrace was stopped, and is
 *                 copied again. A table held here without an entry was written by a release that did not record them.
 */
public record Checkpoint(int version, Identity identity, Lsn flushLsn, Position applied, SnapshotProgress snapshot,
                         List<OnlineTask> online, SortedMap<Integer, TableRef> tables, SlotLost slotLost,
                         SortedMap<Integer, String> shapes, SortedMap<Integer, String> rules) {
    public static final int VERSION = 2;

    /**
     * A lost slot being replaced, or replaced: written by the engine's start ({@code SlotReplacement}) before it drops the
     * lost slot, and again once the new slot exists.
     *
     * <pre>
     *   (slot lost or missing, on_slot_lost: resnapshot)
     *       ─▶ REPLACING  checkpoints still at the lost slot's position (lostAt); every captured table has a reconciling
     *                     online task. A start that finds it (a crash while the slot was replaced) replaces the slot again.
     *       ─▶ REPLACED   checkpoints re-bound to the new slot's consistent point (newSlotAt): a restart resumes there as
     *                     from any checkpoint; the reconciling tasks go on until they land.
     * </pre>
     *
     * @param lostAt    the position the checkpoints held when the slot was found lost: changes after it were never read
     * @param newSlotAt the new slot's consistent point ({@code 0/0} while REPLACING)
     * @param reason    what was found ({@code wal_status = lost}, or the slot missing)
     * @param count     how many times this pipeline's slot was replaced
     */
    public record SlotLost(State state, Lsn lostAt, Lsn newSlotAt, String reason, int count) {
        public enum State { REPLACING, REPLACED }
    }

    public Checkpoint {
        if (version != VERSION) {
            throw new IllegalArgumentException("checkpoint format version " + version + " is not supported (this build reads "
                    + VERSION + ")");
        }
        online = online == null ? List.of() : List.copyOf(online);
        tables = tables == null || tables.isEmpty() ? Collections.emptySortedMap() : Collections.unmodifiableSortedMap(new TreeMap<>(tables));
        shapes = shapes == null || shapes.isEmpty() ? Collections.emptySortedMap() : Collections.unmodifiableSortedMap(new TreeMap<>(shapes));
        rules = rules == null || rules.isEmpty() ? Collections.emptySortedMap() : Collections.unmodifiableSortedMap(new TreeMap<>(rules));
    }

    public Checkpoint(int version, Identity identity, Lsn flushLsn, Position applied, SnapshotProgress snapshot,
                      List<OnlineTask> online, SortedMap<Integer, TableRef> tables, SlotLost slotLost, SortedMap<Integer, String> shapes) {
        this(version, identity, flushLsn, applied, snapshot, online, tables, slotLost, shapes, null);
    }

    public Checkpoint(int version, Identity identity, Lsn flushLsn, Position applied, SnapshotProgress snapshot,
                      List<OnlineTask> online, SortedMap<Integer, TableRef> tables, SlotLost slotLost) {
        this(version, identity, flushLsn, applied, snapshot, online, tables, slotLost, null);
    }

    public Checkpoint(int version, Identity identity, Lsn flushLsn, Position applied, SnapshotProgress snapshot,
                      List<OnlineTask> online, SortedMap<Integer, TableRef> tables) {
        this(version, identity, flushLsn, applied, snapshot, online, tables, null);
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
        return new Checkpoint(version, identity, newFlushLsn, newApplied, snapshot, online, tables, slotLost, shapes, rules);
    }

    public Checkpoint withSnapshot(SnapshotProgress progress) {
        return new Checkpoint(version, identity, flushLsn, applied, progress, online, tables, slotLost, shapes, rules);
    }

    /**
     * The tables an online snapshot is still copying: a destination may lack rows of them that a later chunk brings, so
     * an update with unchanged TOAST values of such a row is not an error.
     */
    public java.util.Set<TableRef> copying() {
        java.util.Set<TableRef> t = new java.util.HashSet<>();
        for (OnlineTask task : online) {
            t.add(task.table());
        }
        return t;
    }

    public Checkpoint withOnline(List<OnlineTask> tasks) {
        return new Checkpoint(version, identity, flushLsn, applied, snapshot, tasks, tables, slotLost, shapes, rules);
    }

    /** This checkpoint holding {@code held} (see {@link SourceTables#follow}). */
    public Checkpoint withTables(SortedMap<Integer, TableRef> held) {
        return held.equals(tables) ? this : new Checkpoint(version, identity, flushLsn, applied, snapshot, online, held, slotLost, shapes, rules);
    }

    /** This checkpoint with the tables' shapes {@code written} (see {@link SourceShapes#follow}). */
    public Checkpoint withShapes(SortedMap<Integer, String> written) {
        return written.equals(shapes) ? this : new Checkpoint(version, identity, flushLsn, applied, snapshot, online, tables, slotLost,
                written, rules);
    }

    /** This checkpoint with the rules each table was written under {@code written} (see {@link #rules}). */
    public Checkpoint withRules(SortedMap<Integer, String> written) {
        return written.equals(rules) ? this : new Checkpoint(version, identity, flushLsn, applied, snapshot, online, tables, slotLost,
                shapes, written);
    }

    /** This checkpoint recording the slot's replacement {@code lost}. */
    public Checkpoint withSlotLost(SlotLost lost) {
        return new Checkpoint(version, identity, flushLsn, applied, snapshot, online, tables, lost, shapes, rules);
    }
}
