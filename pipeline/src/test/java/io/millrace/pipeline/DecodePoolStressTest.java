package io.millrace.pipeline;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.types.Codecs;
import io.millrace.pgoutput.PgOutputFramer;
import io.millrace.pgoutput.PgOutputMessage.Insert;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The decoder pool and its re-sequencing under random delays: jobs of random sizes mixing rows the
 * assembler decoded itself with rows for the pool, random pool sizes and chunk sizes, workers that
 * sleep at random before a chunk. Printed seed; {@code -Dstress.seed=N} replays the configuration
 * (thread timing stays the machine's).
 */
class DecodePoolStressTest {
    private static final int OID = 7;

    /** A framer that has seen table t's Relation message, to frame its inserts. */
    private final PgOutputFramer framer = new PgOutputFramer(Codecs.builtins());
    private final RelationInfo relation;

    DecodePoolStressTest() {
        framer.frame(Wire.relation(OID, "t"), 0, Wire.relation(OID, "t").length);
        relation = framer.relation(OID);
    }

    private Object row(long id, String idText, boolean raw) {
        Position p = new Position(Lsn.of(1_000_000 + id / 100 * 100), id % 100 + 1);
        if (!raw) {
            return new ChangeEvent(Op.CREATE, relation, null, new Object[]{id, "v" + id}, Lsn.of(id), p, 1, 0, false);
        }
        byte[] b = Wire.insert(OID, idText, "v" + id);
        Insert i = (Insert) framer.frame(b, 0, b.length);
        return new RawRow(Op.CREATE, i.relation(), null, i.newTuple(), Lsn.of(id), p, 1, 0);
    }

    /** Workers and the writer of one pool, each registered (here: in {@code threads}) before it starts. */
    private static final class Stage {
        final Failure failure = new Failure();
        final List<Thread> threads = Collections.synchronizedList(new ArrayList<>());

        void start(String name, Pipeline.Loop loop) {
            Thread t = new Thread(() -> {
                try {
                    loop.run();
                } catch (Channel.Stopped s) {
                    // stopping
                } catch (Throwable e) {
                    failure.report(e);
                }
            }, name);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }

        /** Every thread ended within {@code millis} (a stop never leaves one blocked). */
        void assertAllEnd(long millis) throws InterruptedException {
            long deadline = System.currentTimeMillis() + millis;
            for (Thread t : List.copyOf(threads)) {
                t.join(Math.max(1, deadline - System.currentTimeMillis()));
                assertFalse(t.isAlive(), t.getName() + " still running " + millis + " ms after the stop: "
                        + java.util.Arrays.toString(t.getStackTrace()));
            }
        }
    }

    private static DecodePool.Hook randomDelays(long seed, int percentSleeping) {
        ThreadLocal<Random> r = ThreadLocal.withInitial(() -> new Random(seed ^ Thread.currentThread().getId()));
        return () -> {
            int x = r.get().nextInt(100);
            if (x < percentSleeping) {
                Thread.sleep(r.get().nextInt(3));
            } else if (x < percentSleeping + 10) {
                Thread.yield();
            }
        };
    }

    @Test
    void everyRowIsDecodedOnceAndReachesTheWriterInOrder() throws Exception {
        long seed = StressSeed.of("everyRowIsDecodedOnceAndReachesTheWriterInOrder");
        Random rnd = new Random(seed);
        for (int round = 0; round < 12; round++) {
            int workers = 1 + rnd.nextInt(4);
            int chunk = 1 + rnd.nextInt(rnd.nextBoolean() ? 8 : 200);
            Stage stage = new Stage();
            DecodePool pool = new DecodePool(workers, chunk, stage.failure);
            pool.hook(randomDelays(rnd.nextLong(), 20));
            pool.start(stage::start);
            Channel<Staged> toWriter = new Channel<>(1 + rnd.nextInt(4), stage.failure);
            List<Long> seen = Collections.synchronizedList(new ArrayList<>());
            List<Position> lastOfBatch = Collections.synchronizedList(new ArrayList<>());
            int jobs = 5 + rnd.nextInt(40);
            stage.start("writer", () -> {
                for (int j = 0; j < jobs; j++) {
                    Staged s;
                    while ((s = toWriter.receive(20)) == null) {
                        // wait on
                    }
                    Batch b = s.await(); // INV: ORDER — the channel's head, complete
                    for (ChangeEvent e : b.events()) {
                        seen.add((Long) e.after()[0]);
                        assertEquals("v" + e.after()[0], e.after()[1]);
                    }
                    lastOfBatch.add(b.last());
                }
            });
            long next = 1;
            List<Position> expectedLast = new ArrayList<>();
            for (int j = 0; j < jobs; j++) {
                DecodePool.Job job = pool.newJob();
                int rows = rnd.nextInt(10) == 0 ? 0 : rnd.nextInt(400);
                Position last = null;
                for (int i = 0; i < rows; i++) {
                    long id = next++;
                    Object r = row(id, Long.toString(id), rnd.nextInt(5) != 0);
                    job.add(r);
                    last = r instanceof RawRow rr ? rr.position() : ((ChangeEvent) r).position();
                }
                assertEquals(rows, job.size());
                job.seal(new Batch(List.of(), null, last, null));
                expectedLast.add(last);
                toWriter.send(job);
                if (rnd.nextInt(8) == 0) {
                    Thread.sleep(1);
                }
            }
            for (Thread t : List.copyOf(stage.threads)) {
                if (t.getName().equals("writer")) {
                    t.join(30_000);
                }
            }
            assertNull(stage.failure.error(), "seed " + seed);
            List<Long> expected = new ArrayList<>();
            for (long i = 1; i < next; i++) {
                expected.add(i);
            }
            assertEquals(expected, seen, "round " + round + ", seed " + seed + ": every row once, in order");
            assertEquals(expectedLast, lastOfBatch, "positions travel with their job");
            stage.failure.stop();
            stage.assertAllEnd(2_000);
        }
    }

    @Test
    void aDecodeErrorInAWorkerStopsThePipelineWithThatErrorAndNothingHangs() throws Exception {
        long seed = StressSeed.of("aDecodeErrorInAWorkerStopsThePipelineWithThatErrorAndNothingHangs");
        Random rnd = new Random(seed);
        for (int round = 0; round < 8; round++) {
            Stage stage = new Stage();
            DecodePool pool = new DecodePool(1 + rnd.nextInt(4), 1 + rnd.nextInt(50), stage.failure);
            pool.hook(randomDelays(rnd.nextLong(), 30));
            pool.start(stage::start);
            Channel<Staged> toWriter = new Channel<>(2, stage.failure);
            int jobs = 10;
            int badJob = rnd.nextInt(jobs);
            List<Long> seen = Collections.synchronizedList(new ArrayList<>());
            AtomicReference<Throwable> writerLeftWith = new AtomicReference<>();
            stage.start("writer", () -> {
                try {
                    while (true) {
                        Staged s = toWriter.receive(20);
                        if (s != null) {
                            for (ChangeEvent e : s.await().events()) {
                                seen.add((Long) e.after()[0]);
                            }
                        }
                    }
                } catch (Channel.Stopped e) {
                    writerLeftWith.set(e);
                    throw e;
                }
            });
            long next = 1;
            long firstOfBad = -1;
            try {
                for (int j = 0; j < jobs; j++) {
                    DecodePool.Job job = pool.newJob();
                    int bad = j == badJob ? rnd.nextInt(100) : -1;
                    for (int i = 0; i < 100; i++) {
                        long id = next++;
                        if (i == 0 && j == badJob) {
                            firstOfBad = id;
                        }
                        job.add(row(id, i == bad ? "12x" : Long.toString(id), true));
                    }
                    job.seal(new Batch(List.of(), null, null, null));
                    toWriter.send(job);
                }
            } catch (Channel.Stopped e) {
                // the pipeline stopped while this side was sending: expected once the error is in
            }
            assertTrue(stage.failure.await(10_000), "the decode error must stop the pipeline (seed " + seed + ")");
            stage.assertAllEnd(2_000);
            MillraceException e = assertInstanceOf(MillraceException.class, stage.failure.error(), "seed " + seed);
            assertEquals(MillraceException.Kind.DECODE, e.kind());
            assertTrue(e.getMessage().contains("column \"id\"") && e.getMessage().contains("'12x'"), e.getMessage());
            assertInstanceOf(Channel.Stopped.class, writerLeftWith.get(), "the writer waiting on the broken job leaves");
            for (long id : seen) {
                assertTrue(id < firstOfBad, "no row of the failed job or after it was handed on: " + id + " (seed " + seed + ")");
            }
            for (int i = 0; i < seen.size(); i++) {
                assertEquals(i + 1, seen.get(i), "rows before the failed job arrive in order");
            }
        }
    }

    @Test
    void aStopWhileWorkersAreBusyNeverLeavesAThreadBlocked() throws Exception {
        long seed = StressSeed.of("aStopWhileWorkersAreBusyNeverLeavesAThreadBlocked");
        Random rnd = new Random(seed);
        for (int round = 0; round < 6; round++) {
            Stage stage = new Stage();
            DecodePool pool = new DecodePool(1 + rnd.nextInt(3), 1 + rnd.nextInt(20), stage.failure);
            pool.hook(() -> Thread.sleep(5)); // slow decoders: jobs pile up, the sender blocks on the full channel
            pool.start(stage::start);
            Channel<Staged> toWriter = new Channel<>(1, stage.failure);
            stage.start("writer", () -> {
                while (true) {
                    Staged s = toWriter.receive(20);
                    if (s != null) {
                        s.await();
                    }
                }
            });
            stage.start("assembler", () -> {
                long id = 1;
                while (true) {
                    DecodePool.Job job = pool.newJob();
                    for (int i = 0; i < 200; i++, id++) {
                        job.add(row(id, Long.toString(id), true));
                    }
                    job.seal(new Batch(List.of(), null, null, null));
                    toWriter.send(job); // blocks while the writer waits on a slow job: must still see the stop
                }
            });
            Thread.sleep(20 + rnd.nextInt(100));
            stage.failure.stop();
            stage.assertAllEnd(2_000);
            assertNull(stage.failure.error(), "a stop is not an error");
        }
    }
}
