package io.millrace.engine.status;

import io.millrace.api.Millrace;
import io.millrace.api.SourceSettings;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.EngineStatus;
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

/** What the status says when it matters: a destination that blocks, and tables whose size PostgreSQL never estimated. */
class StatusIT {
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

    private static EngineStatus.Table table(RunningEngine e, String name) {
        return e.engine().status().tables().stream().filter(t -> t.table().equals(name)).findFirst().orElseThrow();
    }

    /**
     * A table never analysed has reltuples -1 (0 before PostgreSQL 14): its estimate is unknown, not 0 ("21 of 0"). A
     * table that grew since it was analysed is estimated as the planner does, by its current size.
     */
    @Test
    void rowEstimatesAreUnknownForTablesNeverAnalysedAndScaledToTheTablesSize() throws Exception {
        pg.createDatabase("est");
        pg.createDatabase("est_dst");
        pg.execute("est", "CREATE TABLE public.fresh (id int PRIMARY KEY, v text)", "INSERT INTO public.fresh SELECT g, 'v' FROM generate_series(1, 21) g",
                "CREATE TABLE public.grown (id int PRIMARY KEY, v text)", "INSERT INTO public.grown SELECT g, 'v' FROM generate_series(1, 2000) g",
                "ANALYZE public.grown", "INSERT INTO public.grown SELECT g, 'v' FROM generate_series(2001, 4000) g",
                "CREATE TABLE public.empty (id int PRIMARY KEY)");
        Millrace.Builder pipeline = E2e.pipeline(pg, "est", "est", List.of("public.fresh", "public.grown", "public.empty"), SourceSettings.BinaryMode.AUTO, "est_dst", dir.resolve("events"));
        try (RunningEngine e = RunningEngine.start(pipeline).awaitStreaming(Duration.ofSeconds(60))) {
            assertThat(table(e, "public.fresh").rowsCopied()).isEqualTo(21);
            assertThat(table(e, "public.fresh").rowsEstimated()).as("never analysed: unknown").isEqualTo(-1);
            assertThat(table(e, "public.grown").rowsCopied()).isEqualTo(4000);
            assertThat(table(e, "public.grown").rowsEstimated()).as("analysed at 2000 rows, now twice the pages").isBetween(3600L, 4400L);
            assertThat(table(e, "public.empty").rowsEstimated()).as("no pages: nothing to estimate").isZero();
        }
    }

    /**
     * With {@code source.binary: auto}, one column of a type Millrace reads only as text turns the whole stream to text:
     * the status says so and names the column (issue 15), where before only a log line did.
     */
    @Test
    void theStatusSaysWhyValuesAreReadAsText() throws Exception {
        pg.createDatabase("txt");
        for (String d : List.of("txt_plain_dst", "txt_odd_dst", "txt_off_dst")) {
            pg.createDatabase(d);
        }
        pg.execute("txt", "CREATE TABLE public.plain (id int PRIMARY KEY, v text)",
                "CREATE TABLE public.odd (id int PRIMARY KEY, c_regclass regclass)", "INSERT INTO public.odd VALUES (1, 'pg_class')");
        Millrace.Builder plain = E2e.pipeline(pg, "txt", "txt_plain", List.of("public.plain"), SourceSettings.BinaryMode.AUTO, "txt_plain_dst",
                dir.resolve("plain"));
        try (RunningEngine e = RunningEngine.start(plain).awaitStreaming(Duration.ofSeconds(60))) {
            assertThat(e.engine().status().values()).isEqualTo(new EngineStatus.Values("binary", null));
        }
        Millrace.Builder odd = E2e.pipeline(pg, "txt", "txt_odd", List.of("public.plain", "public.odd"), SourceSettings.BinaryMode.AUTO,
                "txt_odd_dst", dir.resolve("odd"));
        try (RunningEngine e = RunningEngine.start(odd).awaitStreaming(Duration.ofSeconds(60))) {
            EngineStatus.Values v = e.engine().status().values();
            assertThat(v.mode()).isEqualTo("text");
            assertThat(v.textReason()).contains("public.odd.c_regclass").contains("regclass").contains("only as text");
        }
        Millrace.Builder off = E2e.pipeline(pg, "txt", "txt_off", List.of("public.plain"), SourceSettings.BinaryMode.OFF, "txt_off_dst",
                dir.resolve("off"));
        try (RunningEngine e = RunningEngine.start(off).awaitStreaming(Duration.ofSeconds(60))) {
            assertThat(e.engine().status().values()).isEqualTo(new EngineStatus.Values("text", "source.binary is off"));
        }
    }

    /**
     * A lock on the postgres destination's table holds the writer: the time lag grows with the oldest change not yet
     * delivered (not the last delivered one's latency), and the status names the destination and how long it waits.
     */
    @Test
    void aDestinationBlockedByALockShowsAGrowingLagAndIsNamed() throws Exception {
        pg.createDatabase("slow");
        pg.createDatabase("slow_dst");
        pg.execute("slow", "CREATE TABLE public.t (id int PRIMARY KEY, v text)", "INSERT INTO public.t VALUES (1, 'a')");
        Millrace.Builder pipeline = E2e.pipeline(pg, "slow", "slow", List.of("public.t"), SourceSettings.BinaryMode.AUTO, "slow_dst", dir.resolve("events"));
        try (RunningEngine e = RunningEngine.start(pipeline).awaitStreaming(Duration.ofSeconds(60));
             Connection src = pg.connect("slow"); Connection dst = pg.connect("slow_dst"); Connection locker = pg.connect("slow_dst")) {
            E2e.exec(src, "INSERT INTO public.t VALUES (2, 'b')");
            E2e.awaitRow(dst, "SELECT count(*) FROM public.t WHERE id = 2", Duration.ofSeconds(30));
            long settled = e.engine().status().lagMillis();
            assertThat(settled).isBetween(0L, 5_000L);
            assertThat(e.engine().status().slowDestination()).isNull();

            locker.setAutoCommit(false);
            E2e.exec(locker, "LOCK TABLE public.t IN ACCESS EXCLUSIVE MODE");
            long t0 = System.nanoTime();
            E2e.exec(src, "INSERT INTO public.t VALUES (3, 'c')");
            Thread.sleep(4_000);
            EngineStatus s = e.engine().status();
            long waited = Duration.ofNanos(System.nanoTime() - t0).toMillis();
            assertThat(s.state()).isEqualTo("streaming");
            assertThat(s.lagMillis()).as("lag while the destination is blocked").isBetween(3_000L, waited + 1_000);
            assertThat(s.slowDestination()).as("the slow destination").isNotNull();
            assertThat(s.slowDestination().destination()).isEqualTo("replica");
            assertThat(s.slowDestination().waitingMillis()).isBetween(2_000L, waited + 1_000);
            Thread.sleep(1_000);
            assertThat(e.engine().status().lagMillis()).as("it grows").isGreaterThan(s.lagMillis() + 500);

            locker.rollback(); // the lock goes: the change lands and the lag settles
            E2e.awaitRow(dst, "SELECT count(*) FROM public.t WHERE id = 3", Duration.ofSeconds(30));
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (e.engine().status().slowDestination() != null && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertThat(e.engine().status().slowDestination()).isNull();
            E2e.exec(src, "INSERT INTO public.t VALUES (4, 'd')");
            E2e.awaitRow(dst, "SELECT count(*) FROM public.t WHERE id = 4", Duration.ofSeconds(30));
            Thread.sleep(200);
            assertThat(e.engine().status().lagMillis()).as("settled again").isLessThan(3_000L);
        }
    }
}
