package io.millrace.core.sink;

import io.millrace.core.change.Checkpoint;

import java.util.List;
import java.util.Optional;

/**
 * One destination's part of {@code millrace reset}: this pipeline's state there (its checkpoint) and, as
 * {@link Data} asks, the data it copied there. Made by {@link Sink#reset}, which reads and changes nothing;
 * only {@link #apply()} does what {@link #actions()} lists. The caller checks the checkpoint's identity
 * before calling {@code apply()} (INV: IDENTITY: never another pipeline's state). One thread uses it.
 */
public interface SinkReset extends AutoCloseable {

    /** What happens to the data a pipeline copied into a destination (tables, events files). */
    enum Data {
        /** Left as it is: the next run copies every row again over it (upserts; a table without a key gets rows twice). */
        KEEP,
        /** Emptied: tables truncated (their definitions, indexes and grants stay), events files deleted. */
        TRUNCATE,
        /** Removed: tables dropped (re-created from the source's shape by the next run), events files deleted. */
        DROP
    }

    /** This destination's checkpoint as stored (any pipeline's: the caller compares its identity), or empty. */
    Optional<Checkpoint> checkpoint();

    /** What {@link #apply()} does, one line each beginning with a verb ("delete ...", "truncate ..."), for the user to read first. */
    List<String> actions();

    /** What stays although one might expect it to go, one line each, with the reason. */
    List<String> keeps();

    /** Does what {@link #actions()} listed; where the destination has transactions, in one. */
    void apply();

    @Override
    void close();

    /** A destination that keeps no state. */
    static SinkReset none() {
        return new SinkReset() {
            @Override
            public Optional<Checkpoint> checkpoint() {
                return Optional.empty();
            }

            @Override
            public List<String> actions() {
                return List.of();
            }

            @Override
            public List<String> keeps() {
                return List.of();
            }

            @Override
            public void apply() {
            }

            @Override
            public void close() {
            }
        };
    }
}
