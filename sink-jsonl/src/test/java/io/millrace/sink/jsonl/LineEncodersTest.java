package io.millrace.sink.jsonl;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.change.Op;
import io.millrace.core.change.SnapshotProgress;
import io.millrace.core.event.EnvelopeWriter;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.Codecs;
import io.millrace.core.types.UnchangedToast;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The jsonl destination with encoding threads writes exactly the bytes the writer thread alone writes: the same lines
 * in the same order (INV: ORDER), the same files cut at the same lines, the same state file and schema-change file.
 */
class LineEncodersTest {
    private static final SourceMeta META = new SourceMeta("shop", "shopdb");
    private static final Clock CLOCK = Clock.fixed(Instant.parse("2024-05-06T07:08:09.123456Z"), ZoneOffset.UTC);
    private static final Identity IDENTITY = new Identity("7301234567890123456", "shopdb", "millrace", "millrace_pub", "files");
    private static final List<ColumnInfo> COLUMNS = List.of(
            new ColumnInfo("id", Codecs.builtin(20), -1, true),
            new ColumnInfo("a", Codecs.builtin(23), -1, false),
            new ColumnInfo("b", Codecs.builtin(25), -1, false),
            new ColumnInfo("c", Codecs.builtin(1184), -1, false),
            new ColumnInfo("d", Codecs.builtin(1700), -1, false),
            new ColumnInfo("j", Codecs.builtin(3802), -1, false),
            new ColumnInfo("ok", Codecs.builtin(16), -1, false),
            new ColumnInfo("f", Codecs.builtin(701), -1, false),
            new ColumnInfo("day", Codecs.builtin(1082), -1, false),
            new ColumnInfo("tags", Codecs.builtin(1009), -1, false));
    private static final RelationInfo WIDE = new RelationInfo(16390, new TableRef("public", "wide"), 'd', COLUMNS,
            TypeResolver.builtinsOnly());
    /** The same table after {@code ALTER TABLE wide ADD COLUMN extra text}: a shape change in the middle of a write. */
    private static final RelationInfo WIDER;
    private static final RelationInfo FULL = new RelationInfo(16391, new TableRef("sales", "Orders \"2024\""), 'f', List.of(
            new ColumnInfo("k", Codecs.builtin(25), -1, true),
            new ColumnInfo("v", Codecs.builtin(1700), -1, false)), TypeResolver.builtinsOnly());

    static {
        List<ColumnInfo> wider = new ArrayList<>(COLUMNS);
        wider.add(new ColumnInfo("extra", Codecs.builtin(25), -1, false));
        WIDER = new RelationInfo(16390, new TableRef("public", "wide"), 'd', wider, TypeResolver.builtinsOnly());
    }

    @TempDir
    Path tmp;

    private static String text(Random r) {
        String[] parts = {"plain", "ünïcödé ✓", "quote \" and \\ back", "tab\tnew\nline", "ctl \u0001\u001f", "😀 emoji",
                "</script>", "", "a".repeat(r.nextInt(300))};
        return parts[r.nextInt(parts.length)] + " " + r.nextInt(1000);
    }

    private static Object[] wide(RelationInfo rel, Random r, long id) {
        Object[] row = new Object[rel.columnCount()];
        row[0] = rel.codec(0).decodeText(Long.toString(id));
        row[1] = r.nextInt(10) == 0 ? null : rel.codec(1).decodeText(Integer.toString(r.nextInt() / 7));
        row[2] = r.nextInt(20) == 0 ? UnchangedToast.INSTANCE : rel.codec(2).decodeText(text(r));
        row[3] = rel.codec(3).decodeText(r.nextBoolean() ? "2024-02-29 23:59:59.123456+00" : "1999-12-31 00:00:00+00");
        row[4] = rel.codec(4).decodeText(switch (r.nextInt(5)) {
            case 0 -> "NaN";
            case 1 -> "-0.00";
            case 2 -> "123456789012345678901234567890.123";
            default -> Long.toString(r.nextLong() % 10_000_000) + "." + (r.nextInt(90) + 10);
        });
        row[5] = rel.codec(5).decodeText("{\"k\": [1, 2.5, \"x\"], \"n\": null}");
        row[6] = rel.codec(6).decodeText(r.nextBoolean() ? "t" : "f");
        row[7] = rel.codec(7).decodeText(r.nextInt(4) == 0 ? "Infinity" : Double.toString(r.nextGaussian() * 1e6));
        row[8] = rel.codec(8).decodeText("2024-0" + (1 + r.nextInt(9)) + "-1" + r.nextInt(10));
        row[9] = rel.codec(9).decodeText("{a,\"b c\",NULL}");
        if (row.length > 10) {
            row[10] = rel.codec(10).decodeText("extra " + id);
        }
        return row;
    }

