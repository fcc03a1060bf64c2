package io.millrace.connect;

import io.millrace.api.Checkpoints;
import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.change.SnapshotProgress;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The hand-off's rules (INV: BOUNDED, DURABLE): the engine hands a batch over once the batch before is polled and in
 * Kafka, and learns what Connect stored by the rule of the transaction boundaries in force. Connect's side is driven by
 * hand, as the worker calls it.
 */
class HandoffTest {
    private static Checkpoint checkpoint(long lsn) {
        return new Checkpoint(Checkpoint.VERSION, new Identity("1", "shop", "shop_slot", "shop_pub", "connect"), Lsn.of(lsn),
                Position.START, SnapshotProgress.skipped(Lsn.of(lsn)));
    }

    private static Map<String, String> offset(Checkpoint cp) {
        return Map.of(MillraceSourceTask.OFFSET_KEY, Checkpoints.toJson(cp));
    }

    private static SourceRecord record(Checkpoint cp, int key) {
        return new SourceRecord(Map.of("server", "shop"), cp == null ? null : offset(cp), "shop.public.t", null, null, key, null, "v");
    }

    private static CompletableFuture<Void> deliver(Handoff h, Handoff.Batch b) {
        return CompletableFuture.runAsync(() -> {
            try {
                h.deliver(b);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    private static CompletableFuture<Void> quiesce(Handoff h) {
        return CompletableFuture.runAsync(() -> {
            try {
                h.quiesce();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    private static void stillWaiting(CompletableFuture<Void> f) {
        assertThatThrownBy(() -> f.get(150, TimeUnit.MILLISECONDS)).isInstanceOf(TimeoutException.class);
    }

    /**
     * Connector-defined boundaries: a batch is handed over and stored once every record of it is acknowledged (the
     * exactly-once worker acknowledges only after the transaction committed, equal records once); one batch at a time.
     */
    @Test
    void connectorBoundariesStoreABatchOnceEveryRecordIsAcknowledged() throws Exception {
        Handoff h = new Handoff(true, 10_000);
        Checkpoint one = checkpoint(0x100);
        SourceRecord a = record(null, 1);
        SourceRecord tombstone = record(null, 1);
        SourceRecord again = record(null, 1); // equal to the two before: the exactly-once worker commits it once
        SourceRecord last = record(one, 2);
        CompletableFuture<Void> f = deliver(h, new Handoff.Batch(List.of(a, tombstone, again, last), one));
        assertThat(h.take(5_000)).containsExactly(a, tombstone, again, last);
        assertThat(h.take(50)).as("one batch at a time (INV: BOUNDED)").isNull();
        h.committed();
        h.acked(last);
        stillWaiting(f); // the first record not yet: its transaction may not have committed
        assertThat(h.stored()).as("nothing stored yet (INV: DURABLE)").isEmpty();
        h.acked(a);
        f.get(5, TimeUnit.SECONDS);
        assertThat(h.stored()).contains(one);
    }

    /**
     * Worker-defined boundaries (at least once; or exactly once with poll boundaries): the engine goes on once a batch is
     * in Kafka, without waiting for the worker's offset flush (a Debezium user's worker flushes every 60 s: one batch a
     * minute before, found by a user); what is stored is what Connect's offset store holds, read after each offset commit
     * only, and never goes back.
     */
    @Test
    void workerBoundariesGoOnOnceInKafkaAndStoreWhatConnectsOffsetStoreHolds() throws Exception {
        AtomicReference<Map<String, ?>> store = new AtomicReference<>();
        AtomicInteger reads = new AtomicInteger();
        Handoff h = new Handoff(false, 10_000, () -> {
            reads.incrementAndGet();
            return store.get();
        });
        Checkpoint one = checkpoint(0x100);
        Checkpoint two = checkpoint(0x200);
        SourceRecord r1 = record(one, 1);
        SourceRecord r2 = record(two, 2);
        CompletableFuture<Void> f = deliver(h, new Handoff.Batch(List.of(r1), one));
        h.take(5_000);
        stillWaiting(f); // not in Kafka yet
        h.acked(r1);
        f.get(5, TimeUnit.SECONDS); // no offset commit came: the engine goes on all the same
        f = deliver(h, new Handoff.Batch(List.of(r2), two));
        h.take(5_000);
        h.acked(r2);
        f.get(5, TimeUnit.SECONDS);
        assertThat(h.stored()).isEmpty();
        assertThat(reads).as("no offset commit: the store is not read").hasValue(0);

        h.committed(); // a flush that stored the first batch's offset only
        store.set(offset(one));
        assertThat(h.stored()).contains(one);
        assertThat(h.stored()).contains(one);
        assertThat(reads).as("read once per offset commit").hasValue(1);

        store.set(offset(two));
        h.committed();
        assertThat(h.stored()).contains(two);
        store.set(offset(one)); // a task the worker gave up on wrote an older offset: the records up to two are in Kafka
        h.committed();
        assertThat(h.stored()).contains(two);

        assertThat(reads).hasValue(3);
        AtomicInteger tries = new AtomicInteger();
        Handoff failing = new Handoff(false, 10_000, () -> {
            if (tries.incrementAndGet() == 1) {
                throw new IllegalStateException("the offsets topic is not reachable");
            }
            return offset(two);
        });
        failing.committed();
        assertThat(failing.stored()).as("a failed read is tried again at the next call").isEmpty();
        assertThat(failing.stored()).contains(two);
    }

    @Test
    void aStoppingTaskFailsTheDeliveryAndATimeoutNamesTheSetting() throws Exception {
        Handoff h = new Handoff(true, 10_000);
        CompletableFuture<Void> f = deliver(h, new Handoff.Batch(List.of(record(checkpoint(1), 1)), checkpoint(1)));
        h.take(5_000);
        h.close();
        assertThatThrownBy(() -> f.get(5, TimeUnit.SECONDS)).hasCauseInstanceOf(ConnectException.class)
                .hasMessageContaining("stopping");

        Handoff slow = new Handoff(false, 200);
        assertThatThrownBy(() -> slow.deliver(new Handoff.Batch(List.of(record(checkpoint(1), 1)), checkpoint(1))))
                .isInstanceOf(ConnectException.class).hasMessageContaining(ConnectorSettings.M_HANDOFF_TIMEOUT)
                .hasMessageContaining("acknowledge");
    }

    @Test
    void quiesceDropsAnUnpolledBatchAndWaitsForAPolledOne() throws Exception {
        Handoff h = new Handoff(true, 10_000);
        SourceRecord r = record(checkpoint(1), 1);
        CompletableFuture<Void> f = deliver(h, new Handoff.Batch(List.of(r), checkpoint(1)));
        h.take(5_000);
        CompletableFuture<Void> q = quiesce(h);
        stillWaiting(q);
        h.acked(r);
        f.get(5, TimeUnit.SECONDS);
        q.get(5, TimeUnit.SECONDS);
        assertThat(h.stored()).as("the engine reads the store itself after a quiesce").isEmpty();
    }

    /**
     * Worker-defined boundaries: a restart inside the task reads the stored offset only once Connect's store holds the
     * offset of the last batch in Kafka. Before, it read whatever was stored (nothing before the worker's first flush):
     * the engine delivered again what Kafka held, and Connect then stored older positions than the slot was confirmed up to.
     */
    @Test
    void workerBoundariesQuiesceWaitsUntilTheStoreHoldsTheLastBatch() throws Exception {
        AtomicReference<Map<String, ?>> store = new AtomicReference<>();
        Handoff h = new Handoff(false, 10_000, store::get);
        Checkpoint one = checkpoint(0x100);
        Checkpoint two = checkpoint(0x200);
        SourceRecord r1 = record(one, 1);
        SourceRecord r2 = record(two, 2);
        for (SourceRecord r : List.of(r1, r2)) {
            CompletableFuture<Void> f = deliver(h, new Handoff.Batch(List.of(r), r == r1 ? one : two));
            h.take(5_000);
            h.acked(r);
            f.get(5, TimeUnit.SECONDS);
        }
        CompletableFuture<Void> q = quiesce(h);
        stillWaiting(q); // nothing stored yet
        store.set(offset(one));
        h.committed();
        stillWaiting(q); // a flush that stored the first batch only
        store.set(offset(two)); // read back through the JSON converter: equal, not the same map
        h.committed();
        q.get(5, TimeUnit.SECONDS);

        Handoff stopping = new Handoff(false, 10_000, () -> null);
        CompletableFuture<Void> f = deliver(stopping, new Handoff.Batch(List.of(r1), one));
        stopping.take(5_000);
        stopping.acked(r1);
        f.get(5, TimeUnit.SECONDS);
        CompletableFuture<Void> q2 = quiesce(stopping);
        stillWaiting(q2);
        stopping.close();
        q2.get(5, TimeUnit.SECONDS); // the task stops: no more waiting
    }
}
