package io.millrace.engine.ddl;

import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import io.millrace.engine.online.LogCapture;
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
 * DDL on captured tables while Millrace streams (and while it is stopped), into a postgres, a jsonl and a DuckDB
 * destination: each destination follows the change or the engine stops naming the table and the fix — never a silent
 * divergence.
 */
class DdlIT {
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

    private static String db(String name) {
        pg.createDatabase(name);
        pg.createDatabase(name + "_dst");
        return name;
    }

    /**
     * Item 4 of issue 12: a table created after start that {@code source.tables} matches ({@code public.*}) is captured,
     * also one made by {@code CREATE TABLE AS}; the next start does not refuse it.
     */
    @Test
    void aTableCreatedWhileStreamingIsCaptured(@TempDir Path dir) throws Exception {
        String db = db("newt");
        List<TableRef> all = E2e.refs(List.of("public.a", "public.newtab", "public.made"));
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.a (id int PRIMARY KEY, v text)", "INSERT INTO public.a VALUES (1, 'one')");
            String yaml = Ddl.yaml(pg, db, List.of("public.*"), dir, "");
            try (LogCapture log = new LogCapture(); RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "CREATE TABLE public.newtab (id int PRIMARY KEY, v text)",
                        "INSERT INTO public.newtab SELECT g, 'n' || g FROM generate_series(1, 50) g",
                        "CREATE TABLE public.made AS SELECT g AS id, 'm' || g AS v FROM generate_series(1, 20) g",
                        "ALTER TABLE public.made ADD PRIMARY KEY (id)",
                        "INSERT INTO public.a VALUES (2, 'two')");
                assertThat(log.awaitContaining("public.newtab")).as("a log line names the new table").isNotEmpty();
                E2e.exec(src, "UPDATE public.newtab SET v = 'changed' WHERE id = 1", "DELETE FROM public.made WHERE id = 2");
            }
            try (RunningEngine e = RunningEngine.start(Ddl.yaml(pg, db, List.of("public.*"), dir, ""), dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "INSERT INTO public.newtab VALUES (100, 'after the restart')");
                E2e.awaitSame(src, dst, all, WAIT);
                try (Connection duck = Ddl.duck(dir)) {
                    for (TableRef t : all) {
                        Ddl.awaitDuckSame(src, duck, t, WAIT);
                    }
                }
            }
        }
    }

    /**
     * Item 3 of issue 12: {@code ALTER TABLE customers RENAME TO clients} keeps the table's oid; the postgres and
     * DuckDB destinations rename their table (never a new empty {@code clients} beside a stale {@code customers}), the
     * jsonl events carry the new name, and the rename is logged. A rename while Millrace is stopped is followed too.
     */
    @Test
    void aRenamedTableIsFollowed(@TempDir Path dir) throws Exception {
        String db = db("rent");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.customers (id int PRIMARY KEY, name text)",
                    "INSERT INTO public.customers SELECT g, 'c' || g FROM generate_series(1, 30) g",
                    "CREATE TABLE public.other (id int PRIMARY KEY)");
            String yaml = Ddl.yaml(pg, db, List.of("public.*"), dir, "operations:\n  monitor_interval_ms: 200\n");
            try (LogCapture log = new LogCapture(); RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "ALTER TABLE public.customers RENAME TO clients",
                        "INSERT INTO public.clients VALUES (31, 'after the rename')",
                        "UPDATE public.clients SET name = 'changed' WHERE id = 1");
                E2e.awaitSame(src, dst, E2e.refs(List.of("public.clients")), WAIT);
                assertThat(Ddl.pgTables(dst)).containsExactly("clients");
                try (Connection duck = Ddl.duck(dir)) {
                    Ddl.awaitDuckSame(src, duck, TableRef.parse("public.clients"), WAIT);
                    assertThat(Ddl.duckTables(duck)).containsExactly("clients");
                }
                assertThat(E2e.awaitEvent(dir.resolve("events"), ev -> E2e.isTable(ev, "clients") && E2e.row(ev).path("id").asInt() == 31,
                        "for the insert after the rename", WAIT)).isNotEmpty();
                assertThat(log.awaitContaining("was renamed to public.clients in the source")).as("the engine logs the rename").isNotEmpty();
            }
            // renamed while stopped, no change after it until the restart
            E2e.exec(src, "ALTER TABLE public.clients RENAME TO patrons");
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "DELETE FROM public.patrons WHERE id = 2", "INSERT INTO public.other VALUES (1)");
                E2e.awaitSame(src, dst, E2e.refs(List.of("public.patrons", "public.other")), WAIT);
                assertThat(Ddl.pgTables(dst)).containsExactly("other", "patrons");
                try (Connection duck = Ddl.duck(dir)) {
                    Ddl.awaitDuckSame(src, duck, TableRef.parse("public.patrons"), WAIT);
                    Ddl.awaitDuckSame(src, duck, TableRef.parse("public.other"), WAIT); // DuckDB may be a batch behind postgres
                    assertThat(Ddl.duckTables(duck)).containsExactly("other", "patrons");
                }
            }
        }
    }

    /**
     * A table a pattern of {@code source.tables} captures, moved to a schema the pattern does not match, while streaming:
     * it is no longer captured from then on, as at a start and a reload, which select tables by name. Before, it stayed
     * captured while streaming (row 2's update arrived) and the next start took it out of the publication, so the
     * destinations stopped following it silently, at a restart (found by a DBA). Its new name added to
     * {@code source.tables}, it is copied again and the destinations equal the source.
     */
    @Test
    void aTableMovedOutOfTheSelectionIsNoLongerCapturedWhileStreamingAsAfterARestart(@TempDir Path dir) throws Exception {
        String db = db("moveout");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.m (id int PRIMARY KEY, v text)", "CREATE SCHEMA arch",
                    "INSERT INTO public.m SELECT g, 'm' || g FROM generate_series(1, 10) g");
            String yaml = Ddl.yaml(pg, db, List.of("public.*"), dir, "operations:\n  monitor_interval_ms: 200\n");
            try (LogCapture log = new LogCapture(); RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "UPDATE public.m SET v = 'before' WHERE id = 1");
                E2e.awaitRow(dst, "SELECT count(*) FROM public.m WHERE v = 'before'", WAIT);
                E2e.exec(src, "ALTER TABLE public.m SET SCHEMA arch");
                assertThat(log.awaitContaining("which source.tables does not select: it is no longer captured")).isNotEmpty();
                awaitEqual(() -> Long.toString(E2e.queryLong(src, "SELECT count(*) FROM pg_publication_tables WHERE tablename = 'm'")), "0");
                E2e.exec(src, "UPDATE arch.m SET v = 'after' WHERE id = 2");
                E2e.exec(src, "CREATE TABLE public.marker (id int PRIMARY KEY)", "INSERT INTO public.marker VALUES (1)");
                E2e.awaitRow(dst, "SELECT count(*) FROM public.marker", WAIT);
                assertThat(Ddl.strings(dst, "SELECT v FROM public.m WHERE id = 2")).containsExactly("m2");
            }
            E2e.exec(src, "UPDATE arch.m SET v = 'stopped' WHERE id = 3");
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "UPDATE arch.m SET v = 'later' WHERE id = 4", "INSERT INTO public.marker VALUES (2)");
                E2e.awaitRow(dst, "SELECT count(*) FROM public.marker WHERE id = 2", WAIT);
                assertThat(Ddl.strings(dst, "SELECT v FROM public.m WHERE id IN (2, 3, 4) ORDER BY id")).containsExactly("m2", "m3", "m4");
            }
            String both = Ddl.yaml(pg, db, List.of("public.*", "arch.*"), dir, "");
            try (RunningEngine e = RunningEngine.start(both, dir).awaitStreaming(WAIT)) {
                E2e.awaitRow(dst, "SELECT count(*) FROM public.m WHERE v = 'later'", WAIT); // copied into the table held (by oid)
                E2e.exec(src, "UPDATE arch.m SET v = 'again' WHERE id = 5"); // the table's next change: the rename is followed
                E2e.awaitRow(dst, "SELECT count(*) FROM arch.m WHERE v = 'again'", WAIT);
                E2e.awaitSame(src, dst, E2e.refs(List.of("arch.m", "public.marker")), WAIT);
                assertThat(Ddl.strings(dst, "SELECT count(*)::text FROM pg_class WHERE relname = 'm'")).containsExactly("1");
            }
        }
    }

    /**
     * A column added with a default to a partitioned table captured through its root, with a write to one of its
     * partitions right after, and its key retyped (a user's DBA session): the root is copied again, never a partition as a
     * table of its own. pgoutput describes the partition too, after the root, though its changes come as the root's:
     * before, each partition so described was copied into every destination as a table of its own ({@code public.ev_a}
     * beside {@code public.ev}), never updated after.
     */
    @Test
    void aColumnAddedToAPartitionedRootCopiesTheRootNotAPartition(@TempDir Path dir) throws Exception {
        String db = db("partadd");
        TableRef ev = TableRef.parse("public.ev");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.ev (id int, ts date NOT NULL, kind text, PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts)",
                    "CREATE TABLE public.ev_a PARTITION OF public.ev FOR VALUES FROM ('2023-01-01') TO ('2023-07-01')",
                    "CREATE TABLE public.ev_b PARTITION OF public.ev FOR VALUES FROM ('2023-07-01') TO ('2024-01-01')",
                    "INSERT INTO public.ev SELECT g, DATE '2023-01-01' + (g % 360), 'k' FROM generate_series(1, 200) g");
            String yaml = Ddl.yaml(pg, db, List.of("public.*"), dir, "");
            try (LogCapture log = new LogCapture(); RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                for (int i = 1; i <= 5; i++) {
                    try (java.sql.Statement s = src.createStatement()) {
                        s.execute("ALTER TABLE public.ev ADD COLUMN x" + i + " text DEFAULT 'x" + i + "'");
                        s.execute("INSERT INTO public.ev (id, ts, kind) VALUES (" + (1000 + i) + ", '2023-0" + (i + 4) + "-05', 'b')");
                    }
                }
                E2e.exec(src, "ALTER TABLE public.ev ALTER COLUMN id TYPE bigint", "UPDATE public.ev SET kind = 'retyped' WHERE id = 2");
                E2e.exec(src, "UPDATE public.ev SET kind = 'last' WHERE id = 1");
                E2e.awaitSame(src, dst, List.of(ev), WAIT);
                try (Connection duck = Ddl.duck(dir)) {
                    Ddl.awaitDuckSame(src, duck, ev, WAIT);
                    assertThat(Ddl.duckTables(duck)).containsExactly("ev");
                }
                assertThat(Ddl.pgTables(dst)).containsExactly("ev");
                assertThat(log.lines()).noneMatch(l -> l.contains("public.ev_a") || l.contains("public.ev_b"));
            }
        }
    }

    /**
     * A column added and another renamed while Millrace was stopped, each followed by an update. The replay's first
     * description of the table is older than the rename (it names {@code s}, the catalog {@code s3}): it was taken for a
     * publication's column list leaving {@code s3} out, and the table's changes were withheld (an error with a wrong fix)
     * until a copy, so the first update reached the destinations as a copied row, not as an update (found by two users).
     * Now the update arrives as one, nothing is withheld, and every destination equals the source.
     */
    @Test
    void aColumnRenamedWhileStoppedIsNotTakenForAColumnList(@TempDir Path dir) throws Exception {
        String db = db("renstop");
        TableRef d = TableRef.parse("public.d");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.d (id int PRIMARY KEY, s text, n int)",
                    "INSERT INTO public.d SELECT g, 's' || g, g FROM generate_series(1, 100) g");
            String yaml = Ddl.yaml(pg, db, List.of("public.d"), dir, "");
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "UPDATE public.d SET n = -1 WHERE id = 100");
                E2e.awaitRow(dst, "SELECT count(*) FROM public.d WHERE n = -1", WAIT);
            }
            E2e.exec(src, "ALTER TABLE public.d ADD COLUMN extra text DEFAULT 'q'", "UPDATE public.d SET extra = 'e' WHERE id < 5",
                    "ALTER TABLE public.d RENAME COLUMN s TO s3", "UPDATE public.d SET s3 = 'r' WHERE id < 3");
            try (LogCapture log = new LogCapture(); RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.awaitEvent(dir.resolve("events"), ev -> E2e.isTable(ev, "d") && ev.path("op").asText().equals("u")
                        && E2e.row(ev).path("extra").asText().equals("e"), "for the update of extra while stopped", WAIT);
                E2e.awaitSame(src, dst, List.of(d), WAIT);
                try (Connection duck = Ddl.duck(dir)) {
                    Ddl.awaitDuckSame(src, duck, d, WAIT);
                }
                assertThat(log.lines()).noneMatch(l -> l.contains("column list"));
            }
        }
    }

    /**
     * A table named in {@code source.tables} and renamed in the source, twice: the destinations follow while streaming; the
     * next start with the old name stops with a configuration error naming both names and the fix, and starts with the
     * new. The second rename was logged as taking the table out ("no longer captured"), while it stayed captured, as the
     * log said next (found by a user).
     */
    @Test
    void aRenamedTableNamedInTheConfigurationStopsTheNextStartWithTheFix(@TempDir Path dir) throws Exception {
        String db = db("renc");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.customers (id int PRIMARY KEY, name text)",
                    "INSERT INTO public.customers SELECT g, 'c' || g FROM generate_series(1, 10) g");
            String yaml = Ddl.yaml(pg, db, List.of("public.customers"), dir, "operations:\n  monitor_interval_ms: 200\n");
            try (LogCapture log = new LogCapture(); RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "ALTER TABLE public.customers RENAME TO clients", "INSERT INTO public.clients VALUES (11, 'eleven')");
                E2e.awaitSame(src, dst, E2e.refs(List.of("public.clients")), WAIT);
                E2e.exec(src, "ALTER TABLE public.clients RENAME TO patrons", "INSERT INTO public.patrons VALUES (12, 'twelve')");
                E2e.awaitSame(src, dst, E2e.refs(List.of("public.patrons")), WAIT);
                assertThat(log.awaitContaining("renamed to public.patrons in the source: source.tables names it by its old name"
                        + " public.customers")).isNotEmpty();
                assertThat(log.lines()).noneMatch(l -> l.contains("no longer captured"));
            }
            RunningEngine failed = RunningEngine.start(Ddl.yaml(pg, db, List.of("public.customers"), dir, ""), dir);
            Throwable t = failed.awaitEnd(WAIT);
            assertThat(t).isInstanceOf(io.millrace.core.MillraceException.class);
            assertThat(((io.millrace.core.MillraceException) t).kind()).isEqualTo(io.millrace.core.MillraceException.Kind.CONFIG);
            assertThat(t.getMessage()).contains("public.customers", "renamed to public.patrons", "source.tables");
            try (RunningEngine e = RunningEngine.start(Ddl.yaml(pg, db, List.of("public.patrons"), dir, ""), dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "INSERT INTO public.patrons VALUES (13, 'thirteen')");
                E2e.awaitSame(src, dst, E2e.refs(List.of("public.patrons")), WAIT);
                assertThat(e.engine().onlineSnapshots()).as("a renamed table is not copied again").isEmpty();
            }
        }
    }

    /**
     * DROP TABLE sends nothing through pgoutput. The engine notices it (while streaming, and at the next start), logs it
     * naming the table and what the destinations do: they keep their copy. A table created later under the same name is
     * a new table: the destinations' copy of the old one is kept aside, never mixed with the new rows.
     */
    @Test
    void aDroppedTableIsLoggedAndANewTableOfTheSameNameStartsAfresh(@TempDir Path dir) throws Exception {
        String db = db("dropt");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.keep (id int PRIMARY KEY)", "CREATE TABLE public.gone (id int PRIMARY KEY, v text)",
                    "INSERT INTO public.gone SELECT g, 'old ' || g FROM generate_series(1, 10) g");
            long oid = E2e.queryLong(src, "SELECT 'public.gone'::regclass::oid");
            String yaml = Ddl.yaml(pg, db, List.of("public.*"), dir, "operations:\n  monitor_interval_ms: 200\n");
            try (LogCapture log = new LogCapture(); RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "INSERT INTO public.gone VALUES (11, 'streamed')");
                E2e.awaitSame(src, dst, E2e.refs(List.of("public.gone")), WAIT);
                E2e.exec(src, "DROP TABLE public.gone");
                assertThat(log.awaitContaining("was dropped in the source")).as("the drop is logged")
                        .anyMatch(l -> l.contains("public.gone") && l.contains("keep"));
            }
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM public.gone")).as("the destination keeps its copy").isEqualTo(11);
            E2e.exec(src, "CREATE TABLE public.gone (id int PRIMARY KEY, w int)", "INSERT INTO public.gone VALUES (1, 100)");
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "INSERT INTO public.gone VALUES (2, 200)", "INSERT INTO public.keep VALUES (1)");
                E2e.awaitSame(src, dst, E2e.refs(List.of("public.gone", "public.keep")), WAIT);
                String aside = "gone__" + oid;
                assertThat(Ddl.pgTables(dst)).containsExactlyInAnyOrder("gone", aside, "keep");
                assertThat(E2e.queryLong(dst, "SELECT count(*) FROM public." + aside)).isEqualTo(11);
                try (Connection duck = Ddl.duck(dir)) {
                    Ddl.awaitDuckSame(src, duck, TableRef.parse("public.gone"), WAIT);
                    assertThat(Ddl.duckTables(duck)).containsExactlyInAnyOrder("gone", aside, "keep");
                }
            }
        }
    }

    /**
     * Columns renamed (also a key column) and a key retyped int → bigint: the DuckDB destination keeps every row's values
     * (it used to add + drop a renamed column, and to fail on the key's retype — "Cannot change the type of a column that
     * has a PRIMARY KEY" — at every restart); the postgres destination too. Rows not changed since must keep their values.
     */
    @Test
    void renamedColumnsAndARetypedKeyKeepEveryValue(@TempDir Path dir) throws Exception {
        String db = db("cols");
        List<TableRef> t = E2e.refs(List.of("public.t"));
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.t (id int PRIMARY KEY, a text, n int)",
                    "INSERT INTO public.t SELECT g, 'a' || g, g FROM generate_series(1, 20) g");
            String yaml = Ddl.yaml(pg, db, List.of("public.t"), dir, "");
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "ALTER TABLE public.t RENAME COLUMN a TO b", "INSERT INTO public.t VALUES (21, 'b21', 21)");
                E2e.exec(src, "ALTER TABLE public.t ALTER COLUMN id TYPE bigint", "INSERT INTO public.t VALUES (5000000000, 'big', 0)");
                E2e.exec(src, "ALTER TABLE public.t RENAME COLUMN id TO key", "UPDATE public.t SET n = -1 WHERE key = 3");
                E2e.awaitSame(src, dst, t, WAIT);
                try (Connection duck = Ddl.duck(dir)) {
                    Ddl.awaitDuckSame(src, duck, t.get(0), WAIT);
                }
            }
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "INSERT INTO public.t VALUES (5000000001, 'after the restart', 1)");
                E2e.awaitSame(src, dst, t, WAIT);
                try (Connection duck = Ddl.duck(dir)) {
                    Ddl.awaitDuckSame(src, duck, t.get(0), WAIT);
                }
            }
        }
    }

    /**
     * A column dropped and added again under the same name and type while streaming: the Relation message after it looks
     * the same as before, and the source's rows lost their values (NULL now). Found by a DBA: both destinations silently
     * kept the old values. Now the catalog's attribute numbers tell, and the table is copied again online.
     */
    @Test
    void aColumnDroppedAndAddedAgainUnderItsNameLosesItsValuesInTheDestinationsToo(@TempDir Path dir) throws Exception {
        String db = db("readd");
        List<TableRef> t = E2e.refs(List.of("public.t"));
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.t (id int PRIMARY KEY, c int, v text)",
                    "INSERT INTO public.t SELECT g, g, 'v' || g FROM generate_series(1, 20) g");
            try (RunningEngine e = RunningEngine.start(Ddl.yaml(pg, db, List.of("public.t"), dir, ""), dir).awaitStreaming(WAIT)) {
                E2e.awaitSame(src, dst, t, WAIT);
                E2e.exec(src, "ALTER TABLE public.t DROP COLUMN c", "ALTER TABLE public.t ADD COLUMN c int",
                        "INSERT INTO public.t VALUES (21, 'v21', 21)");
                // c is last in the source now and stays in its place in the destinations: compared by name
                String rows = "SELECT string_agg(id || ':' || coalesce(c::text, '-') || ':' || v, ',' ORDER BY id) FROM public.t";
                String expected = E2e.queryString(src, rows);
                assertThat(expected).startsWith("1:-:v1,2:-:v2,").endsWith(",21:21:v21");
                awaitEqual(() -> E2e.queryString(dst, rows), expected);
                try (Connection duck = Ddl.duck(dir)) {
                    awaitEqual(() -> E2e.queryString(duck, rows), expected);
                }
            }
        }
    }

    private interface Query {
        String get() throws Exception;
    }

    private static void awaitEqual(Query q, String expected) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        String got = q.get();
        while (!expected.equals(got) && System.nanoTime() < deadline) {
            Thread.sleep(100);
            got = q.get();
        }
        assertThat(got).isEqualTo(expected);
    }

    /**
     * A table renamed and its key retyped while it is being copied online (added to the configuration, copied on the
     * next start; the copy paused after its first chunk): the copy goes on under the new name in the new shape, never
     * decoding rows with the old types (the crash matrix saw "invalid int4 text value" stop the engine) nor emitting
     * them after changes in the new shape. Every destination ends equal to the source.
     */
    @Test
    void aTableChangedWhileItIsCopiedOnlineIsCopiedInItsNewShape(@TempDir Path dir) throws Exception {
        String db = db("copyddl");
        String online = "snapshot:\n  mode: initial\n  readers: 2\n  online:\n    readers: 1\n    chunk_rows: 200\n"
                + "    min_chunk_rows: 100\n    max_chunk_rows: 200\n    target_chunk_ms: 20\n";
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.a (id int PRIMARY KEY)", "INSERT INTO public.a VALUES (1)");
            String first = Ddl.yaml(pg, db, List.of("public.a"), dir, "").replace("snapshot:\n  mode: initial\n  readers: 2\n", online);
            try (RunningEngine e = RunningEngine.start(first, dir).awaitStreaming(WAIT)) {
                E2e.awaitSame(src, dst, E2e.refs(List.of("public.a")), WAIT);
            }
            E2e.exec(src, "CREATE TABLE public.b (id int PRIMARY KEY, v text)",
                    "INSERT INTO public.b SELECT g, 'b' || g FROM generate_series(1, 5000) g");
            String both = Ddl.yaml(pg, db, List.of("public.a", "public.b"), dir, "").replace("snapshot:\n  mode: initial\n  readers: 2\n", online);
            try (RunningEngine e = RunningEngine.start(both, dir).awaitStreaming(WAIT)) {
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (e.engine().onlineSnapshots().isEmpty() || e.engine().onlineSnapshots().get(0).rowsDone() == 0) {
                    assertThat(System.nanoTime()).as("no chunk of b landed").isLessThan(deadline);
                    Thread.sleep(2);
                }
                e.engine().pauseSnapshots(true);
                E2e.exec(src, "ALTER TABLE public.b ALTER COLUMN id TYPE bigint",
                        "INSERT INTO public.b VALUES (5000000000, 'past int')",
                        "ALTER TABLE public.b RENAME TO c",
                        "UPDATE public.c SET v = 'changed' WHERE id IN (1, 4999)");
                Thread.sleep(500);
                e.engine().pauseSnapshots(false);
                List<TableRef> tables = E2e.refs(List.of("public.a", "public.c"));
                E2e.awaitSame(src, dst, tables, WAIT);
                assertThat(Ddl.pgTables(dst)).containsExactly("a", "c");
                try (Connection duck = Ddl.duck(dir)) {
                    Ddl.awaitDuckSame(src, duck, tables.get(1), WAIT);
                }
                while (!e.engine().onlineSnapshots().isEmpty()) {
                    assertThat(System.nanoTime()).as("copies not landed: %s", e.engine().onlineSnapshots()).isLessThan(deadline);
                    Thread.sleep(20);
                }
            }
        }
    }

    /**
     * A keyless table captured with {@code REPLICA IDENTITY FULL} gets a primary key while Millrace streams, as a user
     * fixes the table once they notice: every destination follows, with the rows before and after it.
     */
    @Test
    void aKeylessTableThatGetsAPrimaryKeyWhileStreamingIsFollowed(@TempDir Path dir) throws Exception {
        String db = db("keyadd");
        TableRef k = TableRef.parse("public.k");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.k (id int NOT NULL, v text)", "ALTER TABLE public.k REPLICA IDENTITY FULL",
                    "INSERT INTO public.k SELECT g, 'k' || g FROM generate_series(1, 50) g");
            String yaml = Ddl.yaml(pg, db, List.of("public.k"), dir, "");
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "UPDATE public.k SET v = 'before' WHERE id = 1");
                E2e.awaitSame(src, dst, List.of(k), WAIT);
                E2e.exec(src, "ALTER TABLE public.k ADD PRIMARY KEY (id)", "UPDATE public.k SET v = 'after' WHERE id = 2",
                        "DELETE FROM public.k WHERE id = 3", "INSERT INTO public.k VALUES (51, 'new')");
                E2e.awaitSame(src, dst, List.of(k), WAIT);
                try (Connection duck = Ddl.duck(dir)) {
                    Ddl.awaitDuckSame(src, duck, k, WAIT);
                }
            }
            E2e.exec(src, "UPDATE public.k SET v = 'stopped' WHERE id = 4");
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "UPDATE public.k SET v = 'again' WHERE id = 5");
                E2e.awaitSame(src, dst, List.of(k), WAIT);
                try (Connection duck = Ddl.duck(dir)) {
                    Ddl.awaitDuckSame(src, duck, k, WAIT);
                }
            }
        }
    }

    /**
     * A keyless table captured with {@code REPLICA IDENTITY FULL} gets a new surrogate key while Millrace streams ({@code ADD
     * COLUMN id bigserial PRIMARY KEY}, as a user adds one): the source fills the column, so the table is copied again, and
     * every destination takes the key. Before, the postgres destination's ADD PRIMARY KEY met the rows it held, written
     * before the column had values ("column id contains null values"), and DuckDB's rebuild the same (NOT NULL constraint
     * failed): the pipeline stopped at every start (exit 10).
     */
    @Test
    void aKeylessTableThatGetsANewSurrogateKeyWhileStreamingIsFollowed(@TempDir Path dir) throws Exception {
        String db = db("surrogate");
        TableRef k = TableRef.parse("public.ev");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.ev (at int NOT NULL, v text)", "ALTER TABLE public.ev REPLICA IDENTITY FULL",
                    "INSERT INTO public.ev SELECT g, 'e' || g FROM generate_series(1, 300) g");
            String yaml = Ddl.yaml(pg, db, List.of("public.ev"), dir, "");
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "UPDATE public.ev SET v = 'before' WHERE at = 1");
                E2e.awaitSame(src, dst, List.of(k), WAIT);
                E2e.exec(src, "ALTER TABLE public.ev ADD COLUMN id bigserial PRIMARY KEY", "UPDATE public.ev SET v = 'after' WHERE at = 2",
                        "DELETE FROM public.ev WHERE at = 3", "INSERT INTO public.ev (at, v) VALUES (301, 'new')");
                E2e.awaitSame(src, dst, List.of(k), WAIT);
                assertThat(E2e.queryLong(dst, "SELECT count(*) FROM pg_constraint WHERE conrelid = 'public.ev'::regclass AND contype = 'p'"))
                        .as("the destination's primary key").isEqualTo(1);
                try (Connection duck = Ddl.duck(dir)) {
                    Ddl.awaitDuckSame(src, duck, k, WAIT);
                }
            }
        }
    }

    /**
     * A table whose primary key is dropped while Millrace streams (REPLICA IDENTITY FULL since, so the application's
     * UPDATEs work), then given rows the key refused: every destination drops the key too. Before, the postgres destination
     * kept it and stopped at every start ("duplicate key value violates unique constraint"; found by a user). A key
     * added again later is followed as any new key.
     */
    @Test
    void aTableThatLosesItsPrimaryKeyWhileStreamingIsFollowed(@TempDir Path dir) throws Exception {
        String db = db("keydrop");
        TableRef t = TableRef.parse("public.t");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.t (id int PRIMARY KEY, u int NOT NULL, v text)",
                    "INSERT INTO public.t SELECT g, g, 'v' || g FROM generate_series(1, 100) g");
            String yaml = Ddl.yaml(pg, db, List.of("public.t"), dir, "");
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "UPDATE public.t SET v = 'before' WHERE id = 1");
                E2e.awaitSame(src, dst, List.of(t), WAIT);
                E2e.exec(src, "ALTER TABLE public.t DROP CONSTRAINT t_pkey, REPLICA IDENTITY FULL",
                        "INSERT INTO public.t VALUES (3000, 3000, 'twice'), (3000, 3001, 'twice')", "UPDATE public.t SET v = 'after' WHERE id = 2");
                E2e.awaitSame(src, dst, List.of(t), WAIT);
                assertThat(E2e.queryLong(dst, "SELECT count(*) FROM pg_constraint WHERE conrelid = 'public.t'::regclass AND contype = 'p'"))
                        .as("the destination's primary key").isZero();
                try (Connection duck = Ddl.duck(dir)) {
                    Ddl.awaitDuckSame(src, duck, t, WAIT);
                }
                E2e.exec(src, "ALTER TABLE public.t ADD PRIMARY KEY (u)", "UPDATE public.t SET v = 'keyed again' WHERE u = 3");
                E2e.awaitSame(src, dst, List.of(t), WAIT);
            }
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "UPDATE public.t SET v = 'restarted' WHERE u = 4");
                E2e.awaitSame(src, dst, List.of(t), WAIT);
            }
        }
    }

    /** Starts with public.a streaming, then again with public.b (5000 rows) added, its online copy paused after its first chunk; stops. */
    private static void stopInTheMiddleOfCopyingB(Connection src, Path dir, String db, String online) throws Exception {
        E2e.exec(src, "CREATE TABLE public.a (id int PRIMARY KEY)", "INSERT INTO public.a VALUES (1)");
        String first = Ddl.yaml(pg, db, List.of("public.a"), dir, "").replace("snapshot:\n  mode: initial\n  readers: 2\n", online);
        try (RunningEngine e = RunningEngine.start(first, dir).awaitStreaming(WAIT)) {
            e.engine(); // streaming: public.b joins at the next start
        }
        E2e.exec(src, "CREATE TABLE public.b (id int PRIMARY KEY, code int NOT NULL, v text)",
                "INSERT INTO public.b SELECT g, 5001 - g, 'b' || g FROM generate_series(1, 5000) g");
        String both = Ddl.yaml(pg, db, List.of("public.a", "public.b"), dir, "").replace("snapshot:\n  mode: initial\n  readers: 2\n", online);
        try (RunningEngine e = RunningEngine.start(both, dir).awaitStreaming(WAIT)) {
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (e.engine().onlineSnapshots().isEmpty() || e.engine().onlineSnapshots().get(0).rowsDone() == 0) {
                assertThat(System.nanoTime()).as("no chunk of b landed").isLessThan(deadline);
                Thread.sleep(2);
            }
            e.engine().pauseSnapshots(true);
            Thread.sleep(300); // a chunk in flight lands
            E2e.exec(src, "INSERT INTO public.a VALUES (2)"); // a batch: it records the copy's progress
            try (Connection dst = pg.connect(db + "_dst")) {
                E2e.awaitSame(src, dst, E2e.refs(List.of("public.a")), WAIT);
            }
        }
    }

    /**
     * A table dropped while Millrace was stopped in the middle of its online copy, and another created under its name,
     * with rows (found by the crash matrix: a table whose copy a crash interrupted, dropped and its name taken again before
     * the next start). The start matched the tasks it holds against the tables to add by name: the recorded copy of the
     * old table counted as the new one's, so the new one joined the publication without a copy (the old task was then
     * dropped with its table), and every destination missed the rows it had before its first change. A task is the
     * copy of its table's oid.
     */
    @Test
    void aTableDroppedAndCreatedAgainUnderItsNameWhileItsCopyWasStoppedIsCopied(@TempDir Path dir) throws Exception {
        String db = db("dropnew");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            stopInTheMiddleOfCopyingB(src, dir, db, SMALL_CHUNKS);
            E2e.exec(src, "DROP TABLE public.b", "CREATE TABLE public.b (id int PRIMARY KEY, code int NOT NULL, v text)",
                    "INSERT INTO public.b SELECT g, g, 'new b ' || g FROM generate_series(1, 700) g");
            startAgainAndAwaitABSame(src, dst, dir, db, "UPDATE public.b SET v = 'changed' WHERE id = 1");
        }
    }

    /**
     * A table whose online copy is under way renamed, and a table created under its old name (the swap a user makes to
     * replace a table: {@code ALTER TABLE b RENAME TO b_old; CREATE TABLE b ...}), both selected ({@code public.*}). The
     * new table's copy replaced every task named like it: the copy of the renamed one, still named as it was asked for,
     * was dropped half-way, and the destinations kept b_old's first chunks only. A copy is replaced by another of the same
     * table's oid only.
     */
    @Test
    void aTableRenamedDuringItsCopyKeepsItsCopyWhenANewTableTakesItsName(@TempDir Path dir) throws Exception {
        String db = db("swapcopy");
        List<TableRef> tables = E2e.refs(List.of("public.a", "public.b", "public.b_old"));
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.a (id int PRIMARY KEY)", "INSERT INTO public.a VALUES (1)");
            String yaml = Ddl.yaml(pg, db, List.of("public.*"), dir, "").replace("snapshot:\n  mode: initial\n  readers: 2\n", SMALL_CHUNKS);
            try (LogCapture log = new LogCapture(); RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "CREATE TABLE public.b (id int PRIMARY KEY, v text)",
                        "INSERT INTO public.b SELECT g, 'b' || g FROM generate_series(1, 5000) g");
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (e.engine().onlineSnapshots().isEmpty() || e.engine().onlineSnapshots().get(0).rowsDone() == 0) {
                    assertThat(System.nanoTime()).as("no chunk of b landed").isLessThan(deadline);
                    Thread.sleep(2);
                }
                e.engine().pauseSnapshots(true);
                Thread.sleep(300); // a chunk in flight lands: the copy reads nothing more until the new b joined
                E2e.exec(src, "ALTER TABLE public.b RENAME TO b_old", "CREATE TABLE public.b (id int PRIMARY KEY, v text)",
                        "INSERT INTO public.b SELECT g, 'new b' || g FROM generate_series(1, 300) g");
                // the first b's join, then the new b's (at the next look at the catalog)
                while (log.lines().stream().filter(l -> l.contains("table public.b joined the pipeline")).count() < 2) {
                    assertThat(System.nanoTime()).as("the new public.b did not join").isLessThan(deadline);
                    Thread.sleep(20);
                }
                e.engine().pauseSnapshots(false);
                E2e.exec(src, "UPDATE public.b_old SET v = 'changed' WHERE id = 4999", "INSERT INTO public.a VALUES (2)");
                while (!Ddl.pgTables(dst).containsAll(List.of("a", "b", "b_old"))) {
                    assertThat(System.nanoTime()).as("destination tables %s", Ddl.pgTables(dst)).isLessThan(deadline);
                    Thread.sleep(20);
                }
                E2e.awaitSame(src, dst, tables, WAIT);
                try (Connection duck = Ddl.duck(dir)) {
                    for (TableRef t : tables) {
                        Ddl.awaitDuckSame(src, duck, t, WAIT);
                    }
                }
            }
        }
    }

    /** Starts with public.a and public.b, runs {@code change}, and waits until both destinations have them as the source. */
    private static void startAgainAndAwaitABSame(Connection src, Connection dst, Path dir, String db, String change) throws Exception {
        String both = Ddl.yaml(pg, db, List.of("public.a", "public.b"), dir, "");
        try (RunningEngine e = RunningEngine.start(both, dir).awaitStreaming(WAIT)) {
            E2e.exec(src, change);
            awaitABSame(src, dst, dir);
        }
    }

    /** public.a and public.b equal in the postgres destination, public.b in the DuckDB one. */
    private static void awaitABSame(Connection src, Connection dst, Path dir) throws Exception {
        List<TableRef> tables = E2e.refs(List.of("public.a", "public.b"));
        E2e.awaitSame(src, dst, tables, WAIT);
        try (Connection duck = Ddl.duck(dir)) {
            Ddl.awaitDuckSame(src, duck, tables.get(1), WAIT);
        }
    }

    private static final String SMALL_CHUNKS = "snapshot:\n  mode: initial\n  readers: 2\n  online:\n    readers: 1\n    chunk_rows: 200\n"
            + "    min_chunk_rows: 100\n    max_chunk_rows: 200\n    target_chunk_ms: 20\n";

    /**
     * The primary key of a table moved to another column while Millrace was stopped in the middle of its online copy. The
     * copy's remaining key ranges were cut on the old key ({@code id > 200}); resumed on the new one they read
     * {@code code > 200}, and the rows with a low {@code code} were never copied: a silent divergence. The ranges are
     * recorded with the key they were cut on, and a copy whose key changed starts again from the first key.
     */
    @Test
    void aCopyStoppedHalfWayGoesOnWholeWhenTheKeyMovedToAnotherColumnMeanwhile(@TempDir Path dir) throws Exception {
        String db = db("keymove");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            stopInTheMiddleOfCopyingB(src, dir, db, SMALL_CHUNKS);
            long copied = Ddl.strings(dst, "SELECT count(*)::text FROM public.b").stream().mapToLong(Long::parseLong).sum();
            assertThat(copied).as("rows of b copied before the stop").isBetween(1L, 4999L);
            E2e.exec(src, "ALTER TABLE public.b DROP CONSTRAINT b_pkey, ADD PRIMARY KEY (code)");
            startAgainAndAwaitABSame(src, dst, dir, db, "UPDATE public.b SET v = 'changed' WHERE code IN (1, 4999)");
        }
    }

    /**
     * A table lost its primary key (kept capturable by {@code REPLICA IDENTITY FULL}) while Millrace was stopped in the
     * middle of its online copy. The start failed on the copy ("has no primary key ... cannot be copied online", a
     * configuration error: the pipeline stopped, and every start after it too), although the stream needs no key. Now the
     * pipeline streams, the copy waits for a key with the fix in the log and in the status, and goes on once the table
     * has one again; every destination ends equal to the source.
     */
    @Test
    void aCopyStoppedHalfWayWaitsForAKeyWhenTheTableLostItMeanwhile(@TempDir Path dir) throws Exception {
        String db = db("keylost");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            stopInTheMiddleOfCopyingB(src, dir, db, SMALL_CHUNKS);
            E2e.exec(src, "ALTER TABLE public.b REPLICA IDENTITY FULL", "ALTER TABLE public.b DROP CONSTRAINT b_pkey");
            String both = Ddl.yaml(pg, db, List.of("public.a", "public.b"), dir, "");
            try (LogCapture log = new LogCapture(); RunningEngine e = RunningEngine.start(both, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "INSERT INTO public.a VALUES (3)", "INSERT INTO public.b VALUES (6000, -999, 'while keyless')");
                E2e.awaitSame(src, dst, E2e.refs(List.of("public.a")), WAIT);
                assertThat(e.engine().onlineSnapshots()).as("the copy of b waits").hasSize(1);
                assertThat(log.lines()).anyMatch(l -> l.contains("online snapshot of public.b waits for a key")
                        && l.contains("ADD PRIMARY KEY"));
                E2e.exec(src, "ALTER TABLE public.b ADD PRIMARY KEY (id)", "UPDATE public.b SET v = 'changed' WHERE id IN (1, 4999)");
                awaitABSame(src, dst, dir);
            }
        }
    }

    /**
     * Without the DDL event trigger: a column retyped with {@code USING} rewrites the rows without change events, so the
     * stream's next change of the table, in the new shape, asks for an online copy of it. The table was renamed before
     * that copy starts (here in the same transaction, so always): the copy follows the table by oid, under its new name.
     * It was asked for by the old name and failed ("table ... does not exist in the source database", logged), and every
     * destination kept the values its own cast gave the old rows ({@code 5}, not {@code v5}): a silent divergence.
     */
    @Test
    void aTableRetypedAndRenamedBeforeItsCopyStartsIsCopiedUnderItsNewName(@TempDir Path dir) throws Exception {
        String db = db("retren");
        TableRef t2 = TableRef.parse("public.t2");
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.t (id int PRIMARY KEY, v int)",
                    "INSERT INTO public.t SELECT g, g FROM generate_series(1, 300) g");
            String yaml = Ddl.yaml(pg, db, List.of("public.*"), dir, "");
            try (LogCapture log = new LogCapture(); RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(WAIT)) {
                E2e.exec(src, "UPDATE public.t SET v = -v WHERE id <= 10");
                E2e.exec(src, "BEGIN", "ALTER TABLE public.t ALTER COLUMN v TYPE text USING 'v' || v",
                        "UPDATE public.t SET v = 'changed' WHERE id = 1",
                        "ALTER TABLE public.t RENAME TO t2",
                        "INSERT INTO public.t2 VALUES (301, 'new')", "COMMIT");
                E2e.exec(src, "DELETE FROM public.t2 WHERE id = 2", "UPDATE public.t2 SET v = 'later' WHERE id = 3");
                E2e.awaitSame(src, dst, List.of(t2), WAIT);
                assertThat(Ddl.pgTables(dst)).containsExactly("t2");
                assertThat(types(dst)).isEqualTo(types(src)).containsExactly("id integer", "v text");
                try (Connection duck = Ddl.duck(dir)) {
                    Ddl.awaitDuckSame(src, duck, t2, WAIT);
                    assertThat(Ddl.duckTables(duck)).containsExactly("t2");
                    assertThat(Ddl.strings(duck, "SELECT column_name || ' ' || data_type FROM duckdb_columns() WHERE database_name"
                            + " = current_database() AND table_name = 't2' ORDER BY column_index")).containsExactly("id INTEGER", "v VARCHAR");
                }
                assertThat(log.lines()).as("no copy asked for by the old name").noneMatch(l -> l.contains("does not exist in the source"));
            }
        }
    }

    /** Column names and types ({@code format_type}) of {@code public.t2}, in order. */
    private static List<String> types(Connection c) throws Exception {
        return Ddl.strings(c, "SELECT attname || ' ' || format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid ="
                + " 'public.t2'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum");
    }
}
