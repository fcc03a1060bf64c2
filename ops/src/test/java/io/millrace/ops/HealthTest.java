package io.millrace.ops;

import io.millrace.engine.EngineStatus;
import io.millrace.engine.config.EngineConfig;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Readiness says whether the destinations can be read as a copy of the source: streaming within the lag bounds is not
 * enough while tables are still being copied (an initial snapshot interrupted and continued online after a restart)
 * or re-copied after a lost slot. A user's /readyz said 200 there, with 1.8M of 2M rows in the destination.
 */
class HealthTest {
    private static EngineStatus status(List<EngineStatus.Table> tables, EngineStatus.SlotLost lost) {
        return new EngineStatus("p", "streaming", "h:5432/db", "s", "s", "0/10", "0/10", "0/10", 0, 0, 5, 10, 0, 1 << 20, tables,
                null, null, null, null, lost, List.of(), null);
    }

    @Test
    void notReadyWhileATableIsStillBeingCopiedOrReconciled() {
        Health h = new Health(EngineConfig.Health.defaults(), () -> 0L);
        EngineStatus.Table landed = new EngineStatus.Table("public.a", "streaming", 10, 10, 3);
        assertThat(h.readiness(status(List.of(landed), null)).ok()).isTrue();

        Health.Answer copying = h.readiness(status(List.of(landed, new EngineStatus.Table("public.b", "snapshot", 5, 10, 0),
                new EngineStatus.Table("public.c", "waiting", 0, 10, 0)), null));
        assertThat(copying.ok()).isFalse();
        assertThat(copying.reason()).isEqualTo("the destinations do not hold every row yet: 2 table(s) still being copied (public.b, public.c)");

        Health.Answer reconciling = h.readiness(status(List.of(landed), new EngineStatus.SlotLost(1, "lost", "0/1", "0/2", "reconciling",
                List.of("public.a"), 0)));
        assertThat(reconciling.ok()).isFalse();
        assertThat(reconciling.reason()).contains("reconciled after the slot was lost");
        assertThat(h.readiness(status(List.of(landed), new EngineStatus.SlotLost(1, "lost", "0/1", "0/2", "reconciled", List.of(), 0))).ok())
                .isTrue();
    }
}
