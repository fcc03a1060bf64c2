package io.millrace.engine.faults;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Supervisor;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Network faults between the engine and its source, through an in-process {@link TcpProxy}, with a
 * {@link Supervisor} running the pipeline: connections cut under load, a source that refuses connections for a
 * while, stalled connections; and two faults that must stop the pipeline instead: the slot dropped while running
 * (no silent re-snapshot) and a second pipeline on the same slot. Each checks the postgres destination against the
 * source row for row and that no source transaction was applied twice (txlog holds one unique id per transaction).
 */
class NetworkFaultsIT {
    private static EmbeddedPg pg;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        E2e.init();
        pg = EmbeddedPg.builder().major(17).start();
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    private void databases(String name) throws SQLException {
        pg.createDatabase(name + "_src");
        pg.createDatabase(name + "_dst");
        try (Connection c = pg.connect(name + "_src")) {
            FaultRig.schema(c, 2000);
        }
    }

    /** INV: RESUME — every reconnect resumes from the durable checkpoints: nothing lost, nothing applied twice. */
    private static void assertEqualAndOnce(String name, FaultRig.Load load) throws Exception {
        try (Connection s = pg.connect(name + "_src"); Connection d = pg.connect(name + "_dst")) {
            FaultRig.assertEqualAndOnce(s, d, load);
        }
    }

    @Test
    void connectionsCutUnderLoadAreRetriedAndNothingIsLostOrRepeated() throws Exception {
        databases("cut");
        try (TcpProxy proxy = new TcpProxy(pg.port());
             FaultRig.Running run = new FaultRig.Running(FaultRig.yaml("cut", proxy.port(), "cut_src", pg.port(), "cut_dst",
                     dir.resolve("events"), "{initial_ms: 50, max_ms: 400, attempts: 10}"), dir)) {
            run.awaitState("streaming", Duration.ofSeconds(60));
            FaultRig.Load load = new FaultRig.Load(pg.jdbcUrl("cut_src"), 1, 1);
            for (int i = 0; i < 3; i++) {
                Thread.sleep(1500);
                proxy.cutAll();
                run.awaitState("streaming", Duration.ofSeconds(30));
            }
            Thread.sleep(1000);
            assertEqualAndOnce("cut", load);
            assertThat(run.supervisor.restarts()).as("engine restarts after 3 cuts").isGreaterThanOrEqualTo(3);
        }
    }

    @Test
    void aSourceThatRefusesConnectionsForAWhileIsRetriedWithBackoff() throws Exception {
        databases("down");
        try (TcpProxy proxy = new TcpProxy(pg.port());
             FaultRig.Running run = new FaultRig.Running(FaultRig.yaml("down", proxy.port(), "down_src", pg.port(), "down_dst",
                     dir.resolve("events"), "{initial_ms: 100, max_ms: 800, attempts: 0}"), dir)) {
            run.awaitState("streaming", Duration.ofSeconds(60));
            FaultRig.Load load = new FaultRig.Load(pg.jdbcUrl("down_src"), 2, 1);
            Thread.sleep(1000);
            proxy.refuse(true);
            proxy.cutAll();
            Thread.sleep(5000); // writes go on at the source meanwhile
            int restartsWhileDown = run.supervisor.restarts();
            assertThat(run.supervisor.status().state()).isEqualTo("retrying");
            assertThat(run.supervisor.status().lastError()).matches("retrying \\(attempt \\d+, next in \\d+\\.\\ds\\): .*")
                    .contains("127.0.0.1:" + proxy.port() + "/down_src").contains("Check that the server is running and reachable");
            proxy.refuse(false);
            run.awaitState("streaming", Duration.ofSeconds(30));
            assertEqualAndOnce("down", load);
            // backoff 100, 200, 400, 800, 800 ... ms (each ×0.5–1): in 5 s a handful of attempts, not hundreds
            assertThat(restartsWhileDown).isBetween(3, 20);
        }
    }

    @Test
    void stalledConnectionsThatRecoverLoseNothing() throws Exception {
        databases("stall");
        try (TcpProxy proxy = new TcpProxy(pg.port());
             FaultRig.Running run = new FaultRig.Running(FaultRig.yaml("stall", proxy.port(), "stall_src", pg.port(), "stall_dst",
                     dir.resolve("events"), "{initial_ms: 50, max_ms: 400}"), dir)) {
            run.awaitState("streaming", Duration.ofSeconds(60));
            FaultRig.Load load = new FaultRig.Load(pg.jdbcUrl("stall_src"), 3, 1);
            Thread.sleep(1000);
            proxy.stall(true);
            Thread.sleep(4000);
            proxy.stall(false);
            Thread.sleep(1000);
            // a stall that turns into a cut (a middlebox dropping the connection) is a reconnect
            proxy.stall(true);
            Thread.sleep(2000);
            proxy.cutAll();
            proxy.stall(false);
            run.awaitState("streaming", Duration.ofSeconds(30));
            assertEqualAndOnce("stall", load);
        }
    }

