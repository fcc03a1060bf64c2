package io.millrace.migrate;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** What {@code millrace migrate status} prints for a table, with and without the target's estimate of its rows. */
class MigrationStatusRenderTest {
    private static String render(long rowsEstimate) {
        Migration.TableStatus t = new Migration.TableStatus("public.orders", "copying", rowsEstimate, -1, null, 0, 0);
        return new Migration.MigrationStatus(MigrationState.FOLLOWING, List.of(), false, false, 1024, "mig_slot", true, List.of(t), -1,
                false, 0).render();
    }

    @Test
    void aTableTheTargetHasNotEstimatedYetIsSaidSoNotShownAsEmpty() {
        assertThat(render(-1)).contains("public.orders: copying, rows on the target not estimated yet (not analyzed there)")
                .doesNotContain("~");
        assertThat(render(1500)).contains("public.orders: copying, ~1500 row(s) on the target");
        assertThat(render(0)).contains("~0 row(s) on the target");
    }
}
