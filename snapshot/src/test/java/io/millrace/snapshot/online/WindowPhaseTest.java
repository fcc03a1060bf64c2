package io.millrace.snapshot.online;

import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.Codecs;
import io.millrace.snapshot.online.Watermarks.Window;
import io.millrace.snapshot.online.Watermarks.Window.Outcome;
import io.millrace.snapshot.online.Watermarks.Window.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * INV: WATERMARK — the transitions of an online snapshot chunk's window ({@link Phase}): each one drawn in its diagram,
 * the three that races and replays make ordinary (which leave the phase as it is), and each illegal move, which throws.
 */
class WindowPhaseTest {
    private static final RelationInfo T = new RelationInfo(16400, new TableRef("public", "t"), 'd',
            List.of(new ColumnInfo("id", Codecs.builtin(23), -1, true)), TypeResolver.builtinsOnly());

    private final Watermarks marks = new Watermarks();

    private Window window(Phase at) {
        Window w = marks.open(T, List.of("id"), null);
        switch (at) {
            case REGISTERED -> { }
            case OPEN -> marks.low(w);
            case EMITTED -> {
                marks.low(w);
                w.fill(List.of(), new long[0], 1);
                w.emitted(0);
            }
            case READ_AGAIN -> {
                marks.low(w);
                w.readAgain();
            }
            case ABANDONED -> marks.abandon(w);
        }
        assertThat(w.phase()).isEqualTo(at);
        return w;
    }

    @Test
    void aChunkGoesFromItsLowWatermarkToItsRowsEmittedAndItsReaderLearnsHowMany() throws Exception {
        Window w = window(Phase.REGISTERED);
        assertThat(w.await(0)).as("no outcome before the high watermark").isEmpty();
        marks.low(w);
        assertThat(w.phase()).isEqualTo(Phase.OPEN);
        assertThat(marks.watches(T.table())).isTrue();
        marks.low(w); // replayed after a reconnect: nothing changes
        assertThat(w.phase()).isEqualTo(Phase.OPEN);
        w.fill(List.<Object[]>of(new Object[] {1}, new Object[] {2}), new long[0], 10);
        marks.high(w);
        w.emitted(2);
        assertThat(w.phase()).isEqualTo(Phase.EMITTED);
        assertThat(w.await(0)).isEqualTo(Optional.of(new Outcome.Emitted(2)));
        assertThat(w.rows()).as("the rows are let go").isNull();
        assertThat(marks.watches(T.table())).isFalse();
    }

    @Test
    void aChunkReadAgainTellsItsReaderSoFromOpenOrWhenItsLowWatermarkWasNotSeen() throws Exception {
        Window open = window(Phase.OPEN);
        open.readAgain();
        assertThat(open.phase()).isEqualTo(Phase.READ_AGAIN);
        assertThat(open.await(0)).isEqualTo(Optional.of(new Outcome.ReadAgain()));
        Window unseen = window(Phase.REGISTERED);
        unseen.readAgain();
        assertThat(unseen.await(0)).isEqualTo(Optional.of(new Outcome.ReadAgain()));
    }

    @Test
    void anAbandonedWindowIgnoresItsWatermarksAndAnAbandonAfterTheOutcomeChangesNothing() {
        Window w = window(Phase.OPEN);
        marks.abandon(w);
        assertThat(w.phase()).isEqualTo(Phase.ABANDONED);
        assertThat(marks.byMessage(w.message(false).getBytes(java.nio.charset.StandardCharsets.US_ASCII), 'H'))
                .as("its high watermark finds no window").isNull();
        Watermarks other = new Watermarks();
        Window late = other.open(T, List.of("id"), null);
        other.abandon(late);
        other.low(late); // the assembler took it from the map before the abandon: the low watermark leaves it abandoned
        assertThat(late.phase()).isEqualTo(Phase.ABANDONED);
        assertThat(other.watches(T.table())).as("an abandoned window records no key").isFalse();
        late.emitted(0); // and so does its high watermark
        assertThat(late.phase()).isEqualTo(Phase.ABANDONED);
        Window done = window(Phase.EMITTED);
        marks.abandon(done);
        assertThat(done.phase()).isEqualTo(Phase.EMITTED);
    }

    @Test
    void noWindowGoesBackToRegistered() {
        for (Phase from : Phase.values()) {
            Window w = window(from);
            assertThatThrownBy(() -> w.move(Phase.REGISTERED)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("no move from " + from + " to REGISTERED");
        }
    }

    @ParameterizedTest
    @EnumSource(value = Phase.class, names = {"EMITTED", "READ_AGAIN"})
    void aFinishedWindowTakesNoOtherWatermarkAndNoSecondOutcome(Phase finished) {
        Window w = window(finished);
        assertThatThrownBy(() -> marks.low(w)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no move from " + finished + " to OPEN");
        assertThatThrownBy(() -> w.emitted(1)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no move from " + finished + " to EMITTED");
        assertThatThrownBy(w::readAgain).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no move from " + finished + " to READ_AGAIN");
        assertThat(w.phase()).isEqualTo(finished);
    }

    @Test
    void rowsAreNotEmittedForAChunkWhoseLowWatermarkWasNotSeen() {
        Window w = window(Phase.REGISTERED);
        assertThatThrownBy(() -> w.emitted(3)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no move from REGISTERED to EMITTED");
    }
}
