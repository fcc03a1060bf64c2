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
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A destination blocked for longer than the source's {@code wal_sender_timeout} (a lock held on one of its tables) while
 * the source writes: everything behind the destination fills, and the reader waits for room. It keeps answering the
 * server meanwhile, so the walsender does not end the connection. Before, a user's destination blocked for 75 s cost a
 * reconnect, reported as the source's failure ("Database connection failed when reading from copy"), and a retry
 * attempt each time. Here the timeout is 3 s and the block 12 s; the engine (no supervisor: any failure ends it) must
 * stream on, on the same walsender, and end equal.
 */
class BlockedDestinationIT {
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        E2e.init();
        pg = EmbeddedPg.builder().setting("wal_sender_timeout", "3s").start();
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    @Test
    void aDestinationBlockedLongerThanTheWalSenderTimeoutKeepsTheReplicationConnection(@TempDir Path dir) throws Exception {
        pg.createDatabase("blocked");
        pg.createDatabase("blocked_dst");
        try (Connection src = pg.connect("blocked"); Connection dst = pg.connect("blocked_dst"); Connection lock = pg.connect("blocked_dst")) {
            E2e.exec(src, "CREATE TABLE public.t (id int PRIMARY KEY, v text)", "INSERT INTO public.t VALUES (0, 'x')");
            String yaml = E2e.yaml(pg, "blocked", "blocked", List.of("public.t"), "auto", "blocked_dst", dir.resolve("events"));
            List<TableRef> t = E2e.refs(List.of("public.t"));
            try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(Duration.ofSeconds(60))) {
                E2e.awaitSame(src, dst, t, Duration.ofSeconds(30));
                long walsender = E2e.queryLong(src, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = 'blocked'");
                lock.setAutoCommit(false);
                E2e.exec(lock, "LOCK TABLE public.t IN ACCESS EXCLUSIVE MODE");
                long until = System.nanoTime() + Duration.ofSeconds(12).toNanos();
                int id = 1;
                while (System.nanoTime() < until) { // small transactions: the channels fill long before the memory budget
                    E2e.exec(src, "INSERT INTO public.t VALUES (" + id++ + ", 'v')");
                }
                lock.commit();
                E2e.awaitSame(src, dst, t, Duration.ofSeconds(60));
                assertThat(E2e.queryLong(src, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = 'blocked'"))
                        .as("the same walsender: the connection was kept").isEqualTo(walsender);
                assertThat(id).as("transactions written while the destination was blocked").isGreaterThan(500);
            }
        }
    }
}
