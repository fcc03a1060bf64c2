package io.millrace.core.sink;

import io.millrace.core.change.OnlineTask.KeyRange;
import io.millrace.core.schema.TableRef;

import java.util.List;

/**
 * A sink that can list the keys it holds of a source table: the re-copy after a lost slot ({@code source.on_slot_lost:
 * resnapshot}) compares them with each chunk it reads, and deletes in every destination the keys the source no longer
 * has. A destination whose own state cannot be queried (a file of events, a topic) does not implement it.
 *
 * <p>An optional capability: the engine looks for it with {@code instanceof} on an opened sink.
 */
public interface KeyedSink extends Sink {

    /**
     * The keys of the rows this destination holds of source table {@code table} whose key lies in {@code range} (in the
     * source's key order), each as the text PostgreSQL prints for its columns {@code keyColumns}; none when it does not
     * hold the table; at most {@code limit} of them (INV: BOUNDED — the caller refuses a range holding more). Any thread,
     * while the sink is open: on a connection of its own, reading only what is committed.
     *
     * @throws io.millrace.core.MillraceException of kind SINK (or CONNECTION) when the destination fails
     */
    List<List<String>> keysIn(TableRef table, List<String> keyColumns, KeyRange range, int limit);

    /**
     * {@link #keysIn(TableRef, List, KeyRange, int)} of the source table of {@code oid}, now named {@code table}: a
     * destination that follows tables by oid looks under the name it holds the table by, which is the old one while the
     * rename has not reached it (a table renamed while a lost slot was being replaced: the re-copy's first chunks are read
     * before any of the table's rows under its new name reach the destination). By default, by {@code table}.
     */
    default List<List<String>> keysIn(int oid, TableRef table, List<String> keyColumns, KeyRange range, int limit) {
        return keysIn(table, keyColumns, range, limit);
    }

    /** Keys of one target table, or null when the destination has no table of that name. */
    @FunctionalInterface
    interface Lookup {
        List<List<String>> keysOrNull(TableRef table);
    }

    /**
     * What {@link #keysIn(int, TableRef, List, KeyRange, int)} answers for a destination that follows tables by oid:
     * the keys under {@code held}, the name it holds the table by, while that target exists; else under {@code table}.
     */
    static List<List<String>> underHeldName(TableRef held, TableRef table, Lookup lookup) {
        if (held != null && !held.equals(table)) {
            List<List<String>> keys = lookup.keysOrNull(held);
            if (keys != null) {
                return keys;
            }
        }
        List<List<String>> keys = lookup.keysOrNull(table);
        return keys == null ? List.of() : keys;
    }
}