    /** Snapshot rows (op r), then streamed transactions of inserts, updates, deletes, truncates, a shape change. */
    private static List<List<ChangeEvent>> batches() {
        Random r = new Random(16);
        List<List<ChangeEvent>> batches = new ArrayList<>();
        List<ChangeEvent> copy = new ArrayList<>();
        for (int i = 1; i <= 700; i++) {
            copy.add(new ChangeEvent(Op.READ, WIDE, null, wide(WIDE, r, i), Lsn.of(5000), new Position(Lsn.ZERO, i), 0,
                    1_700_000_000_000_000L + i, true));
        }
        batches.add(copy);
        long ordinal = 0;
        int[] sizes = {1, 63, 64, 65, 500, 3000, 2, 1500};
        long lsn = 10_000;
        for (int b = 0; b < sizes.length; b++) {
            List<ChangeEvent> events = new ArrayList<>();
            Lsn commit = Lsn.of(lsn + 100_000);
            for (int i = 0; i < sizes[b]; i++) {
                lsn += 40;
                ordinal = i + 1;
                RelationInfo rel = b >= 5 && i > sizes[b] / 3 ? WIDER : WIDE;
                long id = r.nextInt(5000);
                Position pos = new Position(commit, ordinal);
                long xid = 900 + b;
                long ts = 1_700_000_100_000_000L + b * 1000L;
                ChangeEvent e = switch (r.nextInt(b == 7 ? 6 : 5)) {
                    case 0, 1 -> new ChangeEvent(Op.CREATE, rel, null, wide(rel, r, id), Lsn.of(lsn), pos, xid, ts, false);
                    case 2 -> {
                        Object[] key = new Object[rel.columnCount()];
                        key[0] = rel.codec(0).decodeText(Long.toString(id));
                        yield new ChangeEvent(Op.UPDATE, rel, r.nextBoolean() ? key : null, wide(rel, r, id), Lsn.of(lsn), pos, xid,
                                ts, false);
                    }
                    case 3 -> {
                        Object[] key = new Object[rel.columnCount()];
                        key[0] = rel.codec(0).decodeText(Long.toString(id));
                        yield new ChangeEvent(Op.DELETE, rel, key, null, Lsn.of(lsn), pos, xid, ts, false);
                    }
                    case 4 -> {
                        Object[] before = {FULL.codec(0).decodeText("k" + id), FULL.codec(1).decodeText("1.50")};
                        Object[] after = {FULL.codec(0).decodeText("k" + id), UnchangedToast.INSTANCE};
                        yield new ChangeEvent(Op.UPDATE, FULL, before, after, Lsn.of(lsn), pos, xid, ts, false);
                    }
                    default -> new ChangeEvent(Op.TRUNCATE, FULL, null, null, Lsn.of(lsn), pos, xid, ts, false);
                };
                events.add(e);
            }
            batches.add(events);
        }
        return batches;
    }

    private static Checkpoint checkpoint(List<ChangeEvent> events) {
        ChangeEvent last = events.get(events.size() - 1);
        if (last.snapshot()) {
            return new Checkpoint(Checkpoint.VERSION, IDENTITY, Lsn.of(1), Position.START, SnapshotProgress.skipped(Lsn.of(1)));
        }
        return new Checkpoint(Checkpoint.VERSION, IDENTITY, last.position().commitLsn(), last.position(),
                SnapshotProgress.skipped(Lsn.of(1)));
    }

    private Path write(String name, int encoderThreads, long rotateBytes) {
        Path dir = tmp.resolve(name);
        JsonlSinkConfig cfg = new JsonlSinkConfig(name, dir, null, rotateBytes, META, encoderThreads);
        try (JsonlSink sink = new JsonlSink(cfg, new EnvelopeWriter(META, CLOCK, "test"))) {
            sink.open();
            for (List<ChangeEvent> b : batches()) {
                sink.write(b, checkpoint(b));
            }
        }
        return dir;
    }

