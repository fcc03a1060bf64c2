package io.millrace.engine.online;

import com.fasterxml.jackson.databind.JsonNode;
import io.millrace.core.MillraceException;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
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
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A reload that changes the transforms of a running pipeline (issue 15: "a reload that adds, removes and re-filters
 * tables takes effect without losing or repeating a change"), while sessions write to the table: its row filter moves
 * from {@code id % 2 = 0} to {@code id % 3 = 0} and its {@code note} mask from redact to truncate(2).
 *
 * <p>What a reload cannot change is refused first, with nothing changed: a mask of a key column, {@code transforms.toast}.
 * After the reload the publication holds the new filter, the table is copied again online, reconciling: the postgres
 * destination then equals the source's rows that meet the new filter, every note truncated (none redacted, so no row of
 * the old rules is left), and the rows only the old filter passed are gone; replaying the jsonl events gives the same
 * rows, and no streamed change was delivered twice.
 */
class TransformsReloadIT {
    private static final Duration WAIT = Duration.ofSeconds(90);
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

    private static String yaml(String db, Path events, String filter, String mask) {
        return E2e.yaml(pg, db, "s_" + db, List.of("shop.t"), "auto", db + "_dst", events, "operations:\n  monitor_interval_ms: 200\n")
                .replace("snapshot:\n  mode: initial\n  readers: 2\n", "snapshot:\n  mode: initial\n  readers: 2\n  online:\n    chunk_rows: 200\n"
                        + "    min_chunk_rows: 100\n    max_chunk_rows: 500\n    target_chunk_ms: 20\n")
                + "\ntransforms:\n  hash_salt_env: SALT\n  tables:\n    - match: shop.t\n      filter: \"" + filter + "\"\n      mask: {" + mask + "}\n";
    }

    /** The source's rows that meet {@code filter}, as the destination should hold them: id -> v|note (the note masked). */
    private static Map<Integer, String> expected(Connection src, String filter, String note) throws Exception {
        Map<Integer, String> rows = new TreeMap<>();
        try (Statement s = src.createStatement(); ResultSet rs = s.executeQuery("SELECT id, v, " + note + " FROM shop.t WHERE " + filter)) {
            while (rs.next()) {
                rows.put(rs.getInt(1), rs.getString(2) + "|" + rs.getString(3));
            }
        }
        return rows;
    }

    @Test
    void aReloadThatReFiltersAndReMasksATableCopiesItAgainAndDeletesWhatTheFilterNowLeavesOut(@TempDir Path dir) throws Exception {
        String db = "treload";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        Path file = dir.resolve("millrace.yaml");
        Path events = dir.resolve("events");
        Files.writeString(file, yaml(db, events, "id % 2 = 0", "note: redact"));
        long seed = System.nanoTime();
        System.out.println("TransformsReloadIT seed " + seed);
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE SCHEMA IF NOT EXISTS shop", "CREATE TABLE shop.t (id int PRIMARY KEY, v int NOT NULL, note text)",
                    "INSERT INTO shop.t SELECT g, g, 'note ' || g FROM generate_series(1, 3000) g");
            ConfigLoader loader = new ConfigLoader(Map.of("SALT", "pepper")::get);
            Supervisor sup = new Supervisor(loader.load(file));
            sup.reloadFrom(() -> loader.load(file));
            AtomicReference<Throwable> failed = new AtomicReference<>();
            Thread run = new Thread(() -> {
                try {
                    sup.run();
                } catch (Throwable t) {
                    failed.set(t);
                }
            }, "test-supervisor");
            run.start();
            try (Writers load = new Writers(pg, db, List.of("shop.t"), seed, 2, 3000, 1)) {
                awaitStreaming(sup, failed);
                assertThat(filterOf(src, db)).contains("(id % 2) = 0");

                // What a reload cannot change: refused, nothing changed.
                Files.writeString(file, yaml(db, events, "id % 3 = 0", "note: redact, id: hash"));
                assertThatThrownBy(sup::reload).isInstanceOf(MillraceException.class).hasMessageContaining("key column 'id'")
                        .hasMessageContaining("nothing was changed");
                Files.writeString(file, yaml(db, events, "id % 3 = 0", "note: redact") + "  toast: complete\n");
                assertThatThrownBy(sup::reload).hasMessageContaining("transforms.toast").hasMessageContaining("needs a restart");
                assertThat(filterOf(src, db)).contains("(id % 2) = 0");
                assertThat(sup.status().lastReload().ok()).isFalse();

                Thread.sleep(500);
                Files.writeString(file, yaml(db, events, "id % 3 = 0", "note: truncate(2)"));
                String done = sup.reload();
                assertThat(done).contains("transforms reloaded").contains("copying [shop.t] again").contains("row filters changed");
                assertThat(sup.status().lastReload().ok()).isTrue();
                assertThat(filterOf(src, db)).contains("(id % 3) = 0"); // at once
                Thread.sleep(1500); // the load goes on over the copy
                assertThat(load.ops()).isGreaterThan(100);
            }
            E2e.exec(src, "INSERT INTO shop.t VALUES (-3, -3, 'marker')");
            E2e.awaitRow(dst, "SELECT count(*) FROM shop.t WHERE id = -3", WAIT);
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (!sup.status().online().tasks().isEmpty()) {
                assertThat(System.nanoTime()).as("the copy lands").isLessThan(deadline);
                Thread.sleep(50);
            }
            Map<Integer, String> want = expected(src, "id % 3 = 0", "left(note, 2)");
            Map<Integer, String> held = new TreeMap<>();
            try (Statement s = dst.createStatement(); ResultSet rs = s.executeQuery("SELECT id, v, note FROM shop.t")) {
                while (rs.next()) {
                    held.put(rs.getInt(1), rs.getString(2) + "|" + rs.getString(3));
                }
            }
            assertThat(held).as("postgres destination: the rows of the new filter, under the new mask").isEqualTo(want);
            sup.stop();
            run.join(30_000);
            assertThat(failed.get()).isNull();

            List<JsonNode> evs = E2e.events(events);
            assertThat(NewTableIT.replay(evs, "t")).as("jsonl replay").isEqualTo(want);
            Set<E2e.Pos> seen = new HashSet<>();
            for (JsonNode ev : evs) {
                if (!ev.path("op").asText().equals("r") && !ev.path("source").path("snapshot").asBoolean(false)) {
                    assertThat(seen.add(E2e.Pos.of(ev))).as("streamed change delivered once: %s", ev).isTrue();
                }
            }
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM shop.t WHERE id % 2 = 0 AND id % 3 <> 0")).isZero();
        }
    }

    private static String filterOf(Connection src, String db) throws Exception {
        return E2e.queryString(src, "SELECT coalesce(pg_get_expr(r.prqual, r.prrelid), '') FROM pg_publication_rel r JOIN pg_publication p"
                + " ON p.oid = r.prpubid WHERE p.pubname = 's_" + db + "'");
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
