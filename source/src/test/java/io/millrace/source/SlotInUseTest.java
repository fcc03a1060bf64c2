package io.millrace.source;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class SlotInUseTest {
    @Test
    void theWalsendersRefusalNamesTheSameProcessAsThePreflight() {
        Integer pid = SlotInUse.pidIn("ERROR: replication slot \"twice\" is active for PID 4242");
        assertThat(pid).isEqualTo(4242);
        assertThat(SlotInUse.detail("twice", pid)).isEqualTo("slot 'twice' is in use by process 4242 (another Millrace or replication client)");
        assertThat(SlotInUse.fix(pid)).contains("SELECT pg_terminate_backend(4242);").contains("choose another source.slot");
    }

    @Test
    void aRefusalWithoutAPidStillSaysWhatToDo() {
        assertThat(SlotInUse.pidIn("ERROR: something else")).isNull();
        assertThat(SlotInUse.pidIn(null)).isNull();
        assertThat(SlotInUse.detail("s", null)).isEqualTo("slot 's' is in use by another process (another Millrace or replication client)");
        assertThat(SlotInUse.fix(null)).isEqualTo("stop that process or choose another source.slot");
    }
}
