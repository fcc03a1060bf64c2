package io.millrace.engine.duckdb;

import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Snapshot and streaming into a DuckDB file: after both, the DuckDB tables hold the source's rows (exactly once). */
class DuckDbEndToEndIT {
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase("dk");
        pg.execute("dk", "CREATE TABLE public.orders (id int PRIMARY KEY, customer text, amount numeric(12,2), placed timestamptz, big text)",
                "INSERT INTO public.orders SELECT g, 'c' || (g % 97), g * 1.25, timestamptz '2024-01-01 00:00:00+00' + g * interval '1 minute',"
                        + " CASE WHEN g % 100 = 0 THEN (SELECT string_agg(md5(g::text || x::text), '') FROM generate_series(1, 200) x) END"
                        + " FROM generate_series(1, 20000) g",
                "CREATE TABLE public.events (at int, what text)", "ALTER TABLE public.events REPLICA IDENTITY FULL",
                "INSERT INTO public.events SELECT g, 'seed' FROM generate_series(1, 100) g");
    }

    @AfterAll
    static void stop() {
        pg.close();
    }

    @Test
    void snapshotAndStreamLandInTheDuckDbFile(@TempDir Path dir) throws Exception {
        String yaml = String.join("\n",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: dk, user: postgres, slot: dk, publication: dk,",
                "         tables: [public.orders, public.events]}",
                "destinations:",
                "  - {name: mirror, type: duckdb, file: mirror.duckdb}",
                "");
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(Duration.ofSeconds(60))) {
            pg.execute("dk", "UPDATE public.orders SET amount = amount + 1 WHERE id % 10 = 0",  // TOASTed 'big' unchanged
                    "DELETE FROM public.orders WHERE id % 7 = 0",
                    "INSERT INTO public.orders VALUES (30000, 'late', 9.99, now(), NULL)",
                    "UPDATE public.orders SET id = 40000 WHERE id = 1",
                    "DELETE FROM public.events WHERE at <= 10", "INSERT INTO public.events VALUES (500, 'streamed')");
            long deadline = System.currentTimeMillis() + 60_000;
            while (e.engine().stats().eventsWritten() < 20100 + 2000 + 2857 + 1 + 1 + 10 + 1 && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
        }
        List<String> expected;
        List<String> expectedEvents;
        try (Connection src = pg.connect("dk")) {
            expected = rows(src, "SELECT id || '|' || customer || '|' || amount || '|' || coalesce(md5(big), '-') FROM public.orders ORDER BY id");
            expectedEvents = rows(src, "SELECT \"at\" || '|' || what FROM public.events ORDER BY \"at\"");
        }
        try (Connection duck = DriverManager.getConnection("jdbc:duckdb:" + dir.resolve("mirror.duckdb"))) {
            assertThat(rows(duck, "SELECT id || '|' || customer || '|' || amount || '|' || coalesce(md5(big), '-') FROM public.orders ORDER BY id"))
                    .isEqualTo(expected);
            assertThat(rows(duck, "SELECT \"at\" || '|' || what FROM public.events ORDER BY \"at\"")).isEqualTo(expectedEvents);
            assertThat(rows(duck, "SELECT count(*) FROM millrace.checkpoints")).containsExactly("1");
        }
    }

    private static List<String> rows(Connection c, String sql) throws Exception {
        List<String> out = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }
}
