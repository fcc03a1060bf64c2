package io.millrace.snapshot.online;

import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.types.Codecs;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.UnchangedToast;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * INV: WATERMARK — the assembler side of a chunk's window, without a server: which chunks must be read again
 * because their snapshot missed a transaction, and how an update that keeps unchanged TOAST values is laid over
 * the chunk's row (chunk rows hold full rows; such an update alone cannot build one).
 */
class WatermarksTest {
    private static final Object U = UnchangedToast.INSTANCE;

    private static RelationInfo rel(String... extra) {
        List<ColumnInfo> cols = new java.util.ArrayList<>(List.of(new ColumnInfo("id", Codecs.builtin(23), -1, true),
                new ColumnInfo("v", Codecs.builtin(23), -1, false), new ColumnInfo("payload", Codecs.builtin(25), -1, false)));
        for (String e : extra) {
            cols.add(new ColumnInfo(e, Codecs.builtin(23), -1, false));
        }
        return new RelationInfo(16400, new TableRef("public", "t"), 'd', cols, TypeResolver.builtinsOnly());
    }

    private static final RelationInfo T = rel();

    /** A window opened at the low watermark after {@code committedBefore}, read in a snapshot (in progress, xmax). */
    private static Watermarks.Window window(Watermarks m, long[] committedBefore, long[] inProgress, long xmax, List<Object[]> rows) {
        m.active(true);
        for (long x : committedBefore) {
            m.committed(x);
        }
        Watermarks.Window w = m.open(T, List.of("id"), null);
        m.low(w);
        w.fill(rows, inProgress, xmax);
        return w;
    }

    @Test
    void aTransactionCommittedBeforeTheLowWatermarkButInvisibleToTheChunkHasItReadAgain() {
        // in the snapshot's in-progress list
        Watermarks m = new Watermarks();
        assertThat(m.missedBeforeLow(window(m, new long[] {900}, new long[] {900}, 1000, List.of()))).isTrue();
        // at or above its xmax: invisible, and PostgreSQL does not list it (the snapshot's xmax is the newest completed id + 1)
        m = new Watermarks();
        assertThat(m.missedBeforeLow(window(m, new long[] {900, 1000}, new long[0], 1000, List.of()))).isTrue();
        // seen
        m = new Watermarks();
        assertThat(m.missedBeforeLow(window(m, new long[] {900, 999}, new long[0], 1000, List.of()))).isFalse();
        // ids wrap around 2^32: 0xFFFFFFF0 precedes 5
        m = new Watermarks();
        assertThat(m.missedBeforeLow(window(m, new long[] {0xFFFF_FFF0L}, new long[0], (1L << 32) + 5, List.of()))).isFalse();
    }

    @Test
    void anUpdateKeepingToastValuesIsLaidOverTheChunkRowWhenTheSnapshotDidNotSeeIt() {
        Watermarks m = new Watermarks();
        Object[] row = {1, 10, "payload of 1"};
        Watermarks.Window w = window(m, new long[0], new long[] {1500}, 2000, List.of(row, new Object[] {2, 20, "payload of 2"}));
        m.changed(T, new Object[] {1, null, null}, new Object[] {1, 11, U}, 1500); // in progress at the read: not seen
        m.changed(T, new Object[] {1, null, null}, new Object[] {1, 12, U}, 2100); // after the read: not seen
        m.changed(T, new Object[] {2, null, null}, new Object[] {2, 21, U}, 1400); // seen: the chunk row is newer
        assertThat(m.missedPartial(w)).isFalse();
        assertThat(w.isStale(row)).as("not stale: the update cannot rebuild the row").isFalse();
        assertThat(w.current(row)).containsExactly(1, 12, "payload of 1");
        assertThat(w.current(new Object[] {2, 21, "payload of 2"})).containsExactly(2, 21, "payload of 2");
    }

    @Test
    void aWholeChangeStillMakesTheRowStaleAndAnUnseenKeyChangeHasTheChunkReadAgain() {
        Watermarks m = new Watermarks();
        Object[] row = {1, 10, "p"};
        Watermarks.Window w = window(m, new long[0], new long[0], 2000, List.<Object[]>of(row));
        m.changed(T, new Object[] {1, null, null}, new Object[] {1, 11, U}, 2100);
        m.changed(T, new Object[] {1, null, null}, new Object[] {1, 12, "new payload"}, 2200);
        assertThat(m.missedPartial(w)).isFalse();
        assertThat(w.isStale(row)).as("the whole image in the stream is newer").isTrue();

        Watermarks m2 = new Watermarks();
        Watermarks.Window w2 = window(m2, new long[0], new long[0], 2000, List.<Object[]>of(new Object[] {1, 10, "p"}));
        m2.changed(T, new Object[] {7, null, null}, new Object[] {3, 70, U}, 2100); // row 7 moved to key 3 after the read
        assertThat(m2.missedPartial(w2)).isTrue();
        assertThat(m2.missedPartial(window(new Watermarks(), new long[0], new long[0], 2000, List.of()))).isFalse();
    }

    @Test
    void anUpdateInAnotherShapeRereadsTheChunkOnlyWhenItHoldsThatRow() {
        RelationInfo wider = rel("added");
        Watermarks m = new Watermarks();
        Watermarks.Window w = window(m, new long[0], new long[0], 2000, List.<Object[]>of(new Object[] {1, 10, "p"}));
        m.changed(wider, new Object[] {5, null, null, null}, new Object[] {5, 50, U, 1}, 2100); // not a row of this chunk
        assertThat(m.missedPartial(w)).isFalse();
        Watermarks m2 = new Watermarks();
        Watermarks.Window w2 = window(m2, new long[0], new long[0], 2000, List.<Object[]>of(new Object[] {1, 10, "p"}));
        m2.changed(wider, new Object[] {1, null, null, null}, new Object[] {1, 11, U, 1}, 2100);
        assertThat(m2.missedPartial(w2)).isTrue();
    }
}