    private static List<Path> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.sorted().toList();
        }
    }

    private static void assertSameFiles(Path serial, Path parallel) throws IOException {
        List<Path> a = files(serial);
        List<Path> b = files(parallel);
        assertThat(b.stream().map(p -> p.getFileName().toString()).toList())
                .isEqualTo(a.stream().map(p -> p.getFileName().toString()).toList());
        for (int i = 0; i < a.size(); i++) {
            if (a.get(i).getFileName().toString().equals(JsonlSinkConfig.DEFAULT_STATE_FILE)) {
                // names the sink's own file and the same offset and checkpoint
                assertThat(Files.readString(b.get(i))).isEqualTo(Files.readString(a.get(i)));
                continue;
            }
            assertThat(Files.readAllBytes(b.get(i))).as("bytes of %s", a.get(i).getFileName()).isEqualTo(Files.readAllBytes(a.get(i)));
        }
    }

    // INV: ORDER — the lines of the encoding threads come back in the order of the events
    @Test
    void encodingThreadsWriteTheSameBytesAsTheWriterThreadAlone() throws IOException {
        Path serial = write("serial", 0, JsonlSinkConfig.DEFAULT_ROTATE_BYTES);
        for (int threads : new int[]{1, 2, 3}) {
            assertSameFiles(serial, write("parallel" + threads, threads, JsonlSinkConfig.DEFAULT_ROTATE_BYTES));
        }
        assertThat(Files.size(serial.resolve("events-000001.jsonl"))).isGreaterThan(1_000_000);
        assertThat(Files.exists(serial.resolve(JsonlSink.SCHEMA_CHANGES))).isTrue(); // the shape change was announced
    }

    @Test
    void filesRotateBeforeTheSameLines() throws IOException {
        // and a file that reaches its limit exactly at the end of a line: the next line begins the next file
        byte[] whole = Files.readAllBytes(write("whole", 0, JsonlSinkConfig.DEFAULT_ROTATE_BYTES).resolve("events-000001.jsonl"));
        int exact = 0;
        for (int lines = 0; lines < 200; exact++) {
            if (whole[exact] == '\n') {
                lines++;
            }
        }
        for (long rotate : new long[]{exact, 150_000, 1 << 20}) {
            Path serial = write("serial-" + rotate, 0, rotate);
            Path parallel = write("parallel-" + rotate, 2, rotate);
            assertSameFiles(serial, parallel);
            assertThat(files(serial).size()).isGreaterThan(rotate == 1 << 20 ? 4 : 20);
        }
    }

    @Test
    void anEncodingErrorFailsTheWriteWithItsMessage() {
        Path dir = tmp.resolve("bad");
        List<ChangeEvent> events = new ArrayList<>(batches().get(0));
        Object[] bad = wide(WIDE, new Random(1), 9999);
        bad[4] = "not a number"; // a value the numeric codec cannot write
        events.set(400, new ChangeEvent(Op.READ, WIDE, null, bad, Lsn.of(5000), new Position(Lsn.ZERO, 400), 0, 1L, true));
        try (JsonlSink sink = new JsonlSink(new JsonlSinkConfig("bad", dir, null, JsonlSinkConfig.DEFAULT_ROTATE_BYTES, META, 2),
                new EnvelopeWriter(META, CLOCK, "test"))) {
            sink.open();
            assertThatThrownBy(() -> sink.write(events, checkpoint(events)))
                    .isInstanceOf(MillraceException.class)
                    .hasMessageContaining("cannot write column 'd' of table public.wide (type numeric)");
            assertThatThrownBy(() -> sink.write(events, checkpoint(events)))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("FAILED");
        }
    }

    @Test
    void aCopiedEnvelopeWriterWritesTheSameValuesAndKeys() {
        EnvelopeWriter w = new EnvelopeWriter(META, CLOCK, "test");
        EnvelopeWriter copy = w.copy();
        for (List<ChangeEvent> b : batches()) {
            for (ChangeEvent e : b) {
                assertThat(copy.valueBytes(e)).isEqualTo(w.valueBytes(e));
                assertThat(copy.keyBytes(e)).isEqualTo(w.keyBytes(e));
            }
        }
    }

    @Test
    void encoderThreadsAreCheckedAndEndWithTheSink() {
        assertThatThrownBy(() -> new JsonlSinkConfig("x", tmp, null, 1, META, -1))
                .hasMessageContaining("'encoder_threads' must be between 0 and 64, got -1");
        JsonlSink sink = new JsonlSink(new JsonlSinkConfig("ends", tmp.resolve("ends"), null, 1 << 20, META, 3));
        sink.open();
        List<ChangeEvent> b = batches().get(0);
        sink.write(b, checkpoint(b));
        assertThat(Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("millrace-jsonl-encoder-ends-")))
                .isNotEmpty();
        sink.close();
        // shutdownNow interrupts idle workers; they end promptly
        long deadline = System.currentTimeMillis() + 10_000;
        while (System.currentTimeMillis() < deadline && Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.getName().startsWith("millrace-jsonl-encoder-ends-") && t.isAlive())) {
            Thread.onSpinWait();
        }
        assertThat(Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("millrace-jsonl-encoder-ends-") && t.isAlive())).isEmpty();
    }
}
