package io.millrace.cli.online;

import io.millrace.cli.crash.EngineProcess;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.CheckpointJson;
import io.millrace.core.change.KeyBound;
import io.millrace.core.change.OnlineTask;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.verify.Verifier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SIGKILL during an online snapshot: {@code millrace run} in its own JVM streams table {@code a}; it is
 * stopped and started again with {@code b} (200 000 rows) added to the configuration, so {@code b} is
 * added to the publication and copied online. While the copy runs the process is killed
 * {@value #KILLS} times, each time after more chunks landed (the durable checkpoint's task for
 * {@code b} shows more rows done), and started again; a session writes to both tables all the while.
 *
 * <p>INV: RESUME — each restart resumes the task from the ranges the durable checkpoint left (the log
 * names the rows landed before, as recorded), and a chunk that landed is not read again: in the jsonl
 * destination (whose files are cut back to its checkpoint on start), no {@code r} event of a key that
 * both destinations had recorded as landed at a kill comes after that kill's jsonl checkpoint, and the
 * keys read twice are at most those of the chunks in flight ({@code readers × max_chunk_rows} per
 * kill). INV: WATERMARK, HANDOVER — at the end the postgres destination equals the source.
 */
class OnlineCrashIT {
    static final int KILLS = 3;
    static final int ROWS_B = 200_000;
    static final int READERS = 2;
    static final int MAX_CHUNK = 4_000;
    static final String SRC = "oc_src";
    static final String DST = "oc_dst";
    static final String SLOT = "oc";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern RESUMED = Pattern.compile("online snapshot of public\\.b resumed at (\\d+) remaining range\\(s\\), (\\d+) rows landed before");
    private static EmbeddedPg pg;

    @BeforeAll
    static void startServer() {
        pg = EmbeddedPg.builder().major(17).setting("synchronous_commit", "on").start();
        pg.createDatabase(SRC);
        pg.createDatabase(DST);
    }

    @AfterAll
    static void stopServer() {
        if (pg != null) {
            pg.close();
        }
    }

    private static String config(List<String> tables, Path events) {
        return String.join("\n",
                "name: online-crash",
                "source:",
                "  host: 127.0.0.1",
                "  port: " + pg.port(),
                "  database: " + SRC,
                "  user: postgres",
                "  slot: " + SLOT,
                "  publication: " + SLOT,
                "  tables: [" + String.join(", ", tables) + "]",
                "  status_interval_ms: 500",
                "snapshot:",
                "  mode: initial",
                "  readers: 2",
                "  online:",
                "    readers: " + READERS,
                "    chunk_rows: 2000",
                "    min_chunk_rows: 500",
                "    max_chunk_rows: " + MAX_CHUNK,
                "    target_chunk_ms: 100",
                "destinations:",
                "  - name: replica",
                "    type: postgres",
                "    host: 127.0.0.1",
                "    port: " + pg.port(),
                "    database: " + DST,
                "    user: postgres",
                "  - name: files",
                "    type: jsonl",
                "    directory: " + events,
                "pipeline:",
                "  linger_ms: 50",
                "");
    }

    /** A session writing to a and b until stopped: updates, deletes, inserts of new keys (never a key change). */
    private static final class Writer implements Runnable {
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<Throwable> error = new AtomicReference<>();
        final AtomicLong ops = new AtomicLong();
        final Random rnd;

        Writer(long seed) {
            rnd = new Random(seed);
        }

        @Override
        public void run() {
            int next = ROWS_B + 1;
            try (Connection c = pg.connect(SRC); Statement s = c.createStatement()) {
                while (!stop.get()) {
                    String t = rnd.nextBoolean() ? "a" : "b";
                    int range = t.equals("a") ? 1000 : ROWS_B;
                    int op = rnd.nextInt(10);
                    if (op < 5) {
                        s.execute("UPDATE " + t + " SET v = v + 1, note = 'upd' WHERE id = " + (1 + rnd.nextInt(range)));
                    } else if (op < 7) {
                        s.execute("DELETE FROM " + t + " WHERE id = " + (1 + rnd.nextInt(range)));
                    } else {
                        s.execute("INSERT INTO " + t + " VALUES (" + (next++) + ", 0, 'new')");
                    }
                    ops.incrementAndGet();
                    Thread.sleep(3);
                }
            } catch (Throwable e) {
                error.set(e);
            }
        }
    }

