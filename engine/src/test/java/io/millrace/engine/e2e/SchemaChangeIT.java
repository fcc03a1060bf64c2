package io.millrace.engine.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import io.millrace.api.Millrace;
import io.millrace.api.SourceSettings;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
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
 * Shape changes and identity corner cases while streaming: columns added (rows written after),
 * dropped and retyped; a table with a primary key and REPLICA IDENTITY FULL (an update updates, never
 * duplicates); a table without a primary key (REPLICA IDENTITY FULL) with identical rows of which one
 * is deleted or updated; TRUNCATE. The postgres destination must equal the source.
 */
class SchemaChangeIT {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        E2e.init();
        pg = EmbeddedPg.builder().major(17).start();
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    @Test
    void shapeChangesAndIdentityCornersKeepTheDestinationEqual(@TempDir Path dir) throws Exception {
        pg.createDatabase("shape");
        pg.createDatabase("shape_dst");
        List<String> tables = List.of("public.evolve", "public.full_pk", "public.nopk", "public.trunc", "public.trunc2");
        Path events = dir.resolve("events");
        try (Connection s = pg.connect("shape"); Connection d = pg.connect("shape_dst")) {
            E2e.exec(s, "CREATE TABLE public.evolve (id int PRIMARY KEY, a text, b int)",
                    "CREATE TABLE public.full_pk (id int PRIMARY KEY, v text, n int)",
                    "ALTER TABLE public.full_pk REPLICA IDENTITY FULL",
                    "CREATE TABLE public.nopk (a int, b text)",
                    "ALTER TABLE public.nopk REPLICA IDENTITY FULL",
                    "CREATE TABLE public.trunc (id int PRIMARY KEY, v text)",
                    "CREATE TABLE public.trunc2 (id int PRIMARY KEY, v text)",
                    "INSERT INTO public.evolve SELECT g, 'a' || g, g FROM generate_series(1, 5) g",
                    "INSERT INTO public.full_pk SELECT g, 'v' || g, g FROM generate_series(1, 5) g",
                    "INSERT INTO public.nopk VALUES (1, 'x'), (1, 'x'), (2, 'y'), (NULL, 'n'), (NULL, 'n')",
                    "INSERT INTO public.trunc SELECT g, 'snap' || g FROM generate_series(1, 20) g",
                    "INSERT INTO public.trunc2 SELECT g, 'snap' || g FROM generate_series(1, 3) g");
            Millrace.Builder pipeline = E2e.pipeline(pg, "shape", "shape", tables, SourceSettings.BinaryMode.AUTO, "shape_dst", events);
            try (RunningEngine engine = RunningEngine.start(pipeline)) {
                engine.awaitStreaming(WAIT);

                // a column added, then written: in new rows and in old ones
                E2e.exec(s, "INSERT INTO public.evolve VALUES (6, 'a6', 6)",
                        "ALTER TABLE public.evolve ADD COLUMN c text",
                        "INSERT INTO public.evolve VALUES (7, 'a7', 7, 'c7')",
                        "UPDATE public.evolve SET c = 'c' || id WHERE id IN (1, 2)");
                // a column dropped, then rows written
                E2e.exec(s, "ALTER TABLE public.evolve DROP COLUMN b",
                        "INSERT INTO public.evolve VALUES (8, 'a8', 'c8')",
                        "UPDATE public.evolve SET a = 'a3 changed' WHERE id = 3",
                        "DELETE FROM public.evolve WHERE id = 4");
                // a column added and retyped in one transaction, then written
                E2e.tx(s, "ALTER TABLE public.evolve ADD COLUMN d int",
                        "UPDATE public.evolve SET d = id * 1000 WHERE id <= 6",
                        "ALTER TABLE public.evolve ALTER COLUMN d TYPE bigint",
                        "INSERT INTO public.evolve VALUES (9, 'a9', 'c9', 9000000000)");
                E2e.awaitSame(s, d, E2e.refs(List.of("public.evolve")), WAIT);

                // primary key and REPLICA IDENTITY FULL: updates update (also of the key), deletes delete
                E2e.exec(s, "UPDATE public.full_pk SET v = 'changed' WHERE id = 1",
                        "UPDATE public.full_pk SET n = NULL WHERE id = 2",
                        "UPDATE public.full_pk SET id = 100 WHERE id = 3",
                        "UPDATE public.full_pk SET v = v || '!'",
                        "DELETE FROM public.full_pk WHERE id = 4",
                        "INSERT INTO public.full_pk VALUES (4, 'again', 4)");

                // no primary key, REPLICA IDENTITY FULL: one of two identical rows deleted, one updated
                E2e.exec(s, "DELETE FROM public.nopk WHERE ctid = (SELECT min(ctid) FROM public.nopk WHERE a = 1)",
                        "DELETE FROM public.nopk WHERE ctid = (SELECT min(ctid) FROM public.nopk WHERE a IS NULL)",
                        "INSERT INTO public.nopk VALUES (3, 'z'), (3, 'z'), (3, 'z')",
                        "UPDATE public.nopk SET b = 'z2' WHERE ctid = (SELECT max(ctid) FROM public.nopk WHERE a = 3)",
                        "INSERT INTO public.nopk VALUES (2, 'y')",
                        "UPDATE public.nopk SET b = 'yy' WHERE a = 2");

                // TRUNCATE: alone; of two tables at once; followed by rows in the same transaction
                E2e.exec(s, "INSERT INTO public.trunc VALUES (21, 'streamed')",
                        "TRUNCATE public.trunc",
                        "INSERT INTO public.trunc VALUES (1, 'after the truncate')");
                E2e.exec(s, "TRUNCATE public.trunc, public.trunc2");
                E2e.tx(s, "INSERT INTO public.trunc VALUES (2, 'in the truncating tx, before')",
                        "TRUNCATE public.trunc2",
                        "INSERT INTO public.trunc2 VALUES (5, 'in the truncating tx, after')",
                        "UPDATE public.trunc SET v = 'updated after' WHERE id = 2");
                E2e.exec(s, "INSERT INTO public.trunc VALUES (3, 'last')");

                E2e.awaitSame(s, d, E2e.refs(tables), WAIT);
                assertThat(E2e.queryLong(s, "SELECT count(*) FROM public.nopk")).isEqualTo(7);
                assertThat(E2e.queryLong(d, "SELECT count(*) FROM public.nopk WHERE a = 1")).isEqualTo(1);

                List<JsonNode> all = E2e.awaitEvent(events, e -> E2e.isTable(e, "trunc") && E2e.row(e).path("id").asInt() == 3,
                        "for the last insert", WAIT);
                // the jsonl events: truncates as 't', a keyless delete carries the whole old row
                assertThat(all.stream().filter(e -> e.path("op").asText().equals("t") && E2e.isTable(e, "trunc"))).hasSize(2);
                assertThat(all.stream().filter(e -> e.path("op").asText().equals("t") && E2e.isTable(e, "trunc2"))).hasSize(2);
                JsonNode del = all.stream().filter(e -> e.path("op").asText().equals("d") && E2e.isTable(e, "nopk")).findFirst()
                        .orElseThrow();
                assertThat(del.path("before").path("a").asInt()).isEqualTo(1);
                assertThat(del.path("before").path("b").asText()).isEqualTo("x");
                JsonNode added = all.stream().filter(e -> E2e.isTable(e, "evolve") && e.path("op").asText().equals("c")
                        && e.path("after").path("id").asInt() == 9).findFirst().orElseThrow();
                assertThat(added.path("after").has("b")).as("dropped column b is gone from later events").isFalse();
                assertThat(added.path("after").path("d").asLong()).isEqualTo(9_000_000_000L);
            }
        }
    }

