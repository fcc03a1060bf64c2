package io.millrace.sink.jsonl;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

class JsonlSinkTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final SourceMeta META = new SourceMeta("shop", "shopdb");
    private static final Clock CLOCK = Clock.fixed(Instant.parse("2024-05-06T07:08:09.123456Z"), ZoneOffset.UTC);
    private static final Identity IDENTITY = new Identity("7301234567890123456", "shopdb", "millrace", "millrace_pub", "files");
    private static final RelationInfo ITEMS = new RelationInfo(16385, new TableRef("public", "items"), 'd', List.of(
            new ColumnInfo("id", Codecs.builtin(23), -1, true),
            new ColumnInfo("name", Codecs.builtin(25), -1, false),
            new ColumnInfo("qty", Codecs.builtin(23), -1, false)), TypeResolver.builtinsOnly());

    @TempDir
    Path tmp;

    private final EnvelopeWriter envelope = new EnvelopeWriter(META, CLOCK, "test");
    private ListAppender<ILoggingEvent> logs;

    @BeforeEach
    void captureLogs() {
        logs = new ListAppender<>();
        logs.start();
        ((Logger) LoggerFactory.getLogger(JsonlSink.class)).addAppender(logs);
    }

    @AfterEach
    void releaseLogs() {
        ((Logger) LoggerFactory.getLogger(JsonlSink.class)).detachAppender(logs);
    }

    // ---- helpers ----

    /** Transaction {@code tx} (commit LSN 0/tx*100), change {@code ordinal}, row id {@code id}. */
    private static ChangeEvent insert(long tx, long ordinal, int id) {
        Object[] after = {ITEMS.codec(0).decodeText(Integer.toString(id)), ITEMS.codec(1).decodeText("item " + id),
                ITEMS.codec(2).decodeText(Integer.toString(id % 17))};
        Lsn commit = Lsn.of(tx * 100);
        return new ChangeEvent(Op.CREATE, ITEMS, null, after, Lsn.of(tx * 100 - 50 + ordinal), new Position(commit, ordinal),
                1000 + tx, 1_700_000_000_000_000L + tx, false);
    }

    /** One transaction {@code tx} of {@code n} inserts, ids from {@code firstId}. */
    private static List<ChangeEvent> tx(long tx, int n, int firstId) {
        List<ChangeEvent> events = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            events.add(insert(tx, i, firstId + i - 1));
        }
        return events;
    }

    private static Checkpoint checkpointAfter(List<ChangeEvent> events) {
        Position last = events.get(events.size() - 1).position();
        return new Checkpoint(Checkpoint.VERSION, IDENTITY, last.commitLsn(), last, SnapshotProgress.skipped(Lsn.of(1)));
    }

    private JsonlSinkConfig config(Path dir, long rotateBytes) {
        return new JsonlSinkConfig("files", dir, null, rotateBytes, META);
    }

    private JsonlSink sink(Path dir, long rotateBytes) {
        return new JsonlSink(config(dir, rotateBytes), envelope);
    }

    private String line(ChangeEvent e) {
        return new String(envelope.valueBytes(e), StandardCharsets.UTF_8);
    }

    private static List<Path> eventsFiles(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().matches("events-\\d{6}\\.jsonl")).sorted().toList();
        }
    }

    /** Every line of every events file, in file order; checks each file ends with '\n' and each line is JSON. */
    private static List<String> allLines(Path dir) throws IOException {
        List<String> lines = new ArrayList<>();
        for (Path f : eventsFiles(dir)) {
            String text = Files.readString(f, StandardCharsets.UTF_8);
            if (!text.isEmpty()) {
                assertThat(text).as("%s ends with a newline", f.getFileName()).endsWith("\n");
                for (String l : text.substring(0, text.length() - 1).split("\n", -1)) {
                    JSON.readTree(l); // throws on a torn or invalid line
                    lines.add(l);
                }
            }
        }
        return lines;
    }

    private List<String> expectedLines(List<ChangeEvent> events) {
        return events.stream().map(this::line).toList();
    }

    private static JsonNode state(Path dir) throws IOException {
        return JSON.readTree(dir.resolve("checkpoint.json").toFile());
    }

    private static List<ChangeEvent> concat(List<ChangeEvent> a, List<ChangeEvent> b) {
        List<ChangeEvent> all = new ArrayList<>(a);
        all.addAll(b);
        return all;
    }

    // ---- tests ----

    @Test
    void writesOneEnvelopePerLineAndResumesFromTheCheckpoint() throws IOException {
        Path dir = tmp.resolve("out");
        List<ChangeEvent> a = tx(1, 3, 1);
        try (JsonlSink sink = sink(dir, JsonlSinkConfig.DEFAULT_ROTATE_BYTES)) {
            assertThat(sink.open()).isEmpty();
            assertThat(sink.transactional()).isFalse();
            assertThat(sink.name()).isEqualTo("files");
            sink.write(a, checkpointAfter(a));
        }
        assertThat(eventsFiles(dir)).extracting(p -> p.getFileName().toString()).containsExactly("events-000001.jsonl");
        List<String> lines = allLines(dir);
        assertThat(lines).containsExactlyElementsOf(expectedLines(a));
        JsonNode first = JSON.readTree(lines.get(0));
        assertThat(first.get("after").toString()).isEqualTo("{\"id\":1,\"name\":\"item 1\",\"qty\":1}");
        assertThat(first.get("source").get("commit_lsn").asLong()).isEqualTo(100);
        assertThat(first.get("source").get("ordinal").asLong()).isEqualTo(1);

        JsonNode st = state(dir);
        assertThat(st.get("events_file").asText()).isEqualTo("events-000001.jsonl");
        assertThat(st.get("offset").asLong()).isEqualTo(Files.size(dir.resolve("events-000001.jsonl")));

        List<ChangeEvent> b = tx(2, 2, 4);
        try (JsonlSink sink = sink(dir, JsonlSinkConfig.DEFAULT_ROTATE_BYTES)) {
            assertThat(sink.open()).contains(checkpointAfter(a)); // INV: RESUME
            sink.write(b, checkpointAfter(b));
            sink.write(List.of(), checkpointAfter(b)); // a checkpoint alone
        }
        assertThat(allLines(dir)).containsExactlyElementsOf(expectedLines(concat(a, b)));
        try (JsonlSink sink = sink(dir, JsonlSinkConfig.DEFAULT_ROTATE_BYTES)) {
            assertThat(sink.open()).contains(checkpointAfter(b));
        }
    }

    @Test
    void rotatesToTheNextFileOnceAFileIsFull() throws IOException {
        Path dir = tmp.resolve("rot");
        long rotate = 2000;
        List<ChangeEvent> all = new ArrayList<>();
        try (JsonlSink sink = sink(dir, rotate)) {
            sink.open();
            for (int t = 1; t <= 9; t++) {
                List<ChangeEvent> batch = tx(t, 7, all.size() + 1);
                sink.write(batch, checkpointAfter(batch));
                all.addAll(batch);
            }
        }
        List<Path> files = eventsFiles(dir);
        int maxLine = expectedLines(all).stream().mapToInt(l -> l.getBytes(StandardCharsets.UTF_8).length + 1).max().orElseThrow();
        assertThat(files).hasSizeGreaterThan(3);
        for (int i = 0; i < files.size(); i++) {
            assertThat(files.get(i).getFileName().toString()).isEqualTo(String.format("events-%06d.jsonl", i + 1));
            long size = Files.size(files.get(i));
            if (i < files.size() - 1) {
                assertThat(size).as("full file %s", files.get(i).getFileName()).isGreaterThanOrEqualTo(rotate)
                        .isLessThan(rotate + maxLine);
            }
        }
        assertThat(allLines(dir)).containsExactlyElementsOf(expectedLines(all));
        JsonNode st = state(dir);
        Path last = files.get(files.size() - 1);
        assertThat(st.get("events_file").asText()).isEqualTo(last.getFileName().toString());
        assertThat(st.get("offset").asLong()).isEqualTo(Files.size(last));

        // a restart goes on in the newest file and rotates from there
        List<ChangeEvent> more = tx(10, 40, all.size() + 1);
        try (JsonlSink sink = sink(dir, rotate)) {
            assertThat(sink.open()).contains(checkpointAfter(all));
            sink.write(more, checkpointAfter(more));
        }
        all.addAll(more);
        assertThat(allLines(dir)).containsExactlyElementsOf(expectedLines(all));
        assertThat(eventsFiles(dir)).hasSizeGreaterThan(files.size());
    }

    /** INV: DURABLE, INV: RESUME: a crash after the data, before the checkpoint. */
    @Test
    void crashBeforeTheCheckpointIsCutOnOpenAndWrittenAgain() throws IOException {
        Path dir = tmp.resolve("crash");
        List<ChangeEvent> a = tx(1, 5, 1);
        List<ChangeEvent> b = tx(2, 5, 6);
        long offsetAfterA;
        JsonlSink crashed = sink(dir, JsonlSinkConfig.DEFAULT_ROTATE_BYTES);
        crashed.open();
        crashed.write(a, checkpointAfter(a));
        offsetAfterA = Files.size(dir.resolve("events-000001.jsonl"));
        crashed.faults(name -> {
            if (name.equals(JsonlSink.FAULT_BEFORE_CHECKPOINT)) {
                throw new IOException("simulated crash at " + name);
            }
        });
        assertThatThrownBy(() -> crashed.write(b, checkpointAfter(b))).isInstanceOf(MillraceException.class)
                .hasMessageContaining("checkpoint did not advance")
                .satisfies(t -> assertThat(((MillraceException) t).kind()).isEqualTo(MillraceException.Kind.SINK));
        assertThatThrownBy(() -> crashed.write(b, checkpointAfter(b))).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("FAILED");
        crashed.close();
        assertThat(Files.size(dir.resolve("events-000001.jsonl"))).as("b reached the file").isGreaterThan(offsetAfterA);

        try (JsonlSink sink = sink(dir, JsonlSinkConfig.DEFAULT_ROTATE_BYTES)) {
            assertThat(sink.open()).contains(checkpointAfter(a));
            assertThat(Files.size(dir.resolve("events-000001.jsonl"))).isEqualTo(offsetAfterA);
            assertThat(logs.list).anySatisfy(ev -> {
                assertThat(ev.getLevel()).isEqualTo(Level.INFO);
                assertThat(ev.getFormattedMessage()).contains("truncated").contains("events-000001.jsonl")
                        .contains("written again");
            });
            sink.write(b, checkpointAfter(b));
        }
        assertThat(allLines(dir)).containsExactlyElementsOf(expectedLines(concat(a, b)));
    }

    @Test
    void aTornTailAfterTheCheckpointIsTruncated() throws IOException {
        Path dir = tmp.resolve("torn");
        List<ChangeEvent> a = tx(1, 4, 1);
        try (JsonlSink sink = sink(dir, JsonlSinkConfig.DEFAULT_ROTATE_BYTES)) {
            sink.open();
            sink.write(a, checkpointAfter(a));
        }
        Path file = dir.resolve("events-000001.jsonl");
        long good = Files.size(file);
        // a whole line and half of the next, as a process killed mid-write leaves them
        Files.writeString(file, line(insert(2, 1, 5)) + "\n" + line(insert(2, 2, 6)).substring(0, 40),
                StandardOpenOption.APPEND);

        List<ChangeEvent> b = tx(2, 2, 5);
        try (JsonlSink sink = sink(dir, JsonlSinkConfig.DEFAULT_ROTATE_BYTES)) {
            assertThat(sink.open()).contains(checkpointAfter(a));
            assertThat(Files.size(file)).isEqualTo(good);
            sink.write(b, checkpointAfter(b));
        }
        assertThat(allLines(dir)).containsExactlyElementsOf(expectedLines(concat(a, b)));
    }

    /** What a consumer does with an at-least-once stream: drop each event whose position is not after the last. */
    private static List<String> dropRepeats(List<String> lines) throws IOException {
        List<String> kept = new ArrayList<>();
        Position last = null;
        for (String l : lines) {
            JsonNode src = JSON.readTree(l).get("source");
            Position p = new Position(Lsn.of(src.get("commit_lsn").asLong()), src.get("ordinal").asLong());
            if (last == null || p.isAfter(last)) {
                kept.add(l);
                last = p;
            }
        }
        return kept;
    }

    /** INV: RESUME: a crash inside a write that rotated never changes the full file; the batch is repeated. */
    @Test
    void crashAfterARotationRepeatsTheBatchButNeverChangesAFullFile() throws IOException {
        Path dir = tmp.resolve("rotcrash");
        long rotate = 1500;
        List<ChangeEvent> a = tx(1, 2, 1);
        List<ChangeEvent> b = tx(2, 20, 3);
        JsonlSink crashed = sink(dir, rotate);
        crashed.open();
        crashed.write(a, checkpointAfter(a));
        crashed.faults(name -> {
            if (name.equals(JsonlSink.FAULT_AFTER_ROTATE)) {
                throw new IOException("simulated crash at " + name);
            }
        });
        assertThatThrownBy(() -> crashed.write(b, checkpointAfter(b))).isInstanceOf(MillraceException.class);
        crashed.close();
        assertThat(eventsFiles(dir)).hasSize(2);
        byte[] full = Files.readAllBytes(dir.resolve("events-000001.jsonl"));
        assertThat(state(dir).get("events_file").asText()).as("state moved on before the file was created")
                .isEqualTo("events-000002.jsonl");

        try (JsonlSink sink = sink(dir, rotate)) {
            assertThat(sink.open()).contains(checkpointAfter(a));
            assertThat(Files.readAllBytes(dir.resolve("events-000001.jsonl"))).as("full file untouched").isEqualTo(full);
            sink.write(b, checkpointAfter(b));
        }
        List<String> lines = allLines(dir);
        assertThat(lines.size()).as("part of b twice").isGreaterThan(a.size() + b.size());
        assertThat(dropRepeats(lines)).containsExactlyElementsOf(expectedLines(concat(a, b)));
        assertThat(Files.readAllBytes(dir.resolve("events-000001.jsonl"))).isEqualTo(full);
    }

    @Test
    void crashBeforeTheCheckpointOfARotatedBatchCutsTheNewFile() throws IOException {
        Path dir = tmp.resolve("rotcrash2");
        long rotate = 1500;
        List<ChangeEvent> a = tx(1, 2, 1);
        List<ChangeEvent> b = tx(2, 20, 3);
        JsonlSink crashed = sink(dir, rotate);
        crashed.open();
        crashed.write(a, checkpointAfter(a));
        crashed.faults(name -> {
            if (name.equals(JsonlSink.FAULT_BEFORE_CHECKPOINT)) {
                throw new IOException("simulated crash at " + name);
            }
        });
        assertThatThrownBy(() -> crashed.write(b, checkpointAfter(b))).isInstanceOf(MillraceException.class);
        crashed.close();
        List<Path> before = eventsFiles(dir);
        assertThat(before.size()).isGreaterThanOrEqualTo(2);
        Path newest = before.get(before.size() - 1);
        assertThat(Files.size(newest)).isPositive();
        assertThat(state(dir).get("offset").asLong()).isZero();

        try (JsonlSink sink = sink(dir, rotate)) {
            assertThat(sink.open()).contains(checkpointAfter(a));
            assertThat(Files.size(newest)).isZero();
            assertThat(logs.list).anySatisfy(ev -> assertThat(ev.getFormattedMessage()).contains("truncated")
                    .contains(newest.getFileName().toString()));
            sink.write(b, checkpointAfter(b));
        }
        assertThat(dropRepeats(allLines(dir))).containsExactlyElementsOf(expectedLines(concat(a, b)));
    }

    @Test
    void aNewerEventsFileFromElsewhereIsRefused() throws IOException {
        Path dir = tmp.resolve("foreign");
        List<ChangeEvent> a = tx(1, 2, 1);
        try (JsonlSink sink = sink(dir, 1 << 20)) {
            sink.open();
            sink.write(a, checkpointAfter(a));
        }
        Files.writeString(dir.resolve("events-000007.jsonl"), "{}\n");
        assertThatThrownBy(() -> sink(dir, 1 << 20).open()).isInstanceOf(MillraceException.class)
                .hasMessageContaining("events-000007.jsonl").hasMessageContaining("not written by this destination");
        assertThat(Files.readString(dir.resolve("events-000007.jsonl"))).as("left alone").isEqualTo("{}\n");
    }

    @Test
    void crashBeforeTheFirstCheckpointStartsOverEmpty() throws IOException {
        Path dir = tmp.resolve("first");
        List<ChangeEvent> a = tx(1, 3, 1);
        JsonlSink crashed = sink(dir, JsonlSinkConfig.DEFAULT_ROTATE_BYTES);
        assertThat(crashed.open()).isEmpty();
        assertThat(state(dir).get("checkpoint").isNull()).as("state written at first open").isTrue();
        crashed.faults(name -> {
            throw new IOException("simulated crash at " + name);
        });
        assertThatThrownBy(() -> crashed.write(a, checkpointAfter(a))).isInstanceOf(MillraceException.class);
        crashed.close();
        assertThat(Files.size(dir.resolve("events-000001.jsonl"))).isPositive();

        try (JsonlSink sink = sink(dir, JsonlSinkConfig.DEFAULT_ROTATE_BYTES)) {
            assertThat(sink.open()).isEmpty();
            assertThat(Files.size(dir.resolve("events-000001.jsonl"))).isZero();
            sink.write(a, checkpointAfter(a));
        }
        assertThat(allLines(dir)).containsExactlyElementsOf(expectedLines(a));
    }

    @Test
    void stateFileRoundTrips() {
        Checkpoint cp = new Checkpoint(Checkpoint.VERSION, IDENTITY, Lsn.parse("16/B374D848"),
                new Position(Lsn.parse("16/B374D848"), 42), new SnapshotProgress(SnapshotProgress.State.RUNNING,
                Lsn.parse("16/0"), List.of(new io.millrace.core.schema.TableRef("public", "a"), new io.millrace.core.schema.TableRef("s", "\"b\""))));
        for (SinkState st : List.of(new SinkState("events-000012.jsonl", 123456789012L, cp),
                new SinkState("events-000001.jsonl", 0, null), new SinkState(null, 0, cp))) {
            assertThat(SinkState.parse(st.toJson())).isEqualTo(st);
        }
    }

    @Test
    void stateFileInAnotherDirectoryRoundTripsThroughTheSink() throws IOException {
        Path dir = tmp.resolve("events");
        Path stateFile = tmp.resolve("state/nested/cp.json");
        List<ChangeEvent> a = tx(1, 2, 1);
        JsonlSinkConfig cfg = new JsonlSinkConfig("files", dir, stateFile, 1 << 20, META);
        try (JsonlSink sink = new JsonlSink(cfg, envelope)) {
            assertThat(sink.open()).isEmpty();
            sink.write(a, checkpointAfter(a));
        }
        assertThat(dir.resolve("checkpoint.json")).doesNotExist();
        assertThat(SinkState.parse(Files.readAllBytes(stateFile)).checkpoint()).isEqualTo(checkpointAfter(a));
        try (JsonlSink sink = new JsonlSink(cfg, envelope)) {
            assertThat(sink.open()).contains(checkpointAfter(a));
        }
    }

    @Test
    void unreadableStateFileIsAClearError() throws IOException {
        Path dir = tmp.resolve("bad");
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("checkpoint.json"), "{\"format\":1,\"events_file\":\"events-000001.jsonl\",\"off");
        assertThatThrownBy(() -> sink(dir, 1000).open()).isInstanceOf(MillraceException.class)
                .hasMessageContaining(dir.resolve("checkpoint.json").toString())
                .hasMessageContaining("restore it")
                .satisfies(t -> assertThat(((MillraceException) t).kind()).isEqualTo(MillraceException.Kind.SINK));

        Files.writeString(dir.resolve("checkpoint.json"), "{\"format\":2,\"events_file\":null,\"offset\":0,\"checkpoint\":null}");
        assertThatThrownBy(() -> sink(dir, 1000).open()).isInstanceOf(MillraceException.class)
                .hasMessageContaining("format 2 is not supported");
    }

    @Test
    void directoryThatCannotBeWrittenIsAClearError() throws IOException {
        Path file = tmp.resolve("plain-file");
        Files.writeString(file, "x");
        assertThatThrownBy(() -> sink(file, 1000).open()).isInstanceOf(MillraceException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("choose")
                .satisfies(t -> assertThat(((MillraceException) t).kind()).isEqualTo(MillraceException.Kind.SINK));
        Path under = file.resolve("events");
        assertThatThrownBy(() -> sink(under, 1000).open()).isInstanceOf(MillraceException.class)
                .hasMessageContaining(under.toString()).hasMessageContaining("choose");
    }

    @Test
    void readOnlyDirectoryIsAClearError() throws IOException {
        assumeFalse("root".equals(System.getProperty("user.name")), "root writes into read-only directories");
        Path dir = tmp.resolve("ro");
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("r-xr-xr-x"));
        try {
            assertThatThrownBy(() -> sink(dir, 1000).open()).isInstanceOf(MillraceException.class)
                    .hasMessageContaining(dir.toString()).hasMessageContaining("not writable");
        } finally {
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    @Test
    void eventsFilesWithoutAStateFileAreRefused() throws IOException {
        Path dir = tmp.resolve("orphan");
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("events-000001.jsonl"), "{}\n");
        assertThatThrownBy(() -> sink(dir, 1000).open()).isInstanceOf(MillraceException.class)
                .hasMessageContaining("no state file").hasMessageContaining("move them away");
        assertThat(Files.readString(dir.resolve("events-000001.jsonl"))).as("left alone").isEqualTo("{}\n");
    }

    @Test
    void eventsFileShorterThanTheCheckpointIsRefused() throws IOException {
        Path dir = tmp.resolve("short");
        List<ChangeEvent> a = tx(1, 3, 1);
        try (JsonlSink sink = sink(dir, 1 << 20)) {
            sink.open();
            sink.write(a, checkpointAfter(a));
        }
        Path file = dir.resolve("events-000001.jsonl");
        try (var ch = java.nio.channels.FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(10);
        }
        assertThatThrownBy(() -> sink(dir, 1 << 20).open()).isInstanceOf(MillraceException.class)
                .hasMessageContaining("has 10 bytes").hasMessageContaining("outside Millrace");
        Files.delete(file);
        assertThatThrownBy(() -> sink(dir, 1 << 20).open()).isInstanceOf(MillraceException.class)
                .hasMessageContaining("is missing");
    }

    @Test
    void stdoutModeFlushesEachWriteAndCheckpointsToTheStateFile() throws IOException {
        Path stateFile = tmp.resolve("stdout-state.json");
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream original = System.out;
        List<ChangeEvent> a = tx(1, 3, 1);
        List<ChangeEvent> b = tx(2, 2, 4);
        System.setOut(new PrintStream(captured, false, StandardCharsets.UTF_8));
        try (JsonlSink sink = new JsonlSink(JsonlSinkConfig.stdout("out", stateFile, META), envelope)) {
            assertThat(sink.open()).isEmpty();
            sink.write(a, checkpointAfter(a));
            assertThat(captured.toString(StandardCharsets.UTF_8)).as("flushed by write")
                    .isEqualTo(String.join("\n", expectedLines(a)) + "\n");
            sink.write(b, checkpointAfter(b));
        } finally {
            System.setOut(original);
        }
        assertThat(captured.toString(StandardCharsets.UTF_8)).isEqualTo(String.join("\n", expectedLines(concat(a, b))) + "\n");
        SinkState st = SinkState.parse(Files.readAllBytes(stateFile));
        assertThat(st.eventsFile()).isNull();
        assertThat(st.checkpoint()).isEqualTo(checkpointAfter(b));
        try (JsonlSink sink = new JsonlSink(JsonlSinkConfig.stdout("out", stateFile, META), envelope)) {
            assertThat(sink.open()).contains(checkpointAfter(b));
        }
        // the same state file cannot serve a file destination
        assertThatThrownBy(() -> new JsonlSink(new JsonlSinkConfig("f", tmp.resolve("d"), stateFile, 1000, META), envelope)
                .open()).isInstanceOf(MillraceException.class).hasMessageContaining("standard output");
    }

    @Test
    void configIsCheckedWhenBuilt() {
        assertThatThrownBy(() -> new JsonlSinkConfig("out", null, null, 1000, META)).isInstanceOf(MillraceException.class)
                .hasMessageContaining("'state_file' is required")
                .satisfies(t -> assertThat(((MillraceException) t).kind()).isEqualTo(MillraceException.Kind.CONFIG));
        assertThatThrownBy(() -> new JsonlSinkConfig("out", tmp, null, 0, META)).isInstanceOf(MillraceException.class)
                .hasMessageContaining("'rotate_bytes' must be positive");
        assertThatThrownBy(() -> new JsonlSinkConfig(" ", tmp, null, 10, META)).isInstanceOf(MillraceException.class);
        JsonlSinkConfig files = JsonlSinkConfig.files("f", tmp, META);
        assertThat(files.stateFile()).isEqualTo(tmp.resolve("checkpoint.json"));
        assertThat(files.rotateBytes()).isEqualTo(256L * 1024 * 1024);
        assertThat(files.toStdout()).isFalse();
    }

    @Test
    void lifecycleMovesOnlyForward() {
        JsonlSink sink = sink(tmp.resolve("life"), 1000);
        assertThatThrownBy(() -> sink.write(List.of(), null)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("NEW");
        sink.open();
        assertThatThrownBy(sink::open).isInstanceOf(IllegalStateException.class).hasMessageContaining("OPEN");
        sink.close();
        sink.close();
        assertThatThrownBy(() -> sink.write(List.of(), null)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("CLOSED");
    }

    @Test
    void eventsFileNames() {
        assertThat(JsonlSink.fileName(1)).isEqualTo("events-000001.jsonl");
        assertThat(JsonlSink.eventsFileNumber("events-000001.jsonl")).isEqualTo(1);
        assertThat(JsonlSink.eventsFileNumber("events-1234567.jsonl")).isEqualTo(1234567);
        assertThat(JsonlSink.eventsFileNumber("events-00001.jsonl")).isEqualTo(-1);
        assertThat(JsonlSink.eventsFileNumber("events-000000.jsonl")).isEqualTo(-1);
        assertThat(JsonlSink.eventsFileNumber("events-0000001.jsonl")).isEqualTo(-1);
        assertThat(JsonlSink.eventsFileNumber("events-000001.jsonl.tmp")).isEqualTo(-1);
        assertThat(JsonlSink.eventsFileNumber("checkpoint.json")).isEqualTo(-1);
    }

    /** Not asserted: prints the rate for 1M small events into a file, batches of 10,000 (one fsync each). */
    @Test
    void throughputForOneMillionSmallEvents() throws IOException {
        int total = 1_000_000;
        int batchSize = 10_000;
        List<List<ChangeEvent>> batches = new ArrayList<>();
        for (int b = 0; b < total / batchSize; b++) {
            batches.add(tx(b + 1, batchSize, b * batchSize + 1));
        }
        Path dir = tmp.resolve("perf");
        EnvelopeWriter realClock = new EnvelopeWriter(META);
        long bytes;
        long nanos;
        try (JsonlSink sink = new JsonlSink(config(dir, JsonlSinkConfig.DEFAULT_ROTATE_BYTES), realClock)) {
            sink.open();
            long start = System.nanoTime();
            for (List<ChangeEvent> batch : batches) {
                sink.write(batch, checkpointAfter(batch));
            }
            nanos = System.nanoTime() - start;
        }
        bytes = 0;
        for (Path f : eventsFiles(dir)) {
            bytes += Files.size(f);
        }
        double seconds = nanos / 1e9;
        // the same events encoded into nothing: what the CPU allows without the disk
        long encodeStart = System.nanoTime();
        try (JsonGenerator g = new JsonFactory().createGenerator(OutputStream.nullOutputStream())) {
            g.setRootValueSeparator(null);
            for (List<ChangeEvent> batch : batches) {
                for (ChangeEvent e : batch) {
                    realClock.writeValue(g, e);
                    g.writeRaw('\n');
                }
            }
        }
        double encodeSeconds = (System.nanoTime() - encodeStart) / 1e9;
        System.out.printf("jsonl sink throughput: %d events (%d bytes, %d files, %d fsynced batches) in %.2f s = %.0f events/s,"
                + " %.1f MiB/s (encoding alone: %.0f events/s)%n", total, bytes, eventsFiles(dir).size(), batches.size(),
                seconds, total / seconds, bytes / seconds / (1 << 20), total / encodeSeconds);
        assertThat(state(dir).get("checkpoint").get("applied_ordinal").asLong()).isEqualTo(batchSize);
        Optional<String> lastLine;
        try (Stream<String> s = Files.lines(eventsFiles(dir).get(eventsFiles(dir).size() - 1))) {
            lastLine = s.reduce((x, y) -> y);
        }
        assertThat(JSON.readTree(lastLine.orElseThrow()).get("after").get("id").asInt()).isEqualTo(total);
    }
}
