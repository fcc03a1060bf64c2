package io.millrace.engine.tables;

import io.millrace.api.Millrace;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** source.tables patterns and source.exclude_tables decide what is published, copied and streamed. */
class TableSelectionIT {
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase("sel");
        pg.createDatabase("sel_dst");
        pg.execute("sel", "CREATE SCHEMA shop", "CREATE TABLE shop.orders (id int PRIMARY KEY)", "CREATE TABLE shop.items (id int PRIMARY KEY)",
                "CREATE TABLE shop.audit_log (id int PRIMARY KEY)", "CREATE TABLE public.other (id int PRIMARY KEY)",
                "CREATE TABLE shop.measures (id int, at date, PRIMARY KEY (id, at)) PARTITION BY RANGE (at)",
                "CREATE TABLE shop.measures_2024 PARTITION OF shop.measures FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')",
                "CREATE TABLE shop.measures_2025 PARTITION OF shop.measures FOR VALUES FROM ('2025-01-01') TO ('2026-01-01')",
                "INSERT INTO shop.orders VALUES (1)", "INSERT INTO shop.items VALUES (1)", "INSERT INTO shop.audit_log VALUES (1)",
                "INSERT INTO public.other VALUES (1)", "INSERT INTO shop.measures VALUES (1, '2024-05-01'), (2, '2025-05-01')");
    }

    @AfterAll
    static void stop() {
        pg.close();
    }

    @Test
    void patternsAndExclusionsChooseTheTablesAndPartitionsComeThroughTheirRoot() throws Exception {
        Millrace.Builder pipeline = Millrace.builder()
                .source(E2e.source(pg, "sel", "sel").statusIntervalMs(10_000).tables("shop.*").excludeTables("shop.audit_*").build())
                .destination("postgres", E2e.postgres("replica", pg, "sel_dst"));
        try (RunningEngine e = RunningEngine.start(pipeline).awaitStreaming(Duration.ofSeconds(60));
             Connection src = pg.connect("sel"); Connection dst = pg.connect("sel_dst")) {
            assertThat(strings(src, "SELECT schemaname || '.' || tablename FROM pg_publication_tables WHERE pubname = 'sel' ORDER BY 1"))
                    .containsExactly("shop.items", "shop.measures", "shop.orders");
            try (Statement s = src.createStatement()) {
                s.execute("INSERT INTO shop.measures VALUES (3, '2025-06-01')");
                s.execute("INSERT INTO shop.audit_log VALUES (2)");
            }
            long deadline = System.currentTimeMillis() + 30_000;
            while (strings(dst, "SELECT id::text FROM shop.measures ORDER BY 1").size() < 3 && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            assertThat(strings(dst, "SELECT id::text FROM shop.measures ORDER BY 1")).containsExactly("1", "2", "3");
            assertThat(strings(dst, "SELECT table_schema || '.' || table_name FROM information_schema.tables"
                    + " WHERE table_schema IN ('shop', 'public') ORDER BY 1")).containsExactly("shop.items", "shop.measures", "shop.orders");
        }
    }

    /**
     * A table put in exclude_tables while Millrace is stopped. Before the fix the publication kept it, so its changes went on
     * reaching the destinations (and a reload then said "no table removed"). Now the start takes it out of the publication,
     * as a reload does while running; the destinations keep the rows they have.
     */
    @Test
    void aTableExcludedWhileStoppedIsTakenOutOfThePublicationAtTheNextStart() throws Exception {
        pg.createDatabase("selx");
        pg.createDatabase("selx_dst");
        pg.execute("selx", "CREATE SCHEMA shop", "CREATE TABLE shop.orders (id int PRIMARY KEY)", "CREATE TABLE shop.secrets (id int PRIMARY KEY)",
                "INSERT INTO shop.orders VALUES (1)", "INSERT INTO shop.secrets VALUES (1)");
        Millrace.Builder all = Millrace.builder().source(E2e.source(pg, "selx", "selx").tables("shop.*").build())
                .destination("postgres", E2e.postgres("replica", pg, "selx_dst"));
        try (RunningEngine e = RunningEngine.start(all).awaitStreaming(Duration.ofSeconds(60)); Connection dst = pg.connect("selx_dst")) {
            E2e.awaitRow(dst, "SELECT count(*) FROM shop.secrets WHERE id = 1", Duration.ofSeconds(30));
        }
        Millrace.Builder excluded = Millrace.builder()
                .source(E2e.source(pg, "selx", "selx").tables("shop.*").excludeTables("shop.secrets").build())
                .destination("postgres", E2e.postgres("replica", pg, "selx_dst"));
        try (RunningEngine e = RunningEngine.start(excluded).awaitStreaming(Duration.ofSeconds(60));
             Connection src = pg.connect("selx"); Connection dst = pg.connect("selx_dst")) {
            assertThat(strings(src, "SELECT schemaname || '.' || tablename FROM pg_publication_tables WHERE pubname = 'selx' ORDER BY 1"))
                    .containsExactly("shop.orders");
            E2e.exec(src, "INSERT INTO shop.secrets VALUES (2)", "INSERT INTO shop.orders VALUES (2)");
            E2e.awaitRow(dst, "SELECT count(*) FROM shop.orders WHERE id = 2", Duration.ofSeconds(30));
            assertThat(strings(dst, "SELECT id::text FROM shop.secrets ORDER BY 1")).as("kept, and no longer followed").containsExactly("1");
        }
    }

    private static List<String> strings(Connection c, String sql) throws Exception {
        List<String> out = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }
}
