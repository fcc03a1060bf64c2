package io.millrace.core.change;

import java.util.List;

/**
 * One end of a {@link OnlineTask.KeyRange}: {@link Open}, where the key space goes on, or a {@link Key}. A key is the
 * text form of its columns' values as PostgreSQL prints them, in key order, fed back as literals (so a bound carries no
 * type of its own: the key columns' types, read from the table, give each literal its type where it is compared).
 * Stored in checkpoints, an open end as JSON {@code null} and a key as an array of strings ({@link CheckpointJson}).
 */
public sealed interface KeyBound {
    /** The open end. */
    Open OPEN = new Open();

    /** No bound at this end: the range reaches the first key (as its lower end) or the last (as its upper end). */
    record Open() implements KeyBound {
        @Override
        public String toString() {
            return "open";
        }
    }

    /**
     * A key: one value per key column, none null (a key's columns are NOT NULL: a primary key's, or those of the unique
     * index a table's replica identity uses).
     */
    record Key(List<String> values) implements KeyBound {
        public Key {
            values = List.copyOf(values);
            if (values.isEmpty()) {
                throw new IllegalArgumentException("a key bound has at least one value");
            }
        }

        @Override
        public String toString() {
            return values.toString();
        }
    }

    /** The bound of a stored range: {@link #OPEN} for {@code null} (JSON's open end), else the key of {@code values}. */
    static KeyBound stored(List<String> values) {
        return values == null ? OPEN : new Key(values);
    }

}