    private static Checkpoint postgresCheckpoint(Connection dst) throws SQLException {
        try (Statement s = dst.createStatement(); ResultSet rs = s.executeQuery("SELECT to_regclass('millrace.checkpoints') IS NOT NULL")) {
            rs.next();
            if (!rs.getBoolean(1)) {
                return null;
            }
        }
        try (Statement s = dst.createStatement();
             ResultSet rs = s.executeQuery("SELECT checkpoint::text FROM millrace.checkpoints WHERE destination = 'replica'")) {
            return rs.next() ? CheckpointJson.read(rs.getString(1)) : null;
        }
    }

    /** The jsonl sink's state file: events file, offset and checkpoint. */
    private record JsonlState(String file, long offset, Checkpoint checkpoint) {
    }

    private static JsonlState jsonlState(Path events) throws Exception {
        JsonNode root = JSON.readTree(Files.readString(events.resolve("checkpoint.json")));
        return new JsonlState(root.get("events_file").asText(), root.get("offset").asLong(), CheckpointJson.read(root.get("checkpoint").toString()));
    }

    private static OnlineTask taskB(Checkpoint c) {
        return c == null ? null : c.online().stream().filter(t -> t.table().equals(TableRef.parse("public.b"))).findFirst().orElse(null);
    }

    private static boolean inRanges(long id, List<OnlineTask.KeyRange> ranges) {
        for (OnlineTask.KeyRange r : ranges) {
            if ((!(r.lo() instanceof KeyBound.Key lo) || id > Long.parseLong(lo.values().get(0)))
                    && (!(r.hi() instanceof KeyBound.Key hi) || id <= Long.parseLong(hi.values().get(0)))) {
                return true;
            }
        }
        return false;
    }

    /** One kill: what both destinations had recorded durably for b, and where the jsonl files stood. */
    private record Kill(int n, long rowsDonePostgres, long rowsDoneJsonl, List<OnlineTask.KeyRange> remainingPostgres,
                        List<OnlineTask.KeyRange> remainingJsonl, String file, long offset) {
        /** Landed in both destinations: in neither's remaining ranges. */
        boolean landed(long id) {
            return !inRanges(id, remainingPostgres) && !inRanges(id, remainingJsonl);
        }
    }

    /** An {@code r} event of b: its id and where its line starts. */
    private record Read(long id, String file, long offset) {
        boolean after(String f, long off) {
            int c = file.compareTo(f);
            return c > 0 || (c == 0 && offset >= off);
        }
    }

    private static List<Read> readsOfB(Path events) throws Exception {
        List<Path> files;
        try (Stream<Path> s = Files.list(events)) {
            files = s.filter(p -> p.getFileName().toString().matches("events-\\d+\\.jsonl")).sorted(Comparator.comparing(Path::toString)).toList();
        }
        List<Read> out = new ArrayList<>();
        for (Path f : files) {
            byte[] bytes = Files.readAllBytes(f);
            int start = 0;
            for (int i = 0; i < bytes.length; i++) {
                if (bytes[i] != '\n') {
                    continue;
                }
                String line = new String(bytes, start, i - start, StandardCharsets.UTF_8);
                if (line.contains("\"op\":\"r\"") && line.contains("\"table\":\"b\"")) {
                    JsonNode e = JSON.readTree(line);
                    if (e.path("source").path("table").asText().equals("b") && e.path("op").asText().equals("r")) {
                        out.add(new Read(e.path("after").path("id").asLong(), f.getFileName().toString(), start));
                    }
                }
                start = i + 1;
            }
        }
        return out;
    }

