package io.millrace.engine.transform;

import io.millrace.core.MillraceException;
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
 * A publication the user made, as a user of another CDC tool brings it, which would leave the destinations behind the
 * source without a word.
 *
 * <p>Column lists: a publication the user made (source.create_publication: false, or one that exists already) with a column list
 * (PostgreSQL 15+: {@code FOR TABLE t (id, name)}): the stream carries only the listed columns, while a copy reads the
 * table. Found by trying what a user of another CDC tool brings: a publication that leaves a sensitive column out. Before
 * the check, the initial snapshot copied the left-out column into every destination (the very values the user kept out
 * of the publication), and the stream never updated it there. Now the start is refused, naming the table, the columns and
 * the fix (the columns left out by the transforms, which apply to copies and the stream alike, and the table published
 * whole), with nothing written; with that fix carried out it runs.
 *
 * <p>Operations: a publication that does not publish every kind of change ({@code WITH (publish = 'insert')}, an
 * append-only feed) sends no update, delete or truncate, and the destinations would keep every row as first copied.
 * Refused at start, naming what is left out and the {@code ALTER PUBLICATION} that fixes it.
 */
class UserPublicationIT {
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

    private static void people(String db) throws Exception {
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        try (Connection c = pg.connect(db)) {
            E2e.exec(c, "CREATE TABLE public.people (id int PRIMARY KEY, name text, ssn text)",
                    "INSERT INTO public.people SELECT g, 'name ' || g, 'ssn ' || g FROM generate_series(1, 20) g",
                    "CREATE PUBLICATION s_" + db + " FOR TABLE public.people (id, name)");
        }
    }

    @Test
    void columnsThePublicationLeavesOutAreRefusedAndNothingIsWritten(@TempDir Path dir) throws Exception {
        people("cl");
        String yaml = E2e.yaml(pg, "cl", "s_cl", List.of("public.people"), "auto", "cl_dst", dir);
        Throwable err = RunningEngine.start(yaml, dir).awaitEnd(WAIT);
        assertThat(err).isInstanceOf(MillraceException.class);
        assertThat(((MillraceException) err).kind()).isEqualTo(MillraceException.Kind.SOURCE_SETUP);
        assertThat(err.getMessage()).contains("publication 's_cl'").contains("public.people").contains("ssn")
                .contains("columns: {exclude: [ssn]}").contains("ALTER PUBLICATION");
        try (Connection src = pg.connect("cl"); Connection dst = pg.connect("cl_dst")) {
            assertThat(E2e.queryLong(src, "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()")).as("no slot made").isZero();
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM pg_tables WHERE tablename = 'people'")).as("nothing copied").isZero();
        }
    }

