package io.millrace.api;

import io.millrace.core.change.Checkpoint;

import java.util.List;
import java.util.Optional;

/**
 * Receives the captured changes exactly once, by storing the engine's checkpoint in the same transaction as the data
 * it covers, the contract the built-in transactional destinations keep. Set with
 * {@link Millrace.Builder#transactionalConsumer}.
 *
 * <p>The contract (INV: DURABLE, RESUME, IDENTITY):
 * <ul>
 *   <li>{@link #accept} applies the batch and stores {@code checkpoint} in one transaction of yours: when it returns
 *       both are durable; when it throws, neither is, and the engine stops — or, for a lost connection, starts again
 *       after a backoff, as {@link ChangeConsumer} says.</li>
 *   <li>{@link #open} returns the checkpoint stored last. The engine resumes from it: nothing at or before it is
 *       delivered again, nothing after it is skipped. {@link Checkpoints#toJson} and {@link Checkpoints#fromJson}
 *       give it a text form to store.</li>
 *   <li>The checkpoint names the pipeline it belongs to (source system, database, slot, publication, and this
 *       consumer's name); the engine refuses to start from another pipeline's.</li>
 * </ul>
 * Methods are called on one engine thread, never concurrently: {@code open} once per engine run, then {@code accept}
 * any number of times, then {@code close}. After a transient failure the engine runs again: {@code open} follows
 * {@code close}.
 */
public interface TransactionalConsumer {

    /** Connects and returns the checkpoint last stored with the data, or empty if none was ever stored. */
    Optional<Checkpoint> open() throws Exception;

    /**
     * Applies {@code batch} in list order and stores {@code checkpoint} with it, atomically. The batch may be empty:
     * the checkpoint alone advances (a snapshot's progress, a transaction of other tables), and must be stored all the same.
     */
    void accept(List<Change> batch, Checkpoint checkpoint) throws Exception;

    /**
     * Whether {@link #accept} returns before its checkpoint is stored: once the batch is safe from loss, the checkpoint
     * stored later by you, and {@link #stored()} telling which one. False by default (accept stores it with the batch).
     * When true the engine goes on with the next batch at once and confirms the source only up to {@link #stored()}
     * (INV: DURABLE); a restart resumes from {@link #open}'s checkpoint, so what was accepted after it comes again (at
     * least once), unless everything accepted is stored by then. Kafka Connect's source task is such a consumer: a worker
     * stores its offsets only at its next offset flush.
     */
    default boolean storesLater() {
        return false;
    }

    /**
     * Where {@link #storesLater()}: the checkpoint stored last (by this consumer or before it was opened), or empty while
     * none was. Called on the engine thread after each {@code accept} and about every 100 ms between; keep it cheap when
     * nothing was stored since the last call.
     */
    default Optional<Checkpoint> stored() throws Exception {
        return Optional.empty();
    }

    /** Releases what {@link #open} acquired; not called when {@code open} threw (clean up there). */
    default void close() throws Exception {
    }
}