    /**
     * ADD COLUMN ... DEFAULT fills every existing row in the source without writing them (no WAL, no
     * change event): the destination's copy of those rows must get the default too.
     *
     * <p>KNOWN BUG (reported by the e2e tests, not fixed): the postgres destination adds the column
     * without its default (sink-postgres TargetTables.addColumn), so rows 1..6 keep NULL there while
     * the source has 7 — a silent difference.
     */
    @Test
    /**
     * The source fills the old rows without change events. Fixed: the engine sees the new shape, finds the column's
     * default, and copies the table again online.
     */
    void aColumnAddedWithADefaultHasItInTheOldRowsToo(@TempDir Path dir) throws Exception {
        pg.createDatabase("dflt");
        pg.createDatabase("dflt_dst");
        List<String> tables = List.of("public.t");
        try (Connection s = pg.connect("dflt"); Connection d = pg.connect("dflt_dst")) {
            E2e.exec(s, "CREATE TABLE public.t (id int PRIMARY KEY, a text)",
                    "INSERT INTO public.t SELECT g, 'a' || g FROM generate_series(1, 5) g");
            Millrace.Builder pipeline = E2e.pipeline(pg, "dflt", "dflt", tables, SourceSettings.BinaryMode.AUTO, "dflt_dst", dir.resolve("events"));
            try (RunningEngine engine = RunningEngine.start(pipeline)) {
                engine.awaitStreaming(WAIT);
                E2e.exec(s, "INSERT INTO public.t VALUES (6, 'a6')",
                        "ALTER TABLE public.t ADD COLUMN flag int NOT NULL DEFAULT 7",
                        "INSERT INTO public.t VALUES (7, 'a7', 8)");
                E2e.awaitSame(s, d, E2e.refs(tables), WAIT); // the old rows' values come from the online re-copy
            }
        }
    }

