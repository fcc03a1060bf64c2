package io.millrace.engine.faults;

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
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A production server whose DBA limits sessions: {@code statement_timeout}, {@code idle_in_transaction_session_timeout},
 * {@code idle_session_timeout} (PostgreSQL 14+) and {@code transaction_timeout} (17+) set on the source and the
 * destination database, as a DBA does against runaway queries ({@code ALTER DATABASE ... SET}; {@code ALTER ROLE} works the
 * same way). Millrace's own sessions are long by nature (a table's COPY, the snapshot's transaction that the readers
 * share, a large transaction applied at once, a connection idle while the source is): each limit would end one, and the
 * snapshot would start over at every retry while the slot keeps the source's WAL. Millrace's sessions turn these limits
 * off for themselves (the application's sessions keep them). The engine here runs without a supervisor: one such
 * failure ends it.
 */
class DbaSettingsIT {
    private static EmbeddedPg pg;

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

    @Test
    void sessionLimitsSetOnTheDatabasesEndNoneOfMillracesSessions(@TempDir Path dir) throws Exception {
        pg.createDatabase("tmo");
        pg.createDatabase("tmo_dst");
        for (String db : List.of("tmo", "tmo_dst")) {
            List<String> limits = new ArrayList<>(List.of("ALTER DATABASE " + db + " SET statement_timeout = '100ms'",
                    "ALTER DATABASE " + db + " SET idle_in_transaction_session_timeout = '200ms'",
                    "ALTER DATABASE " + db + " SET idle_session_timeout = '1s'"));
            if (pg.major() >= 17) {
                limits.add("ALTER DATABASE " + db + " SET transaction_timeout = '1s'");
            }
            pg.execute("postgres", limits.toArray(String[]::new));
        }
        try (Connection src = unlimited("tmo"); Connection dst = unlimited("tmo_dst")) {
            // about 40 MB: its COPY takes far longer than 100 ms, the snapshot's transaction longer than 1 s
            E2e.exec(src, "CREATE TABLE public.big (id int PRIMARY KEY, v text NOT NULL)",
                    "INSERT INTO public.big SELECT g, repeat(md5(g::text), 4) FROM generate_series(1, 300000) g");
            // The destination named by a url with options of its own, as a user sets a search_path: before, pgjdbc let them
            // replace Millrace's session settings whole, and the destination's limits ended the large transaction's apply.
            String yaml = E2e.yaml(pg, "tmo", "tmo", List.of("public.big"), "auto", "tmo_dst", dir.resolve("events"))
                    .replace("    host: 127.0.0.1\n    port: " + pg.port() + "\n    database: tmo_dst\n",
                            "    url: jdbc:postgresql://127.0.0.1:" + pg.port() + "/tmo_dst?options=-c%20search_path%3Dpublic&tcpKeepAlive=true\n");
            assertThat(yaml).contains("options=");
            List<TableRef> t = E2e.refs(List.of("public.big"));
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(Duration.ofSeconds(120))) {
                E2e.awaitSame(src, dst, t, Duration.ofSeconds(60));
                // one large transaction: applied on the destination in statements far longer than 100 ms
                E2e.exec(src, "UPDATE public.big SET v = v || 'u'");
                E2e.awaitSame(src, dst, t, Duration.ofSeconds(120));
                // quiet for longer than idle_session_timeout: the sessions Millrace keeps open stay usable
                Thread.sleep(2500);
                E2e.exec(src, "INSERT INTO public.big VALUES (0, 'after the quiet')");
                E2e.awaitSame(src, dst, t, Duration.ofSeconds(60));
            }
            // the application's sessions keep the DBA's limit
            try (Connection app = pg.connect("tmo")) {
                assertThat(E2e.queryString(app, "SHOW statement_timeout")).isEqualTo("100ms");
            }
        }
    }

    /**
     * The same server with the output settings a DBA or a locale picks set on both databases ({@code DateStyle} SQL with
     * day before month, {@code IntervalStyle} sql_standard, {@code bytea_output} escape, a time zone east of UTC, floats
     * rounded): the values pgoutput and COPY send in text follow the session's settings. With {@code binary: off} (every
     * value in text, in the snapshot and the stream) each value must still arrive as it is, in the destination and in the
     * event (docs/TYPES.md's forms).
     */
    @Test
    void outputStylesSetOnTheDatabasesChangeNoValue(@TempDir Path dir) throws Exception {
        pg.createDatabase("sty");
        pg.createDatabase("sty_dst");
        for (String db : List.of("sty", "sty_dst")) {
            pg.execute("postgres", "ALTER DATABASE " + db + " SET DateStyle = 'SQL, DMY'", "ALTER DATABASE " + db + " SET IntervalStyle = 'sql_standard'",
                    "ALTER DATABASE " + db + " SET bytea_output = 'escape'", "ALTER DATABASE " + db + " SET TimeZone = 'Pacific/Chatham'",
                    "ALTER DATABASE " + db + " SET extra_float_digits = 0");
        }
        String row = "(%d, date '2024-03-04', timestamp '2024-03-04 05:06:07.5', timestamptz '2024-03-04 05:06:07.5+00', time '05:06:07.5',"
                + " interval '1 year 2 mons 3 days 04:05:06.7', '\\x00ff27'::bytea, 0.1::float8, 0.1::real, ARRAY[date '2024-03-04'], ARRAY['\\x00ff'::bytea])";
        try (Connection src = iso("sty"); Connection dst = iso("sty_dst")) {
            E2e.exec(src, "CREATE TABLE public.v (id int PRIMARY KEY, d date, ts timestamp, tstz timestamptz, t time, iv interval, b bytea,"
                    + " f8 float8, f4 real, da date[], ba bytea[])", "INSERT INTO public.v VALUES " + String.format(row, 1));
            String yaml = E2e.yaml(pg, "sty", "sty", List.of("public.v"), "off", "sty_dst", dir.resolve("events"));
            List<TableRef> t = E2e.refs(List.of("public.v"));
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(Duration.ofSeconds(60))) {
                E2e.exec(src, "INSERT INTO public.v VALUES " + String.format(row, 2));
                E2e.awaitSame(src, dst, t, Duration.ofSeconds(30));
            }
            List<com.fasterxml.jackson.databind.JsonNode> events = E2e.awaitEvent(dir.resolve("events"),
                    ev -> E2e.isTable(ev, "v") && E2e.row(ev).path("id").asInt() == 2, "of row 2", Duration.ofSeconds(10));
            for (int id = 1; id <= 2; id++) { // 1 from the snapshot, 2 from the stream
                int wanted = id;
                com.fasterxml.jackson.databind.JsonNode r = E2e.row(events.stream()
                        .filter(ev -> E2e.isTable(ev, "v") && E2e.row(ev).path("id").asInt() == wanted).findFirst().orElseThrow());
                assertThat(r.path("d").asLong()).as("date, days since 1970 (row %d)", id).isEqualTo(19786);
                assertThat(r.path("tstz").asText()).as("timestamptz (row %d)", id).isEqualTo("2024-03-04T05:06:07.500000Z");
                assertThat(r.path("iv").asText()).as("interval (row %d)", id).isEqualTo("P1Y2M3DT4H5M6.7S");
                assertThat(r.path("b").asText()).as("bytea, base64 (row %d)", id).isEqualTo("AP8n");
                assertThat(r.path("f8").asDouble()).as("float8 (row %d)", id).isEqualTo(0.1);
                assertThat(r.path("f4").asText()).as("real (row %d)", id).isEqualTo("0.1");
            }
        }
    }

    /** A test session with ISO output, whatever the database says (the checks compare rows as text). */
    private static Connection iso(String db) throws Exception {
        Connection c = pg.connect(db);
        E2e.exec(c, "SET DateStyle = ISO", "SET IntervalStyle = postgres", "SET bytea_output = hex", "SET TimeZone = UTC",
                "SET extra_float_digits = 3");
        return c;
    }

    /** A test session without the database's limits (the checks read whole tables). */
    private static Connection unlimited(String db) throws Exception {
        Connection c = pg.connect(db);
        E2e.exec(c, "SET statement_timeout = 0", "SET idle_in_transaction_session_timeout = 0", "SET idle_session_timeout = 0");
        if (pg.major() >= 17) {
            E2e.exec(c, "SET transaction_timeout = 0");
        }
        return c;
    }
}
