package io.millrace.engine.online;

import io.millrace.core.change.Checkpoint;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import io.millrace.snapshot.online.OnlineSnapshotter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Online snapshots (DBLog watermarks) against a real PostgreSQL while sessions write to the table.
 *
 * <p>INV: WATERMARK — the randomized test corrupts the destination's copy of a table (rows deleted,
 * values changed), then re-copies it online with three readers and small chunks while three seeded
 * sessions insert, update, delete and change primary keys (also of rows in the chunk being read). Only
 * the copy can repair the rows the sessions do not touch, and a chunk row emitted after a newer
 * streamed change of its key would leave a stale value: at the end the destination must equal the
 * source. Seeds: {@code -Donline.seeds=N} runs N (default 10; the documented full run uses 50), {@code -Donline.seed=S}
 * replays one.
 */
class OnlineSnapshotIT {
    private static final Duration WAIT = Duration.ofSeconds(120);
    private static final String ONLINE = "snapshot:\n  mode: initial\n  readers: 2\n  online:\n    readers: 3\n    chunk_rows: 100\n"
            + "    min_chunk_rows: 40\n    max_chunk_rows: 400\n    target_chunk_ms: 30\n";
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        E2e.init();
        pg = EmbeddedPg.builder().major(17).setting("synchronous_commit", "on").start();
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    private static String yaml(String db, List<String> tables, Path dir) {
        String base = E2e.yaml(pg, db, "s_" + db, tables, "auto", db + "_dst", dir);
        return base.replace("snapshot:\n  mode: initial\n  readers: 2\n", ONLINE);
    }

    private static void fill(Connection c, String table, int rows) throws SQLException {
        E2e.exec(c, "CREATE TABLE " + table + " (id int PRIMARY KEY, v int NOT NULL, note text)",
                "INSERT INTO " + table + " SELECT g * 2, g, 'row ' || g FROM generate_series(1, " + rows + ") g");
    }

