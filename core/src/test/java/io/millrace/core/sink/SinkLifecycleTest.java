package io.millrace.core.sink;

import io.millrace.core.sink.SinkLifecycle.State;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SinkLifecycleTest {
    @Test
    void opensWritesAndClosesOnce() {
        SinkLifecycle l = new SinkLifecycle("d");
        assertThatThrownBy(l::requireOpen).hasMessage("Cannot write to destination 'd': it is NEW");
        l.open();
        l.requireOpen();
        assertThatThrownBy(l::open).hasMessage("Cannot open destination 'd': it is OPEN");
        assertThatThrownBy(l::reset).hasMessage("Cannot reset destination 'd': it is OPEN");
        assertThat(l.close()).isTrue();
        assertThat(l.close()).isFalse();
        assertThatThrownBy(l::requireOpen).hasMessage("Cannot write to destination 'd': it is CLOSED");
    }

    @Test
    void illegalMovesThrowAndFailedStaysFailedUntilClosed() {
        SinkLifecycle l = new SinkLifecycle("d");
        l.requireNew();
        assertThatThrownBy(() -> l.move(State.OPEN, State.CLOSED))
                .hasMessage("Cannot change destination 'd' to state 'CLOSED' as it is not in expected state 'OPEN', current state is 'NEW'");
        l.move(State.NEW, State.OPEN);
        l.fail();
        assertThat(l.state()).isEqualTo(State.FAILED);
        assertThatThrownBy(l::requireOpen).hasMessage("Cannot write to destination 'd': it is FAILED");
        l.openFailed(); // not OPEN: nothing
        assertThat(l.is(State.FAILED)).isTrue();
        assertThat(l.close()).isTrue();
        l.fail(); // closed: stays closed
        assertThat(l.state()).isEqualTo(State.CLOSED);
    }

    @Test
    void resetOnlyFromNew() {
        SinkLifecycle l = new SinkLifecycle("d");
        l.reset();
        assertThat(l.state()).isEqualTo(State.CLOSED);
        assertThatThrownBy(l::open).hasMessage("Cannot open destination 'd': it is CLOSED");
    }
}
