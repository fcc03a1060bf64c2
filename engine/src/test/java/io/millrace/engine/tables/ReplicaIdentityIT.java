package io.millrace.engine.tables;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.engine.e2e.E2e;
import io.millrace.source.Preflight;
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
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Millrace never puts the source's writes at risk: a table without a replica identity (no primary key and
 * REPLICA IDENTITY DEFAULT, or NOTHING) makes PostgreSQL reject every UPDATE and DELETE of it once it is
 * published, so such a table is refused with the fix before anything is written to the source — named
 * directly, matched by a pattern, a partition of a captured partitioned table, or already in a publication
 * someone else made. Preflight prints fixes that, applied as printed, make it pass.
 */
class ReplicaIdentityIT {
    private static final Pattern SQL = Pattern.compile("(?:CREATE|ALTER) (?:TABLE|PUBLICATION) [^;]+;");
    private static EmbeddedPg pg;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        E2e.init();
        pg = EmbeddedPg.start();
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    /** A fresh source database {@code db} (and {@code db_dst}) set up by {@code sql}. */
    private static void database(String db, String... sql) {
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        pg.execute(db, sql);
    }

    private String yaml(String db, List<String> tables) {
        return E2e.yaml(pg, db, db, tables, "auto", db + "_dst", dir.resolve(db + "-events"));
    }

    private MillraceException startFails(String yaml) throws InterruptedException {
        RunningEngine e = RunningEngine.start(yaml, dir);
        Throwable t = e.awaitEnd(Duration.ofSeconds(60));
        assertThat(t).as("the engine should refuse to start").isInstanceOf(MillraceException.class);
        assertThat(e.engine().state()).isEqualTo(Engine.State.FAILED);
        return (MillraceException) t;
    }

    private static long count(String db, String sql) throws SQLException {
        try (Connection c = pg.connect(db)) {
            return E2e.queryLong(c, sql);
        }
    }

    private static void assertNothingWrittenToTheSource(String db, String publication) throws SQLException {
        assertThat(count(db, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + db + "'")).as("slot").isZero();
        assertThat(count(db, "SELECT count(*) FROM pg_publication WHERE pubname = '" + publication + "'")).as("publication").isZero();
    }

    /** The SQL statements of a printed fix, in order. */
    private static List<String> statements(String fix) {
        List<String> out = new ArrayList<>();
        Matcher m = SQL.matcher(fix);
        while (m.find()) {
            out.add(m.group());
        }
        assertThat(out).as("SQL in the fix: " + fix).isNotEmpty();
        return out;
    }

    private static Preflight.Report preflight(String yaml, Path base, String db) throws SQLException {
        EngineConfig cfg = new ConfigLoader(Map.<String, String>of()::get).parse(yaml, base);
        try (Connection c = pg.connect(db)) {
            return Preflight.run(cfg.source(), c);
        }
    }

    private static void assertUpdatesAndDeletesWork(String db, String table) throws SQLException {
        try (Connection c = pg.connect(db)) {
            E2e.exec(c, "UPDATE " + table + " SET v = v || '!'", "DELETE FROM " + table + " WHERE v LIKE 'gone%'");
        }
    }

