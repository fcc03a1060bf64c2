package io.millrace.pipeline;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.Codecs;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The per-table counters, counted once per run of a table's events in a batch (not per row). */
class PipelineStatsTest {
    private static RelationInfo rel(int oid, String name) {
        return new RelationInfo(oid, new TableRef("public", name), 'd', List.of(new ColumnInfo("id", Codecs.builtin(23), -1, true)),
                TypeResolver.builtinsOnly());
    }

    /**
     * Before its first batch the durable position is where the destinations are (the lowest of their checkpoints), not
     * 0/0: a pipeline stopped before it wrote anything logged "stopped; durable position 0/0" (found by a user).
     */
    @Test
    void theDurablePositionStartsAtTheLowestCheckpoint() {
        PipelineStats stats = new PipelineStats();
        io.millrace.core.change.Identity id = new io.millrace.core.change.Identity("1", "db", "slot", "pub", "d");
        new SinkWriter(List.of(), List.of(checkpoint(id, 0x5000), checkpoint(id, 0x4000)), new io.millrace.core.ByteBudget(1 << 20),
                lsn -> { }, stats);
        assertThat(stats.durable()).isEqualTo(Lsn.of(0x4000));
    }

    /** Idle after a catch-up (a batch of no change became durable): no lag, not the last change's latency for ever. */
    @Test
    void theLagIsZeroOnceAnIdleBatchIsDurable() {
        PipelineStats stats = new PipelineStats();
        RelationInfo a = rel(1, "a");
        long twoMinutesAgo = (System.currentTimeMillis() - 120_000) * 1000;
        stats.written(List.of(new ChangeEvent(Op.CREATE, a, null, new Object[]{1}, Lsn.of(100), new Position(Lsn.of(200), 1), 7,
                twoMinutesAgo, false)));
        assertThat(stats.lagMillis(System.currentTimeMillis())).isGreaterThanOrEqualTo(119_000);
        stats.written(List.of());
        assertThat(stats.lagMillis(System.currentTimeMillis())).isZero();
    }

    /**
     * A batch whose write failed (a destination away): the lag is the age of its oldest change, from which the retry's
     * status goes on counting, not the last durable batch's latency (a user's status read 1 s where a change had waited 86).
     */
    @Test
    void aFailedWriteLeavesTheLagAtTheAgeOfItsOldestChange() {
        PipelineStats stats = new PipelineStats();
        RelationInfo a = rel(1, "a");
        long now = System.currentTimeMillis();
        stats.written(List.of(new ChangeEvent(Op.CREATE, a, null, new Object[]{1}, Lsn.of(100), new Position(Lsn.of(200), 1), 7,
                (now - 1_000) * 1000, false))); // an earlier batch, durable a second after its commit
        io.millrace.core.change.Identity id = new io.millrace.core.change.Identity("1", "db", "slot", "pub", "d");
        io.millrace.core.sink.Sink away = new io.millrace.core.sink.Sink() {
            @Override
            public String name() {
                return "away";
            }

            @Override
            public boolean transactional() {
                return true;
            }

            @Override
            public java.util.Optional<io.millrace.core.change.Checkpoint> open() {
                return java.util.Optional.empty();
            }

            @Override
            public void write(List<ChangeEvent> events, io.millrace.core.change.Checkpoint checkpoint) {
                throw new IllegalStateException("the destination is away");
            }

            @Override
            public void close() {
            }
        };
        SinkWriter writer = new SinkWriter(List.of(away), List.of(checkpoint(id, 0x100)), new io.millrace.core.ByteBudget(1 << 20),
                lsn -> { }, stats);
        ChangeEvent waiting = new ChangeEvent(Op.CREATE, a, null, new Object[]{2}, Lsn.of(0x300), new Position(Lsn.of(0x300), 1), 8,
                (now - 86_000) * 1000, false);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> writer.write(new Batch(List.of(waiting), Lsn.of(0x300),
                waiting.position(), null))).hasMessageContaining("away");
        assertThat(stats.lagMillis(System.currentTimeMillis())).isGreaterThanOrEqualTo(86_000);
    }

    private static io.millrace.core.change.Checkpoint checkpoint(io.millrace.core.change.Identity id, long lsn) {
        return new io.millrace.core.change.Checkpoint(io.millrace.core.change.Checkpoint.VERSION, id, Lsn.of(lsn), new Position(Lsn.of(lsn), 1),
                io.millrace.core.change.SnapshotProgress.skipped(Lsn.of(0x1000)));
    }

    @Test
    void countsSnapshotRowsAndChangesPerTable() {
        RelationInfo a = rel(1, "a");
        RelationInfo b = rel(2, "b");
        List<ChangeEvent> events = new ArrayList<>();
        RelationInfo[] order = {a, a, b, a, b, b, b, a};
        boolean[] snapshot = {true, true, true, false, false, true, false, false};
        for (int i = 0; i < order.length; i++) {
            events.add(new ChangeEvent(snapshot[i] ? Op.READ : Op.CREATE, order[i], null, new Object[]{i}, Lsn.of(100),
                    new Position(Lsn.of(200), i + 1), 7, 1_700_000_000_000_000L, snapshot[i]));
        }
        PipelineStats stats = new PipelineStats();
        stats.written(events);
        stats.written(events.subList(0, 3));
        assertThat(stats.tables().get(a.table()).snapshotRows()).isEqualTo(2 + 2);
        assertThat(stats.tables().get(a.table()).events()).isEqualTo(2);
        assertThat(stats.tables().get(b.table()).snapshotRows()).isEqualTo(2 + 1);
        assertThat(stats.tables().get(b.table()).events()).isEqualTo(2);
        assertThat(stats.eventsWritten()).isEqualTo(11);
    }
}