    /** Databases {@code db} and {@code db_dst}; in the first, table t of {@code rows} rows with an out-of-line payload of 32 × {@code md5s} bytes. */
    private static void toastTable(String db, int rows, int md5s) throws Exception {
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        try (Connection src = pg.connect(db)) {
            E2e.exec(src, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL, payload text)",
                    "ALTER TABLE t ALTER COLUMN payload SET STORAGE EXTERNAL", // out of line, uncompressed
                    "INSERT INTO t SELECT g, g, repeat(md5(g::text), " + md5s + ") FROM generate_series(1, " + rows + ") g");
        }
    }

    private static void awaitOnlineDone(RunningEngine e) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!e.engine().onlineSnapshots().isEmpty()) {
            assertThat(System.nanoTime()).as("online snapshot still running: %s", e.engine().onlineSnapshots()).isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    @Test
    void reSnapshotUnderRandomWritesRepairsTheDestination(@TempDir Path dir) throws Exception {
        String db = "rnd";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        int rows = 1500;
        try (Connection src = pg.connect(db)) {
            fill(src, "t", rows);
        }
        List<Long> seeds = new ArrayList<>();
        if (System.getProperty("online.seed") != null) {
            seeds.add(Long.parseLong(System.getProperty("online.seed")));
        } else {
            long base = System.nanoTime();
            for (int i = 0; i < Integer.getInteger("online.seeds", 10); i++) {
                seeds.add(base + i);
            }
        }
        List<TableRef> t = E2e.refs(List.of("public.t"));
        try (RunningEngine e = RunningEngine.start(yaml(db, List.of("public.t"), dir), dir).awaitStreaming(WAIT);
             Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.awaitSame(src, dst, t, WAIT);
            for (long seed : seeds) {
                System.out.println("OnlineSnapshotIT seed " + seed + " (replay: -Donline.seed=" + seed + ")");
                Random rnd = new Random(seed);
                // Break the destination so that only the copy can repair it.
                E2e.exec(dst, "DELETE FROM public.t WHERE id % 5 = " + rnd.nextInt(5), "UPDATE public.t SET v = -1, note = 'stale' WHERE id % 7 = "
                        + rnd.nextInt(7));
                long readBefore = e.engine().onlineSnapshotter().chunksRead();
                try (Writers w = new Writers(pg, db, List.of("t"), seed, 3, rows * 2 + 200, 0)) {
                    Thread.sleep(rnd.nextInt(200));
                    e.engine().snapshot(t, null);
                    awaitOnlineDone(e);
                    Thread.sleep(rnd.nextInt(200));
                    assertThat(w.ops()).as("the sessions wrote during the copy").isPositive();
                }
                try {
                    E2e.awaitSame(src, dst, t, WAIT);
                } catch (AssertionError a) {
                    throw new AssertionError("seed " + seed + ": " + a.getMessage(), a);
                }
                OnlineSnapshotter o = e.engine().onlineSnapshotter();
                assertThat(o.chunksRead() - readBefore).as("several chunks per copy").isGreaterThan(3);
                System.out.println("  chunks read " + (o.chunksRead() - readBefore) + ", read again " + o.chunksRetried()
                        + ", peak rows buffered " + o.peakBufferedRows());
            }
            // INV: BOUNDED — at most one chunk per reader in memory: 400 rows when cut, plus the keys the sessions
            // insert into its range before it is read (seen: 401).
            assertThat(e.engine().onlineSnapshotter().peakBufferedRows()).isLessThanOrEqualTo(3 * 400 * 5 / 4);
        }
    }

    /**
     * INV: WATERMARK with TOAST — the destination lacks the table's rows (like an initial copy interrupted before
     * any landed) while sessions update only the small columns of rows with a large out-of-line payload. Those
     * updates carry the payload as "unchanged" and cannot rebuild a row on their own: the sink leaves them to
     * the chunk that copies the row, and a chunk whose snapshot did not see such an update is read again. Without
     * either, the copy stops with "no row to take them from" or loses the row. Some updates also move a row not
     * copied yet to a key in the part already copied: that key is read again by itself, or the row is lost.
     */
    @Test
    void updatesKeepingToastValuesOfRowsNotYetCopiedWaitForTheirChunk(@TempDir Path dir) throws Exception {
        String db = "toast";
        int rows = 1200;
        toastTable(db, rows, 400); // 12.8 kB payloads
        List<TableRef> t = E2e.refs(List.of("public.t"));
        long seed = Long.getLong("online.seed", System.nanoTime());
        System.out.println("OnlineSnapshotIT toast seed " + seed + " (replay: -Donline.seed=" + seed + ")");
        try (LogCapture log = new LogCapture();
             RunningEngine e = RunningEngine.start(yaml(db, List.of("public.t"), dir)
                .replace("target_chunk_ms: 30\n", "target_chunk_ms: 30\n    max_chunk_mb: 1\n"), dir).awaitStreaming(WAIT);
             Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.awaitSame(src, dst, t, WAIT);
            java.util.concurrent.atomic.AtomicInteger moved = new java.util.concurrent.atomic.AtomicInteger();
            for (int round = 0; round < 3; round++) {
                Random rnd = new Random(seed + round);
                E2e.exec(dst, "DELETE FROM public.t WHERE id % 10 <> " + rnd.nextInt(10)); // nine rows in ten gone
                long retriedBefore = e.engine().onlineSnapshotter().chunksRetried();
                e.engine().snapshot(t, null);
                java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
                java.util.concurrent.atomic.AtomicLong updates = new java.util.concurrent.atomic.AtomicLong();
                List<Thread> sessions = new ArrayList<>();
                java.util.concurrent.atomic.AtomicReference<Throwable> failed = new java.util.concurrent.atomic.AtomicReference<>();
                for (int s = 0; s < 3; s++) {
                    Random r = new Random(seed * 31 + round * 7 + s);
                    boolean mover = s == 0; // one session moves keys: enough to hit the gap, not so many that the copy crawls
                    Thread th = new Thread(() -> {
                        try (Connection c = pg.connect(db); java.sql.Statement st = c.createStatement()) {
                            while (!stop.get()) {
                                int id = 1 + r.nextInt(rows + 200);
                                int op = r.nextInt(20);
                                if (op < 15 || op < 16 && !mover) {
                                    st.execute("UPDATE t SET v = v + 1 WHERE id = " + id); // payload unchanged
                                } else if (op < 16) {
                                    // Moves the row, payload unchanged, to a key below all others: in the first chunk,
                                    // copied early, while the old key's chunk may not be read yet. The new key is read
                                    // again (OnlineSnapshotter.moved), or it stays missing.
                                    st.execute("UPDATE t SET id = " + (-moved.incrementAndGet()) + ", v = v + 1 WHERE id = " + id);
                                } else if (op < 17) {
                                    st.execute("UPDATE t SET payload = repeat(md5(random()::text), 400) WHERE id = " + id);
                                } else if (op < 18) {
                                    st.execute("DELETE FROM t WHERE id = " + id);
                                } else {
                                    st.execute("INSERT INTO t VALUES (" + id + ", 0, repeat(md5(random()::text), 400))"
                                            + " ON CONFLICT (id) DO UPDATE SET v = t.v - 1");
                                }
                                updates.incrementAndGet();
                            }
                        } catch (Throwable x) {
                            failed.set(x);
                        }
                    });
                    th.start();
                    sessions.add(th);
                }
                awaitOnlineDone(e);
                stop.set(true);
                for (Thread th : sessions) {
                    th.join();
                }
                assertThat(failed.get()).isNull();
                assertThat(updates.get()).as("the sessions wrote during the copy").isPositive();
                try {
                    E2e.awaitSame(src, dst, t, WAIT);
                } catch (AssertionError a) {
                    throw new AssertionError("seed " + seed + " round " + round + ": " + a.getMessage(), a);
                }
                System.out.println("  round " + round + ": " + updates.get() + " writes (" + moved.get() + " keys moved so far), chunks read again "
                        + (e.engine().onlineSnapshotter().chunksRetried() - retriedBefore));
            }
            assertThat(e.engine().state()).isEqualTo(io.millrace.engine.Engine.State.STREAMING);
            assertThat(log.containing("are read again")).as("moved keys were read again").isNotEmpty();
            // INV: BOUNDED — 12.8 kB rows and max_chunk_mb 1: chunks of at most ~82 rows (not max_chunk_rows 400) per reader
            assertThat(e.engine().onlineSnapshotter().peakBufferedRows()).isLessThanOrEqualTo(3 * 90);
        }
    }

    /**
     * A bulk key update in the middle of a copy, on rows whose TOASTed payload it keeps: past the re-read limit
     * (8 tasks of 256 keys) the table is copied again from the start rather than key by key, and nothing is lost.
     */
    @Test
    void aBulkKeyUpdateDuringTheCopyCopiesTheTableAgain(@TempDir Path dir) throws Exception {
        String db = "bulkmove";
        int rows = 2500;
        toastTable(db, rows, 80); // 2.5 kB payloads: still out of line
        List<TableRef> t = E2e.refs(List.of("public.t"));
        try (LogCapture log = new LogCapture();
             RunningEngine e = RunningEngine.start(yaml(db, List.of("public.t"), dir), dir).awaitStreaming(WAIT);
             Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.awaitSame(src, dst, t, WAIT);
            E2e.exec(dst, "DELETE FROM public.t WHERE id % 10 <> 0"); // rows the copy has to bring
            var snapshotter = e.engine().onlineSnapshotter();
            long readBefore = snapshotter.chunksRead();
            e.engine().snapshot(t, null);
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (snapshotter.chunksRead() == readBefore) {
                assertThat(System.nanoTime()).as("a chunk read").isLessThan(deadline);
                Thread.sleep(5);
            }
            snapshotter.pause(); // chunks of at most 400 rows: the copy is not done, and no re-read is cut
            E2e.exec(src, "UPDATE t SET id = -id, v = v + 1"); // every row moves below the keys copied; payload unchanged
            assertThat(log.awaitContaining("is copied again from the start")).as("the copy starts again").isNotEmpty();
            snapshotter.resume();
            awaitOnlineDone(e);
            E2e.awaitSame(src, dst, t, WAIT);
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM public.t WHERE id < 0")).isEqualTo(rows);
        }
    }

    @Test
    void aFilteredReSnapshotCopiesOnlyTheMatchingRows(@TempDir Path dir) throws Exception {
        String db = "filt";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        try (Connection src = pg.connect(db)) {
            fill(src, "t", 2000);
        }
        List<TableRef> t = E2e.refs(List.of("public.t"));
        try (RunningEngine e = RunningEngine.start(yaml(db, List.of("public.t"), dir), dir).awaitStreaming(WAIT);
             Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.awaitSame(src, dst, t, WAIT);
            E2e.exec(dst, "UPDATE public.t SET v = -1", "DELETE FROM public.t WHERE id % 3 = 0");
            assertThatThrownBy(() -> e.engine().snapshot(t, "no_such_column > 1")).hasMessageContaining("not a valid condition")
                    .hasMessageContaining("no_such_column");
            assertThatThrownBy(() -> e.engine().snapshot(t, "true; DROP TABLE public.t")).hasMessageContaining("contains ';'");
            E2e.exec(src, "CREATE SEQUENCE public.side_effect");
            assertThatThrownBy(() -> e.engine().snapshot(t, "nextval('public.side_effect') > 0"))
                    .hasMessageContaining("not a valid condition").hasMessageContaining("read-only transaction");
            assertThat(E2e.queryString(src, "SELECT is_called::text FROM public.side_effect")).as("filters cannot write").isEqualTo("false");
            e.engine().snapshot(t, "id <= 1000");
            awaitOnlineDone(e);
            // rows 2..1000 repaired (the deleted ones back); the rows above untouched: still broken
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (E2e.queryLong(dst, "SELECT count(*) FROM public.t WHERE id <= 1000 AND v > 0") != 500) {
                assertThat(System.nanoTime()).as("rows up to 1000 repaired").isLessThan(deadline);
                Thread.sleep(20);
            }
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM public.t WHERE id <= 1000")).isEqualTo(500);
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM public.t WHERE id > 1000 AND v <> -1")).isZero();
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM public.t WHERE id > 1000")).isEqualTo(1000);
            e.engine().snapshot(t, null);
            awaitOnlineDone(e);
            E2e.awaitSame(src, dst, t, WAIT);

            // a filter that passes the check but fails on a later row stops that copy only; the stream goes on
            e.engine().snapshot(t, "100 / (id - 1500) > -1000");
            awaitOnlineDone(e);
            E2e.exec(src, "INSERT INTO public.t VALUES (-7, 7, 'after the failed copy')");
            E2e.awaitRow(dst, "SELECT count(*) FROM public.t WHERE id = -7", WAIT);
            assertThat(e.engine().state()).isEqualTo(io.millrace.engine.Engine.State.STREAMING);
        }
    }

    @Test
    void aRowInTheSignalTableStartsAnOnlineSnapshot(@TempDir Path dir) throws Exception {
        String db = "sig";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        try (Connection src = pg.connect(db)) {
            fill(src, "t", 2000);
            E2e.exec(src, "CREATE TABLE sig (id text PRIMARY KEY, type text NOT NULL, data text)");
        }
        List<TableRef> t = E2e.refs(List.of("public.t"));
        String yaml = yaml(db, List.of("public.t"), dir).replace("  online:\n", "  signal_table: public.sig\n  online:\n");
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT);
             Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.awaitSame(src, dst, t, WAIT);
            E2e.exec(dst, "DELETE FROM public.t");
            // Debezium's signal format; a signal naming an unknown table is logged and skipped, the next one runs
            E2e.exec(src, "INSERT INTO sig VALUES ('bad-1', 'execute-snapshot', '{\"data-collections\": [\"public.nope\"]}')",
                    "INSERT INTO sig VALUES ('ad-hoc-1', 'execute-snapshot', '{\"data-collections\": [\"public.t\"], \"type\": \"incremental\","
                            + " \"additional-conditions\": [{\"data-collection\": \"public.t\", \"filter\": \"id > 3000\"}]}')");
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (E2e.queryLong(dst, "SELECT count(*) FROM public.t") != 500) {
                assertThat(System.nanoTime()).as("the signalled copy of ids above 3000").isLessThan(deadline);
                Thread.sleep(20);
            }
            awaitOnlineDone(e);
            assertThat(E2e.queryLong(dst, "SELECT min(id) FROM public.t")).isEqualTo(3002);
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM pg_tables WHERE tablename = 'sig'")).as("signals are not copied").isZero();
            E2e.exec(src, "INSERT INTO sig VALUES ('ad-hoc-2', 'execute-snapshot', '{\"data-collections\": [\"public.t\"]}')");
            E2e.awaitSame(src, dst, t, WAIT);
        }
    }

    @Test
    void pauseHoldsTheCopyAndResumeFinishesIt(@TempDir Path dir) throws Exception {
        String db = "pause";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        try (Connection src = pg.connect(db)) {
            fill(src, "t", 3000);
        }
        List<TableRef> t = E2e.refs(List.of("public.t"));
        try (RunningEngine e = RunningEngine.start(yaml(db, List.of("public.t"), dir), dir).awaitStreaming(WAIT);
             Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.awaitSame(src, dst, t, WAIT);
            E2e.exec(dst, "DELETE FROM public.t");
            e.engine().pauseSnapshots(true);
            e.engine().snapshot(t, null);
            Thread.sleep(1000);
            assertThat(e.engine().onlineSnapshotter().chunksRead()).isZero();
            assertThat(e.engine().onlineSnapshots()).hasSize(1);
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM public.t")).isZero();
            // A filtered copy asked for meanwhile would replace the whole one and leave the other rows uncopied: refused.
            assertThatThrownBy(() -> e.engine().snapshot(t, "id <= 10")).hasMessageContaining("a copy of public.t is under way")
                    .hasMessageContaining("copy the whole table");
            assertThat(e.engine().onlineSnapshots()).hasSize(1);
            e.engine().pauseSnapshots(false);
            awaitOnlineDone(e);
            E2e.awaitSame(src, dst, t, WAIT);
        }
    }

    /**
     * Issue 17: a copy under way is recorded with its table, and a restart resumes it. A table's name may hold a dot or a
     * double quote ({@code public."odd.name ""q"""}). The checkpoint carried the table as the text {@code schema.table},
     * which for this name reads back as three parts: the restart stopped with "table name ... must be 'table' or
     * 'schema.table'", and the pipeline could not start again until the destinations' state was cleared.
     */
    @Test
    void aCopyUnderWayOfATableWithADotAndAQuoteInItsNameResumesAfterARestart(@TempDir Path dir) throws Exception {
        String db = "oddname";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        TableRef odd = new TableRef("public", "odd.name \"q\"");
        try (Connection src = pg.connect(db)) {
            E2e.exec(src, "CREATE TABLE " + odd.sql() + " (id int PRIMARY KEY, v int NOT NULL, note text)",
                    "INSERT INTO " + odd.sql() + " SELECT g, g, 'row ' || g FROM generate_series(1, 3000) g");
        }
        String yaml = yaml(db, List.of("public.\"odd.name \"\"q\"\"\""), dir);
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT);
             Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.awaitSame(src, dst, List.of(odd), WAIT);
            E2e.exec(dst, "DELETE FROM " + odd.sql());
            e.engine().pauseSnapshots(true);
            e.engine().snapshot(List.of(odd), null);
            E2e.exec(src, "UPDATE " + odd.sql() + " SET v = -1 WHERE id = 1"); // a batch, which records the copy
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (true) {
                Checkpoint c = InterruptedSnapshotIT.postgresCheckpoint(dst);
                if (c != null && !c.online().isEmpty()) {
                    assertThat(c.online()).singleElement().satisfies(t -> assertThat(t.table()).isEqualTo(odd));
                    break;
                }
                assertThat(System.nanoTime()).as("the copy recorded").isLessThan(deadline);
                Thread.sleep(50);
            }
        }
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT);
             Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            awaitOnlineDone(e);
            E2e.awaitSame(src, dst, List.of(odd), WAIT);
        }
    }

    @Test
    void aTableWithoutKeyIsRefusedWithTheFix(@TempDir Path dir) throws Exception {
        String db = "nokey";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        try (Connection src = pg.connect(db)) {
            E2e.exec(src, "CREATE TABLE k (id int PRIMARY KEY)", "CREATE TABLE loose (a int, b text)", "ALTER TABLE loose REPLICA IDENTITY FULL",
                    "INSERT INTO loose VALUES (1, 'x')");
        }
        try (RunningEngine e = RunningEngine.start(yaml(db, List.of("public.k", "public.loose"), dir), dir).awaitStreaming(WAIT)) {
            assertThatThrownBy(() -> e.engine().snapshot(E2e.refs(List.of("public.loose")), null))
                    .hasMessageContaining("public.loose has no primary key").hasMessageContaining("REPLICA IDENTITY USING INDEX");
            assertThatThrownBy(() -> e.engine().snapshot(E2e.refs(List.of("public.other")), null))
                    .hasMessageContaining("not captured by this pipeline");
        }
    }
}