    @Test
    void aKeylessTableIsRefusedWithTheFixBeforeAnythingIsWrittenAndRunsOnceFixed() throws Exception {
        database("ri_plain", "CREATE TABLE public.items (id int PRIMARY KEY, v text)", "CREATE TABLE public.loose (a int, v text)",
                "INSERT INTO public.items VALUES (1, 'a')", "INSERT INTO public.loose VALUES (1, 'a'), (2, 'gone')");
        String yaml = yaml("ri_plain", List.of("public.items", "public.loose"));
        MillraceException e = startFails(yaml);
        assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
        assertThat(e.kind().exitCode()).isEqualTo(6);
        assertThat(e.getMessage()).contains("\"public\".\"loose\"").contains("no primary key").contains("cannot update")
                .contains("ALTER TABLE \"public\".\"loose\" REPLICA IDENTITY FULL;");
        assertNothingWrittenToTheSource("ri_plain", "ri_plain");
        assertUpdatesAndDeletesWork("ri_plain", "public.loose");

        Preflight.Report r = preflight(yaml, dir, "ri_plain");
        assertThat(r.ok()).isFalse();
        assertThat(r.render()).contains("FAIL  table public.loose").contains("fix: ALTER TABLE \"public\".\"loose\" REPLICA IDENTITY FULL;");

        try (Connection c = pg.connect("ri_plain")) {
            E2e.exec(c, statements(r.failures().get(0).fix()).get(0)); // the fix, as printed
        }
        assertThat(preflight(yaml, dir, "ri_plain").ok()).isTrue();
        try (RunningEngine run = RunningEngine.start(yaml, dir).awaitStreaming(Duration.ofSeconds(60));
             Connection src = pg.connect("ri_plain"); Connection dst = pg.connect("ri_plain_dst")) {
            assertUpdatesAndDeletesWork("ri_plain", "public.loose");
            E2e.awaitSame(src, dst, E2e.refs(List.of("public.items", "public.loose")), Duration.ofSeconds(30));
        }
    }

    @Test
    void aKeylessTableMatchedByAPatternIsRefusedToo() throws Exception {
        database("ri_pattern", "CREATE SCHEMA shop", "CREATE TABLE shop.orders (id int PRIMARY KEY, v text)",
                "CREATE TABLE shop.audit (at timestamptz, v text)", "CREATE TABLE shop.notes (id int NOT NULL, v text)",
                "CREATE TABLE shop.codes (code text NOT NULL, v text)", "CREATE UNIQUE INDEX codes_code ON shop.codes (code)");
        MillraceException e = startFails(yaml("ri_pattern", List.of("'shop.*'")));
        assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
        assertThat(e.getMessage()).contains("\"shop\".\"audit\"");
        assertNothingWrittenToTheSource("ri_pattern", "ri_pattern");
        Preflight.Report r = preflight(yaml("ri_pattern", List.of("'shop.*'")), dir, "ri_pattern");
        assertThat(r.failures()).extracting(Preflight.Check::name).containsExactly("table shop.audit", "table shop.codes", "table shop.notes");
        // a unique index on NOT NULL columns can be the replica identity: it is offered first
        assertThat(r.failures().get(1).fix()).startsWith("ALTER TABLE \"shop\".\"codes\" REPLICA IDENTITY USING INDEX \"codes_code\";");
        try (Connection c = pg.connect("ri_pattern")) {
            for (Preflight.Check f : r.failures()) {
                E2e.exec(c, statements(f.fix()).get(0));
            }
        }
        assertThat(preflight(yaml("ri_pattern", List.of("'shop.*'")), dir, "ri_pattern").ok()).isTrue();
    }

    @Test
    void everyPartitionOfAKeylessPartitionedTableNeedsItsOwnReplicaIdentity() throws Exception {
        // REPLICA IDENTITY FULL on the root is not inherited: an UPDATE of a partition fails all the same once published.
        database("ri_part", "CREATE TABLE public.m (id int, at date, v text) PARTITION BY RANGE (at)",
                "ALTER TABLE public.m REPLICA IDENTITY FULL",
                "CREATE TABLE public.m_2024 PARTITION OF public.m FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')",
                "CREATE TABLE public.m_2025 PARTITION OF public.m FOR VALUES FROM ('2025-01-01') TO ('2026-01-01')",
                "ALTER TABLE public.m_2025 REPLICA IDENTITY FULL",
                "CREATE TABLE public.m_2026 PARTITION OF public.m FOR VALUES FROM ('2026-01-01') TO ('2027-01-01')",
                "INSERT INTO public.m VALUES (1, '2024-05-01', 'a'), (2, '2025-05-01', 'gone'), (3, '2026-05-01', 'c')");
        String yaml = yaml("ri_part", List.of("public.m"));
        MillraceException e = startFails(yaml);
        assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
        assertThat(e.getMessage()).contains("\"public\".\"m_2024\"").contains("\"public\".\"m_2026\"").doesNotContain("\"m_2025\"");
        assertNothingWrittenToTheSource("ri_part", "ri_part");

        Preflight.Report r = preflight(yaml, dir, "ri_part");
        List<String> fix = statements(r.failures().get(0).fix());
        assertThat(fix).containsExactly("ALTER TABLE \"public\".\"m_2024\" REPLICA IDENTITY FULL;",
                "ALTER TABLE \"public\".\"m_2026\" REPLICA IDENTITY FULL;");
        try (Connection c = pg.connect("ri_part")) {
            E2e.exec(c, fix.toArray(String[]::new));
        }
        assertThat(preflight(yaml, dir, "ri_part").ok()).isTrue();
        try (RunningEngine run = RunningEngine.start(yaml, dir).awaitStreaming(Duration.ofSeconds(60));
             Connection src = pg.connect("ri_part"); Connection dst = pg.connect("ri_part_dst")) {
            assertUpdatesAndDeletesWork("ri_part", "public.m");
            E2e.awaitSame(src, dst, List.of(TableRef.parse("public.m")), Duration.ofSeconds(30));
        }
    }

