package io.millrace.api;

import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.CheckpointJson;

/** A text form of a {@link Checkpoint}, for a {@link TransactionalConsumer} to store with its data. */
public final class Checkpoints {
    private Checkpoints() {
    }

    /** The checkpoint as one JSON object (the form the built-in destinations store). */
    public static String toJson(Checkpoint checkpoint) {
        return CheckpointJson.write(checkpoint);
    }

    /**
     * The checkpoint {@link #toJson} wrote.
     *
     * @throws IllegalArgumentException when {@code json} is not a checkpoint this version reads, saying what is wrong
     */
    public static Checkpoint fromJson(String json) {
        return CheckpointJson.read(json);
    }
}
