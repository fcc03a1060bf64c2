package io.millrace.engine.transform;

import io.millrace.core.schema.RelationInfo;

import java.util.List;

/** Reads rows of the source by key, for {@code transforms.toast: complete} ({@link ToastCompleter}). */
public interface ToastLookup {
    /**
     * The source's current rows of {@code r}'s table with the keys {@code keys} (each the key columns' values, in
     * {@code r.keyIndexes()} order): for each key, in its order, the row in {@code r}'s column order (a column the source
     * no longer has as {@link io.millrace.core.types.UnchangedToast#INSTANCE}), or null when the source has no such row.
     *
     * @throws RuntimeException when the source cannot be read; the caller leaves the values as they are
     */
    List<Object[]> rows(RelationInfo r, List<Object[]> keys);

    /** Releases what it holds (a connection). */
    default void close() {
    }
}
