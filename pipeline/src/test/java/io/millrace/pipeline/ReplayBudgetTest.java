package io.millrace.pipeline;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.sink.Sink;
import io.millrace.core.types.Codecs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * INV: BOUNDED for a large transaction: it arrives streamed while in progress, waits in the spill, and at its
 * commit is replayed from disk. Replayed rows were given back to the reader's budget when spilled, so the replay
 * has a budget of its own: however slow the destination, the rows replayed and not yet durable stay within it
 * (plus one batch). Before it, the replay filled the queue of batches as fast as it read the spill, and a 5M-row
 * transaction at -Xmx192m left the garbage collector thrashing (docs/BENCHMARKS.md).
 */
class ReplayBudgetTest {
    @TempDir
    Path spill;

    /** A destination slower than the replay: sleeps 50 ms on every batch; records the rows in order. */
    private static final class SlowSink implements Sink {
        final List<Long> ids = Collections.synchronizedList(new ArrayList<>());
        volatile Pipeline pipeline;
        /** Most rows assembled and not yet written, seen at a write. */
        long peakInFlight;

        @Override
        public String name() {
            return "slow";
        }

        @Override
        public boolean transactional() {
            return true;
        }

        @Override
        public Optional<Checkpoint> open() {
            return Optional.empty();
        }

        @Override
        public void write(List<ChangeEvent> events, Checkpoint checkpoint) {
            peakInFlight = Math.max(peakInFlight, pipeline.eventsAssembled() - ids.size());
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            for (ChangeEvent e : events) {
                ids.add((Long) e.after()[0]);
            }
        }

        @Override
        public void close() {
        }
    }

    @Test
    void aReplayedTransactionWaitsForTheDestinationWithinItsBudget() throws Exception {
        int rows = 20_000;
        String value = "x".repeat(1000); // 20 MB of rows against a 4 MB budget (2 MB for the replay)
        long xid = 77;
        List<byte[]> ms = new ArrayList<>();
        ms.add(Wire.streamStart(xid, true));
        ms.add(Wire.streamed(xid, Wire.relation(16384, "big")));
        for (int i = 1; i <= rows; i++) {
            ms.add(Wire.streamed(xid, Wire.insert(16384, Integer.toString(i), value)));
            if (i % 5000 == 0) {
                ms.add(Wire.streamStop());
                ms.add(Wire.streamStart(xid, false));
            }
        }
        ms.add(Wire.streamStop());
        long commit = 0x5000_0000L;
        ms.add(Wire.streamCommit(xid, commit, commit + 8));

        long maxBatch = 2L << 20;
        Pipeline.Options o = new Pipeline.Options(4L << 20, 1L << 20, maxBatch, 20);
        SlowSink sink = new SlowSink();
        AtomicReference<Lsn> durable = new AtomicReference<>(Lsn.ZERO);
        Checkpoint start = new Checkpoint(Checkpoint.VERSION, new Identity("1", "db", "slot", "pub", "slow"), Lsn.ZERO,
                Position.START, null);
        Pipeline p = new Pipeline(o, List.of(sink), List.of(start), durable::set);
        sink.pipeline = p;
        p.startWriter();
        p.startStreaming(Codecs.builtins(), oid -> List.of("id"), Position.START, () -> Lsn.ZERO, spill);
        long at = 0x4000_0000L;
        for (byte[] m : ms) {
            while (p.budget().exhausted()) {
                p.flush();
                p.budget().awaitRoom(100);
            }
            p.offer(Lsn.of(at++), m, 0, m.length);
        }
        p.flush();
        long deadline = System.currentTimeMillis() + 60_000;
        while (durable.get().value() < commit + 8 && !p.failure().isSet() && System.currentTimeMillis() < deadline) {
            Thread.sleep(5);
        }
        p.close();
        assertEquals(commit + 8, durable.get().value(), "the transaction is durable");
        assertEquals(rows, sink.ids.size());
        for (int i = 0; i < rows; i++) {
            assertEquals(i + 1, sink.ids.get(i), "row " + (i + 1) + " in order");
        }
        long limit = p.heldBudget().limit();
        long rowBytes = Wire.streamed(xid, Wire.insert(16384, "10000", value)).length;
        // Without the replay's budget: the queue of batches (4) + the one being written + the one being built, 12 MB.
        assertTrue(sink.peakInFlight * rowBytes <= limit + maxBatch + rowBytes, "rows replayed and not yet durable peaked at "
                + sink.peakInFlight + " (" + sink.peakInFlight * rowBytes + " bytes), budget " + limit + " + one batch " + maxBatch);
        assertTrue(p.heldBudget().peak() <= limit + maxBatch + 2048, "replayed bytes in flight peaked at "
                + p.heldBudget().peak() + ", budget " + limit + " + one batch " + maxBatch);
        System.out.println("ReplayBudgetTest: peak rows replayed and not yet durable " + sink.peakInFlight + " ("
                + sink.peakInFlight * rowBytes + " bytes); replay budget peak " + p.heldBudget().peak());
        assertEquals(0, p.heldBudget().used(), "every replayed byte came back");
        assertEquals(0, p.budget().used(), "every byte taken by the reader came back");
    }
}
