package io.millrace.connect;

import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The hand-off's commit rules (INV: DURABLE, BOUNDED): the engine's batch is released only once Connect has committed
 * its offset, by the rule of the transaction boundaries in force. Connect's side is driven by hand, as the worker calls it.
 */
class HandoffTest {
    private static SourceRecord record(String offset, int key) {
        return new SourceRecord(Map.of("server", "shop"), Map.of("checkpoint", offset), "shop.public.t", null, null, key, null, "v");
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

    private static void stillWaiting(CompletableFuture<Void> f) {
        assertThatThrownBy(() -> f.get(150, TimeUnit.MILLISECONDS)).isInstanceOf(TimeoutException.class);
    }

    @Test
    void connectorBoundariesReleaseOnceEveryRecordIsCommitted() throws Exception {
        Handoff h = new Handoff(true, 10_000);
        SourceRecord a = record("old", 1);
        SourceRecord tombstone = record("old", 1);
        SourceRecord again = record("old", 1); // equal to the two before: the exactly-once worker commits it once
        SourceRecord last = record("new", 2);
        CompletableFuture<Void> f = deliver(h, new Handoff.Batch(List.of(a, tombstone, again, last)));
        List<SourceRecord> polled = h.take(5_000);
        assertThat(polled).containsExactly(a, tombstone, again, last);
        assertThat(h.take(50)).as("one batch at a time (INV: BOUNDED)").isNull();
        h.committed();
        stillWaiting(f);
        h.acked(last);
        stillWaiting(f); // the first record not yet: its transaction may not have committed
        h.acked(a);
        f.get(5, TimeUnit.SECONDS);
    }

    @Test
    void workerBoundariesWaitForAPollAndTwoOffsetCommitsAfterTheAcknowledgements() throws Exception {
        Handoff h = new Handoff(false, 10_000);
        SourceRecord r = record("new", 1);
        CompletableFuture<Void> f = deliver(h, new Handoff.Batch(List.of(r)));
        h.take(5_000);
        h.committed(); // a flush before the record was acknowledged does not count
        h.acked(r);
        h.committed();
        h.committed(); // no poll since the acknowledgement: the worker may not have made the offset committable yet
        stillWaiting(f);
        assertThat(h.take(10)).isNull(); // the worker polls: acknowledged offsets are now committable
        h.committed();
        stillWaiting(f); // that flush may have begun before the poll
        h.committed();
        f.get(5, TimeUnit.SECONDS);
    }

    /**
     * Worker-defined boundaries with Connect's offset store at hand: an offset commit after the acknowledgements makes the
     * engine read the store, and the batch is released as soon as the store holds its offset, with no poll in between (an
     * exactly-once worker with poll boundaries commits the batch's transaction, then acknowledges, then calls commit();
     * before, the batch waited for two more polls of half a second each: about 110 changes/s, found by a user). A commit
     * whose flush did not hold it yet does not release it; the poll-and-two-commits rule still does, whatever the store.
     */
    @Test
    void workerBoundariesReleaseOnceConnectsOffsetStoreHoldsTheBatchsOffset() throws Exception {
        java.util.concurrent.atomic.AtomicReference<Map<String, ?>> store = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicInteger reads = new java.util.concurrent.atomic.AtomicInteger();
        Handoff h = new Handoff(false, 10_000, offset -> {
            reads.incrementAndGet();
            return offset.equals(store.get());
        });
        SourceRecord first = record("old", 1);
        SourceRecord r = record("new", 2);
        CompletableFuture<Void> f = deliver(h, new Handoff.Batch(List.of(first, r)));
        h.take(5_000);
        h.committed(); // before the acknowledgements: not even a look in the store
        h.acked(r);
        h.committed();
        stillWaiting(f);
        assertThat(reads).hasValue(0);
        h.acked(first);
        h.committed(); // this flush did not hold the offset yet
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (reads.get() < 1) { // the engine thread's look in the store
            assertThat(System.nanoTime()).isLessThan(deadline);
            Thread.sleep(5);
        }
        stillWaiting(f);
        assertThat(reads).hasValue(1);
        store.set(Map.of("checkpoint", "new")); // the next one did (read back through the JSON converter: equal, not the same)
        h.committed();
        f.get(5, TimeUnit.SECONDS);
        assertThat(reads).hasValue(2);
        assertThat(h.take(10)).as("nothing left in flight").isNull();
    }

    @Test
    void aStoppingTaskFailsTheDeliveryAndATimeoutNamesTheSetting() throws Exception {
        Handoff h = new Handoff(true, 10_000);
        CompletableFuture<Void> f = deliver(h, new Handoff.Batch(List.of(record("new", 1))));
        h.take(5_000);
        h.close();
        assertThatThrownBy(() -> f.get(5, TimeUnit.SECONDS)).hasCauseInstanceOf(ConnectException.class)
                .hasMessageContaining("stopping");

        Handoff slow = new Handoff(false, 200);
        assertThatThrownBy(() -> slow.deliver(new Handoff.Batch(List.of(record("new", 1))))).isInstanceOf(ConnectException.class)
                .hasMessageContaining(ConnectorSettings.M_HANDOFF_TIMEOUT).hasMessageContaining("offset.flush.interval.ms");
    }

    @Test
    void quiesceDropsAnUnpolledBatchAndWaitsForAPolledOne() throws Exception {
        Handoff h = new Handoff(true, 10_000);
        SourceRecord r = record("new", 1);
        CompletableFuture<Void> f = deliver(h, new Handoff.Batch(List.of(r)));
        h.take(5_000);
        CompletableFuture<Void> q = CompletableFuture.runAsync(() -> {
            try {
                h.quiesce();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        stillWaiting(q);
        h.acked(r);
        f.get(5, TimeUnit.SECONDS);
        q.get(5, TimeUnit.SECONDS);
    }

    /** A commit long after the acknowledgements (a worker flushing offsets every minute) is told, with the setting to change. */
    @Test
    void aCommitLongAfterTheAcknowledgementsIsToldWithTheFix() {
        assertThat(Handoff.slowCommit(Handoff.SLOW_COMMIT_MS - 1, false)).isNull();
        assertThat(Handoff.slowCommit(60_000, true)).as("connector boundaries: the transaction commits each batch").isNull();
        assertThat(Handoff.slowCommit(60_000, false)).contains("60 s after Kafka acknowledged").contains("offset.flush.interval.ms=1000")
                .contains("exactly.once.source.support=enabled");
    }
}
