package io.millrace.cli.crash;

import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.verify.Verifier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A crash in the few milliseconds of the very first start in which some destinations hold their first
 * checkpoint and others do not yet (the engine writes them one after the other). Random kills hit it
 * rarely, so this test stops the engine exactly there: the postgres destination comes second in the
 * configuration, and the test holds a SHARE lock on its checkpoint table, which lets the sink open (it
 * only reads the table) but blocks its first checkpoint write. Once the jsonl destination has its
 * checkpoint and the postgres sink waits on the lock, the engine is SIGKILLed.
 *
 * <p>INV: RESUME — the next start must recover by itself: the snapshot had not landed anywhere, so it
 * starts over, and the destination ends equal to the source. (Before the fix the engine refused to
 * start, "some destinations have a checkpoint and some do not", exit status 2, for ever.)
 */
class FirstStartCrashIT {
    private static final String SRC = "first_src";
    private static final String DST = "first_dst";
    private static final List<TableRef> TABLES = List.of(new TableRef("public", "items"));

    private static EmbeddedPg pg;

    @BeforeAll
    static void startServer() {
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase(SRC);
        pg.createDatabase(DST);
    }

    @AfterAll
    static void stopServer() {
        if (pg != null) {
            pg.close();
        }
    }

    @Test
    void killBetweenTheFirstCheckpointsOfTwoDestinationsIsRecovered() throws Exception {
        Path work = Path.of("target", "crash-first-start").toAbsolutePath();
        if (Files.exists(work)) {
            try (Stream<Path> w = Files.walk(work)) {
                for (Path p : w.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
        Path events = work.resolve("events");
        Files.createDirectories(events);
        pg.execute(SRC, "CREATE TABLE items (id int PRIMARY KEY, v text)",
                "INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 1000) g");
        // the same table the postgres sink would create, so that its open() only reads it
        pg.execute(DST, "CREATE SCHEMA millrace", "CREATE TABLE millrace.checkpoints (destination text PRIMARY KEY,"
                + " checkpoint jsonb NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())");
        Path config = work.resolve("config.yaml");
        Files.writeString(config, String.join("\n",
                "name: first",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: " + SRC + ", user: postgres, slot: first,"
                        + " publication: first, tables: [public.items]}",
                "snapshot: {mode: initial}",
                "destinations:",
                "  - {name: files, type: jsonl, directory: " + events + "}",
                "  - {name: replica, type: postgres, host: 127.0.0.1, port: " + pg.port() + ", database: " + DST
                        + ", user: postgres}",
                ""), StandardCharsets.UTF_8);

        EngineProcess engine = null;
        try (Connection src = pg.connect(SRC); Connection dst = pg.connect(DST); Connection lock = pg.connect(DST)) {
            lock.setAutoCommit(false);
            try (Statement s = lock.createStatement()) {
                s.execute("LOCK TABLE millrace.checkpoints IN SHARE MODE"); // reads pass, the first checkpoint write waits
            }
            engine = EngineProcess.start(config, work.resolve("engine-1.log"));
            long deadline = System.currentTimeMillis() + 60_000;
            while (!(DurableSampler.jsonlCheckpoint(events.resolve("checkpoint.json")) != null && sinkWaitsOnLock(dst))) {
                assertThat(engine.alive()).as("engine ended; log:%n%s", engine.logTail(30)).isTrue();
                assertThat(System.currentTimeMillis()).as("engine never reached its first checkpoints; log:%n%s",
                        engine.logTail(30)).isLessThan(deadline);
                Thread.sleep(20);
            }
            assertThat(engine.kill()).isEqualTo(EngineProcess.SIGKILL_EXIT);
            lock.rollback();
            engine = null;
            assertThat(DurableSampler.postgresCheckpoint(dst, "replica")).as("postgres checkpoint after the kill").isNull();
            assertThat(DurableSampler.jsonlCheckpoint(events.resolve("checkpoint.json")).snapshotState()).isEqualTo("RUNNING");
            awaitSlotIdle(src);

            engine = EngineProcess.start(config, work.resolve("engine-2.log"));
            deadline = System.currentTimeMillis() + 90_000;
            while (true) {
                assertThat(engine.alive()).as("the engine did not recover from a crash between the first checkpoints of its"
                        + " destinations; log %s:%n%s", engine.log(), engine.logTail(10)).isTrue();
                if (Verifier.compare(src, dst, TABLES, null).stream().allMatch(Verifier.TableResult::equal)) {
                    break;
                }
                assertThat(System.currentTimeMillis()).as("destination not equal to the source; log:%n%s", engine.logTail(20))
                        .isLessThan(deadline);
                Thread.sleep(200);
            }
            // stop it once it streams (a stop during the snapshot is "interrupted", exit status 130)
            while (!engine.logText().contains("streaming from slot")) {
                assertThat(engine.alive()).as("engine ended; log:%n%s", engine.logTail(20)).isTrue();
                assertThat(System.currentTimeMillis()).as("engine not streaming; log:%n%s", engine.logTail(20)).isLessThan(deadline);
                Thread.sleep(50);
            }
            assertThat(engine.terminate(60)).as("exit status after SIGTERM; log:%n%s", engine.logTail(10)).isEqualTo(0);
            engine = null;
        } finally {
            if (engine != null) {
                engine.destroyQuietly();
            }
        }
    }

    private static boolean sinkWaitsOnLock(Connection dst) throws Exception {
        try (PreparedStatement ps = dst.prepareStatement("SELECT count(*) FROM pg_stat_activity WHERE application_name = ?"
                + " AND wait_event_type = 'Lock'")) {
            ps.setString(1, "millrace-sink-replica");
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1) > 0;
            }
        }
    }

    private static void awaitSlotIdle(Connection src) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            try (Statement s = src.createStatement();
                 ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'first' AND active")) {
                rs.next();
                if (rs.getInt(1) == 0) {
                    return;
                }
            }
            assertThat(System.currentTimeMillis()).as("slot still active").isLessThan(deadline);
            Thread.sleep(10);
        }
    }
}