    /**
     * A connection that stalls for good without closing (the middlebox forgot it, every byte is lost, no FIN ever
     * arrives): the reader hears nothing, asks the server for a reply, and after the receive timeout gives the
     * connection up; the Supervisor reconnects and nothing is lost or applied twice.
     */
    @Test
    void aConnectionThatStallsForGoodIsGivenUpAndReconnected() throws Exception {
        stallAndReconnect("hole", TcpProxy::blackholeExisting);
    }

    /**
     * The same stall, cut in the middle of a message (the network lost the rest of a frame the walsender wrote whole):
     * pgjdbc then ends the copy, and the reader's next status update failed with "Tried to write to an inactive copy
     * operation" (SQLSTATE 55000), which was taken for a setup error: the supervisor gave up and the pipeline ended for
     * good (CI's aConnectionThatStallsForGoodIsGivenUpAndReconnected hit it when its blackhole fell inside a message).
     * It is a lost connection now, and the engine reconnects.
     */
    @Test
    void aConnectionThatStallsInTheMiddleOfAMessageIsGivenUpAndReconnected() throws Exception {
        stallAndReconnect("half", TcpProxy::blackholeExistingMidMessage);
    }

    /**
     * The other side of the stall detection: a source with no writes at all is silent (the walsender sends nothing while
     * the reader's status updates keep it content), and the reader's probe — a status update asking for a reply — is what
     * shows the connection alive. Found by a user with an idle source: the reply was read by pgjdbc's readPending before
     * the reader's wait could see it, so every receive timeout (2 minutes by default) the engine called the healthy
     * connection stalled and reconnected, with a warning naming a firewall.
     */
    @Test
    void anIdleSourceIsNotTakenForAStalledConnection() throws Exception {
        databases("idle");
        System.setProperty("millrace.receive_timeout_ms", "3000");
        try (TcpProxy proxy = new TcpProxy(pg.port());
             // jsonl only: a postgres destination on this server would write WAL itself, and the walsender would not be silent
             FaultRig.Running run = new FaultRig.Running(FaultRig.yaml("idle", proxy.port(), "idle_src", pg.port(), "idle_dst",
                     dir.resolve("events"), "{initial_ms: 50, max_ms: 400}").replace("  - name: replica\n    type: postgres\n    host: 127.0.0.1\n"
                     + "    port: " + pg.port() + "\n    database: idle_dst\n    user: postgres\n", ""), dir)) {
            run.awaitState("streaming", Duration.ofSeconds(60));
            Thread.sleep(1000);
            int before = proxy.accepted();
            Thread.sleep(10_000); // more than three receive timeouts with nothing written
            assertThat(proxy.accepted()).as("connections made while idle (a reconnect per receive timeout)").isEqualTo(before);
        } finally {
            System.clearProperty("millrace.receive_timeout_ms");
        }
    }

    /** Streams under a load through a proxy, stalls its connections with {@code stall}; the engine reconnects, nothing lost. */
    private void stallAndReconnect(String name, java.util.function.Consumer<TcpProxy> stall) throws Exception {
        databases(name);
        System.setProperty("millrace.receive_timeout_ms", "3000");
        try (TcpProxy proxy = new TcpProxy(pg.port());
             FaultRig.Running run = new FaultRig.Running(FaultRig.yaml(name, proxy.port(), name + "_src", pg.port(), name + "_dst",
                     dir.resolve("events"), "{initial_ms: 50, max_ms: 400}"), dir)) {
            run.awaitState("streaming", Duration.ofSeconds(60));
            FaultRig.Load load = new FaultRig.Load(pg.jdbcUrl(name + "_src"), 2, 1);
            Thread.sleep(1000);
            int before = proxy.accepted();
            stall.accept(proxy);
            long deadline = System.currentTimeMillis() + 30_000;
            while (proxy.accepted() == before) {
                assertThat(run.thread.isAlive()).as("the pipeline is still supervised: %s", run.error.get()).isTrue();
                assertThat(System.currentTimeMillis()).as("the engine reconnects after the receive timeout").isLessThan(deadline);
                Thread.sleep(100);
            }
            run.awaitState("streaming", Duration.ofSeconds(30));
            assertEqualAndOnce(name, load);
        } finally {
            System.clearProperty("millrace.receive_timeout_ms");
        }
    }

