package io.millrace.engine.online;

import com.fasterxml.jackson.databind.JsonNode;
import io.millrace.core.MillraceException;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.EngineStatus;
import io.millrace.engine.Supervisor;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A reload of the configuration (issue 15, item 3) changes the table selection of a running pipeline, and nothing else.
 *
 * <p>A file that does not load, or one that changes another setting, is refused with the setting named, nothing
 * changes, and the status says the reload failed. A reload that adds {@code shop.c} and removes {@code shop.b} while
 * sessions write to all three: {@code c} joins the publication and is copied online, {@code b} leaves it, and a row
 * written to {@code b} after the reload reaches no destination while the destinations keep {@code b}'s rows. At the
 * end the postgres destination equals the source for {@code a} and {@code c}, replaying the jsonl events gives the
 * source's rows, and no streamed change (by its position) was delivered twice.
 */
class ReloadIT {
    private static final Duration WAIT = Duration.ofSeconds(60);
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
        return E2e.yaml(pg, db, "s_" + db, tables, "auto", db + "_dst", dir, "operations:\n  monitor_interval_ms: 200\n")
                .replace("snapshot:\n  mode: initial\n  readers: 2\n", "snapshot:\n  mode: initial\n  readers: 2\n  online:\n    chunk_rows: 200\n"
                        + "    min_chunk_rows: 100\n    max_chunk_rows: 500\n    target_chunk_ms: 20\n");
    }

    @Test
    void aReloadAddsAndRemovesTablesWithoutLosingOrRepeatingAChange(@TempDir Path dir) throws Exception {
        String db = "reload";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        Path file = dir.resolve("millrace.yaml");
        Path events = dir.resolve("events");
        Files.writeString(file, yaml(db, List.of("shop.a", "shop.b"), events));
        long seed = System.nanoTime();
        System.out.println("ReloadIT seed " + seed);
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            for (String t : List.of("a", "b", "c")) {
                E2e.exec(src, "CREATE SCHEMA IF NOT EXISTS shop", "CREATE TABLE shop." + t + " (id int PRIMARY KEY, v int NOT NULL, note text)",
                        "INSERT INTO shop." + t + " SELECT g, g, '" + t + "' FROM generate_series(1, 1000) g");
            }
            Supervisor sup = reloading(file);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            Thread run = running(sup, failed);
            try (Writers onA = new Writers(pg, db, List.of("shop.a"), seed, 2, 1000, 1);
                 Writers onC = new Writers(pg, db, List.of("shop.c"), seed + 2, 2, 1000, 1)) {
                Writers onB = new Writers(pg, db, List.of("shop.b"), seed + 1, 2, 1000, 1);
                awaitStreaming(sup, failed);
                assertThat(NewTableIT.published(src, db)).containsExactlyInAnyOrder("a", "b");

                // A file that does not load: the error names the key, nothing changes, the status says so.
                Files.writeString(file, yaml(db, List.of("shop.a", "shop.c"), events).replace("  tables:", "  tabels:"));
                assertThatThrownBy(sup::reload).isInstanceOf(MillraceException.class).hasMessageContaining("tabels")
                        .hasMessageContaining("nothing was changed");
                EngineStatus.Reload r = sup.status().lastReload();
                assertThat(r.ok()).isFalse();
                assertThat(r.message()).contains("tabels");
                // Another setting changed: refused with its name.
                Files.writeString(file, yaml(db, List.of("shop.a", "shop.c"), events).replace("  linger_ms: 20", "  linger_ms: 30"));
                assertThatThrownBy(sup::reload).hasMessageContaining("config: pipeline.linger_ms changed, which needs a restart");
                Files.writeString(file, yaml(db, List.of("shop.a", "shop.c"), events).replace("slot: s_reload", "slot: other"));
                assertThatThrownBy(sup::reload).hasMessageContaining("config: source.slot changed, which needs a restart");
                assertThat(sup.status().lastReload().ok()).isFalse();
                assertThat(NewTableIT.published(src, db)).containsExactlyInAnyOrder("a", "b");

                onB.close(); // b's destination copy can then be compared with the source at the reload
                E2e.awaitSame(src, dst, E2e.refs(List.of("shop.b")), WAIT);
                Files.writeString(file, yaml(db, List.of("shop.a", "shop.c"), events));
                String done = sup.reload();
                assertThat(done).contains("adding [shop.c]").contains("removed [shop.b]");
                assertThat(sup.status().lastReload().ok()).isTrue();
                assertThat(NewTableIT.published(src, db)).doesNotContain("b"); // at once
                NewTableIT.awaitPublished(src, db, "c", true); // where the stream reaches the reload's join message
                assertThat(NewTableIT.published(src, db)).containsExactlyInAnyOrder("a", "c");
                // the status lists what is captured now: b no longer (it stayed "streaming", found by a user), c
                assertThat(sup.status().tables()).extracting(EngineStatus.Table::table).contains("shop.a").doesNotContain("shop.b");
                long joined = System.nanoTime() + WAIT.toNanos();
                while (sup.status().tables().stream().noneMatch(t -> t.table().equals("shop.c"))) {
                    assertThat(System.nanoTime()).as("shop.c listed once it joined").isLessThan(joined);
                    Thread.sleep(20);
                }

                // Written after the reload: b's row reaches no destination, a's does.
                E2e.exec(src, "INSERT INTO shop.b VALUES (-1, -1, 'after the reload')", "INSERT INTO shop.a VALUES (-1, -1, 'marker')");
                E2e.awaitRow(dst, "SELECT count(*) FROM shop.a WHERE id = -1", WAIT);
                Thread.sleep(500);
                assertThat(onA.ops() + onC.ops()).isGreaterThan(100);
            }
            List<TableRef> ac = E2e.refs(List.of("shop.a", "shop.c"));
            E2e.awaitSame(src, dst, ac, WAIT);
            while (!sup.status().online().tasks().isEmpty()) {
                Thread.sleep(50);
            }
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM shop.b WHERE id = -1")).isZero();
            E2e.exec(src, "DELETE FROM shop.b WHERE id = -1");
            E2e.awaitSame(src, dst, E2e.refs(List.of("shop.b")), WAIT); // the destination kept b's rows
            sup.stop();
            run.join(30_000);
            assertThat(failed.get()).isNull();

            List<JsonNode> evs = E2e.events(events);
            for (TableRef t : E2e.refs(List.of("shop.a", "shop.b", "shop.c"))) {
                assertThat(NewTableIT.replay(evs, t.table())).as("jsonl replay of %s", t).isEqualTo(NewTableIT.rows(src, t));
            }
            Set<E2e.Pos> seen = new HashSet<>();
            for (JsonNode ev : evs) {
                if (!ev.path("op").asText().equals("r")) {
                    assertThat(seen.add(E2e.Pos.of(ev))).as("streamed change delivered once: %s", ev).isTrue();
                }
            }
        }
    }

    /**
     * A table a reload leaves out, changed in the source meanwhile (rows deleted and updated), then added back by another
     * reload: its copy reconciles, so the destinations end as the source is — before, the copy only wrote rows, and the
     * rows deleted while it was out stayed in the destinations with their old values, though the log promised a copy that
     * "reconciles the destinations' rows" (found by a user moving a table out of the selection and back).
     */
    @Test
    void aTableLeftOutAndAddedBackIsCopiedReconciling(@TempDir Path dir) throws Exception {
        String db = "reload_back";
        Path file = dir.resolve("millrace.yaml");
        Path events = dir.resolve("events");
        try (Connection src = shopAB(db, file, events); Connection dst = pg.connect(db + "_dst")) {
            Supervisor sup = reloading(file);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            Thread run = running(sup, failed);
            try {
                awaitStreaming(sup, failed);
                E2e.awaitSame(src, dst, E2e.refs(List.of("shop.a", "shop.b")), WAIT);
                Files.writeString(file, yaml(db, List.of("shop.a"), events));
                assertThat(sup.reload()).contains("removed [shop.b]");
                E2e.exec(src, "DELETE FROM shop.b WHERE id BETWEEN 11 AND 15", "UPDATE shop.b SET v = -v WHERE id BETWEEN 16 AND 20",
                        "INSERT INTO shop.b VALUES (1001, 1001, 'while out')");
                Files.writeString(file, yaml(db, List.of("shop.a", "shop.b"), events));
                assertThat(sup.reload()).contains("adding [shop.b]");
                E2e.awaitSame(src, dst, E2e.refs(List.of("shop.a", "shop.b")), WAIT);
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (!sup.status().online().tasks().isEmpty()) {
                    assertThat(System.nanoTime()).as("the copy lands").isLessThan(deadline);
                    Thread.sleep(50);
                }
                E2e.exec(src, "INSERT INTO shop.b VALUES (-1, -1, 'marker')");
                E2e.awaitRow(dst, "SELECT count(*) FROM shop.b WHERE id = -1", WAIT);
                assertThat(E2e.queryLong(dst, "SELECT count(*) FROM shop.b WHERE id BETWEEN 11 AND 15")).as("deleted while out").isZero();
                E2e.awaitSame(src, dst, E2e.refs(List.of("shop.b")), WAIT);
            } finally {
                sup.stop();
                run.join(30_000);
            }
            assertThat(failed.get()).isNull();
        }
    }

    /**
     * A reload that leaves a table out while the stream runs behind: a large transaction of {@code b} committed just before
     * the reload reaches the destinations whole, and nothing of {@code b} written after it. The reload took {@code b} out
     * at once, so the rows the stream had not reached yet were dropped, the rest of the transaction with them (found by a
     * user removing a table while the pipeline caught up); now {@code b} leaves where the stream reaches the reload.
     */
    @Test
    void aTableLeftOutKeepsWhatWasCommittedBeforeTheReloadWhole(@TempDir Path dir) throws Exception {
        String db = "reload_behind";
        Path file = dir.resolve("millrace.yaml");
        Path events = dir.resolve("events");
        int big = 300_000;
        try (Connection src = shopAB(db, file, events); Connection dst = pg.connect(db + "_dst")) {
            Supervisor sup = reloading(file);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            Thread run = running(sup, failed);
            try {
                awaitStreaming(sup, failed);
                E2e.awaitSame(src, dst, E2e.refs(List.of("shop.a", "shop.b")), WAIT);
                E2e.exec(src, "INSERT INTO shop.b SELECT g, g, 'before the reload' FROM generate_series(1001, " + (1000 + big) + ") g");
                Files.writeString(file, yaml(db, List.of("shop.a"), events));
                assertThat(sup.reload()).contains("removed [shop.b]"); // while the stream is still on the insert
                E2e.exec(src, "INSERT INTO shop.b VALUES (-1, -1, 'after the reload')", "INSERT INTO shop.a VALUES (-1, -1, 'marker')");
                E2e.awaitRow(dst, "SELECT count(*) FROM shop.a WHERE id = -1", WAIT);
                assertThat(E2e.queryLong(dst, "SELECT count(*) FROM shop.b WHERE note = 'before the reload'")).isEqualTo(big);
                assertThat(E2e.queryLong(dst, "SELECT count(*) FROM shop.b WHERE id = -1")).isZero();
                assertThat(sup.status().tables()).extracting(EngineStatus.Table::table).contains("shop.a").doesNotContain("shop.b");
            } finally {
                sup.stop();
                run.join(30_000);
            }
            assertThat(failed.get()).isNull();
            long inJsonl = E2e.events(events).stream().filter(e -> E2e.isTable(e, "b") && !e.path("op").asText().equals("r")).count();
            assertThat(inJsonl).as("b's streamed changes in the jsonl destination").isEqualTo(big);
        }
    }

    /**
     * Databases {@code db} and its destination, tables {@code shop.a} and {@code shop.b} of 1000 rows each, and a file
     * that selects both; returns a connection to {@code db}.
     */
    private static Connection shopAB(String db, Path file, Path events) throws Exception {
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        Files.writeString(file, yaml(db, List.of("shop.a", "shop.b"), events));
        Connection src = pg.connect(db);
        for (String t : List.of("a", "b")) {
            E2e.exec(src, "CREATE SCHEMA IF NOT EXISTS shop", "CREATE TABLE shop." + t + " (id int PRIMARY KEY, v int NOT NULL, note text)",
                    "INSERT INTO shop." + t + " SELECT g, g, '" + t + "' FROM generate_series(1, 1000) g");
        }
        return src;
    }

    /** A supervisor of {@code file} that reloads it when asked. */
    private static Supervisor reloading(Path file) {
        ConfigLoader loader = new ConfigLoader(Map.<String, String>of()::get);
        Supervisor sup = new Supervisor(loader.load(file));
        sup.reloadFrom(() -> loader.load(file));
        return sup;
    }

    /** {@code sup} running in a thread of its own; what it throws goes into {@code failed}. */
    private static Thread running(Supervisor sup, AtomicReference<Throwable> failed) {
        Thread run = new Thread(() -> {
            try {
                sup.run();
            } catch (Throwable t) {
                failed.set(t);
            }
        }, "test-supervisor");
        run.start();
        return run;
    }

    private static void awaitStreaming(Supervisor sup, AtomicReference<Throwable> failed) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!sup.status().state().equals("streaming")) {
            assertThat(failed.get()).isNull();
            assertThat(System.nanoTime()).as("streaming").isLessThan(deadline);
            Thread.sleep(50);
        }
    }
}
