package io.millrace.core.sink;

import java.util.concurrent.atomic.AtomicReference;

/**
 * A sink's lifecycle, {@code NEW → OPEN → (FAILED →) CLOSED}, changed only by compare-and-set: one piece for every
 * sink, with the messages the engine and the tests know. {@code NEW → CLOSED} is a {@link Sink#reset} (or a close
 * before open); {@code OPEN → FAILED} a sink whose client cannot be used again (only {@code close} follows).
 * Thread-safe; the writer thread owns the transitions other than {@link #close}.
 */
public final class SinkLifecycle {
    /** Where a sink is. */
    public enum State { NEW, OPEN, FAILED, CLOSED }

    private final String destination;
    private final AtomicReference<State> state = new AtomicReference<>(State.NEW);

    /** @param destination the destination's name, for messages */
    public SinkLifecycle(String destination) {
        this.destination = destination;
    }

    public State state() {
        return state.get();
    }

    public boolean is(State s) {
        return state.get() == s;
    }

    /**
     * {@code NEW → OPEN}, at the start of {@link Sink#open}.
     *
     * @throws IllegalStateException {@code Cannot open destination '<name>': it is <state>}
     */
    public void open() {
        if (!state.compareAndSet(State.NEW, State.OPEN)) {
            throw refused("open");
        }
    }

    /** Throws unless the sink is {@code NEW}: for an {@code open} that moves to {@code OPEN} only once it succeeded ({@link #move}). */
    public void requireNew() {
        if (state.get() != State.NEW) {
            throw refused("open");
        }
    }

    /**
     * Throws unless the sink is {@code OPEN}, at the start of {@link Sink#write}.
     *
     * @throws IllegalStateException {@code Cannot write to destination '<name>': it is <state>}
     */
    public void requireOpen() {
        if (state.get() != State.OPEN) {
            throw refused("write to");
        }
    }

    /** {@code NEW → CLOSED}, at the start of {@link Sink#reset}: {@code Cannot reset destination '<name>': it is <state>}. */
    public void reset() {
        if (!state.compareAndSet(State.NEW, State.CLOSED)) {
            throw refused("reset");
        }
    }

    /** {@code from → to}, or an {@link IllegalStateException} naming both and the state the sink is in. */
    public void move(State from, State to) {
        if (!state.compareAndSet(from, to)) {
            throw new IllegalStateException(String.format("Cannot change destination '%s' to state '%s' as it is not"
                    + " in expected state '%s', current state is '%s'", destination, to, from, state.get()));
        }
    }

    /** {@code OPEN → CLOSED}: an {@link #open} that failed half-way leaves the sink closed. */
    public void openFailed() {
        state.compareAndSet(State.OPEN, State.CLOSED);
    }

    /** {@code OPEN → FAILED}: the sink's client cannot be used again. Nothing when it is closed already. */
    public void fail() {
        state.compareAndSet(State.OPEN, State.FAILED);
    }

    /** {@code → CLOSED}; whether this call closed it (it was not closed before): then the sink releases what it holds. */
    public boolean close() {
        return state.getAndSet(State.CLOSED) != State.CLOSED;
    }

    private IllegalStateException refused(String verb) {
        return new IllegalStateException("Cannot " + verb + " destination '" + destination + "': it is " + state.get());
    }
}
