package io.millrace.engine.online;

import com.fasterxml.jackson.databind.JsonNode;
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
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A user adds a mask to the configuration while Millrace is stopped (a newcomer's trial: 449 of 500
 * e-mail addresses stayed in clear in the destinations, since the rules applied only to rows changed after the start).
 * Each destination's checkpoint records the rule every table was written under ({@code Checkpoint.rules}); the start
 * sees the table's rule changed and copies it again online, reconciling, as a reload does: afterwards the postgres
 * destination holds exactly the source's rows, every note masked, and replaying the jsonl events gives the same. A
 * start with the rules unchanged copies nothing again. A row filter added while stopped is put in the publication by
 * the start, and the copy deletes the rows it leaves out.
 */
class TransformsChangedWhileStoppedIT {
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

    private static String yaml(String db, Path events, String transforms) {
        return E2e.yaml(pg, db, "s_" + db, List.of("shop.t"), "auto", db + "_dst", events, "operations:\n  monitor_interval_ms: 200\n")
                .replace("snapshot:\n  mode: initial\n  readers: 2\n", "snapshot:\n  mode: initial\n  readers: 2\n  online:\n    chunk_rows: 200\n"
                        + "    min_chunk_rows: 100\n    max_chunk_rows: 500\n    target_chunk_ms: 20\n")
                + transforms;
    }

    @Test
    void aMaskAddedWhileStoppedReachTheRowsTheDestinationsAlreadyHold(@TempDir Path dir) throws Exception {
        String db = "tstopped";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        Path file = dir.resolve("millrace.yaml");
        Path events = dir.resolve("events");
        Files.writeString(file, yaml(db, events, ""));
        String rules = "\ntransforms:\n  tables:\n    - match: shop.t\n      mask: {note: redact}\n";
        ConfigLoader loader = new ConfigLoader(Map.<String, String>of()::get);
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE SCHEMA IF NOT EXISTS shop", "CREATE TABLE shop.t (id int PRIMARY KEY, v int NOT NULL, note text)",
                    "INSERT INTO shop.t SELECT g, g, 'alice' || g || '@example.com' FROM generate_series(1, 3000) g");
            run(loader, file, src, dst, () -> {
                E2e.exec(src, "INSERT INTO shop.t VALUES (-1, -1, 'marker')");
                E2e.awaitRow(dst, "SELECT count(*) FROM shop.t WHERE id = -1", WAIT);
            });
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM shop.t WHERE note LIKE 'alice%'")).isEqualTo(3000);

