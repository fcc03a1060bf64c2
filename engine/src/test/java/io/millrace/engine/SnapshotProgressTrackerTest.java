package io.millrace.engine;

import io.millrace.core.schema.TableRef;
import io.millrace.engine.SnapshotProgressTracker.Phase;
import io.millrace.engine.SnapshotProgressTracker.Row;
import io.millrace.snapshot.SnapshotRunner;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** A table's copy phase on the status page: copying, landed, copying again; and the listener behind it hears all of it. */
class SnapshotProgressTrackerTest {
    private static final TableRef T = new TableRef("public", "t");

    @Test
    void aCopyGoesFromCopyingToLandedAndACopyStartedAgainCountsFromZero() {
        List<String> heard = new ArrayList<>();
        SnapshotProgressTracker p = new SnapshotProgressTracker(new SnapshotRunner.Listener() {
            @Override
            public void rowsCopied(TableRef table, long rows) {
                heard.add(table + "+" + rows);
            }
        });
        assertThat(p.row(T)).as("no copy started").isNull();
        p.rowsCopied(T, 5); // a report for a table whose copy this run did not start: passed on, not shown
        assertThat(p.row(T)).isNull();
        p.tableStarted(T, 100);
        p.rowsCopied(T, 40);
        p.rowsCopied(T, 30);
        assertThat(p.row(T)).isEqualTo(new Row(70, 100, Phase.COPYING));
        assertThat(p.row(T).done()).isFalse();
        p.tableDone(T, 72); // rows counted by the copy itself win: a chunk landed in part was counted once
        assertThat(p.row(T)).isEqualTo(new Row(72, 100, Phase.LANDED));
        assertThat(p.row(T).done()).isTrue();
        p.tableStarted(T, 80); // a signal copies it again
        assertThat(p.row(T)).isEqualTo(new Row(0, 80, Phase.COPYING));
        assertThat(heard).containsExactly("public.t+5", "public.t+40", "public.t+30");
        assertThat(p.tables()).containsExactly(T);
    }
}