    /**
     * The same DDL on tables not changed since the engine started: pgoutput describes a table before its first change
     * of a session, so the first Relation message of each shows the new shape only, and the stream alone never shows the
     * shape change. The engine compares it with the shape its start read from the catalog (a change committed after that
     * read). Fails without it: the old rows keep NULL for the added column, and their old values for the retyped one.
     */
    @Test
    void theSameOnTablesNotChangedSinceTheStartHasItInTheOldRowsToo(@TempDir Path dir) throws Exception {
        pg.createDatabase("quiet");
        pg.createDatabase("quiet_dst");
        List<String> tables = List.of("public.added", "public.retyped", "public.untouched");
        try (Connection s = pg.connect("quiet"); Connection d = pg.connect("quiet_dst")) {
            E2e.exec(s, "CREATE TABLE public.added (id int PRIMARY KEY, a text)",
                    "CREATE TABLE public.retyped (id int PRIMARY KEY, n int)",
                    "CREATE TABLE public.untouched (id int PRIMARY KEY, n int)",
                    "INSERT INTO public.added SELECT g, 'a' || g FROM generate_series(1, 5) g",
                    "INSERT INTO public.retyped SELECT g, g FROM generate_series(1, 5) g",
                    "INSERT INTO public.untouched SELECT g, g FROM generate_series(1, 5) g");
            Millrace.Builder pipeline = E2e.pipeline(pg, "quiet", "quiet", tables, SourceSettings.BinaryMode.AUTO, "quiet_dst", dir.resolve("events"));
            try (RunningEngine engine = RunningEngine.start(pipeline)) {
                engine.awaitStreaming(WAIT);
                E2e.exec(s, "ALTER TABLE public.added ADD COLUMN flag int NOT NULL DEFAULT 7",
                        "ALTER TABLE public.retyped ALTER COLUMN n TYPE text USING 'n=' || n",
                        "INSERT INTO public.added VALUES (6, 'a6', 8)",
                        "INSERT INTO public.retyped VALUES (6, 'n=6')",
                        "INSERT INTO public.untouched VALUES (6, 6)");
                E2e.awaitSame(s, d, E2e.refs(tables), WAIT); // the old rows' values come from the online re-copy
            }
        }
    }

