package io.millrace.pipeline;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.sink.NullSink;
import io.millrace.core.sink.Sink;
import io.millrace.core.types.Codecs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A destination that stores its checkpoint after the write ({@link Sink#storesLater()}, Kafka Connect without
 * exactly-once support): the writer goes on with the next batch at once, and the durable position published to the slot
 * (INV: DURABLE) follows what the destination says it stored — never what it was only handed, never past what it was
 * handed, and also while no batch comes. Fails without {@code SinkWriter}'s stored positions: the slot is told each
 * written batch's position.
 */
class StoresLaterTest {
    private static final TypeResolver TYPES = Codecs::builtin;
    private static final int OID = 16700;

    @TempDir
    Path spill;

    /** Takes every batch at once and stores it when the test says so. */
    private static final class Later implements Sink {
        final AtomicReference<Lsn> stored = new AtomicReference<>();
        final AtomicInteger writes = new AtomicInteger();

        @Override
        public String name() {
            return "later";
        }

        @Override
        public boolean transactional() {
            return false;
        }

        @Override
        public Optional<Checkpoint> open() {
            return Optional.empty();
        }

        @Override
        public void write(List<ChangeEvent> events, Checkpoint checkpoint) {
            writes.incrementAndGet();
        }

        @Override
        public boolean storesLater() {
            return true;
        }

        @Override
        public Lsn storedFlushLsn() {
            return stored.get();
        }

        @Override
        public void close() {
        }
    }

    @Test
    void theSlotFollowsWhatTheDestinationStoredNotWhatItWasHanded() throws Exception {
        Later later = new Later();
        List<Lsn> published = new CopyOnWriteArrayList<>();
        Checkpoint start = new Checkpoint(Checkpoint.VERSION, new Identity("1", "db", "slot", "pub", "x"), Lsn.of(0x1000),
                Position.START, null);
        Pipeline p = new Pipeline(new Pipeline.Options(64L << 20, 64 << 10, 256 << 10, 0),
                List.of(new NullSink("null"), later), List.of(start, start), published::add);
        p.startWriter();
        p.startStreaming(TYPES, relOid -> List.of("id"), Position.START, () -> Lsn.ZERO, spill);
        try {
            long[] commits = {0x2000, 0x3000, 0x4000};
            for (long commit : commits) {
                byte[][] ms = {Wire.begin(commit, 700), Wire.relation(OID, "t"), Wire.insert(OID, "1", "x"), Wire.commit(commit, commit + 1)};
                long at = commit - ms.length;
                for (byte[] m : ms) {
                    p.offer(Lsn.of(at++), m, 0, m.length);
                }
                p.flush();
            }
            await(() -> later.writes.get() >= 1 && p.checkpoint(1).flushLsn().value() == 0x4001, "every transaction handed over");
            Thread.sleep(300); // idle: the writer asks the destination a few times
            assertThat(published).as("nothing stored: the slot stays where the destination resumes from").isNotEmpty()
                    .allSatisfy(l -> assertThat(l).isEqualTo(Lsn.of(0x1000)));

            later.stored.set(Lsn.of(0x3001)); // the store caught up with the second transaction, while no batch comes
            await(() -> published.get(published.size() - 1).equals(Lsn.of(0x3001)), "the stored position published");
            later.stored.set(Lsn.of(0x9000)); // more than it was handed: not believed past the written checkpoint
            await(() -> published.get(published.size() - 1).equals(Lsn.of(0x4001)), "the written position, not further");
            assertThat(published).allSatisfy(l -> assertThat(l.value()).isLessThanOrEqualTo(0x4001));
        } finally {
            p.close();
        }
    }

    private static void await(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 10_000;
        while (!condition.getAsBoolean()) {
            assertThat(System.currentTimeMillis()).as(what).isLessThan(deadline);
            Thread.sleep(5);
        }
    }
}
