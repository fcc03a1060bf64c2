package io.millrace.pipeline;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
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
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The whole streaming pipeline (assembler, decoder pool, writer, checkpoints) fed pgoutput bytes as
 * the replication reader hands them on, with random transaction sizes, batch sizes, pool sizes, chunk
 * sizes, and random delays in the decoders and in the sink. Checks, at every sink write, that the
 * checkpoint never runs ahead of the rows delivered (INV: DURABLE, RESUME), and at the end that every
 * row arrived once and in WAL order (INV: ORDER). Printed seed, {@code -Dstress.seed=N} to replay.
 */
class PipelineDecodeStressTest {
    private static final int OID = 7;

    @TempDir
    Path spill;

    /** Records what it is given; checks each checkpoint against the rows delivered up to it. */
    private static final class CheckingSink implements Sink {
        final List<Long> ids = Collections.synchronizedList(new ArrayList<>());
        final List<String> violations = Collections.synchronizedList(new ArrayList<>());
        /** Transaction end LSN → id of its last row. */
        final TreeMap<Long, Long> lastRowOfTxEndingAt;
        final Random delays;
        volatile Checkpoint latest;
        Position lastDelivered = Position.START;

        CheckingSink(TreeMap<Long, Long> lastRowOfTxEndingAt, long seed) {
            this.lastRowOfTxEndingAt = lastRowOfTxEndingAt;
            this.delays = new Random(seed);
        }