    /**
     * The same DDL made while Millrace is stopped, on tables not changed between the last durable change and the DDL: the
     * stream after the restart shows the new shape only, and the start's catalog read already has it. Each destination's
     * checkpoint records the shape of each table it holds (a fingerprint); a table's first Relation message of the run
     * that differs from it was reshaped while stopped, and is copied again. Fails without the record: the old rows keep
     * NULL for the added column, and their old values for the retyped one. And a restart with no DDL copies nothing again
     * (tables whose shapes the catalog and the stream could tell apart: an enum, a domain, typmods, an array,
     * REPLICA IDENTITY FULL, a partitioned table published through its root).
     */
    @Test
    void theSameWhileMillraceIsStoppedHasItInTheOldRowsTooAndARestartWithoutDdlCopiesNothing(@TempDir Path dir) throws Exception {
        pg.createDatabase("away");
        pg.createDatabase("away_dst");
        List<String> tables = List.of("public.added", "public.retyped", "public.kinds", "public.full_id", "public.parts");
        try (Connection s = pg.connect("away"); Connection d = pg.connect("away_dst");
             io.millrace.engine.online.LogCapture log = new io.millrace.engine.online.LogCapture()) {
            E2e.exec(s, "CREATE TYPE public.mood AS ENUM ('sad', 'ok')",
                    "CREATE DOMAIN public.pos AS int CHECK (VALUE > 0)",
                    "CREATE TABLE public.added (id int PRIMARY KEY, a text)",
                    "CREATE TABLE public.retyped (id int PRIMARY KEY, n int)",
                    "CREATE TABLE public.kinds (id int PRIMARY KEY, m public.mood, p public.pos, v varchar(20), x numeric(10,2),"
                            + " t timestamptz(3), tags text[])",
                    "CREATE TABLE public.full_id (id int PRIMARY KEY, v text)",
                    "ALTER TABLE public.full_id REPLICA IDENTITY FULL",
                    "CREATE TABLE public.parts (id int, v text, PRIMARY KEY (id)) PARTITION BY RANGE (id)",
                    "CREATE TABLE public.parts_1 PARTITION OF public.parts FOR VALUES FROM (0) TO (1000)",
                    "INSERT INTO public.added SELECT g, 'a' || g FROM generate_series(1, 5) g",
                    "INSERT INTO public.retyped SELECT g, g FROM generate_series(1, 5) g",
                    "INSERT INTO public.kinds SELECT g, 'ok', g, 'v' || g, g / 3.0, now(), ARRAY['a', 'b'] FROM generate_series(1, 5) g",
                    "INSERT INTO public.full_id SELECT g, 'v' || g FROM generate_series(1, 5) g",
                    "INSERT INTO public.parts SELECT g, 'v' || g FROM generate_series(1, 5) g");
            Millrace.Builder pipeline = E2e.pipeline(pg, "away", "away", tables, SourceSettings.BinaryMode.AUTO, "away_dst", dir.resolve("events"));
            String again = "copying it again";
            try (RunningEngine engine = RunningEngine.start(pipeline)) {
                engine.awaitStreaming(WAIT);
                // the other tables' shapes as the snapshot wrote them: compared with the stream's after the restart below
                E2e.exec(s, "INSERT INTO public.added VALUES (6, 'a6')");
                E2e.awaitSame(s, d, E2e.refs(tables), WAIT);
            }
            try (RunningEngine engine = RunningEngine.start(pipeline)) { // no DDL: nothing is copied again
                engine.awaitStreaming(WAIT);
                E2e.exec(s, "INSERT INTO public.kinds VALUES (7, 'ok', 7, 'v7', 2.5, now(), '{c}')",
                        "UPDATE public.full_id SET v = 'x' WHERE id = 3", "INSERT INTO public.parts VALUES (7, 'v7')",
                        "INSERT INTO public.retyped VALUES (7, 7)", "INSERT INTO public.added VALUES (7, 'a7')");
                E2e.awaitSame(s, d, E2e.refs(tables), WAIT);
            }
            assertThat(log.containing(again)).as("a restart without DDL copies no table again").isEmpty();
            E2e.exec(s, "ALTER TABLE public.added ADD COLUMN flag int NOT NULL DEFAULT 7",
                    "ALTER TABLE public.retyped ALTER COLUMN n TYPE text USING 'n=' || n");
            try (RunningEngine engine = RunningEngine.start(pipeline)) {
                engine.awaitStreaming(WAIT);
                E2e.exec(s, "INSERT INTO public.added VALUES (8, 'a8', 8)", "INSERT INTO public.retyped VALUES (8, 'n=8')",
                        "INSERT INTO public.kinds VALUES (8, 'ok', 8, 'v8', 3.5, now(), '{d}')");
                E2e.awaitSame(s, d, E2e.refs(tables), WAIT); // the old rows' values come from the online re-copy
            }
            assertThat(log.containing(again)).as("the tables reshaped while stopped, no other").hasSize(2);
        }
    }

