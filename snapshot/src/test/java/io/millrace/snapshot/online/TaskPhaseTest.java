package io.millrace.snapshot.online;

import io.millrace.core.schema.TableRef;
import io.millrace.snapshot.online.TaskPhase.Phase;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** INV: RESUME — the moves of an online snapshot task ({@link TaskPhase}): each one drawn, the repeats, each illegal one. */
class TaskPhaseTest {
    private static final TableRef T = new TableRef("public", "t");

    @Test
    void aReReadTakesKeysUntilItsChunkIsCutThenCopiesAndFinishes() {
        TaskPhase p = new TaskPhase(T, true);
        assertThat(p.get()).isEqualTo(Phase.TAKING_KEYS);
        p.cut();
        assertThat(p.get()).isEqualTo(Phase.COPYING);
        p.cut(); // before each look for a chunk: changes nothing
        assertThat(p.get()).isEqualTo(Phase.COPYING);
        p.finish();
        assertThat(p.get()).isEqualTo(Phase.FINISHED);
        p.finish(); // an abandoned window's rows emitted all the same
        p.cut();
        assertThat(p.get()).isEqualTo(Phase.FINISHED);
    }

    @Test
    void aCopyStartsCopyingAndATableWithoutKeyWaitsForOne() {
        TaskPhase copy = new TaskPhase(T, false);
        assertThat(copy.get()).isEqualTo(Phase.COPYING);
        copy.awaitKey();
        assertThat(copy.get()).isEqualTo(Phase.AWAITING_KEY);
        TaskPhase reread = new TaskPhase(T, true);
        reread.awaitKey();
        assertThat(reread.get()).isEqualTo(Phase.AWAITING_KEY);
    }

    @Test
    void aTaskWaitingForAKeyNeitherCopiesNorFinishes() {
        TaskPhase p = new TaskPhase(T, false);
        p.awaitKey();
        assertThatThrownBy(p::cut).hasMessage("online snapshot of public.t: no move from AWAITING_KEY to COPYING");
        assertThatThrownBy(p::finish).hasMessage("online snapshot of public.t: no move from AWAITING_KEY to FINISHED");
        assertThatThrownBy(p::awaitKey).hasMessage("online snapshot of public.t: no move from AWAITING_KEY to AWAITING_KEY");
    }

    @Test
    void aReReadWhoseChunkIsNotCutCannotFinishAndAFinishedTaskWaitsForNothing() {
        TaskPhase taking = new TaskPhase(T, true);
        assertThatThrownBy(taking::finish).hasMessage("online snapshot of public.t: no move from TAKING_KEYS to FINISHED");
        TaskPhase done = new TaskPhase(T, false);
        done.finish();
        assertThatThrownBy(done::awaitKey).hasMessage("online snapshot of public.t: no move from FINISHED to AWAITING_KEY");
    }
}
