package io.millrace.core.change;

import java.util.List;
import java.util.Objects;

/**
 * One online (watermark) snapshot of a table that has not landed in full, persisted with every
 * checkpoint so a restart resumes after the last landed chunk (INV: RESUME).
 *
 * @param table     {@code schema.table}, as {@link io.millrace.core.schema.TableRef#toString()}
 * @param filter    an SQL condition limiting the rows copied, or null for all rows
 * @param remaining the key ranges not yet landed, in key order (INV: COVER — together with the
 *                  landed chunks they tile the key space)
 * @param rowsDone  rows landed so far (for progress reports only)
 * @param oid       the table's oid, 0 when not known yet: a table renamed while its copy is under way (or while
 *                  Millrace is stopped) is found again by it
 * @param reconcile the copy also deletes what the destinations hold in each chunk's key range and the source no longer
 *                  has (the re-copy after a lost slot, {@code source.on_slot_lost: resnapshot}): each chunk brings, with
 *                  its rows, a delete for every key the destinations held in its range that the chunk did not read and
 *                  the stream did not change between its watermarks
 * @param key       the key columns {@code remaining} was cut on, in key order; null when not recorded (checkpoints written
 *                  before it was). A table whose key changed since (while Millrace was stopped) is copied from its first key
 *                  again: ranges of the old key's values would skip rows of the new one
 */
public record OnlineTask(String table, String filter, List<KeyRange> remaining, long rowsDone, int oid, boolean reconcile,
                         List<String> key) {

    public OnlineTask {
        Objects.requireNonNull(table, "table");
        remaining = List.copyOf(remaining);
        key = key == null ? null : List.copyOf(key);
    }

    public OnlineTask(String table, String filter, List<KeyRange> remaining, long rowsDone, int oid, boolean reconcile) {
        this(table, filter, remaining, rowsDone, oid, reconcile, null);
    }

    public OnlineTask(String table, String filter, List<KeyRange> remaining, long rowsDone, int oid) {
        this(table, filter, remaining, rowsDone, oid, false);
    }

    public OnlineTask(String table, String filter, List<KeyRange> remaining, long rowsDone) {
        this(table, filter, remaining, rowsDone, 0);
    }

    /** A new task covering the whole key space. */
    public static OnlineTask whole(String table, String filter) {
        return new OnlineTask(table, filter, List.of(KeyRange.ALL), 0);
    }

    /** A new task copying the whole table {@code table} of oid {@code oid}. */
    public static OnlineTask whole(io.millrace.core.schema.RelationInfo table) {
        return new OnlineTask(table.table().toString(), null, List.of(KeyRange.ALL), 0, table.oid());
    }

    /** A new task re-copying the whole table {@code table} and deleting what the source no longer has ({@link #reconcile}). */
    public static OnlineTask reconciling(io.millrace.core.schema.RelationInfo table) {
        return new OnlineTask(table.table().toString(), null, List.of(KeyRange.ALL), 0, table.oid(), true);
    }

    /**
     * A half-open range of primary-key values {@code (lo, hi]}, in the key's own order. A key is the
     * text form of its columns' values (as PostgreSQL prints them), so it is fed back as literals.
     *
     * @param lo exclusive lower bound, null when open below
     * @param hi inclusive upper bound, null when open above
     */
    public record KeyRange(List<String> lo, List<String> hi) {
        public static final KeyRange ALL = new KeyRange(null, null);

        public KeyRange {
            lo = lo == null ? null : List.copyOf(lo);
            hi = hi == null ? null : List.copyOf(hi);
        }
    }
}
