package io.millrace.engine.transform;

import io.millrace.core.MillraceException;
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
            assertThat(E2e.columns(dst, io.millrace.core.schema.TableRef.parse("public.people"))).containsExactly("id", "name");
            assertThat(E2e.queryString(dst, "SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM public.people"))
                    .isEqualTo(E2e.queryString(src, "SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM public.people"));
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
