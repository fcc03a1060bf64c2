package io.millrace.engine.idle;

import io.millrace.api.Millrace;
import io.millrace.core.Lsn;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An idle source must not fill the disk with WAL: while another database on the same server writes
 * heavily and none of the captured tables change, the slot still advances (the engine confirms the
 * server's keepalive position once everything before it is durable), so the WAL it retains stays
 * bounded — without any write to the source.
 */
class IdleSlotIT {
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        // Keepalives at least every second (wal_sender_timeout / 2), so the test need not wait long.
        pg = EmbeddedPg.builder().major(17).setting("wal_sender_timeout", "2s").setting("max_wal_size", "1GB").start();
        pg.createDatabase("quiet");
        pg.createDatabase("busy");
        pg.execute("quiet", "CREATE TABLE public.t (id int PRIMARY KEY)", "INSERT INTO public.t VALUES (1)");
        pg.execute("busy", "CREATE TABLE public.churn (id bigint, pad text)");
    }

    @AfterAll
    static void stop() {
        pg.close();
    }

    @Test
    void retainedWalStaysBoundedWhileAnotherDatabaseWritesHeavily(@TempDir Path dir) throws Exception {
        Millrace.Builder pipeline = Millrace.builder().source(E2e.source(pg, "quiet", "idle").tables("public.t").build()).baseDir(dir)
                .destination("jsonl", Map.of("name", "files", "directory", "events"));
        try (RunningEngine e = RunningEngine.start(pipeline).awaitStreaming(Duration.ofSeconds(60));
             Connection quiet = pg.connect("quiet"); Connection busy = pg.connect("busy")) {
            Lsn start = lsn(quiet, "SELECT pg_current_wal_lsn()::text");
            long written = 0;
            long maxRetainedLate = 0;
            try (Statement s = busy.createStatement()) {
                for (int round = 0; round < 24; round++) {
                    s.execute("INSERT INTO churn SELECT g, repeat('w', 200) FROM generate_series(1, 20000) g");
                    s.execute("CHECKPOINT"); // logs running transactions too, which lets the slot's restart_lsn move
                    Thread.sleep(400);
                    if (round >= 12) {
                        maxRetainedLate = Math.max(maxRetainedLate, retained(quiet));
                    }
                }
            }
            written = lsn(quiet, "SELECT pg_current_wal_lsn()::text").value() - start.value();
            Lsn confirmed = lsn(quiet, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'idle'");
            System.out.printf("IdleSlotIT: %d MiB of WAL written by another database; slot retained at most %d MiB in the second half;"
                    + " confirmed %s%n", written >> 20, maxRetainedLate >> 20, confirmed);
            assertThat(written).as("the other database wrote a lot of WAL").isGreaterThan(60L << 20);
            assertThat(confirmed.value()).as("the idle slot advanced").isGreaterThan(start.value() + (written / 2));
            assertThat(maxRetainedLate).as("retained WAL stays bounded, far below what was written").isLessThan(written / 3);
        }
    }

    /**
     * A postgres destination on the source's own server (a copy between two databases of one cluster): each checkpoint it
     * stores is WAL the slot then sees pass, and an idle advance on every keepalive stored a checkpoint 15 times a second,
     * for ever, on an idle source. Idle advances come at most once per status interval.
     */
    @Test
    void anIdleSourceWithTheDestinationOnTheSameServerIsNotWrittenToInALoop() throws Exception {
        pg.createDatabase("copy");
        Millrace.Builder pipeline = Millrace.builder()
                .source(E2e.source(pg, "quiet", "idle_loop").tables("public.t").statusIntervalMs(1000).build())
                .destination("postgres", E2e.postgres("copy", pg, "copy"));
        try (RunningEngine e = RunningEngine.start(pipeline).awaitStreaming(Duration.ofSeconds(60));
             Connection copy = pg.connect("copy")) {
            Thread.sleep(3_000);
            long before = checkpointWrites(copy);
            Thread.sleep(10_000);
            long writes = checkpointWrites(copy) - before;
            System.out.printf("IdleSlotIT: %d checkpoint writes in 10 s of an idle source%n", writes);
            assertThat(writes).as("checkpoints stored in 10 s of an idle source (status interval 1 s)").isLessThanOrEqualTo(12);
        }
    }

    private static long checkpointWrites(Connection c) throws Exception {
        try (Statement s = c.createStatement()) {
            s.execute("SELECT pg_stat_clear_snapshot()");
            try (ResultSet rs = s.executeQuery("SELECT n_tup_ins + n_tup_upd FROM pg_stat_user_tables WHERE relname = 'checkpoints'")) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private static Lsn lsn(Connection c, String sql) throws Exception {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return Lsn.parse(rs.getString(1));
        }
    }

    private static long retained(Connection c) throws Exception {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint FROM pg_replication_slots WHERE slot_name = 'idle'")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
