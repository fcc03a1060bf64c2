package io.millrace.engine;

import io.millrace.engine.Engine.State;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The engine's lifecycle moves only as {@link State}'s diagram draws, by compare-and-set. */
class LifecycleTest {
    @Test
    void movesAlongTheDiagram() {
        Lifecycle l = new Lifecycle();
        l.move(State.CREATED, State.STARTING);
        l.move(State.STARTING, State.SNAPSHOTTING);
        l.move(State.SNAPSHOTTING, State.STARTING); // an invalidated copy starts again
        l.move(State.STARTING, State.SNAPSHOTTING);
        l.move(State.SNAPSHOTTING, State.STREAMING);
        l.move(State.STREAMING, State.STOPPING);
        l.move(State.STOPPING, State.STOPPED);
        assertThat(l.get()).isEqualTo(State.STOPPED);
    }

    @Test
    void anIllegalMoveThrowsNamingBothStates() {
        Lifecycle l = new Lifecycle();
        l.move(State.CREATED, State.STARTING);
        l.move(State.STARTING, State.STREAMING);
        assertThatThrownBy(() -> l.move(State.STREAMING, State.SNAPSHOTTING)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("from 'STREAMING' to 'SNAPSHOTTING'");
        assertThat(l.get()).as("unchanged").isEqualTo(State.STREAMING);
    }

    @Test
    void aMoveFromAStateTheEngineIsNotInThrows() {
        Lifecycle l = new Lifecycle();
        assertThatThrownBy(() -> l.move(State.STARTING, State.STREAMING)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Cannot change engine state to 'STREAMING' as the engine is not in expected state 'STARTING',"
                        + " current engine state is 'CREATED'");
    }

    @Test
    void runningStatesFailFinalOnesDoNot() {
        for (State s : State.values()) {
            boolean running = s != State.CREATED && s != State.STOPPED && s != State.FAILED;
            assertThat(s.canMoveTo(State.FAILED)).as("%s -> FAILED", s).isEqualTo(running);
        }
        Lifecycle l = new Lifecycle();
        l.move(State.CREATED, State.STARTING);
        l.fail();
        assertThat(l.get()).isEqualTo(State.FAILED);
        assertThatThrownBy(l::fail).isInstanceOf(IllegalStateException.class).hasMessageContaining("from 'FAILED' to 'FAILED'");
        assertThatThrownBy(() -> l.move(State.FAILED, State.STARTING)).isInstanceOf(IllegalStateException.class);
    }
}
