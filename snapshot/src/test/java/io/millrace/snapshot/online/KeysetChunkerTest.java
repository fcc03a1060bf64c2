package io.millrace.snapshot.online;

import io.millrace.core.change.KeyBound;
import io.millrace.core.change.OnlineTask.KeyRange;
import io.millrace.snapshot.online.KeysetChunker.Chunk;
import io.millrace.snapshot.online.KeysetChunker.Sizing;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KeysetChunkerTest {
    private static final long SEC = 1_000_000_000L;

    /** A table of integer keys, as the source's boundary query would see it. */
    private static final class Table implements KeysetChunker.Boundaries {
        final TreeSet<Long> keys = new TreeSet<>();
        final AtomicInteger calls = new AtomicInteger();
        long rowBytes;

        Table(long n) {
            for (long k = 1; k <= n; k++) {
                keys.add(k * 10);
            }
        }

        List<Long> in(KeyRange r) {
            List<Long> out = new ArrayList<>();
            for (long k : keys) {
                if ((!(r.lo() instanceof KeyBound.Key lo) || k > Long.parseLong(lo.values().get(0)))
                        && (!(r.hi() instanceof KeyBound.Key hi) || k <= Long.parseLong(hi.values().get(0)))) {
                    out.add(k);
                }
            }
            return out;
        }

        @Override
        public Optional<KeyBound.Key> nth(KeyRange range, long n) {
            calls.incrementAndGet();
            List<Long> in = in(range);
            return in.size() > n ? Optional.of(new KeyBound.Key(List.of(Long.toString(in.get((int) n - 1))))) : Optional.empty();
        }

        @Override
        public long rowBytes() {
            return rowBytes;
        }
    }

    private static Sizing fixed(long rows) {
        return new Sizing(rows, rows, rows, SEC);
    }

    private static List<Chunk> drain(KeysetChunker c) throws Exception {
        List<Chunk> out = new ArrayList<>();
        for (Chunk k = c.next(); k != null; k = c.next()) {
            out.add(k);
            c.landed(k);
        }
        return out;
    }

    /** INV: COVER — disjoint, no gap, open at both ends, rows sum to the table. */
    private static void assertTiles(Table t, List<KeyRange> ranges, long expectedRows) {
        assertThat(ranges.get(0).lo()).as("first chunk open below").isEqualTo(KeyBound.OPEN);
        assertThat(ranges.get(ranges.size() - 1).hi()).as("last chunk open above").isEqualTo(KeyBound.OPEN);
        for (int i = 1; i < ranges.size(); i++) {
            assertThat(ranges.get(i).lo()).as("chunk %d starts where %d ends", i, i - 1).isEqualTo(ranges.get(i - 1).hi());
        }
        long rows = ranges.stream().mapToLong(r -> t.in(r).size()).sum();
        assertThat(rows).isEqualTo(expectedRows);
        assertThat(ranges.stream().flatMap(r -> t.in(r).stream()).distinct().count()).isEqualTo(expectedRows);
    }

    @Test
    void chunksTileTheKeySpaceForRandomSizes() throws Exception {
        long seed = System.nanoTime();
        Random rnd = new Random(seed);
        for (int run = 0; run < 200; run++) {
            Table t = new Table(rnd.nextInt(2000));
            KeysetChunker c = new KeysetChunker(List.of(KeyRange.ALL), fixed(1 + rnd.nextInt(300)), t);
            List<KeyRange> ranges = drain(c).stream().map(Chunk::range).toList();
            assertTiles(t, ranges, t.keys.size());
            assertThat(c.finished()).as("seed %d", seed).isTrue();
            assertThat(c.remaining()).isEmpty();
        }
    }

    @Test
    void evenDivisionGivesEqualChunksAndNoEmptyTail() throws Exception {
        Table t = new Table(1000);
        List<Chunk> chunks = drain(new KeysetChunker(List.of(KeyRange.ALL), fixed(100), t));
        assertThat(chunks).hasSize(10);
        assertThat(chunks).allSatisfy(k -> assertThat(t.in(k.range())).hasSize(100));
        assertThat(chunks.get(0).range()).isEqualTo(KeyRange.stored(null, List.of("1000")));
    }

    @Test
    void emptyTableIsOneOpenChunk() throws Exception {
        List<Chunk> chunks = drain(new KeysetChunker(List.of(KeyRange.ALL), fixed(100), new Table(0)));
        assertThat(chunks).extracting(Chunk::range).containsExactly(KeyRange.ALL);
    }

    @Test
    void resumesFromTheRemainingRangesWithoutReadingLandedChunksAgain() throws Exception {
        Table t = new Table(1000);
        KeysetChunker first = new KeysetChunker(List.of(KeyRange.ALL), fixed(70), t);
        List<Chunk> cut = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            cut.add(first.next());
        }
        // chunks 0, 1 and 3 landed; 2 and 4 were in flight when the engine stopped
        first.landed(cut.get(0));
        first.landed(cut.get(1));
        first.landed(cut.get(3));
        List<KeyRange> remaining = first.remaining();
        assertThat(remaining.subList(0, 2)).containsExactly(cut.get(2).range(), cut.get(4).range());

        KeysetChunker second = new KeysetChunker(remaining, fixed(70), t);
        List<KeyRange> reread = drain(second).stream().map(Chunk::range).toList();
        List<Long> rows = reread.stream().flatMap(r -> t.in(r).stream()).toList();
        List<Long> landed = List.of(cut.get(0), cut.get(1), cut.get(3)).stream().flatMap(c -> t.in(c.range()).stream()).toList();
        assertThat(rows).doesNotContainAnyElementsOf(landed);
        assertThat(rows.size() + landed.size()).isEqualTo(1000);
        List<KeyRange> all = new ArrayList<>(reread);
        List.of(cut.get(0), cut.get(1), cut.get(3)).forEach(c -> all.add(c.range()));
        all.sort((a, b) -> !(a.lo() instanceof KeyBound.Key x) ? -1 : !(b.lo() instanceof KeyBound.Key y) ? 1
                : Long.compare(Long.parseLong(x.values().get(0)), Long.parseLong(y.values().get(0))));
        assertTiles(t, all, 1000);
    }

    @Test
    void feedbackScalesTowardTheTargetByAtMostTwoPerStepWithinBounds() throws Exception {
        Table t = new Table(100_000);
        KeysetChunker c = new KeysetChunker(List.of(KeyRange.ALL), new Sizing(1000, 100, 3000, SEC), t);
        Chunk a = c.next();
        c.report(a, 1000, SEC / 10); // 10× too fast: at most ×2
        assertThat(c.size()).isEqualTo(2000);
        Chunk b = c.next();
        assertThat(b.size()).isEqualTo(2000);
        c.report(b, 2000, SEC / 10); // ×2 would be 4000: capped at max
        assertThat(c.size()).isEqualTo(3000);
        Chunk d = c.next();
        c.report(d, 3000, 10 * SEC); // 10× too slow: at most ×0.5
        assertThat(c.size()).isEqualTo(1500);
        c.report(d, 3000, 3 * SEC / 2); // scaled by 2/3 of the size it was cut with
        assertThat(c.size()).isEqualTo(2000);
        c.report(new Chunk(99, KeyRange.ALL, 150), 150, 100 * SEC);
        assertThat(c.size()).isEqualTo(100); // floor
    }

    /** INV: BOUNDED — a chunk is held until its high watermark, so wide rows get chunks of fewer rows. */
    @Test
    void theByteLimitCapsChunksByTheEstimateThenByTheMeasure() throws Exception {
        Table t = new Table(100_000);
        t.rowBytes = 10_000; // 10 kB rows: 1 MB holds 104 of them
        KeysetChunker c = new KeysetChunker(List.of(KeyRange.ALL), new Sizing(1000, 500, 3000, SEC, 1 << 20), t);
        Chunk a = c.next();
        assertThat(a.size()).as("the estimate caps the first chunk below min_chunk_rows").isEqualTo(104);
        assertThat(t.in(a.range())).hasSize(104);
        c.report(a, 104, SEC / 10, 104 * 100_000L); // rows are 100 kB in fact (TOASTed values): 10 fit
        assertThat(c.size()).isEqualTo(10);
        Chunk b = c.next();
        assertThat(t.in(b.range())).hasSize(10);
        c.report(b, 10, SEC / 10, 10 * 100L); // narrow rows after all: the time-based size (×2 of 10, at least min) again
        assertThat(c.size()).isEqualTo(500);
        List<Chunk> rest = drain(c);
        List<KeyRange> all = new ArrayList<>(List.of(a.range(), b.range()));
        rest.forEach(x -> all.add(x.range()));
        assertTiles(t, all, 100_000);
        // without a limit the estimate is not even asked for
        Table u = new Table(1000);
        u.rowBytes = 1 << 30;
        assertThat(new KeysetChunker(List.of(KeyRange.ALL), new Sizing(1000, 500, 3000, SEC), u).next().size()).isEqualTo(1000);
    }

    @Test
    void concurrentReportsDoNotCompound() throws Exception {
        Table t = new Table(100_000);
        KeysetChunker c = new KeysetChunker(List.of(KeyRange.ALL), new Sizing(1000, 10, 1_000_000, SEC), t);
        Chunk a = c.next();
        Chunk b = c.next(); // both cut with 1000 before either reports
        c.report(a, 1000, SEC / 4);
        c.report(b, 1000, SEC / 4);
        assertThat(c.size()).isEqualTo(2000); // not 4000
    }

    @Test
    void untouchedOnlyUntilTheFirstCutOfTheWholeKeySpace() throws Exception {
        // OnlineSnapshotter.moved relies on it: an untouched copy reads every key from now on.
        Table t = new Table(500);
        KeysetChunker c = new KeysetChunker(List.of(KeyRange.ALL), fixed(100), t);
        assertThat(c.untouched()).isTrue();
        Chunk a = c.next();
        assertThat(c.untouched()).isFalse();
        c.giveBack(a);
        assertThat(c.untouched()).as("a chunk cut and given back was read in part").isFalse();
        KeysetChunker resumed = new KeysetChunker(List.of(KeyRange.stored(List.of("1000"), null)), fixed(100), t);
        assertThat(resumed.untouched()).as("resumed: the keys up to 1000 landed before").isFalse();
    }

    @Test
    void aChunkLandedInPartCountsOnlyItsRestAsRemaining() throws Exception {
        // A batch cut inside a chunk's rows (in key order) lands the rows up to its last key: a crash then reads
        // only the rest again (INV: RESUME).
        Table t = new Table(500);
        KeysetChunker c = new KeysetChunker(List.of(KeyRange.ALL), fixed(100), t);
        Chunk a = c.next();
        c.landedThrough(a, List.of("420"));
        assertThat(c.remaining().get(0)).isEqualTo(new KeyRange(new KeyBound.Key(List.of("420")), a.range().hi()));
        c.landedThrough(a, List.of("700"));
        assertThat(c.remaining().get(0)).isEqualTo(new KeyRange(new KeyBound.Key(List.of("700")), a.range().hi()));
        c.landed(a);
        assertThat(c.remaining().get(0).lo()).isEqualTo(a.range().hi());
        List<KeyRange> all = new ArrayList<>(List.of(a.range()));
        all.addAll(drain(c).stream().map(Chunk::range).toList());
        assertTiles(t, all, 500);
    }

    @Test
    void aShortLastChunkDoesNotResize() throws Exception {
        KeysetChunker c = new KeysetChunker(List.of(KeyRange.ALL), new Sizing(1000, 10, 100_000, SEC), new Table(10));
        Chunk only = c.next();
        c.report(only, 10, SEC / 100);
        assertThat(c.size()).isEqualTo(1000);
    }

    @Test
    void aFailedBoundaryQueryLeavesTheCursorWhereItWas() throws Exception {
        Table t = new Table(500);
        AtomicInteger failNext = new AtomicInteger();
        KeysetChunker c = new KeysetChunker(List.of(KeyRange.ALL), fixed(100), (range, n) -> {
            if (failNext.getAndSet(0) == 1) {
                throw new java.sql.SQLException("canceling statement due to statement timeout", "57014");
            }
            return t.nth(range, n);
        });
        Chunk first = c.next();
        List<KeyRange> before = c.remaining();
        Optional<KeyBound> frontier = c.frontier();
        assertThat(frontier).contains(first.range().hi());
        failNext.set(1);
        assertThatThrownBy(c::next).hasMessageContaining("statement timeout");
        assertThat(c.remaining()).isEqualTo(before);
        assertThat(c.frontier()).isEqualTo(frontier);
        Chunk second = c.next();
        assertThat(second.range().lo()).isEqualTo(first.range().hi());
        assertThat(second.seq()).isEqualTo(first.seq() + 1);
    }

    @Test
    void aChunkGivenBackIsReadAgainFirst() throws Exception {
        Table t = new Table(500);
        KeysetChunker c = new KeysetChunker(List.of(KeyRange.ALL), fixed(100), t);
        Chunk a = c.next();
        Chunk b = c.next();
        c.giveBack(a);
        assertThat(c.remaining().get(0)).isEqualTo(a.range());
        assertThat(c.next()).isEqualTo(a);
        c.landed(a);
        c.landed(b);
        List<KeyRange> rest = drain(c).stream().map(Chunk::range).toList();
        List<KeyRange> all = new ArrayList<>(List.of(a.range(), b.range()));
        all.addAll(rest);
        assertTiles(t, all, 500);
    }

    @Test
    void progressAndFrontierDoNotWaitOnARunningBoundaryQuery() throws Exception {
        Table t = new Table(500);
        CountDownLatch inQuery = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        KeysetChunker c = new KeysetChunker(List.of(KeyRange.ALL), fixed(100), (range, n) -> {
            if (range.lo() instanceof KeyBound.Key) {
                inQuery.countDown();
                release.await();
            }
            return t.nth(range, n);
        });
        Chunk first = c.next();
        CompletableFuture<Chunk> slow = CompletableFuture.supplyAsync(() -> {
            try {
                return c.next();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(inQuery.await(5, TimeUnit.SECONDS)).isTrue();
        CompletableFuture<Object[]> reads = CompletableFuture.supplyAsync(() -> new Object[] {c.frontier(), c.remaining(), c.finished()});
        Object[] seen = reads.get(2, TimeUnit.SECONDS); // would time out if they waited on the query
        assertThat(seen[0]).isEqualTo(Optional.of(first.range().hi()));
        c.landed(first); // landing does not wait either
        release.countDown();
        assertThat(slow.get(5, TimeUnit.SECONDS).range().lo()).isEqualTo(first.range().hi());
    }
}
