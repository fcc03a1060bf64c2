package io.millrace.snapshot.online;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.CheckpointJson;
import io.millrace.core.change.Identity;
import io.millrace.core.change.KeyBound;
import io.millrace.core.change.OnlineTask;
import io.millrace.core.change.OnlineTask.KeyRange;
import io.millrace.core.change.SnapshotProgress;
import io.millrace.core.schema.TableRef;
import io.millrace.snapshot.online.KeysetChunker.Chunk;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.math.BigDecimal;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * INV: COVER and RESUME, as properties over random tables with a composite key of mixed types (int, text with quotes,
 * backslashes, control characters and unicode, uuid, timestamptz, numeric): a copy stopped with chunks landed, landed in
 * part, in flight and given back records its ranges left in a checkpoint; written and read back, they are equal, in key
 * order, disjoint; and a copy resumed from them reads every row the first did not land, exactly once, and none it did.
 * (Issue 17's property test; a plain seeded loop rather than a property-testing library: the generator is the table.)
 *
 * <p>The key values travel as PostgreSQL's text forms (as the boundary query returns them); the table here orders them as
 * PostgreSQL orders the typed values (text byte-wise, as under the C collation). Each seed is printed; {@code
 * -Dchunks.seed=N} replays one.
 */
class ChunkRangesRoundTripTest {
    private static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSSx");
    private static final String[] TEXTS = {"", "a", "O'Brien", "say \"hi\"", "back\\slash", "tab\there", "line\nbreak", "ü",
        "naïve café", "日本語", "emoji 🙂", "(1,2)", "{a,b}", "comma, then", "null", "NULL", " lead", "trail "};

    /** A key tuple: its typed values (for order) and their text forms (what the chunker and the checkpoint carry). */
    private record Key(int i, String s, UUID u, OffsetDateTime t, BigDecimal n) {
        List<String> text() {
            return List.of(Integer.toString(i), s, u.toString(), TS.format(t), n.toPlainString());
        }

        static Key parse(List<String> v) {
            return new Key(Integer.parseInt(v.get(0)), v.get(1), UUID.fromString(v.get(2)), OffsetDateTime.parse(v.get(3), TS),
                    new BigDecimal(v.get(4)));
        }
    }

    private static final Comparator<Key> ORDER = Comparator.comparingInt(Key::i)
            .thenComparing(Key::s, ChunkRangesRoundTripTest::bytewise)
            .thenComparing(Key::u, (a, b) -> {
                int c = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
                return c != 0 ? c : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
            })
            .thenComparing(Key::t, Comparator.comparing(OffsetDateTime::toInstant))
            .thenComparing(Key::n, BigDecimal::compareTo);

    private static int bytewise(String a, String b) {
        return java.util.Arrays.compareUnsigned(a.getBytes(java.nio.charset.StandardCharsets.UTF_8),
                b.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** The table's keys in key order, answering the boundary query as the source would. */
    private static final class Table implements KeysetChunker.Boundaries {
        final List<Key> keys;

        Table(List<Key> keys) {
            this.keys = keys.stream().sorted(ORDER).toList();
        }

        List<Key> in(KeyRange r) {
            Key lo = r.lo() instanceof KeyBound.Key b ? Key.parse(b.values()) : null;
            Key hi = r.hi() instanceof KeyBound.Key b ? Key.parse(b.values()) : null;
            return keys.stream().filter(k -> (lo == null || ORDER.compare(k, lo) > 0) && (hi == null || ORDER.compare(k, hi) <= 0)).toList();
        }

        @Override
        public java.util.Optional<KeyBound.Key> nth(KeyRange range, long n) {
            List<Key> in = in(range);
            return in.size() > n ? java.util.Optional.of(new KeyBound.Key(in.get((int) n - 1).text())) : java.util.Optional.empty();
        }
    }

    static LongStream seeds() {
        String one = System.getProperty("chunks.seed");
        if (one != null) {
            return LongStream.of(Long.parseLong(one));
        }
        long base = System.nanoTime();
        System.out.println("ChunkRangesRoundTripTest seeds " + base + " to " + (base + 99) + " (replay one: -Dchunks.seed=N)");
        return LongStream.range(0, 100).map(i -> base + i);
    }

    private static Key randomKey(Random rnd) {
        String s = TEXTS[rnd.nextInt(TEXTS.length)] + (rnd.nextBoolean() ? "" : Integer.toString(rnd.nextInt(50)));
        OffsetDateTime t = OffsetDateTime.of(2000 + rnd.nextInt(30), 1 + rnd.nextInt(12), 1 + rnd.nextInt(28), rnd.nextInt(24),
                rnd.nextInt(60), rnd.nextInt(60), rnd.nextInt(1_000_000) * 1000, ZoneOffset.ofHours(rnd.nextInt(25) - 12));
        BigDecimal n = BigDecimal.valueOf(rnd.nextLong() % 1_000_000_000L, rnd.nextInt(12) - 2).stripTrailingZeros();
        if (n.scale() < 0) {
            n = n.setScale(0);
        }
        // Few distinct ints and texts: the later columns decide the order often.
        return new Key(rnd.nextInt(6) - 3, s, new UUID(rnd.nextLong(), rnd.nextLong()), t, n);
    }

    @ParameterizedTest
    @MethodSource("seeds")
    void rangesLeftRoundTripThroughACheckpointAndAResumedCopyReadsEachRowNotLandedOnce(long seed) throws Exception {
        Random rnd = new Random(seed);
        Set<Key> unique = new HashSet<>();
        int rows = rnd.nextInt(400);
        while (unique.size() < rows) {
            unique.add(randomKey(rnd));
        }
        Table table = new Table(new ArrayList<>(unique));
        long size = 1 + rnd.nextInt(40);
        KeysetChunker first = new KeysetChunker(List.of(KeyRange.ALL), new KeysetChunker.Sizing(size, size, size, 1_000_000_000L), table);

        // The first run: chunks cut in order; each landed, landed in part, given back or left in flight.
        List<Key> landed = new ArrayList<>();
        int cuts = rnd.nextInt(1 + rows / (int) size + 1);
        for (int i = 0; i < cuts; i++) {
            Chunk c = first.next();
            if (c == null) {
                break;
            }
            List<Key> in = table.in(c.range());
            switch (rnd.nextInt(4)) {
                case 0 -> {
                    first.landed(c);
                    landed.addAll(in);
                }
                case 1 -> {
                    if (!in.isEmpty()) { // a batch cut inside the chunk's rows
                        int through = rnd.nextInt(in.size());
                        first.landedThrough(c, in.get(through).text());
                        landed.addAll(in.subList(0, through + 1));
                    }
                }
                case 2 -> first.giveBack(c);
                default -> { } // in flight at the stop
            }
        }
        List<KeyRange> left = first.remaining();

        // Recorded, written and read back.
        Checkpoint cp = new Checkpoint(Checkpoint.VERSION, new Identity("1", "db", "slot", "pub", "d"), Lsn.parse("0/10"),
                Position.START, SnapshotProgress.skipped(Lsn.parse("0/10")), List.of(new OnlineTask(TableRef.parse("public.t"), OnlineTask.Kind.COPY, null,
                left, landed.size(), 16400, List.of("i", "s", "u", "t", "n"))));
        List<KeyRange> back = CheckpointJson.read(CheckpointJson.write(cp)).online().get(0).remaining();
        assertThat(back).as("seed %d: ranges read back", seed).isEqualTo(left);

        // In key order and disjoint: each range starts at or after the end of the one before.
        for (int i = 1; i < back.size(); i++) {
            KeyRange prev = back.get(i - 1);
            KeyRange next = back.get(i);
            assertThat(prev.hi()).as("seed %d: only the last range is open above", seed).isInstanceOf(KeyBound.Key.class);
            assertThat(next.lo()).as("seed %d: only the first range is open below", seed).isInstanceOf(KeyBound.Key.class);
            assertThat(ORDER.compare(Key.parse(((KeyBound.Key) next.lo()).values()), Key.parse(((KeyBound.Key) prev.hi()).values()))).as("seed %d: range %d after range %d", seed, i, i - 1)
                    .isGreaterThanOrEqualTo(0);
        }

        // The resumed copy reads every row not landed, once, and none that landed.
        KeysetChunker second = new KeysetChunker(back, new KeysetChunker.Sizing(size, size, size, 1_000_000_000L), table);
        TreeMap<String, Integer> read = new TreeMap<>();
        for (Chunk c = second.next(); c != null; c = second.next()) {
            table.in(c.range()).forEach(k -> read.merge(k.text().toString(), 1, Integer::sum));
            second.landed(c);
        }
        assertThat(second.finished()).isTrue();
        assertThat(read.values()).as("seed %d: no row read twice", seed).allMatch(n -> n == 1);
        Set<String> landedText = new HashSet<>();
        landed.forEach(k -> landedText.add(k.text().toString()));
        Set<String> again = new HashSet<>(read.keySet());
        again.retainAll(landedText);
        assertThat(again).as("seed %d: no landed row read again", seed).isEmpty();
        assertThat(read.size() + landedText.size()).as("seed %d: every row landed or read after the restart", seed).isEqualTo(rows);
    }
}
