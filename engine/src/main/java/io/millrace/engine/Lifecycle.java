package io.millrace.engine;

import io.millrace.engine.Engine.State;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.atomic.AtomicReference;

/**
 * The engine's {@link State}, changed only by compare-and-set through {@link #move}; a move the state diagram does
 * not draw, or from a state the engine is not in, throws {@link IllegalStateException} naming both. The run thread
 * moves it; any thread reads it.
 */
final class Lifecycle {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class); // the engine's log: one category for a run's stages
    private final AtomicReference<State> state = new AtomicReference<>(State.CREATED);

    State get() {
        return state.get();
    }

    /** Moves from {@code from} to {@code to}. */
    void move(State from, State to) {
        if (!from.canMoveTo(to)) {
            throw new IllegalStateException(String.format("Cannot change engine state from '%s' to '%s': not a move of the engine's"
                    + " lifecycle (current engine state is '%s')", from, to, state.get()));
        }
        if (!state.compareAndSet(from, to)) {
            throw new IllegalStateException(String.format("Cannot change engine state to '%s' as the engine is not in expected state '%s',"
                    + " current engine state is '%s'", to, from, state.get()));
        }
        LOG.debug("engine {} -> {}", from, to);
    }

    /** A failure: moves a running state to {@link State#STOPPING} while the engine ends (nothing when already stopping). */
    void failing() {
        State s;
        while ((s = state.get()) != State.STOPPING && s.canMoveTo(State.STOPPING)) {
            if (state.compareAndSet(s, State.STOPPING)) { // never throws: it runs while the failure is on its way up
                LOG.debug("engine {} -> {} (failing)", s, State.STOPPING);
                return;
            }
        }
    }

    /** Moves from the current state to {@link State#FAILED} (from any running state). */
    void fail() {
        move(state.get(), State.FAILED);
    }
}