    @Test
    void aPublicationSomeoneElseMadeThatAlreadyPublishesAKeylessTableIsRefusedAndLeftAsItIs() throws Exception {
        database("ri_pub", "CREATE TABLE public.items (id int PRIMARY KEY, v text)", "CREATE TABLE public.loose (a int, v text)",
                "INSERT INTO public.loose VALUES (1, 'a')", "CREATE PUBLICATION theirs FOR TABLE public.loose");
        try (Connection c = pg.connect("ri_pub")) {
            assertThatThrownBy(() -> E2e.exec(c, "UPDATE public.loose SET v = 'b'")).hasMessageContaining("does not have a replica identity");
        }
        String yaml = yaml("ri_pub", List.of("public.items", "public.loose")).replace("  publication: ri_pub", "  publication: theirs");
        MillraceException e = startFails(yaml);
        assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
        assertThat(e.getMessage()).contains("\"public\".\"loose\"").contains("publication 'theirs' already publishes it")
                .contains("ALTER TABLE \"public\".\"loose\" REPLICA IDENTITY FULL;");
        assertThat(count("ri_pub", "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'ri_pub'")).as("slot").isZero();
        assertThat(count("ri_pub", "SELECT count(*) FROM pg_publication_tables WHERE pubname = 'theirs'")).as("publication unchanged").isEqualTo(1);
    }

    /**
     * A publication Millrace may not make (create_publication: false) and a keyless table among the configured ones:
     * preflight fails both, and the CREATE PUBLICATION it prints must leave the keyless table out. Before the fix it listed
     * it, and a DBA who ran it made every UPDATE and DELETE of that table fail at once ("cannot update table ... because it
     * does not have a replica identity and publishes updates").
     */
    @Test
    void thePrintedPublicationFixLeavesOutTablesWithoutAReplicaIdentity() throws Exception {
        database("ri_fix", "CREATE TABLE public.items (id int PRIMARY KEY, v text)", "CREATE TABLE public.loose (a int, v text)",
                "INSERT INTO public.loose VALUES (1, 'a'), (2, 'gone')");
        String manual = yaml("ri_fix", List.of("public.items", "public.loose"))
                .replace("  publication: ri_fix", "  publication: ri_fix\n  create_publication: false");
        Preflight.Report r = preflight(manual, dir, "ri_fix");
        assertThat(r.failures()).extracting(Preflight.Check::name).containsExactly("table public.loose", "publication");
        String fix = r.failures().get(1).fix();
        assertThat(fix).contains("\"public\".\"items\"").doesNotContain("loose");
        try (Connection c = pg.connect("ri_fix")) {
            E2e.exec(c, statements(fix).toArray(String[]::new));
        }
        assertUpdatesAndDeletesWork("ri_fix", "public.loose");
    }

