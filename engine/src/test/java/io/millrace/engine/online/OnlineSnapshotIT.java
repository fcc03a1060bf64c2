package io.millrace.engine.online;

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
            // INV: BOUNDED — at most one chunk per reader in memory.
            assertThat(e.engine().onlineSnapshotter().peakBufferedRows()).isLessThanOrEqualTo(3 * 400);
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
            e.engine().pauseSnapshots(false);
            awaitOnlineDone(e);
            E2e.awaitSame(src, dst, t, WAIT);
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