    /** The fix the refusal names, carried out: the column left out by the transforms, the whole table published. */
    @Test
    void theFixItNamesRuns(@TempDir Path dir) throws Exception {
        people("clx");
        String yaml = E2e.yaml(pg, "clx", "s_clx", List.of("public.people"), "auto", "clx_dst", dir);
        Throwable err = RunningEngine.start(yaml, dir).awaitEnd(WAIT);
        assertThat(err).isInstanceOf(MillraceException.class);
        String fix = err.getMessage().substring(err.getMessage().indexOf("BEGIN;"));
        fix = fix.substring(0, fix.indexOf("COMMIT;") + "COMMIT;".length());
        try (Connection src = pg.connect("clx")) {
            E2e.exec(src, fix);
        }
        yaml += "\ntransforms:\n  tables:\n    - {match: public.people, columns: {exclude: [ssn]}}\n";
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT);
             Connection src = pg.connect("clx"); Connection dst = pg.connect("clx_dst")) {
            E2e.exec(src, "UPDATE public.people SET name = 'renamed' WHERE id = 3", "INSERT INTO public.people VALUES (21, 'n21', 's21')",
                    "DELETE FROM public.people WHERE id = 4");
            E2e.awaitRow(dst, "SELECT count(*) FROM public.people WHERE id = 21", WAIT);
            assertThat(E2e.columns(dst, TableRef.parse("public.people"))).containsExactly("id", "name");
            assertThat(E2e.queryString(dst, "SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM public.people"))
                    .isEqualTo(E2e.queryString(src, "SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM public.people"));
        }
    }

    private static final io.millrace.core.schema.TableRef PEOPLE = TableRef.parse("public.people");

    /** people (20 rows, whole) and marks in publication s_{db}; the yaml of a pipeline capturing both. */
    private static String peopleAndMarks(String db, Path dir) throws Exception {
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        try (Connection c = pg.connect(db)) {
            E2e.exec(c, "CREATE TABLE public.people (id int PRIMARY KEY, name text, ssn text)",
                    "INSERT INTO public.people SELECT g, 'name ' || g, 'ssn ' || g FROM generate_series(1, 20) g",
                    "CREATE TABLE public.marks (id int PRIMARY KEY)",
                    "CREATE PUBLICATION s_" + db + " FOR TABLE public.people, public.marks");
        }
        return E2e.yaml(pg, db, "s_" + db, List.of("public.people", "public.marks"), "auto", db + "_dst", dir);
    }

    /** Changes of people under a column list leaving out ssn, then a row of marks; waits until the destination has it. */
    private static void changesUnderAColumnList(String db, Connection src, Connection dst) throws Exception {
        E2e.exec(src, "ALTER PUBLICATION s_" + db + " SET TABLE public.people (id, name), public.marks",
                "UPDATE public.people SET name = 'renamed', ssn = 'ssn changed' WHERE id = 2",
                "INSERT INTO public.people VALUES (21, 'name 21', 'ssn 21')",
                "DELETE FROM public.people WHERE id = 3",
                "INSERT INTO public.marks VALUES (1)");
        E2e.awaitRow(dst, "SELECT count(*) FROM public.marks WHERE id = 1", WAIT);
        assertThat(E2e.columns(dst, PEOPLE)).as("the destination keeps the column the publication left out").containsExactly("id", "name", "ssn");
        assertThat(E2e.queryString(dst, "SELECT string_agg(id || ':' || name || ':' || ssn, ',' ORDER BY id) FROM public.people"
                + " WHERE id <= 5")).as("changes withheld, values kept").isEqualTo("1:name 1:ssn 1,2:name 2:ssn 2,3:name 3:ssn 3,"
                + "4:name 4:ssn 4,5:name 5:ssn 5");
    }

    /**
     * A column list made while streaming ({@code SET TABLE people (id, name)}): pgoutput sends the listed columns only. Before
     * the fix the postgres destination followed that shape and dropped ssn with all its values (status streaming, no error).
     * Now the table's changes are withheld, the destination keeps every column, and once the whole table is published again
     * it is copied again, reconciling: the update of ssn, the insert and the delete made meanwhile all arrive.
     */
    @Test
    void aColumnListMadeWhileStreamingDropsNothingAndTheWholeTableComesBackEqual(@TempDir Path dir) throws Exception {
        String yaml = peopleAndMarks("cw", dir) + "\noperations:\n  monitor_interval_ms: 200\n";
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT);
             Connection src = pg.connect("cw"); Connection dst = pg.connect("cw_dst")) {
            E2e.awaitSame(src, dst, List.of(PEOPLE), WAIT);
            changesUnderAColumnList("cw", src, dst);
            assertThat(e.engine().status().notCaptured()).singleElement().satisfies(n -> {
                assertThat(n.table()).isEqualTo("public.people");
                assertThat(n.reason()).contains("leaves out its columns [ssn]").contains("withheld");
                assertThat(n.fix()).contains("ALTER PUBLICATION \"s_cw\" ADD TABLE \"public\".\"people\"");
            });
            // people is not changed again: the look at the catalog finds it published whole and ends its hold
            E2e.exec(src, "ALTER PUBLICATION s_cw SET TABLE public.people, public.marks");
            E2e.awaitSame(src, dst, List.of(PEOPLE), WAIT);
            assertThat(e.engine().status().notCaptured()).as("no longer withheld").isEmpty();
            E2e.exec(src, "UPDATE public.people SET name = 'after' WHERE id = 4");
            E2e.awaitSame(src, dst, List.of(PEOPLE), WAIT);
        }
    }

    /**
     * As above, stopped under the column list after the destinations' checkpoints passed the changes withheld, and the
     * whole table published again while stopped: the hold is in the checkpoints, so the restart holds on and copies the table
     * again once the stream shows it whole. Without the recorded hold the restart would see a whole table, and the update,
     * insert and delete made under the column list would never arrive.
     */
    @Test
    void aHoldRecordedBeforeAStopGoesOnAfterIt(@TempDir Path dir) throws Exception {
        String yaml = peopleAndMarks("cr", dir);
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT);
             Connection src = pg.connect("cr"); Connection dst = pg.connect("cr_dst")) {
            E2e.awaitSame(src, dst, List.of(PEOPLE), WAIT);
            changesUnderAColumnList("cr", src, dst);
            E2e.exec(src, "INSERT INTO public.marks VALUES (2)"); // a batch after the hold, durable
            E2e.awaitRow(dst, "SELECT count(*) FROM public.marks WHERE id = 2", WAIT);
        }
        try (Connection src = pg.connect("cr")) {
            E2e.exec(src, "ALTER PUBLICATION s_cr SET TABLE public.people, public.marks");
        }
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT);
             Connection src = pg.connect("cr"); Connection dst = pg.connect("cr_dst")) {
            // people is not changed again: the start's reconcile message ends its hold all the same
            E2e.exec(src, "INSERT INTO public.marks VALUES (3)");
            E2e.awaitSame(src, dst, List.of(PEOPLE), WAIT);
            E2e.exec(src, "UPDATE public.people SET name = 'after' WHERE id = 4");
            E2e.awaitSame(src, dst, List.of(PEOPLE), WAIT);
        }
    }

    /**
     * A publication made to publish inserts only while streaming ({@code SET (publish = 'insert')}): pgoutput sends no
     * update or delete, and no Relation message shows it. Before the fix the destinations silently kept every row as it
     * was. Now the catalog's look withholds the captured tables in stream order, shows them with the fix, and once the
     * publication publishes every kind again each is copied again, reconciling. {@code how}: "millrace", a publication
     * Millrace made (create_publication, the default, and its mark), which it sets right itself; otherwise the user runs the
     * fix it shows: "false", create_publication off; "theirs", a publication another consumer made (no mark), which
     * Millrace never alters, whatever create_publication says (before, it set the publish option of the other consumer's
     * publication).
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"millrace", "false", "theirs"})
    void aPublishOptionNarrowedWhileStreamingIsReconciled(String how, @TempDir Path dir) throws Exception {
        boolean managed = how.equals("millrace");
        String db = managed ? "pm" : how.equals("false") ? "pu" : "pt";
        String yaml = peopleAndMarks(db, dir).replace("  binary: auto", "  binary: auto\n  create_publication: " + !how.equals("false"))
                + "\noperations:\n  monitor_interval_ms: 200\n";
        if (managed) {
            try (Connection c = pg.connect(db)) {
                E2e.exec(c, io.millrace.source.Publisher.markSql("s_" + db)); // as Millrace marks the publications it creates
            }
        }
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT);
             Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.awaitSame(src, dst, List.of(PEOPLE), WAIT);
            E2e.exec(src, "ALTER PUBLICATION s_" + db + " SET (publish = 'insert')",
                    "UPDATE public.people SET name = 'renamed', ssn = 'ssn changed' WHERE id = 2",
                    "DELETE FROM public.people WHERE id = 3",
                    "INSERT INTO public.people VALUES (21, 'name 21', 'ssn 21')");
            if (managed) {
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (!E2e.queryString(src, "SELECT pubupdate AND pubdelete FROM pg_publication WHERE pubname = 's_" + db + "'").equals("t")) {
                    assertThat(System.nanoTime()).as("Millrace sets its publication right").isLessThan(deadline);
                    Thread.sleep(100);
                }
            } else {
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (e.engine().status().notCaptured().isEmpty()) {
                    assertThat(System.nanoTime()).as("shown in the status").isLessThan(deadline);
                    Thread.sleep(100);
                }
                assertThat(e.engine().status().notCaptured()).anySatisfy(n -> {
                    assertThat(n.table()).isEqualTo("public.people");
                    assertThat(n.reason()).contains("no longer publishes update, delete, truncate");
                    assertThat(n.fix()).isEqualTo("ALTER PUBLICATION \"s_" + db + "\" SET (publish = 'insert, update, delete, truncate');");
                });
                // An insert is still published, and after ANALYZE pgoutput describes the table again: that Relation message
                // (the same shape) must not end the hold, or the update after it, which is not published, is lost for good
                E2e.exec(src, "ANALYZE public.people", "INSERT INTO public.people VALUES (22, 'name 22', 'ssn 22')",
                        "UPDATE public.people SET name = 'while withheld' WHERE id = 5");
                // every table is withheld: the slot's confirmed position passing them says the stream went by
                String at = E2e.queryString(src, "SELECT pg_current_wal_lsn()::text");
                E2e.awaitRow(src, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 's_" + db + "' AND confirmed_flush_lsn >= '"
                        + at + "'::pg_lsn", WAIT);
                E2e.exec(src, "UPDATE public.people SET name = 'while withheld too' WHERE id = 7", e.engine().status().notCaptured().get(0).fix());
            }
            E2e.awaitSame(src, dst, List.of(PEOPLE), WAIT);
            assertThat(e.engine().status().notCaptured()).as("no longer withheld").isEmpty();
            E2e.exec(src, "UPDATE public.people SET name = 'after' WHERE id = 4", "DELETE FROM public.people WHERE id = 6");
            E2e.awaitSame(src, dst, List.of(PEOPLE), WAIT);
        }
    }

    /**
     * A publication another consumer made and reads — Debezium's filtered publication, a native subscription's — that the
     * user points Millrace at (source.publication) with create_publication left on, the default, and a source.tables that
     * takes fewer tables than it publishes. Found running Debezium beside Millrace on one publication: Millrace's start took
     * out of it the tables its own source.tables left out, and the other consumer silently stopped receiving their changes.
     * Now Millrace never alters a publication it did not create: the other consumer's table stays and its changes still
     * reach the other consumer's slot; a table Millrace wants that the publication lacks is refused with the statement to
     * run, not added (a native subscriber receiving a table it does not have stops with an error); Millrace's own table is
     * captured as before, and the other consumer's table, which pgoutput sends as the publication publishes it, does not
     * reach Millrace's destinations (it did: a table in the postgres destination, its events in the jsonl).
     */
    @Test
    void aPublicationAnotherConsumerMadeIsNeverAltered(@TempDir Path dir) throws Exception {
        String db = "shared";
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        try (Connection c = pg.connect(db)) {
            E2e.exec(c, "CREATE TABLE public.ours (id int PRIMARY KEY, v text)", "CREATE TABLE public.theirs (id int PRIMARY KEY, v text)",
                    "CREATE TABLE public.later (id int PRIMARY KEY, v text)", "INSERT INTO public.ours SELECT g, 'v' || g FROM generate_series(1, 50) g",
                    "CREATE PUBLICATION s_shared FOR TABLE public.ours, public.theirs",
                    "SELECT pg_create_logical_replication_slot('other_consumer', 'pgoutput')");
        }
        io.millrace.core.schema.TableRef ours = TableRef.parse("public.ours");
        String yaml = E2e.yaml(pg, db, "s_" + db, List.of("public.ours"), "auto", db + "_dst", dir);
        assertThat(yaml).doesNotContain("create_publication");
        try (Connection c = pg.connect(db)) { // what 'millrace preflight' shows
            io.millrace.engine.config.EngineConfig cfg = new io.millrace.engine.config.ConfigLoader(java.util.Map.<String, String>of()::get)
                    .parse(yaml, dir);
            assertThat(io.millrace.source.Preflight.run(cfg.source(), c).checks()).anySatisfy(ch -> assertThat(ch.detail())
                    .contains("'s_shared' publishes 2 table(s); Millrace did not create it").contains("never alters it"));
        }
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT);
             Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "INSERT INTO public.ours VALUES (51, 'v51')", "INSERT INTO public.theirs VALUES (1, 'for the other consumer')");
            E2e.awaitSame(src, dst, List.of(ours), WAIT);
            assertThat(E2e.queryString(src, "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_publication_tables"
                    + " WHERE pubname = 's_shared'")).as("the other consumer's publication as it made it").isEqualTo("ours,theirs");
            assertThat(E2e.queryLong(src, "SELECT count(*) FROM pg_logical_slot_peek_binary_changes('other_consumer', NULL, NULL,"
                    + " 'proto_version', '1', 'publication_names', 's_shared') WHERE get_byte(data, 0) = ascii('I')"))
                    .as("the other consumer receives the inserts of both its tables").isEqualTo(2);
            E2e.exec(src, "INSERT INTO public.ours VALUES (52, 'after theirs')"); // a change after the other table's, in order
            E2e.awaitSame(src, dst, List.of(ours), WAIT);
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM pg_tables WHERE tablename = 'theirs'"))
                    .as("the other consumer's table does not reach Millrace's destinations").isZero();
            assertThat(E2e.events(dir).stream().filter(j -> E2e.isTable(j, "public.theirs")).toList()).as("nor the jsonl").isEmpty();
        }
        // source.tables now names a table the publication lacks: refused with the statement, the publication left as it is
        String more = yaml.replace("[public.ours]", "[public.ours, public.later]");
        assertThat(more).contains("public.later");
        Throwable err = RunningEngine.start(more, dir).awaitEnd(WAIT);
        assertThat(err).isInstanceOf(MillraceException.class);
        assertThat(((MillraceException) err).kind()).isEqualTo(MillraceException.Kind.SOURCE_SETUP);
        assertThat(err.getMessage()).contains("does not publish public.later").contains("it was not created by Millrace")
                .contains("ALTER PUBLICATION \"s_shared\" ADD TABLE \"public\".\"later\";");
        try (Connection src = pg.connect(db)) {
            assertThat(E2e.queryString(src, "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_publication_tables"
                    + " WHERE pubname = 's_shared'")).isEqualTo("ours,theirs");
            E2e.exec(src, "SELECT pg_drop_replication_slot('other_consumer')");
        }
    }

    /**
     * publish_via_partition_root turned off on Millrace's publication while a partitioned table streams. Found by a DBA:
     * every poll found the root gone from the publication and copied it again whole, for as long as it lasted (five copies
     * in 40 s). Now Millrace sets the option right at once and copies the root again once, reconciling.
     */
    @Test
    void publishViaPartitionRootTurnedOffWhileStreamingIsSetRightAndTheRootReconciled(@TempDir Path dir) throws Exception {
        pg.createDatabase("vr");
        pg.createDatabase("vr_dst");
        try (Connection c = pg.connect("vr")) {
            E2e.exec(c, "CREATE TABLE public.events (id int, at date, v text, PRIMARY KEY (id, at)) PARTITION BY RANGE (at)",
                    "CREATE TABLE public.events_2024 PARTITION OF public.events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')",
                    "CREATE TABLE public.events_2025 PARTITION OF public.events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01')",
                    "INSERT INTO public.events SELECT g, '2024-06-01'::date + g, 'v' || g FROM generate_series(1, 300) g");
        }
        String yaml = E2e.yaml(pg, "vr", "s_vr", List.of("public.events"), "auto", "vr_dst", dir)
                .replace("  binary: auto", "  binary: auto\n  new_tables_poll_s: 1") + "\noperations:\n  monitor_interval_ms: 200\n";
        io.millrace.core.schema.TableRef events = TableRef.parse("public.events");
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT);
             Connection src = pg.connect("vr"); Connection dst = pg.connect("vr_dst")) {
            E2e.awaitSame(src, dst, List.of(events), WAIT);
            E2e.exec(src, "ALTER PUBLICATION s_vr SET (publish_via_partition_root = false)",
                    "UPDATE public.events SET v = 'changed' WHERE id <= 3", "DELETE FROM public.events WHERE id = 4");
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (!E2e.queryString(src, "SELECT pubviaroot FROM pg_publication WHERE pubname = 's_vr'").equals("t")) {
                assertThat(System.nanoTime()).as("Millrace sets publish_via_partition_root right").isLessThan(deadline);
                Thread.sleep(100);
            }
            E2e.exec(src, "INSERT INTO public.events VALUES (1000, '2025-02-01', 'after')");
            E2e.awaitSame(src, dst, List.of(events), WAIT);
        }
    }

    @Test
    void aPublicationThatLeavesOutUpdatesDeletesOrTruncatesIsRefused(@TempDir Path dir) throws Exception {
        pg.createDatabase("ops");
        pg.createDatabase("ops_dst");
        try (Connection c = pg.connect("ops")) {
            E2e.exec(c, "CREATE TABLE public.feed (id int PRIMARY KEY, v text)", "INSERT INTO public.feed VALUES (1, 'a')",
                    "CREATE PUBLICATION s_ops FOR TABLE public.feed WITH (publish = 'insert, truncate')");
        }
        String yaml = E2e.yaml(pg, "ops", "s_ops", List.of("public.feed"), "auto", "ops_dst", dir);
        Throwable err = RunningEngine.start(yaml, dir).awaitEnd(WAIT);
        assertThat(err).isInstanceOf(MillraceException.class);
        assertThat(((MillraceException) err).kind()).isEqualTo(MillraceException.Kind.SOURCE_SETUP);
        assertThat(err.getMessage()).contains("publication 's_ops'").contains("update").contains("delete")
                .contains("ALTER PUBLICATION \"s_ops\" SET (publish = 'insert, update, delete, truncate')");
        try (Connection src = pg.connect("ops"); Connection dst = pg.connect("ops_dst")) {
            assertThat(E2e.queryLong(src, "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()")).as("no slot made").isZero();
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM pg_tables WHERE tablename = 'feed'")).as("nothing copied").isZero();
            E2e.exec(src, "ALTER PUBLICATION s_ops SET (publish = 'insert, update, delete, truncate')");
        }
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT);
             Connection src = pg.connect("ops"); Connection dst = pg.connect("ops_dst")) {
            E2e.exec(src, "UPDATE public.feed SET v = 'b' WHERE id = 1");
            E2e.awaitRow(dst, "SELECT count(*) FROM public.feed WHERE v = 'b'", WAIT);
        }
    }
}