    /**
     * RENAME COLUMN keeps every row's value in the source; the destination must keep them too.
     *
     * <p>Fixed: the destination renames the column (same position, same type, new name).
     */
    @Test
    void aRenamedColumnKeepsItsValues(@TempDir Path dir) throws Exception {
        pg.createDatabase("ren");
        pg.createDatabase("ren_dst");
        List<String> tables = List.of("public.t");
        try (Connection s = pg.connect("ren"); Connection d = pg.connect("ren_dst")) {
            E2e.exec(s, "CREATE TABLE public.t (id int PRIMARY KEY, a text)",
                    "INSERT INTO public.t SELECT g, 'a' || g FROM generate_series(1, 5) g");
            Millrace.Builder pipeline = E2e.pipeline(pg, "ren", "ren", tables, SourceSettings.BinaryMode.AUTO, "ren_dst", dir.resolve("events"));
            try (RunningEngine engine = RunningEngine.start(pipeline)) {
                engine.awaitStreaming(WAIT);
                E2e.exec(s, "INSERT INTO public.t VALUES (6, 'a6')",
                        "ALTER TABLE public.t RENAME COLUMN a TO a_renamed",
                        "INSERT INTO public.t VALUES (7, 'a7')");
                E2e.awaitRow(d, "SELECT count(*) FROM public.t WHERE id = 7", WAIT);
                E2e.assertColumnsEqual(s, d, E2e.refs(tables).get(0));
            }
        }
    }

