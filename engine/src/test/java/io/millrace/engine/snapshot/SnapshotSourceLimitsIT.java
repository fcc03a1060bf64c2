package io.millrace.engine.snapshot;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.List;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A source without room for the slot or the WAL sender the snapshot needs: the start fails with
 * {@link Kind#SOURCE_SETUP}, naming the setting and the fix, before anything is written (no slot, no
 * publication, nothing in either destination). One server with {@code max_replication_slots = 1}
 * and {@code max_wal_senders = 1}.
 */
class SnapshotSourceLimitsIT {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        Snap.init();
        pg = EmbeddedPg.builder().major(17).setting("max_replication_slots", "1").setting("max_wal_senders", "1").start();
        pg.createDatabase("lim");
        pg.createDatabase("lim_dst");
        pg.execute("lim", "CREATE TABLE public.t (id int PRIMARY KEY, v text)", "INSERT INTO public.t VALUES (1, 'one')");
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    private static MillraceException startFails(Path dir, String slot) throws Exception {
        String yaml = Snap.yaml(pg, "lim", slot, List.of("public.t"), "lim_dst", dir.resolve("events"), "initial", 64);
        RunningEngine e = RunningEngine.start(yaml, dir);
        Throwable t = e.awaitEnd(WAIT);
        assertThat(t).as("the start's failure").isInstanceOf(MillraceException.class);
        assertThat(e.engine().state()).isEqualTo(Engine.State.FAILED);
        return (MillraceException) t;
    }

    private static void nothingWritten(Path dir, String slot) throws Exception {
        try (Connection s = pg.connect("lim"); Connection d = pg.connect("lim_dst")) {
            assertThat(E2e.queryLong(s, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = " + E2e.q(slot))).isZero();
            assertThat(E2e.queryLong(s, "SELECT count(*) FROM pg_publication WHERE pubname = " + E2e.q(slot))).isZero();
            assertThat(E2e.queryLong(d, "SELECT count(*) FROM pg_namespace WHERE nspname = 'millrace'")).as("checkpoint schema").isZero();
            assertThat(E2e.queryLong(d, "SELECT count(*) FROM pg_class WHERE relname = 't'")).as("target table").isZero();
        }
        Path events = dir.resolve("events");
        if (Files.isDirectory(events)) {
            try (var files = Files.list(events)) {
                assertThat(files.toList()).as("jsonl files").isEmpty();
            }
        }
    }

    @Test
    void noFreeReplicationSlotIsASetupErrorNamingMaxReplicationSlots(@TempDir Path dir) throws Exception {
        pg.execute("lim", "SELECT pg_create_logical_replication_slot('someone_else', 'pgoutput')");
        try {
            MillraceException e = startFails(dir, "lim_slots");
            System.out.println("SnapshotSourceLimitsIT: " + e.getMessage());
            assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
            assertThat(e.getMessage()).contains("max_replication_slots = 1")
                    .contains("ALTER SYSTEM SET max_replication_slots = ").contains("restart PostgreSQL").contains("drop an unused slot");
            nothingWritten(dir, "lim_slots");
        } finally {
            pg.execute("lim", "SELECT pg_drop_replication_slot('someone_else')");
        }
    }

    @Test
    void noFreeWalSenderIsASetupErrorNamingMaxWalSenders(@TempDir Path dir) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", "postgres");
        p.setProperty("replication", "database");
        p.setProperty("assumeMinServerVersion", "10");
        p.setProperty("preferQueryMode", "simple");
        try (Connection busy = DriverManager.getConnection(pg.jdbcUrl("lim"), p)) { // a WAL sender, taking the only one
            try (Connection c = pg.connect("lim")) {
                assertThat(E2e.queryLong(c, "SELECT count(*) FROM pg_stat_replication")).as("busy WAL senders").isEqualTo(1);
            }
            MillraceException e = startFails(dir, "lim_senders");
            System.out.println("SnapshotSourceLimitsIT: " + e.getMessage());
            assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
            assertThat(e.getMessage()).contains("max_wal_senders = 1").contains("ALTER SYSTEM SET max_wal_senders = ")
                    .contains("restart PostgreSQL");
            nothingWritten(dir, "lim_senders");
        }
    }
}
