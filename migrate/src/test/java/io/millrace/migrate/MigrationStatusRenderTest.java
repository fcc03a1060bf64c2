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

    /**
     * A cutover --verify that stopped on a difference (state FENCED, a chunk still divergent) read as "a cutover was
     * interrupted", and a pass's re-check showed no result (found by a user): each is said.
     */
    @Test
    void aCutoverStoppedOnADifferenceIsSaidSoWithTheReChecksResult() {
        java.time.Instant at = java.time.Instant.parse("2026-12-07T22:00:00Z");
        Migration.TableStatus orders = new Migration.TableStatus("public.orders", "copied", 100, 0, at, 4, 2, 1);
        Migration.TableStatus items = new Migration.TableStatus("public.items", "copied", 100, 0, at, 4, 3, 0);
        String fenced = new Migration.MigrationStatus(MigrationState.FENCED, List.of(), true, false, 0, "mig_slot", true,
                List.of(orders, items), -1, false, 0).render();
        assertThat(fenced).contains("public.orders: copied, ~100 row(s) on the target, following 0 bytes behind, last verify pass"
                        + " 2026-12-07T22:00:00Z: 4 chunk(s), 2 differing when read, 1 still divergent ('millrace migrate verify --repair'")
                .contains("4 chunk(s), 3 differing when read, equal when re-checked or copied again")
                .contains("a cutover stopped on chunks that differ (above)").doesNotContain("was interrupted");
        String interrupted = new Migration.MigrationStatus(MigrationState.FENCED, List.of(), true, false, 0, "mig_slot", true,
                List.of(items), -1, false, 0).render();
        assertThat(interrupted).contains("a cutover was interrupted");
    }

    /** A cutover before any verify pass said nothing of it (found by a user's walk): the tables never compared are named. */
    @Test
    void aCutoverNamesTheTablesNoPassCompared() {
        CutoverReport none = new CutoverReport(java.time.Duration.ofMillis(586), "0/3000000", 0, 2, 1, null, null,
                List.of("public.items", "public.history"));
        assertThat(none.render()).contains("write-unavailable window 586 ms").contains("No comparison was made of public.items,"
                + " public.history before the cutover ('millrace migrate verify' while following");
        assertThat(new CutoverReport(java.time.Duration.ofMillis(586), "0/3000000", 0, 2, 1, null, null).render())
                .doesNotContain("No comparison");
    }
}
