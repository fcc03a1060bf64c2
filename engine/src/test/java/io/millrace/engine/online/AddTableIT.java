package io.millrace.engine.online;

import com.fasterxml.jackson.databind.JsonNode;
import io.millrace.core.change.OnlineTask;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A table added to the configuration of a pipeline that already streams: on the next start it is added
 * to the publication and copied online (DBLog watermarks) while the stream of the other tables goes on,
 * with sessions writing to both tables all the while.
 *
 * <p>INV: WATERMARK, HANDOVER — the new table's rows come from its chunks, its changes from the stream,
 * and at the end the postgres destination equals the source for both tables; a chunk row emitted after a
 * newer streamed change of its key would leave a stale value. The copy is paused once its first chunk
 * landed, and a marker row written to the old table then must reach the destination while the new
 * table is only partly there: the stream of the old table does not wait for the copy.
 */
class AddTableIT {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String ONLINE = "snapshot:\n  mode: initial\n  readers: 2\n  online:\n    readers: 2\n    chunk_rows: 200\n"
            + "    min_chunk_rows: 100\n    max_chunk_rows: 500\n    target_chunk_ms: 20\n";
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
        return E2e.yaml(pg, db, "s_" + db, tables, "auto", db + "_dst", dir).replace("snapshot:\n  mode: initial\n  readers: 2\n", ONLINE);
    }

    @Test
    void aTableAddedToTheConfigurationIsCopiedOnlineWhileTheOthersStream(@TempDir Path dir) throws Exception {
        String db = "addt";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        int rowsA = 2_000;
        int rowsB = 20_000;
        List<TableRef> both = E2e.refs(List.of("public.a", "public.b"));
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE a (id int PRIMARY KEY, v int NOT NULL, note text)",
                    "INSERT INTO a SELECT g, g, 'a ' || g FROM generate_series(1, " + rowsA + ") g");
            try (RunningEngine e = RunningEngine.start(yaml(db, List.of("public.a"), dir), dir).awaitStreaming(WAIT)) {
                E2e.awaitSame(src, dst, E2e.refs(List.of("public.a")), WAIT);
            }
            assertThat(publicationTables(src, db)).containsExactly("a");

            // While the pipeline is stopped: a new table, filled, then added to the configuration.
            E2e.exec(src, "CREATE TABLE b (id int PRIMARY KEY, v int NOT NULL, note text)",
                    "INSERT INTO b SELECT g, g, 'b ' || g FROM generate_series(1, " + rowsB + ") g");
            long seed = System.nanoTime();
            System.out.println("AddTableIT seed " + seed);
            int eventsBefore = E2e.events(dir).size();
            boolean sawTask = false;
            long markerSeen;
            long bRowsAtMarker;
            try (LogCapture log = new LogCapture();
                 Writers w = new Writers(pg, db, List.of("public.a", "public.b"), seed, 4, rowsB, 1);
                 RunningEngine e = RunningEngine.start(yaml(db, List.of("public.a", "public.b"), dir), dir).awaitStreaming(WAIT)) {
                // Wait for the first landed chunk of b, then hold the copy there.
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (true) {
                    List<OnlineTask> tasks = e.engine().onlineSnapshots();
                    if (!tasks.isEmpty()) {
                        sawTask = true;
                        assertThat(tasks).extracting(OnlineTask::table).containsExactly(new io.millrace.core.schema.TableRef("public", "b"));
                        if (tasks.get(0).rowsDone() > 0) {
                            e.engine().pauseSnapshots(true);
                            break;
                        }
                    }
                    assertThat(sawTask || e.engine().onlineSnapshotter() == null || e.engine().onlineSnapshotter().chunksRead() == 0)
                            .as("the copy of b finished before the test saw it under way").isTrue();
                    assertThat(System.nanoTime()).as("no chunk of b landed").isLessThan(deadline);
                    Thread.sleep(2);
                }
                assertThat(publicationTables(src, db)).containsExactlyInAnyOrder("a", "b");
                assertThat(log.containing("added [public.b] to publication")).hasSize(1);
                assertThat(log.containing("online snapshot of public.b")).isNotEmpty();

                // The copy holds (paused, partly landed); the stream of a goes on.
                E2e.exec(src, "INSERT INTO a VALUES (-1, -1, 'marker during the copy of b')");
                E2e.awaitRow(dst, "SELECT count(*) FROM public.a WHERE id = -1", WAIT);
                markerSeen = System.nanoTime();
                bRowsAtMarker = E2e.queryLong(dst, "SELECT count(*) FROM public.b");
                assertThat(e.engine().onlineSnapshots()).as("b still being copied when a's marker arrived").hasSize(1);
                assertThat(bRowsAtMarker).as("rows of b in the destination when a's marker arrived").isPositive()
                        .isLessThan(E2e.queryLong(src, "SELECT count(*) FROM public.b"));

                e.engine().pauseSnapshots(false);
                while (!e.engine().onlineSnapshots().isEmpty()) {
                    assertThat(System.nanoTime()).as("online snapshot of b not landed: %s", e.engine().onlineSnapshots()).isLessThan(deadline);
                    Thread.sleep(20);
                }
                assertThat(log.awaitContaining("online snapshot of public.b landed")).hasSize(1);
                Thread.sleep(300); // writes after the copy, streamed
                assertThat(w.ops()).as("the sessions wrote during the test").isGreaterThan(100);
                w.close();
                E2e.awaitSame(src, dst, both, WAIT);
                System.out.printf("AddTableIT: %d writes; b had %d rows in the destination when a's marker arrived; %d chunks read (%d again),"
                                + " peak %d rows buffered%n", w.ops(), bRowsAtMarker, e.engine().onlineSnapshotter().chunksRead(),
                        e.engine().onlineSnapshotter().chunksRetried(), e.engine().onlineSnapshotter().peakBufferedRows());
                // INV: BOUNDED — at most one chunk per reader in memory. A chunk may hold rows the sessions inserted into
                // its key range after it was cut (1,001 were seen with two readers of 500), as in OnlineSnapshotIT.
                assertThat(e.engine().onlineSnapshotter().peakBufferedRows()).isLessThanOrEqualTo(2 * 500 * 5 / 4);
            }
            assertThat(markerSeen).isPositive();

            // The jsonl destination: b's rows as snapshot reads, interleaved with a's streamed changes.
            List<JsonNode> events = E2e.events(dir).subList(eventsBefore, E2e.events(dir).size());
            int firstRead = -1;
            int lastRead = -1;
            for (int i = 0; i < events.size(); i++) {
                JsonNode ev = events.get(i);
                if (E2e.isTable(ev, "b") && ev.path("op").asText().equals("r")) {
                    assertThat(ev.path("source").path("snapshot").asText()).isIn("true", "incremental", "last");
                    firstRead = firstRead < 0 ? i : firstRead;
                    lastRead = i;
                }
            }
            assertThat(firstRead).as("b's rows were written to the jsonl destination as reads").isNotNegative();
            long aStreamedDuringCopy = events.subList(firstRead, lastRead).stream()
                    .filter(ev -> E2e.isTable(ev, "a") && !ev.path("op").asText().equals("r")).count();
            assertThat(aStreamedDuringCopy).as("changes of a between b's first and last read event").isPositive();
            assertThat(events.stream().filter(ev -> E2e.isTable(ev, "a") && ev.path("op").asText().equals("r")).count())
                    .as("a is not copied again").isZero();
            // still the same after a clean restart: nothing left to copy
            try (LogCapture log = new LogCapture();
                 RunningEngine e = RunningEngine.start(yaml(db, List.of("public.a", "public.b"), dir), dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "UPDATE b SET note = 'after restart' WHERE id = (SELECT min(id) FROM b)");
                E2e.awaitSame(src, dst, both, WAIT);
                assertThat(e.engine().onlineSnapshots()).isEmpty();
                assertThat(log.containing("online snapshot of")).isEmpty();
            }
        }
    }

    /**
     * A first start (no slot) on a publication that exists and lacks a configured table (left by a reset that kept the
     * publication, or a migration's abort before a table was added): the table is added before the slot is made and the
     * initial snapshot copies it. Preflight refused it before ("does not publish"), though the start adds it: a migrate
     * user's run stopped there, exit 6, with the target's schema written.
     */
    @Test
    void aFirstStartAddsAConfiguredTableTheExistingPublicationLacks(@TempDir Path dir) throws Exception {
        String db = "addfresh";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE a (id int PRIMARY KEY, v int)", "CREATE TABLE b (id int PRIMARY KEY, v int)",
                    "INSERT INTO a SELECT g, g FROM generate_series(1, 100) g", "INSERT INTO b SELECT g, g FROM generate_series(1, 300) g",
                    "CREATE PUBLICATION s_" + db + " FOR TABLE a WITH (publish_via_partition_root = true)",
                    io.millrace.source.Publisher.markSql("s_" + db)); // Millrace's, as the reset or abort left it
            try (RunningEngine e = RunningEngine.start(yaml(db, List.of("public.a", "public.b"), dir), dir).awaitStreaming(WAIT)) {
                E2e.awaitSame(src, dst, E2e.refs(List.of("public.a", "public.b")), WAIT);
                assertThat(publicationTables(src, db)).containsExactlyInAnyOrder("a", "b");
                assertThat(e.engine().state()).isNotNull();
            }
        }
    }

    private static List<String> publicationTables(Connection c, String db) throws Exception {
        List<String> out = new java.util.ArrayList<>();
        try (var s = c.createStatement(); var rs = s.executeQuery("SELECT tablename FROM pg_publication_tables WHERE pubname = 's_" + db
                + "' ORDER BY 1")) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }
}