    /**
     * A pattern in source.tables, and a keyless table created while the pipeline streams: it is left out while running
     * (not_captured, the source's writes untouched). Before the fix the next start refused it (exit 6), so an application's
     * scratch table stopped the pipeline at its next restart or crash. Now the restart leaves it out as the running engine
     * did, and it is still listed with the fix.
     */
    @Test
    void aKeylessTableCreatedWhileStreamingDoesNotStopTheNextStart() throws Exception {
        database("ri_scratch", "CREATE SCHEMA shop", "CREATE TABLE shop.orders (id int PRIMARY KEY, v text)",
                "INSERT INTO shop.orders VALUES (1, 'a')");
        String yaml = yaml("ri_scratch", List.of("'shop.*'")).replace("  tables: ['shop.*']", "  tables: ['shop.*']\n  new_tables_poll_s: 1");
        try (RunningEngine run = RunningEngine.start(yaml, dir).awaitStreaming(Duration.ofSeconds(60))) {
            pg.execute("ri_scratch", "CREATE TABLE shop.scratch (a int, v text)", "INSERT INTO shop.scratch VALUES (1, 'gone')");
            awaitNotCaptured(run, "shop.scratch");
        }
        assertUpdatesAndDeletesWork("ri_scratch", "shop.scratch");
        Preflight.Report r = preflight(yaml, dir, "ri_scratch");
        assertThat(r.ok()).as(r.render()).isTrue();
        assertThat(r.render()).contains("WARN  table shop.scratch").contains("left out");
        try (RunningEngine run = RunningEngine.start(yaml, dir).awaitStreaming(Duration.ofSeconds(60));
             Connection src = pg.connect("ri_scratch"); Connection dst = pg.connect("ri_scratch_dst")) {
            awaitNotCaptured(run, "shop.scratch");
            E2e.exec(src, "INSERT INTO shop.orders VALUES (2, 'b')");
            E2e.awaitSame(src, dst, List.of(TableRef.parse("shop.orders")), Duration.ofSeconds(30));
            assertUpdatesAndDeletesWork("ri_scratch", "shop.scratch");
        }
    }