    /**
     * A regular source connection (catalog, snapshot reads, slot monitor, key lookups) blackholed by the network is
     * given up after {@code source.socket_timeout_s} as a lost connection (the supervisor then reconnects), instead of
     * waiting for TCP keepalive for hours; the replication connection keeps its own receive timeout.
     */
    @Test
    void aRegularSourceConnectionThatStallsIsGivenUpAfterTheSocketTimeout() throws Exception {
        pg.createDatabase("sto_src");
        try (TcpProxy proxy = new TcpProxy(pg.port())) {
            String yaml = String.join("\n",
                    "source: {host: 127.0.0.1, port: " + proxy.port() + ", database: sto_src, user: postgres, slot: sto,",
                    "         publication: sto, tables: [public.t], socket_timeout_s: 2}",
                    "destinations:",
                    "  - {name: files, type: jsonl, directory: events}",
                    "");
            io.millrace.source.PgConnections conns = new io.millrace.source.PgConnections(
                    new io.millrace.engine.config.ConfigLoader(System::getenv).parse(yaml, dir).source());
            try (Connection c = conns.open(); Connection repl = conns.openReplication()) {
                assertThat(c.getNetworkTimeout()).isEqualTo(2000);
                assertThat(repl.getNetworkTimeout()).as("the replication connection waits on the socket itself").isZero();
                assertThat(E2e.queryLong(c, "SELECT 1")).isEqualTo(1);
                proxy.blackholeExisting();
                long start = System.nanoTime();
                SQLException e = org.junit.jupiter.api.Assertions.assertThrows(SQLException.class, () -> E2e.queryLong(c, "SELECT 2"));
                long seconds = (System.nanoTime() - start) / 1_000_000_000L;
                assertThat(seconds).as("given up after about the socket timeout").isBetween(1L, 10L);
                MillraceException m = io.millrace.source.PgErrors.translate("reading the catalog", e);
                assertThat(m.kind()).as(m.getMessage()).isEqualTo(Kind.CONNECTION);
            }
        }
    }

    @Test
    void aSlotDroppedWhileRunningStopsWithInstructionsAndNoSilentResnapshot() throws Exception {
        databases("dropped");
        FaultRig.Running run = new FaultRig.Running(FaultRig.yaml("dropped", pg.port(), "dropped_src", pg.port(), "dropped_dst",
                dir.resolve("events"), "{initial_ms: 300, max_ms: 600}"), dir);
        run.awaitState("streaming", Duration.ofSeconds(60));
        pg.execute("dropped_src", "INSERT INTO txlog VALUES (1, 'before the drop')");
        long copied;
        try (Connection dst = pg.connect("dropped_dst")) {
            E2e.awaitRow(dst, "SELECT count(*) FROM txlog WHERE tx_id = 1", Duration.ofSeconds(30));
            copied = FaultRig.count(dst, "SELECT count(*) FROM items");
        }
        try (Connection src = pg.connect("dropped_src")) {
            long deadline = System.currentTimeMillis() + 20_000;
            while (true) {
                E2e.exec(src, "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'dropped'"
                        + " AND active_pid IS NOT NULL");
                try {
                    E2e.exec(src, "SELECT pg_drop_replication_slot('dropped')");
                    break;
                } catch (SQLException e) {
                    assertThat(System.currentTimeMillis()).as("slot still active: %s", e.getMessage()).isLessThan(deadline);
                    Thread.sleep(20);
                }
            }
        }
        Throwable end = run.awaitEnd(Duration.ofSeconds(30));
        assertThat(end).isInstanceOf(MillraceException.class);
        MillraceException e = (MillraceException) end;
        assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
        assertThat(e.getMessage()).contains("replication slot 'dropped' does not exist").contains("does not re-copy silently")
                .contains("start again with empty destinations");
        try (Connection src = pg.connect("dropped_src"); Connection dst = pg.connect("dropped_dst")) {
            assertThat(FaultRig.count(src, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'dropped'"))
                    .as("no slot re-created behind the operator's back").isZero();
            assertThat(FaultRig.count(dst, "SELECT count(*) FROM items")).as("destination not re-copied").isEqualTo(copied);
        }
    }

    @Test
    void aSecondPipelineOnTheSameSlotRefusesAfterAFewTriesAndTheFirstGoesOn() throws Exception {
        databases("twice");
        String yaml = FaultRig.yaml("twice", pg.port(), "twice_src", pg.port(), "twice_dst", dir.resolve("events"),
                "{initial_ms: 20, max_ms: 100}");
        try (FaultRig.Running first = new FaultRig.Running(yaml, dir)) {
            first.awaitState("streaming", Duration.ofSeconds(60));
            // "streaming" is reported before the reader sends START_REPLICATION: wait until the first holds the slot,
            // or the second could take it first.
            try (Connection src = pg.connect("twice_src")) {
                long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                while (FaultRig.count(src, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'twice' AND active") == 0) {
                    assertThat(System.nanoTime()).as("slot 'twice' held by the first pipeline").isLessThan(deadline);
                    Thread.sleep(20);
                }
            }
            FaultRig.Load load = new FaultRig.Load(pg.jdbcUrl("twice_src"), 4, 1);
            FaultRig.Running second = new FaultRig.Running(yaml, dir);
            Throwable end = second.awaitEnd(Duration.ofSeconds(60));
            assertThat(end).isInstanceOf(MillraceException.class);
            assertThat(((MillraceException) end).kind()).isEqualTo(Kind.SLOT_IN_USE);
            assertThat(end.getMessage()).contains("slot 'twice' is read by another Millrace engine running this pipeline")
                    .contains("its own source.slot");
            assertThat(second.supervisor.restarts()).isEqualTo(Supervisor.SLOT_IN_USE_ATTEMPTS);
            assertThat(first.supervisor.status().state()).isEqualTo("streaming");
            assertEqualAndOnce("twice", load);
        }
    }
}