    /**
     * Attributes added to a composite type while streaming (ALTER TYPE ... ADD ATTRIBUTE), then used. The table did not
     * change, so the stream carries no Relation message, and the decoder knew the type's shape from the start: it stopped
     * with exit 9 ("3 fields where the catalog has 2"; found by a user). A value's shape is the type's when logical
     * decoding printed it, and the stream runs behind the catalog: the second ALTER is made before the decoder reads the
     * values written between the two, whose fields must still be named right.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "binary {0}")
    @org.junit.jupiter.params.provider.EnumSource(value = SourceSettings.BinaryMode.class, names = {"AUTO", "OFF"})
    void attributesAddedToACompositeTypeWhileStreamingAreDecodedInEachValuesShape(SourceSettings.BinaryMode binary, @TempDir Path dir)
            throws Exception {
        String db = "comp_" + binary.name().toLowerCase(java.util.Locale.ROOT);
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        List<String> tables = List.of("public.lead");
        Path events = dir.resolve("events");
        try (Connection s = pg.connect(db); Connection late = pg.connect(db); Connection d = pg.connect(db + "_dst")) {
            E2e.exec(s, "CREATE TYPE public.contact AS (name text, phone text)",
                    "CREATE TABLE public.lead (id int PRIMARY KEY, c public.contact)",
                    "INSERT INTO public.lead VALUES (1, ROW('a', '1'))");
            Millrace.Builder pipeline = E2e.pipeline(pg, db, db, tables, binary, db + "_dst", events);
            try (RunningEngine engine = RunningEngine.start(pipeline)) {
                engine.awaitStreaming(WAIT);
                E2e.exec(s, "INSERT INTO public.lead VALUES (2, ROW('b', '2'))");
                late.setAutoCommit(false);
                E2e.exec(late, "INSERT INTO public.lead VALUES (10, ROW('old', 'shape'))"); // commits after the ALTER
                E2e.exec(s, "SET lock_timeout = '20s'", "ALTER TYPE public.contact ADD ATTRIBUTE note text",
                        "INSERT INTO public.lead VALUES (3, ROW('c', '3', 'new'))", "UPDATE public.lead SET c.phone = '1b' WHERE id = 1");
                late.commit();
                E2e.exec(s, "ALTER TYPE public.contact ADD ATTRIBUTE score int", "INSERT INTO public.lead VALUES (4, ROW('d', '4', 'newer', 7))");
                E2e.awaitRow(d, "SELECT count(*) FROM public.lead WHERE id = 4", WAIT);
            }
            // The destination has no type public.contact, so it keeps the values as text, as they were written: the source
            // prints a value written before an ALTER with the new attributes empty, so the two are compared value by value.
            // Row 10's transaction began before the first ALTER and committed after it: PostgreSQL 17 prints its value with
            // the shape after the ALTER, and either shape is right for it.
            assertThat(E2e.queryString(d, "SELECT string_agg(id || '=' || c::text, ' ' ORDER BY id) FROM public.lead WHERE id < 10"))
                    .isEqualTo("1=(a,1b,) 2=(b,2) 3=(c,3,new) 4=(d,4,newer,7)");
            assertThat(E2e.queryString(d, "SELECT c::text FROM public.lead WHERE id = 10")).isIn("(old,shape)", "(old,shape,)");
            List<JsonNode> all = E2e.events(events);
            java.util.Map<Integer, String> last = new java.util.TreeMap<>();
            for (JsonNode e : all) {
                if (E2e.isTable(e, "lead")) {
                    last.put(E2e.row(e).path("id").asInt(), E2e.row(e).path("c").asText());
                }
            }
            assertThat(last).containsEntry(2, "(b,2)").containsEntry(3, "(c,3,new)").containsEntry(1, "(a,1b,)")
                    .containsEntry(4, "(d,4,newer,7)").containsEntry(10, E2e.queryString(d, "SELECT c::text FROM public.lead WHERE id = 10"));
        }
    }

    /**
     * ALTER COLUMN ... TYPE ... USING rewrites every row in the source without a change event; the
     * destination must end with the same values.
     *
     * <p>KNOWN BUG (reported by the e2e tests, not fixed): the postgres destination retypes the column
     * with {@code USING col::type} (sink-postgres TargetTables.follow), not the source's expression,
     * so rows not written since keep a different value — a silent difference.
     */
    @Test
    /**
     * The source rewrites the rows with its USING expression without change events. Fixed: the engine sees the column
     * retyped and copies the table again online.
     */
    void aRetypeThatRewritesValuesKeepsThem(@TempDir Path dir) throws Exception {
        pg.createDatabase("retype");
        pg.createDatabase("retype_dst");
        List<String> tables = List.of("public.t");
        try (Connection s = pg.connect("retype"); Connection d = pg.connect("retype_dst")) {
            E2e.exec(s, "CREATE TABLE public.t (id int PRIMARY KEY, n int)",
                    "INSERT INTO public.t SELECT g, g FROM generate_series(1, 5) g");
            Millrace.Builder pipeline = E2e.pipeline(pg, "retype", "retype", tables, SourceSettings.BinaryMode.AUTO, "retype_dst", dir.resolve("events"));
            try (RunningEngine engine = RunningEngine.start(pipeline)) {
                engine.awaitStreaming(WAIT);
                E2e.exec(s, "INSERT INTO public.t VALUES (6, 6)",
                        "ALTER TABLE public.t ALTER COLUMN n TYPE text USING 'n=' || n",
                        "INSERT INTO public.t VALUES (7, 'n=7')");
                E2e.awaitSame(s, d, E2e.refs(tables), WAIT); // the old rows' values come from the online re-copy
            }
        }
    }

