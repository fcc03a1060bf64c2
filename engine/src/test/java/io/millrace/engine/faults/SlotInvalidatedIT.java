package io.millrace.engine.faults;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A slot the server invalidated while the pipeline was stopped ({@code max_slot_wal_keep_size} exceeded:
 * {@code wal_status = 'lost'}) — the changes since are gone, so the pipeline must stop with instructions, not retry
 * and not re-copy silently (INV: RESUME, IDENTITY).
 */
class SlotInvalidatedIT {
    private static EmbeddedPg pg;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() throws Exception {
        E2e.init();
        pg = EmbeddedPg.builder().major(17).setting("max_wal_size", "32MB").setting("min_wal_size", "32MB").start();
        pg.createDatabase("lost_src");
        pg.createDatabase("lost_dst");
        try (Connection c = pg.connect("lost_src")) {
            FaultRig.schema(c, 100);
        }
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    @Test
    void aSlotInvalidatedWhileStoppedStopsWithInstructions() throws Exception {
        String yaml = FaultRig.yaml("lost", pg.port(), "lost_src", pg.port(), "lost_dst", dir.resolve("events"),
                "{initial_ms: 50, max_ms: 100, attempts: 5}");
        try (FaultRig.Running run = new FaultRig.Running(yaml, dir)) {
            run.awaitState("streaming", Duration.ofSeconds(60));
            pg.execute("lost_src", "INSERT INTO txlog VALUES (1, 'streamed')");
            try (Connection dst = pg.connect("lost_dst")) {
                E2e.awaitRow(dst, "SELECT count(*) FROM txlog WHERE tx_id = 1", Duration.ofSeconds(30));
            }
        }
        pg.execute("postgres", "ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'", "SELECT pg_reload_conf()");
        try (Connection src = pg.connect("lost_src")) {
            for (int i = 0; i < 40 && !"lost".equals(E2e.queryString(src, "SELECT wal_status FROM pg_replication_slots"
                    + " WHERE slot_name = 'lost'")); i++) {
                E2e.exec(src, "INSERT INTO items SELECT g, repeat('x', 500), g FROM generate_series(100000 + " + i * 5000 + ", 104999 + "
                        + i * 5000 + ") g", "SELECT pg_switch_wal()", "CHECKPOINT");
            }
            assertThat(E2e.queryString(src, "SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'lost'")).isEqualTo("lost");
        } finally {
            pg.execute("postgres", "ALTER SYSTEM RESET max_slot_wal_keep_size", "SELECT pg_reload_conf()");
        }
        FaultRig.Running again = new FaultRig.Running(yaml, dir);
        Throwable end = again.awaitEnd(Duration.ofSeconds(60));
        assertThat(end).isInstanceOf(MillraceException.class);
        MillraceException e = (MillraceException) end;
        assertThat(again.supervisor.restarts()).as("an invalidated slot is not retried: %s", e.getMessage()).isZero();
        assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
        assertThat(e.kind().exitCode()).as("the documented exit code (README, Exit codes)").isEqualTo(6);
        assertThat(e.getMessage()).contains("slot 'lost'").contains("max_slot_wal_keep_size").contains("pg_drop_replication_slot('lost')")
                .contains("fresh destination").contains("source.on_slot_lost: resnapshot");
        try (Connection dst = pg.connect("lost_dst")) {
            assertThat(FaultRig.count(dst, "SELECT count(*) FROM items WHERE id >= 100000")).as("no silent re-copy").isZero();
        }
    }
}