        @Override
        public String name() {
            return "checking";
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
            if (delays.nextInt(4) == 0) {
                try {
                    Thread.sleep(delays.nextInt(4));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            for (ChangeEvent e : events) {
                if (!e.position().isAfter(lastDelivered)) {
                    violations.add("position " + e.position() + " after " + lastDelivered);
                }
                lastDelivered = e.position();
                ids.add((Long) e.after()[0]);
            }
            // INV: RESUME — the checkpoint names exactly the last row delivered, never one still on its way.
            if (!checkpoint.applied().equals(lastDelivered)) {
                violations.add("checkpoint applied " + checkpoint.applied() + " but the last row delivered is " + lastDelivered);
            }
            // INV: DURABLE — the flush position is the end of a transaction whose rows have all been delivered.
            long flush = checkpoint.flushLsn().value();
            if (flush > 0) {
                Long lastRow = lastRowOfTxEndingAt.get(flush);
                long delivered = ids.isEmpty() ? 0 : ids.get(ids.size() - 1);
                if (lastRow == null || lastRow > delivered) {
                    violations.add("flush " + checkpoint.flushLsn() + " ends a transaction whose last row " + lastRow
                            + " was not delivered (delivered up to " + delivered + ")");
                }
            }
            latest = checkpoint;
        }

        @Override
        public void close() {
        }
    }

    private record Feed(List<Long> ats, List<byte[]> messages, TreeMap<Long, Long> lastRowOfTxEndingAt, long rows, long lastEnd,
                        long badTxEnd) {
    }

    /** Transactions of random sizes (one relation message first); {@code badRow} (if > 0) is sent with an id that does not decode. */
    private static Feed feed(Random rnd, int txs, long badRow) {
        List<Long> ats = new ArrayList<>();
        List<byte[]> ms = new ArrayList<>();
        TreeMap<Long, Long> ends = new TreeMap<>();
        long lsn = 0x10_0000;
        ats.add(lsn);
        ms.add(Wire.relation(OID, "t"));
        long id = 0;
        long badEnd = -1;
        for (int t = 0; t < txs; t++) {
            int rows = rnd.nextInt(10) == 0 ? 1 + rnd.nextInt(3000) : 1 + rnd.nextInt(60);
            long base = lsn + 16;
            long commit = base + rows + 1;
            long end = commit + 1;
            ats.add(base);
            ms.add(Wire.begin(commit, 1000 + t));
            boolean bad = false;
            for (int i = 0; i < rows; i++) {
                id++;
                bad |= id == badRow;
                ats.add(base + 1 + i);
                ms.add(Wire.insert(OID, id == badRow ? "oops" : Long.toString(id), "value " + id));
            }
            ats.add(commit);
            ms.add(Wire.commit(commit, end));
            ends.put(end, id);
            if (bad) {
                badEnd = end;
            }
            lsn = end;
        }
        return new Feed(ats, ms, ends, id, lsn, badEnd);
    }

    private static Pipeline.Options randomOptions(Random rnd) {
        long batch = 1L << (8 + rnd.nextInt(10)); // 256 B .. 64 kB
        return new Pipeline.Options(64L << 20, batch, batch * (1 + rnd.nextInt(4)), 1 + rnd.nextInt(20))
                .withDecoders(1 + rnd.nextInt(4)).withDecodeChunkRows(1 + rnd.nextInt(rnd.nextBoolean() ? 16 : 1500));
    }

    private static DecodePool.Hook delays(long seed) {
        ThreadLocal<Random> r = ThreadLocal.withInitial(() -> new Random(seed ^ Thread.currentThread().getId()));
        return () -> {
            if (r.get().nextInt(5) == 0) {
                Thread.sleep(r.get().nextInt(3));
            }
        };
    }

    private static Checkpoint start() {
        return new Checkpoint(Checkpoint.VERSION, new Identity("1", "db", "slot", "pub", "checking"), Lsn.ZERO, Position.START, null);
    }

    /** Hands the messages on as the reader does (offer takes each one's cost from the budget), batches flushed at random points. */
    private static void offerAll(Pipeline p, Feed f, Random rnd) throws InterruptedException {
        for (int i = 0; i < f.messages().size() && !p.failure().isSet(); i++) {
            byte[] m = f.messages().get(i);
            p.offer(Lsn.of(f.ats().get(i)), m, 0, m.length);
            if (rnd.nextInt(50) == 0) {
                p.flush();
            }
        }
        if (Thread.interrupted()) {
            return; // a flush found the pipeline stopped and set the flag, as it does for the reader: the reader leaves then
        }
        p.flush();
        Thread.interrupted(); // likewise: the pipeline stopped during this last flush
    }

    @Test
    void rowsArriveOnceInOrderAndCheckpointsNeverRunAhead() throws Exception {
        long seed = StressSeed.of("rowsArriveOnceInOrderAndCheckpointsNeverRunAhead");
        Random rnd = new Random(seed);
        for (int round = 0; round < 6; round++) {
            Pipeline.Options o = randomOptions(rnd);
            Feed f = feed(rnd, 20 + rnd.nextInt(80), -1);
            CheckingSink sink = new CheckingSink(f.lastRowOfTxEndingAt(), rnd.nextLong());
            AtomicReference<Lsn> durable = new AtomicReference<>(Lsn.ZERO);
            Pipeline p = new Pipeline(o, List.of(sink), List.of(start()), durable::set);
            p.decodeHook(delays(rnd.nextLong()));
            p.startWriter();
            p.startStreaming(Codecs.builtins(), oid -> List.of("id"), Position.START, () -> Lsn.ZERO, spill.resolve("r" + round));
            offerAll(p, f, rnd);
            long deadline = System.currentTimeMillis() + 30_000;
            while (durable.get().value() < f.lastEnd() && !p.failure().isSet() && System.currentTimeMillis() < deadline) {
                Thread.sleep(2);
            }
            p.close();
            String where = "round " + round + " " + o + ", seed " + seed;
            assertEquals(f.lastEnd(), durable.get().value(), "durable reaches the last commit: " + where);
            assertEquals(List.of(), sink.violations, where);
            assertEquals(f.rows(), sink.ids.size(), where);
            for (int i = 0; i < sink.ids.size(); i++) {
                assertEquals(i + 1, sink.ids.get(i), "row " + (i + 1) + " in WAL order: " + where);
            }
            assertEquals(0, p.budget().used(), "every byte taken by the reader came back");
        }
    }

    @Test
    void aRowThatDoesNotDecodeStopsThePipelineWithItsErrorAndNoCheckpointPassesIt() throws Exception {
        long seed = StressSeed.of("aRowThatDoesNotDecodeStopsThePipelineWithItsErrorAndNoCheckpointPassesIt");
        Random rnd = new Random(seed);
        for (int round = 0; round < 4; round++) {
            Pipeline.Options o = randomOptions(rnd);
            Feed probe = feed(new Random(seed + round), 40, -1);
            long bad = 1 + rnd.nextInt((int) probe.rows());
            Feed f = feed(new Random(seed + round), 40, bad);
            CheckingSink sink = new CheckingSink(f.lastRowOfTxEndingAt(), rnd.nextLong());
            AtomicReference<Lsn> durable = new AtomicReference<>(Lsn.ZERO);
            Pipeline p = new Pipeline(o, List.of(sink), List.of(start()), durable::set);
            p.decodeHook(delays(rnd.nextLong()));
            p.startWriter();
            p.startStreaming(Codecs.builtins(), oid -> List.of("id"), Position.START, () -> Lsn.ZERO, spill.resolve("e" + round));
            offerAll(p, f, rnd);
            String where = "round " + round + " " + o + ", bad row " + bad + ", seed " + seed;
            assertTrue(p.failure().await(30_000), "the decode error stops the pipeline: " + where);
            AtomicReference<Throwable> rethrown = new AtomicReference<>();
            Thread closer = new Thread(() -> {
                try {
                    p.close();
                } catch (Throwable t) {
                    rethrown.set(t); // join() rethrows the pipeline's first error
                }
            });
            closer.start();
            closer.join(5_000);
            assertFalse(closer.isAlive(), "every stage ends after the error: " + where);
            MillraceException e = assertInstanceOf(MillraceException.class, p.failure().error(), where);
            assertTrue(rethrown.get() == e, "join() rethrows that error: " + rethrown.get());
            assertEquals(MillraceException.Kind.DECODE, e.kind());
            assertTrue(e.getMessage().contains("'oops'"), e.getMessage());
            assertEquals(List.of(), sink.violations, where);
            assertTrue(sink.ids.stream().allMatch(id -> id < bad), "nothing at or after the bad row was delivered: " + where);
            assertTrue(durable.get().value() < f.badTxEnd(), "the durable position stays before the broken transaction: " + where);
        }
    }
}