    /**
     * A table without a key (REPLICA IDENTITY FULL) holding rows that compare equal but are not the
     * same value: {@code 0} and {@code -0} (float8), {@code 1.0} and {@code 1.00} (numeric),
     * {@code 1 day} and {@code 24:00:00} (interval), jsonb {@code 1.0} and {@code 1.00}. Deleting or
     * updating one of them in the source must change that one in the destination, not its look-alike.
     */
    @Test
    void keylessRowsThatAreEqualButNotTheSameValue(@TempDir Path dir) throws Exception {
        pg.createDatabase("lookalike");
        pg.createDatabase("lookalike_dst");
        List<String> tables = List.of("public.f", "public.n", "public.i", "public.j");
        try (Connection s = pg.connect("lookalike"); Connection d = pg.connect("lookalike_dst")) {
            E2e.exec(s, "CREATE TABLE public.f (v float8)", "ALTER TABLE public.f REPLICA IDENTITY FULL",
                    "CREATE TABLE public.n (v numeric)", "ALTER TABLE public.n REPLICA IDENTITY FULL",
                    "CREATE TABLE public.i (v interval)", "ALTER TABLE public.i REPLICA IDENTITY FULL",
                    "CREATE TABLE public.j (v jsonb)", "ALTER TABLE public.j REPLICA IDENTITY FULL");
            Millrace.Builder pipeline = E2e.pipeline(pg, "lookalike", "lookalike", tables, SourceSettings.BinaryMode.AUTO, "lookalike_dst", dir.resolve("events"));
            try (RunningEngine engine = RunningEngine.start(pipeline)) {
                engine.awaitStreaming(WAIT);
                // the look-alike first, the row to change second (a sequential scan meets the look-alike first)
                E2e.exec(s, "INSERT INTO public.f VALUES ('0'), ('-0'), ('0'), ('-0')",
                        "INSERT INTO public.n VALUES (1.0), (1.00), (1.0), (1.00)",
                        "INSERT INTO public.i VALUES ('1 day'), ('24:00:00'), ('1 day'), ('24:00:00')",
                        "INSERT INTO public.j VALUES ('{\"a\": 1.0}'), ('{\"a\": 1.00}'), ('{\"a\": 1.0}'), ('{\"a\": 1.00}')");
                E2e.exec(s, "DELETE FROM public.f WHERE ctid = (SELECT min(ctid) FROM public.f WHERE v::text = '-0')",
                        "UPDATE public.f SET v = 5 WHERE ctid = (SELECT max(ctid) FROM public.f WHERE v::text = '-0')",
                        "DELETE FROM public.n WHERE ctid = (SELECT min(ctid) FROM public.n WHERE v::text = '1.00')",
                        "UPDATE public.n SET v = 5 WHERE ctid = (SELECT max(ctid) FROM public.n WHERE v::text = '1.00')",
                        "DELETE FROM public.i WHERE ctid = (SELECT min(ctid) FROM public.i WHERE v::text = '24:00:00')",
                        "UPDATE public.i SET v = '5 days' WHERE ctid = (SELECT max(ctid) FROM public.i WHERE v::text = '24:00:00')",
                        "DELETE FROM public.j WHERE ctid = (SELECT min(ctid) FROM public.j WHERE v::text = '{\"a\": 1.00}')",
                        "UPDATE public.j SET v = '5' WHERE ctid = (SELECT max(ctid) FROM public.j WHERE v::text = '{\"a\": 1.00}')");
                E2e.exec(s, "INSERT INTO public.f VALUES (7)");
                E2e.awaitRow(d, "SELECT count(*) FROM public.f WHERE v = 7", WAIT);
                for (io.millrace.core.schema.TableRef t : E2e.refs(tables)) {
                    E2e.assertColumnsEqual(s, d, t);
                }
            }
        }
    }
}