    @Test
    void landedChunksOfAnOnlineCopyAreNotReadAgainAfterSigkill() throws Exception {
        long seed = Long.getLong("millrace.onlinecrash.seed", System.nanoTime());
        System.out.println("OnlineCrashIT seed " + seed + " (replay: -Dmillrace.onlinecrash.seed=" + seed + ")");
        Random rnd = new Random(seed);
        Path work = Path.of("target", "online-crash").toAbsolutePath();
        deleteTree(work);
        Path events = work.resolve("events");
        Files.createDirectories(events);
        Path configA = work.resolve("a.yaml");
        Path configAB = work.resolve("ab.yaml");
        Files.writeString(configA, config(List.of("public.a"), events));
        Files.writeString(configAB, config(List.of("public.a", "public.b"), events));
        List<TableRef> tables = List.of(TableRef.parse("public.a"), TableRef.parse("public.b"));

        pg.execute(SRC, "CREATE TABLE a (id int PRIMARY KEY, v int NOT NULL, note text)",
                "INSERT INTO a SELECT g, g, 'a ' || g FROM generate_series(1, 1000) g",
                "CREATE TABLE b (id int PRIMARY KEY, v int NOT NULL, note text)",
                "INSERT INTO b SELECT g, g, 'b ' || g FROM generate_series(1, " + ROWS_B + ") g");
        Writer writer = new Writer(seed);
        Thread writerThread = new Thread(writer, "online-crash-writer");
        EngineProcess engine = null;
        List<Kill> kills = new ArrayList<>();
        List<long[]> resumed = new ArrayList<>();
        try (Connection src = pg.connect(SRC); Connection dst = pg.connect(DST)) {
            // 1. The pipeline streams a; stopped as an operator would.
            engine = EngineProcess.start(configA, work.resolve("engine-a.log"));
            awaitLog(engine, "streaming from slot");
            awaitCount(engine, dst, "a", 1000);
            assertThat(engine.terminate(60)).as("exit after SIGTERM; log %s", engine.log()).isZero();
            engine = null;
            writerThread.start();

            // 2. b added to the configuration: copied online; killed while the copy runs.
            long lastDone = 0;
            for (int k = 1; k <= KILLS; k++) {
                awaitSlotIdle(src);
                engine = EngineProcess.start(configAB, work.resolve(String.format("engine-%02d.log", k)));
                if (k > 1) {
                    long[] r = awaitResumed(engine);
                    resumed.add(r);
                }
                long target = lastDone + 20_000 + rnd.nextInt(20_000);
                while (true) {
                    OnlineTask t = taskB(postgresCheckpoint(dst));
                    if (t != null && t.rowsDone() >= target) {
                        break;
                    }
                    assertThat(engine.alive()).as("engine ended by itself; log %s:%n%s", engine.log(), engine.logTail(30)).isTrue();
                    assertThat(engine.millisSinceStart()).as("b's copy not at %d rows after 60 s (%s); log %s", target, t, engine.log())
                            .isLessThan(60_000);
                    Thread.sleep(2);
                }
                Thread.sleep(rnd.nextInt(100));
                assertThat(engine.kill()).isEqualTo(EngineProcess.SIGKILL_EXIT);
                engine = null;
                Checkpoint p = postgresCheckpoint(dst);
                JsonlState j = jsonlState(events);
                OnlineTask tp = taskB(p);
                OnlineTask tj = taskB(j.checkpoint());
                assertThat(tp).as("postgres checkpoint still has b's task after kill %d", k).isNotNull();
                assertThat(tj).as("jsonl checkpoint still has b's task after kill %d", k).isNotNull();
                Kill kill = new Kill(k, tp.rowsDone(), tj.rowsDone(), tp.remaining(), tj.remaining(), j.file(), j.offset());
                kills.add(kill);
                lastDone = Math.min(tp.rowsDone(), tj.rowsDone());
                System.out.printf("OnlineCrashIT: kill %d: rows done postgres %d, jsonl %d; remaining postgres %s; jsonl %s; jsonl at %s:%d%n",
                        k, tp.rowsDone(), tj.rowsDone(), abbreviate(tp.remaining()), abbreviate(tj.remaining()), j.file(), j.offset());
                assertThat(tp.remaining().get(0).lo()).as("chunks landed: the remaining ranges no longer start open below").isNotNull();
                assertThat(writer.error.get()).isNull();
            }

            // 3. The last run finishes the copy; the writer stops; the destination catches up.
            awaitSlotIdle(src);
            engine = EngineProcess.start(configAB, work.resolve("engine-final.log"));
            resumed.add(awaitResumed(engine));
            awaitLog(engine, "online snapshot of public.b landed");
            writer.stop.set(true);
            writerThread.join();
            assertThat(writer.error.get()).as("writer").isNull();
            long deadline = System.currentTimeMillis() + 60_000;
            List<Verifier.TableResult> last;
            while (!(last = Verifier.compare(src, dst, tables, null)).stream().allMatch(Verifier.TableResult::equal)) {
                assertThat(System.currentTimeMillis()).as("destination differs: %s; log %s", last, engine.log()).isLessThan(deadline);
                assertThat(engine.alive()).as("final run ended by itself; log %s", engine.log()).isTrue();
                Thread.sleep(250);
            }
            Thread.sleep(500); // the jsonl destination is written after the postgres one
            assertThat(engine.terminate(60)).as("exit after SIGTERM; log %s", engine.log()).isZero();
            engine = null;
            assertThat(taskB(postgresCheckpoint(dst))).as("nothing left to copy").isNull();
            assertThat(taskB(jsonlState(events).checkpoint())).isNull();

            // INV: RESUME — each restart went on from what the durable checkpoints held.
            for (int i = 0; i < kills.size(); i++) {
                Kill kill = kills.get(i);
                long[] r = resumed.get(i);
                assertThat(r[1]).as("rows landed before, as logged by the restart after kill %d", kill.n())
                        .isIn(kill.rowsDonePostgres(), kill.rowsDoneJsonl());
                assertThat(r[1]).as("the copy went on after kill %d", kill.n()).isPositive();
            }
            // Landed chunks are not read again: no r event of a key landed in both destinations after the kill's jsonl checkpoint.
            List<Read> reads = readsOfB(events);
            for (Kill kill : kills) {
                List<Read> again = reads.stream().filter(r -> r.after(kill.file(), kill.offset()) && kill.landed(r.id())).limit(10).toList();
                assertThat(again).as("keys landed before kill %d read again after it", kill.n()).isEmpty();
            }
            Map<Long, Integer> perId = new HashMap<>();
            reads.forEach(r -> perId.merge(r.id(), 1, Integer::sum));
            long twice = perId.values().stream().filter(n -> n > 1).count();
            System.out.printf("OnlineCrashIT: %d kills; %d r events of b for %d keys, %d keys read more than once (bound %d); writer ops %d;"
                    + " resumed %s%n", kills.size(), reads.size(), perId.size(), twice, (long) KILLS * READERS * MAX_CHUNK, writer.ops.get(),
                    resumed.stream().map(r -> r[0] + " ranges/" + r[1] + " rows").toList());
            assertThat(twice).as("keys read more than once (at most the chunks in flight at each kill)")
                    .isLessThanOrEqualTo((long) KILLS * READERS * MAX_CHUNK);
            assertThat(perId.size()).as("b's keys read").isGreaterThan(ROWS_B * 9 / 10);
        } finally {
            writer.stop.set(true);
            writerThread.join(10_000);
            if (engine != null) {
                engine.destroyQuietly();
            }
        }
    }

