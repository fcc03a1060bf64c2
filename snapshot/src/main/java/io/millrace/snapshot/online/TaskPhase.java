package io.millrace.snapshot.online;

import io.millrace.core.schema.TableRef;

import java.util.concurrent.atomic.AtomicReference;

/**
 * Where one task of the online snapshot is ({@link OnlineSnapshotter}). Not stored as such: a task not {@code FINISHED}
 * is in the checkpoints, with its kind and ranges left, and a restart lists it {@code COPYING}.
 *
 * <pre>
 *   TAKING_KEYS ──its chunk is cut──▶ COPYING ──its last chunk emitted──▶ FINISHED
 *        └────────the table has no key now──────▶ AWAITING_KEY ◀──┘
 * </pre>
 * {@code AWAITING_KEY} is final for the task: once the table has a key again, a new task takes over its ranges. A move
 * not drawn throws, but for two that repeat themselves and change nothing: the cut before each look for a chunk, and
 * the last chunk's emission again (a window its reader abandoned is emitted all the same).
 *
 * <p>Threads: moved by the readers (cut), the assembler thread (finish) and the start or a reshape (awaitKey, before
 * the task is listed); read by any thread.
 */
final class TaskPhase {
    enum Phase {
        /** A re-read task made in this run whose chunk is not cut yet: it takes more keys. Set when it is made. */
        TAKING_KEYS,
        /** Reading chunks (or waiting for older transactions to end first). */
        COPYING,
        /**
         * The table has no key now (dropped while Millrace was stopped, or while the table was copied): no chunk can be
         * cut, and the task waits, recorded, until it has one. Set before the task is listed.
         */
        AWAITING_KEY,
        /** Its last chunk was emitted (assembler thread); the reader that read it takes it off the list. Final. */
        FINISHED
    }

    private final TableRef table;
    private final AtomicReference<Phase> phase;

    /** @param takingKeys a re-read task made in this run (it takes keys until its chunk is cut) */
    TaskPhase(TableRef table, boolean takingKeys) {
        this.table = table;
        this.phase = new AtomicReference<>(takingKeys ? Phase.TAKING_KEYS : Phase.COPYING);
    }

    Phase get() {
        return phase.get();
    }

    /** Its chunk is about to be cut: a re-read takes no more keys. Any number of times. */
    void cut() {
        Phase from = phase.get();
        if (from == Phase.TAKING_KEYS) {
            move(from, Phase.COPYING);
        } else if (from == Phase.AWAITING_KEY) {
            throw illegal(from, Phase.COPYING);
        }
    }

    /** Its last chunk was emitted. Assembler thread. */
    void finish() {
        Phase from = phase.get();
        if (from != Phase.FINISHED) {
            if (from != Phase.COPYING) {
                throw illegal(from, Phase.FINISHED);
            }
            move(from, Phase.FINISHED);
        }
    }

    /** The table has no key now: the task waits for one. Before the task is listed. */
    void awaitKey() {
        Phase from = phase.get();
        if (from != Phase.COPYING && from != Phase.TAKING_KEYS) {
            throw illegal(from, Phase.AWAITING_KEY);
        }
        move(from, Phase.AWAITING_KEY);
    }

    private void move(Phase from, Phase to) {
        if (!phase.compareAndSet(from, to)) {
            throw illegal(phase.get(), to);
        }
    }

    private IllegalStateException illegal(Phase from, Phase to) {
        return new IllegalStateException("online snapshot of " + table + ": no move from " + from + " to " + to);
    }

    @Override
    public String toString() {
        return phase.get().name();
    }
}