    private static void awaitNotCaptured(RunningEngine run, String table) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (run.engine().status().notCaptured().stream().noneMatch(n -> n.table().equals(table))) {
            assertThat(System.nanoTime()).as(table + " listed under not_captured").isLessThan(deadline);
            Thread.sleep(100);
        }
    }

    @Test
    void thePrintedPublicationFixForAPartitionedTablePublishesItThroughItsRoot() throws Exception {
        database("ri_root", "CREATE TABLE public.p (id int, at date, v text, PRIMARY KEY (id, at)) PARTITION BY RANGE (at)",
                "CREATE TABLE public.p_2024 PARTITION OF public.p FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')",
                "CREATE TABLE public.p_2025 PARTITION OF public.p FOR VALUES FROM ('2025-01-01') TO ('2026-01-01')",
                "INSERT INTO public.p VALUES (1, '2024-05-01', 'a'), (2, '2025-05-01', 'b')");
        // No publication and create_publication: false — the fix is CREATE PUBLICATION; applied as printed, preflight passes.
        String manual = yaml("ri_root", List.of("public.p")).replace("  publication: ri_root", "  publication: ri_root\n  create_publication: false");
        Preflight.Report r = preflight(manual, dir, "ri_root");
        assertThat(r.failures()).extracting(Preflight.Check::name).containsExactly("publication");
        try (Connection c = pg.connect("ri_root")) {
            E2e.exec(c, statements(r.failures().get(0).fix()).toArray(String[]::new));
        }
        assertThat(preflight(manual, dir, "ri_root").render()).doesNotContain("FAIL");

        // A publication made without publish_via_partition_root publishes the partitions, not the root: the fix says so.
        pg.execute("ri_root", "DROP PUBLICATION ri_root", "CREATE PUBLICATION ri_root FOR TABLE public.p");
        r = preflight(manual, dir, "ri_root");
        assertThat(r.failures()).extracting(Preflight.Check::name).containsExactly("publication");
        assertThat(r.failures().get(0).fix()).contains("publish_via_partition_root = true");
        try (Connection c = pg.connect("ri_root")) {
            E2e.exec(c, statements(r.failures().get(0).fix()).toArray(String[]::new));
        }
        assertThat(preflight(manual, dir, "ri_root").render()).doesNotContain("FAIL");
        try (RunningEngine run = RunningEngine.start(manual, dir).awaitStreaming(Duration.ofSeconds(60));
             Connection src = pg.connect("ri_root"); Connection dst = pg.connect("ri_root_dst")) {
            E2e.exec(src, "INSERT INTO public.p VALUES (3, '2025-06-01', 'c')", "UPDATE public.p SET v = 'a2' WHERE id = 1");
            E2e.awaitSame(src, dst, List.of(TableRef.parse("public.p")), Duration.ofSeconds(30));
        }
    }

    /**
     * Monthly partitions: a partition created (or attached) while streaming under a keyless partitioned table does not
     * take its root's REPLICA IDENTITY FULL, and its root publishes it, so PostgreSQL rejects every UPDATE and DELETE of
     * its rows. With the DDL event trigger it is given FULL in the CREATE's own transaction: the application's UPDATE
     * right after works. Without it, preflight warns before the start, and the running engine names each such partition
     * with the fix, until it is applied (the source's UPDATEs of it fail meanwhile: PostgreSQL's rule, stated here).
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "DDL trigger installed: {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void aPartitionCreatedWhileStreamingUnderAKeylessRootLeavesTheSourcesUpdatesWorking(boolean trigger) throws Exception {
        String db = trigger ? "ri_newpart_trg" : "ri_newpart";
        database(db, "CREATE TABLE public.m (id int, at date, v text) PARTITION BY RANGE (at)", "ALTER TABLE public.m REPLICA IDENTITY FULL",
                "CREATE TABLE public.m_2024 PARTITION OF public.m FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')",
                "ALTER TABLE public.m_2024 REPLICA IDENTITY FULL",
                "INSERT INTO public.m VALUES (1, '2024-05-01', 'a'), (2, '2024-06-01', 'gone')");
        if (trigger) {
            try (Connection c = pg.connect(db)) {
                io.millrace.source.DdlTrigger.install(c);
            }
        }
        String yaml = yaml(db, List.of("public.m")).replace("  status_interval_ms: 500", "  status_interval_ms: 500\n  new_tables_poll_s: 1")
                + "operations:\n  monitor_interval_ms: 200\n";
        List<Preflight.Check> warned = preflight(yaml, dir, db).checks().stream()
                .filter(c -> c.status() == Preflight.Status.WARN && c.detail().contains("partition created or attached later")).toList();
        if (trigger) {
            assertThat(warned).isEmpty();
        } else {
            assertThat(warned).singleElement().satisfies(c -> assertThat(c.fix()).contains("millrace setup CONFIG"));
        }
        try (RunningEngine run = RunningEngine.start(yaml, dir).awaitStreaming(Duration.ofSeconds(60));
             Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "CREATE TABLE public.m_2025 PARTITION OF public.m FOR VALUES FROM ('2025-01-01') TO ('2026-01-01')",
                    "INSERT INTO public.m VALUES (3, '2025-05-01', 'c'), (4, '2025-06-01', 'gone too')",
                    "CREATE TABLE public.m_2026 (id int, at date, v text)",
                    "ALTER TABLE public.m ATTACH PARTITION public.m_2026 FOR VALUES FROM ('2026-01-01') TO ('2027-01-01')",
                    "INSERT INTO public.m VALUES (5, '2026-05-01', 'e')");
            if (trigger) {
                assertThat(E2e.queryString(src, "SELECT string_agg(relname || '=' || relreplident::text, ',' ORDER BY relname) FROM pg_class"
                        + " WHERE relname IN ('m_2025', 'm_2026')")).isEqualTo("m_2025=f,m_2026=f");
            } else {
                assertThatThrownBy(() -> E2e.exec(src, "UPDATE public.m SET v = v || '?' WHERE at >= '2025-01-01'"))
                        .hasMessageContaining("does not have a replica identity");
                fixAsShown(run, src, "partition of public.m", "public.m_2025", "public.m_2026");
            }
            assertUpdatesAndDeletesWork(db, "public.m");
            E2e.awaitSame(src, dst, List.of(TableRef.parse("public.m")), Duration.ofSeconds(30));
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM public.m WHERE v LIKE '%!'")).isEqualTo(3);
        }
    }

    /**
     * A captured table left without a replica identity while streaming: its primary key dropped ({@code k}), or a keyless
     * table's REPLICA IDENTITY FULL set back to DEFAULT ({@code f}). Its publication makes PostgreSQL reject every UPDATE
     * and DELETE of it. With the DDL event trigger, the table whose primary key was dropped is given FULL in the ALTER's own
     * transaction, and the application's UPDATE right after works (one whose key is replaced in one transaction keeps
     * DEFAULT); an explicit REPLICA IDENTITY DEFAULT is left as the user made it. Otherwise the running engine names the
     * table with the fix under not_captured, and logs it, until the fix is applied (before, nothing said so until the next
     * start refused the table). Afterwards the destination equals the source.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "DDL trigger installed: {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
    void aCapturedTableThatLosesItsReplicaIdentityIsNamedOrGivenFull(boolean trigger) throws Exception {
        String db = trigger ? "ri_lost_trg" : "ri_lost";
        database(db, "CREATE TABLE public.k (id int PRIMARY KEY, v text)", "CREATE TABLE public.k2 (id int PRIMARY KEY, v text NOT NULL)",
                "CREATE TABLE public.f (id int, v text)",
                "ALTER TABLE public.f REPLICA IDENTITY FULL", "INSERT INTO public.k VALUES (1, 'a'), (2, 'gone')",
                "INSERT INTO public.f VALUES (1, 'a'), (2, 'gone')",
                // a keyed partitioned table: its partitions lose the key with the root's, each with a replica identity of its own
                "CREATE TABLE public.pk (id int, at date, v text, PRIMARY KEY (id, at)) PARTITION BY RANGE (at)",
                "CREATE TABLE public.pk_a PARTITION OF public.pk FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')",
                "CREATE TABLE public.pk_b PARTITION OF public.pk FOR VALUES FROM ('2025-01-01') TO ('2026-01-01')",
                "INSERT INTO public.pk VALUES (1, '2024-05-01', 'a'), (2, '2025-05-01', 'gone')",
                "CREATE TABLE public.pk2 (id int, at date, v text NOT NULL, PRIMARY KEY (id, at)) PARTITION BY RANGE (at)",
                "CREATE TABLE public.pk2_a PARTITION OF public.pk2 FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')");
        if (trigger) {
            try (Connection c = pg.connect(db)) {
                io.millrace.source.DdlTrigger.install(c);
            }
        }
        String yaml = yaml(db, List.of("public.k", "public.f", "public.k2", "public.pk", "public.pk2")).replace("  status_interval_ms: 500",
                "  status_interval_ms: 500\n  new_tables_poll_s: 1") + "operations:\n  monitor_interval_ms: 200\n";
        try (RunningEngine run = RunningEngine.start(yaml, dir).awaitStreaming(Duration.ofSeconds(60));
             Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            E2e.exec(src, "ALTER TABLE public.k DROP CONSTRAINT k_pkey", "ALTER TABLE public.f REPLICA IDENTITY DEFAULT",
                    "ALTER TABLE public.pk DROP CONSTRAINT pk_pkey");
            if (trigger) {
                // the dropped primary key: FULL in the ALTER's transaction, for a partitioned root's partitions too; the explicit
                // REPLICA IDENTITY DEFAULT is the user's
                assertThat(E2e.queryString(src, "SELECT string_agg(relname || '=' || relreplident::text, ',' ORDER BY relname) FROM pg_class"
                        + " WHERE relname IN ('k', 'f', 'k2', 'pk', 'pk_a', 'pk_b') AND relnamespace = 'public'::regnamespace"))
                        .isEqualTo("f=d,k=f,k2=d,pk=f,pk_a=f,pk_b=f");
                fixAsShown(run, src, "it has no replica identity now", "public.f");
                // a primary key replaced in one transaction (as a migration does it): DEFAULT again, no FULL left behind
                src.setAutoCommit(false);
                E2e.exec(src, "ALTER TABLE public.k2 DROP CONSTRAINT k2_pkey", "ALTER TABLE public.k2 ADD PRIMARY KEY (id, v)",
                        "ALTER TABLE public.pk2 DROP CONSTRAINT pk2_pkey", "ALTER TABLE public.pk2 ADD PRIMARY KEY (id, at, v)");
                src.commit();
                src.setAutoCommit(true);
                assertThat(E2e.queryString(src, "SELECT string_agg(relname || '=' || relreplident::text, ',' ORDER BY relname) FROM pg_class"
                        + " WHERE relname IN ('k2', 'pk2', 'pk2_a') AND relnamespace = 'public'::regnamespace")).isEqualTo("k2=d,pk2=d,pk2_a=d");
                // a primary key given back in a later transaction: DEFAULT again too (FULL would cost WAL for nothing); a
                // table the user set FULL themselves stays theirs, also one the trigger had made FULL before (k)
                E2e.exec(src, "ALTER TABLE public.k2 REPLICA IDENTITY FULL", "ALTER TABLE public.k2 DROP CONSTRAINT k2_pkey",
                        "ALTER TABLE public.k2 ADD PRIMARY KEY (id)");
                E2e.exec(src, "ALTER TABLE public.k REPLICA IDENTITY FULL", "ALTER TABLE public.k ADD PRIMARY KEY (id)",
                        "ALTER TABLE public.pk ADD PRIMARY KEY (id, at)");
                assertThat(E2e.queryString(src, "SELECT string_agg(relname || '=' || relreplident::text, ',' ORDER BY relname) FROM pg_class"
                        + " WHERE relname IN ('k', 'k2', 'pk', 'pk_a', 'pk_b') AND relnamespace = 'public'::regnamespace"))
                        .isEqualTo("k=f,k2=f,pk=d,pk_a=d,pk_b=d");
            } else {
                assertThatThrownBy(() -> E2e.exec(src, "UPDATE public.k SET v = v || '?'")).hasMessageContaining("does not have a replica identity");
                assertThatThrownBy(() -> E2e.exec(src, "UPDATE public.pk SET v = v || '?'")).hasMessageContaining("does not have a replica identity");
                fixAsShown(run, src, "no replica identity", "public.k", "public.f", "public.pk_a", "public.pk_b");
            }
            assertUpdatesAndDeletesWork(db, "public.k");
            assertUpdatesAndDeletesWork(db, "public.f");
            assertUpdatesAndDeletesWork(db, "public.pk");
            E2e.awaitSame(src, dst, List.of(TableRef.parse("public.k"), TableRef.parse("public.f"), TableRef.parse("public.pk")),
                    Duration.ofSeconds(30));
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM public.k WHERE v LIKE '%!'")).isEqualTo(1);
            assertThat(E2e.queryLong(dst, "SELECT count(*) FROM public.pk WHERE v LIKE '%!'")).isEqualTo(1);
        }
    }

    /**
     * Waits until {@code tables} are listed under not_captured, each for a reason that contains {@code reason} and says
     * the source's UPDATEs fail, runs the fixes as shown, and waits until none is listed.
     */
    private static void fixAsShown(RunningEngine run, Connection src, String reason, String... tables) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        List<io.millrace.engine.EngineStatus.NotCaptured> shown;
        do {
            Thread.sleep(100);
            shown = run.engine().status().notCaptured();
        } while (shown.size() < tables.length && System.nanoTime() < deadline);
        assertThat(shown).extracting(io.millrace.engine.EngineStatus.NotCaptured::table).containsExactlyInAnyOrder(tables);
        assertThat(shown).allSatisfy(n -> assertThat(n.reason()).contains(reason).contains("UPDATE and DELETE of its rows fails"));
        for (io.millrace.engine.EngineStatus.NotCaptured n : shown) {
            E2e.exec(src, statements(n.fix()).toArray(String[]::new)); // the fix, as shown
        }
        deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!run.engine().status().notCaptured().isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertThat(run.engine().status().notCaptured()).as("fixed: no longer shown").isEmpty();
    }
}