    private static String abbreviate(List<OnlineTask.KeyRange> ranges) {
        String s = ranges.stream().map(r -> "(" + (r.lo() instanceof KeyBound.Key lo ? lo.values().get(0) : "-") + ","
                        + (r.hi() instanceof KeyBound.Key hi ? hi.values().get(0) : "+") + "]")
                .toList().toString();
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }

    /** Waits for the restart's "resumed at N remaining range(s), M rows landed before"; returns {N, M}. */
    private static long[] awaitResumed(EngineProcess engine) throws InterruptedException {
        awaitLog(engine, "online snapshot of public.b resumed");
        Matcher m = RESUMED.matcher(engine.logText());
        assertThat(m.find()).as("resume line in %s", engine.log()).isTrue();
        return new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2))};
    }

    private static void awaitLog(EngineProcess engine, String line) throws InterruptedException {
        while (!engine.logText().contains(line)) {
            assertThat(engine.alive()).as("engine ended before logging '%s'; log %s:%n%s", line, engine.log(), engine.logTail(40)).isTrue();
            assertThat(engine.millisSinceStart()).as("no '%s' after 90 s; log %s", line, engine.log()).isLessThan(90_000);
            Thread.sleep(20);
        }
    }

    private static void awaitCount(EngineProcess engine, Connection dst, String table, long n) throws Exception {
        while (true) {
            try (Statement s = dst.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM public." + table)) {
                rs.next();
                if (rs.getLong(1) == n) {
                    return;
                }
            } catch (SQLException notYet) {
                // the table is created with the first batch
            }
            assertThat(engine.millisSinceStart()).as("%s not copied; log %s", table, engine.log()).isLessThan(60_000);
            Thread.sleep(50);
        }
    }

    private static void awaitSlotIdle(Connection src) throws Exception {
        long start = System.currentTimeMillis();
        while (true) {
            try (Statement s = src.createStatement();
                 ResultSet rs = s.executeQuery("SELECT active FROM pg_replication_slots WHERE slot_name = '" + SLOT + "'")) {
                if (!rs.next() || !rs.getBoolean(1)) {
                    return;
                }
            }
            assertThat(System.currentTimeMillis() - start).as("slot still active 30 s after the kill").isLessThan(30_000);
            Thread.sleep(10);
        }
    }

    private static void deleteTree(Path p) throws Exception {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(p)) {
            for (Path x : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(x);
            }
        }
    }
}