            // While stopped: the rules change, and the source too.
            Files.writeString(file, yaml(db, events, rules));
            E2e.exec(src, "UPDATE shop.t SET v = v + 1 WHERE id % 10 = 0", "DELETE FROM shop.t WHERE id BETWEEN 11 AND 20");
            run(loader, file, src, dst, () -> awaitLanded(src, dst, -2));
            Map<Integer, String> want = masked(src);
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM shop.t WHERE note LIKE 'alice%'")).as("notes in clear in the postgres"
                    + " destination").isZero();
            assertThat(rows(dst)).as("postgres destination: every row under the new mask").isEqualTo(want);
            assertThat(NewTableIT.replay(E2e.events(events), "t")).as("jsonl replay").isEqualTo(want);
            long copied = copiedRows(events);

            // A start with the same rules copies nothing again.
            run(loader, file, src, dst, () -> awaitLanded(src, dst, -4));
            assertThat(copiedRows(events)).as("rows copied again by a start with unchanged rules").isEqualTo(copied);
            assertThat(rows(dst)).isEqualTo(masked(src));
        }
    }

    /**
     * A row filter added while stopped (with a mask): the start changes the filter in the publication it manages, as a
     * reload does, and copies the table again, reconciling, so the rows the new filter leaves out are deleted from the
     * destinations (before, the start refused with the statements to run by hand).
     */
    @Test
    void aRowFilterAddedWhileStoppedLeavesOnlyTheRowsItPasses(@TempDir Path dir) throws Exception {
        String db = "tstopfilter";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        Path file = dir.resolve("millrace.yaml");
        Path events = dir.resolve("events");
        Files.writeString(file, yaml(db, events, ""));
        ConfigLoader loader = new ConfigLoader(Map.<String, String>of()::get);
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE SCHEMA IF NOT EXISTS shop", "CREATE TABLE shop.t (id int PRIMARY KEY, v int NOT NULL, note text)",
                    "INSERT INTO shop.t SELECT g, g, 'alice' || g || '@example.com' FROM generate_series(1, 3000) g");
            run(loader, file, src, dst, () -> awaitLanded(src, dst, -1));
            Files.writeString(file, yaml(db, events, "\ntransforms:\n  tables:\n    - match: shop.t\n      filter: \"id % 2 = 0\"\n"
                    + "      mask: {note: redact}\n"));
            E2e.exec(src, "UPDATE shop.t SET v = v + 1 WHERE id % 10 = 0", "DELETE FROM shop.t WHERE id BETWEEN 11 AND 20");
            run(loader, file, src, dst, () -> awaitLanded(src, dst, -2));
            Map<Integer, String> want = new TreeMap<>();
            try (Statement s = src.createStatement(); ResultSet rs = s.executeQuery("SELECT id, v FROM shop.t WHERE id % 2 = 0")) {
                while (rs.next()) {
                    want.put(rs.getInt(1), rs.getString(2) + "|[redacted]");
                }
            }
            assertThat(rows(dst)).as("postgres destination: the rows of the new filter, under the new mask").isEqualTo(want);
            assertThat(NewTableIT.replay(E2e.events(events), "t")).as("jsonl replay").isEqualTo(want);
            assertThat(E2e.queryString(src, "SELECT pg_get_expr(r.prqual, r.prrelid) FROM pg_publication_rel r JOIN pg_publication p"
                    + " ON p.oid = r.prpubid WHERE p.pubname = 's_" + db + "'")).contains("(id % 2) = 0");
        }
    }

    /**
     * A hash mask on the key column taken away while stopped: the destinations hold every row under its hashed key, and
     * a copy would add each row again under its key in clear (3,000 rows would become 6,000). The start refuses, naming
     * the key column, and the destination keeps what it held (before, the checkpoints' stamps did not tell what a rule
     * masked, and this start copied).
     */
    @Test
    void aKeyMaskTakenAwayWhileStoppedIsRefusedNotCopiedTwice(@TempDir Path dir) throws Exception {
        String db = "tstopkey";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        Path file = dir.resolve("millrace.yaml");
        Path events = dir.resolve("events");
        Files.writeString(file, yaml(db, events, "\ntransforms:\n  hash_salt_env: SALT\n  tables:\n    - match: shop.t\n"
                + "      mask: {id: hash}\n"));
        ConfigLoader loader = new ConfigLoader(Map.of("SALT", "s3cret salt")::get);
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE SCHEMA IF NOT EXISTS shop", "CREATE TABLE shop.t (id int PRIMARY KEY, v int NOT NULL, note text)",
                    "INSERT INTO shop.t SELECT g, g, 'n' || g FROM generate_series(1, 3000) g");
            Supervisor first = new Supervisor(loader.load(file));
            Thread t = new Thread(() -> {
                try {
                    first.run();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "test-supervisor");
            t.start();
            try {
                E2e.awaitRow(dst, "SELECT CASE WHEN count(*) >= 3000 THEN 1 ELSE 0 END FROM shop.t", WAIT);
            } finally {
                first.stop();
                t.join(30_000);
            }
            long held = E2e.queryLong(dst, "SELECT count(*) FROM shop.t");

            Files.writeString(file, yaml(db, events, ""));
            Throwable refused = org.assertj.core.api.Assertions.catchThrowable(() -> new Supervisor(loader.load(file)).run());
            assertThat(refused).isInstanceOf(io.millrace.core.MillraceException.class).hasMessageContaining("and so did the mask of its"
                    + " key column 'id' (a mask added, taken away or changed, or the salt of its hash)");
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM shop.t")).as("rows the destination holds").isEqualTo(held).isEqualTo(3000);
        }
    }

    /** A marker row {@code id} reached the destination, and no online copy is left. */
    private static void awaitLanded(Connection src, Connection dst, int id) throws Exception {
        E2e.exec(src, "INSERT INTO shop.t VALUES (" + id + ", " + id + ", 'marker')");
        E2e.awaitRow(dst, "SELECT count(*) FROM shop.t WHERE id = " + id, WAIT);
    }

    /** The source's rows as the destination holds them under the mask: id -> v|[redacted]. */
    private static Map<Integer, String> masked(Connection src) throws Exception {
        Map<Integer, String> want = new TreeMap<>();
        try (Statement s = src.createStatement(); ResultSet rs = s.executeQuery("SELECT id, v FROM shop.t")) {
            while (rs.next()) {
                want.put(rs.getInt(1), rs.getString(2) + "|[redacted]");
            }
        }
        return want;
    }

    private static long copiedRows(Path events) throws Exception {
        return E2e.events(events).stream().filter(ev -> ev.path("op").asText().equals("r")).count();
    }

    private static Map<Integer, String> rows(Connection dst) throws Exception {
        Map<Integer, String> held = new TreeMap<>();
        try (Statement s = dst.createStatement(); ResultSet rs = s.executeQuery("SELECT id, v, note FROM shop.t")) {
            while (rs.next()) {
                held.put(rs.getInt(1), rs.getString(2) + "|" + rs.getString(3));
            }
        }
        return held;
    }

    interface Step {
        void run() throws Exception;
    }

    private static int markers;

    /**
     * Runs the pipeline of {@code file} until it streams, {@code step} is done, no online copy is left and a row written
     * after that reached the destination (the copy's last rows are written before it); stops it.
     */
    private static void run(ConfigLoader loader, Path file, Connection src, Connection dst, Step step) throws Exception {
        Supervisor sup = new Supervisor(loader.load(file));
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                sup.run();
            } catch (Throwable e) {
                failed.set(e);
            }
        }, "test-supervisor");
        t.start();
        try {
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (!sup.status().state().equals("streaming")) {
                assertThat(failed.get()).isNull();
                assertThat(System.nanoTime()).as("streaming").isLessThan(deadline);
                Thread.sleep(50);
            }
            step.run();
            while (!sup.status().online().tasks().isEmpty()) {
                assertThat(System.nanoTime()).as("the copy lands").isLessThan(deadline);
                Thread.sleep(50);
            }
            awaitLanded(src, dst, -1000 - 2 * ++markers); // even: a row filter id % 2 = 0 passes it
        } finally {
            sup.stop();
            t.join(30_000);
        }
        assertThat(failed.get()).isNull();
    }
}
