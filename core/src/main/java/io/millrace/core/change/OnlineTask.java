package io.millrace.core.change;

import io.millrace.core.schema.TableRef;

import java.util.List;
import java.util.Objects;

/**
 * One online (watermark) snapshot of a table that has not landed in full, persisted with every
 * checkpoint so a restart resumes after the last landed chunk (INV: RESUME).
 *
 * @param table     the table, as named when the task was made (or last recorded: a rename is followed by {@code oid})
 * @param kind      what the task reads (and whether it shows in the table's copy status)
 * @param filter    an SQL condition limiting the rows read: the operator's ({@link Kind#FILTERED}) or the moved keys'
 *                  ({@link Kind#REREAD}); null for the others
 * @param remaining the key ranges not yet landed, in key order (INV: COVER — together with the
 *                  landed chunks they tile the key space)
 * @param rowsDone  rows landed so far (for progress reports only)
 * @param oid       the table's oid, 0 when not known yet: a table renamed while its copy is under way (or while
 *                  Millrace is stopped) is found again by it
 * @param key       the key columns {@code remaining} was cut on, in key order; null when not recorded (checkpoints written
 *                  before it was). A table whose key changed since (while Millrace was stopped) is copied from its first key
 *                  again: ranges of the old key's values would skip rows of the new one
 */
public record OnlineTask(TableRef table, Kind kind, String filter, List<KeyRange> remaining, long rowsDone, int oid, List<String> key) {

    /**
     * What a task reads. Set when the task is made and stored with it (checkpoint format 2; format 1 marked a re-read by a
     * comment at the start of its filter and a reconciling copy by a flag, {@link CheckpointJson} reads both).
     */
    public enum Kind {
        /** The whole table: a signal's or the configuration's online snapshot, or a copy started again. */
        COPY,
        /** The rows an operator's SQL condition selects (a signal's {@code additional-conditions}), in {@code filter}. */
        FILTERED,
        /**
         * Rows read again by key: an update kept unchanged TOAST values and moved a row's key while its table was copied
         * ({@code Watermarks.Moves}); {@code filter} lists the keys. Not a copy of the table: it does not show in its copy
         * status.
         */
        REREAD,
        /**
         * The whole table, and each chunk also deletes what the destinations hold in its key range and the source no
         * longer has (the re-copy after a lost slot, {@code source.on_slot_lost: resnapshot}): each chunk brings, with its
         * rows, a delete for every key the destinations held in its range that the chunk did not read and the stream did
         * not change between its watermarks.
         */
        RECONCILE;

        /** Whether a task of this kind carries a filter (and must). */
        public boolean filtered() {
            return this == FILTERED || this == REREAD;
        }
    }

    public OnlineTask {
        Objects.requireNonNull(table, "table");
        Objects.requireNonNull(kind, "kind");
        if (kind.filtered() != (filter != null)) {
            throw new IllegalArgumentException("online snapshot task of " + table + ": a " + kind + " task " + (filter == null
                    ? "needs a filter" : "takes no filter (" + filter + ")"));
        }
        remaining = List.copyOf(remaining);
        key = key == null ? null : List.copyOf(key);
    }

    /** A copy ({@link Kind#COPY}, {@link Kind#FILTERED} with a filter, or {@link Kind#RECONCILE}). */
    public OnlineTask(TableRef table, String filter, List<KeyRange> remaining, long rowsDone, int oid, boolean reconcile,
                      List<String> key) {
        this(table, reconcile ? Kind.RECONCILE : filter != null ? Kind.FILTERED : Kind.COPY, filter, remaining, rowsDone, oid, key);
    }

    public OnlineTask(TableRef table, String filter, List<KeyRange> remaining, long rowsDone, int oid, boolean reconcile) {
        this(table, filter, remaining, rowsDone, oid, reconcile, null);
    }

    public OnlineTask(TableRef table, String filter, List<KeyRange> remaining, long rowsDone, int oid) {
        this(table, filter, remaining, rowsDone, oid, false);
    }

    public OnlineTask(TableRef table, String filter, List<KeyRange> remaining, long rowsDone) {
        this(table, filter, remaining, rowsDone, 0);
    }

    /** Whether each chunk also deletes what the source no longer has ({@link Kind#RECONCILE}). */
    public boolean reconcile() {
        return kind == Kind.RECONCILE;
    }

    /** A new task covering the whole key space. */
    public static OnlineTask whole(TableRef table, String filter) {
        return new OnlineTask(table, filter, List.of(KeyRange.ALL), 0);
    }

    /** A new task copying the whole table {@code table} of oid {@code oid}. */
    public static OnlineTask whole(io.millrace.core.schema.RelationInfo table) {
        return new OnlineTask(table.table(), null, List.of(KeyRange.ALL), 0, table.oid());
    }

    /** A new task re-copying the whole table {@code table} and deleting what the source no longer has ({@link #reconcile}). */
    public static OnlineTask reconciling(io.millrace.core.schema.RelationInfo table) {
        return new OnlineTask(table.table(), null, List.of(KeyRange.ALL), 0, table.oid(), true);
    }

    /**
     * A half-open range of primary-key values {@code (lo, hi]}, in the key's own order; either end may be
     * {@link KeyBound#OPEN}.
     *
     * @param lo exclusive lower bound
     * @param hi inclusive upper bound
     */
    public record KeyRange(KeyBound lo, KeyBound hi) {
        public static final KeyRange ALL = new KeyRange(KeyBound.OPEN, KeyBound.OPEN);

        public KeyRange {
            Objects.requireNonNull(lo, "lo (KeyBound.OPEN for an open end)");
            Objects.requireNonNull(hi, "hi (KeyBound.OPEN for an open end)");
        }

        /** The range of two stored bounds ({@link KeyBound#stored}: {@code null} for an open end). */
        public static KeyRange stored(List<String> lo, List<String> hi) {
            return new KeyRange(KeyBound.stored(lo), KeyBound.stored(hi));
        }
    }
}
