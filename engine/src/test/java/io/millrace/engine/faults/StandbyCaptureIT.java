package io.millrace.engine.faults;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.e2e.E2e;
import io.millrace.sink.kafka.testing.KafkaBroker;
import io.millrace.source.Preflight;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code source.capture_from: standby} (logical decoding on a standby, PostgreSQL 16+): a PostgreSQL 17 primary and a
 * streaming standby (hot_standby_feedback, a physical slot), a write load on the primary. The slot is made on the standby
 * and the initial snapshot is read there (the primary scans none of the captured tables); an online copy, whose
 * watermarks are written on the primary, runs while streaming; a restart resumes on the standby's slot from the
 * checkpoints (INV: RESUME); then the primary is killed and the standby promoted, and the pipeline goes on from the slot
 * the promoted server kept. At each step the postgres destination equals the primary and no transaction is applied twice.
 */
class StandbyCaptureIT {
    @org.junit.jupiter.api.extension.RegisterExtension
    final Servers servers = new Servers();

    @TempDir
    Path dir;

    private EmbeddedPg keep(EmbeddedPg pg) {
        return servers.keep(pg);
    }

    private String yaml(String name, EmbeddedPg primary, EmbeddedPg standby, EmbeddedPg dst) {
        return yaml(name, primary, standby, dst, null);
    }

    /** With {@code kafka}, a DuckDB destination ({@code mirror.duckdb}) and a Kafka one ({@code bus}) as well. */
    private String yaml(String name, EmbeddedPg primary, EmbeddedPg standby, EmbeddedPg dst, String kafka) {
        return String.join("\n",
                "name: " + name,
                "source:",
                "  hosts: [127.0.0.1:" + primary.port() + ", 127.0.0.1:" + standby.port() + "]",
                "  capture_from: standby",
                "  database: sb_src",
                "  user: postgres",
                "  slot: " + name,
                "  publication: " + name,
                "  tables: " + FaultRig.TABLES,
                "  status_interval_ms: 200",
                "destinations:",
                "  - {name: files, type: jsonl, directory: '" + dir.resolve("events").toAbsolutePath() + "'}",
                kafka == null ? "" : "  - {name: mirror, type: duckdb, file: '" + dir.resolve("mirror.duckdb").toAbsolutePath() + "'}",
                kafka == null ? "" : "  - {name: bus, type: kafka, bootstrap_servers: '" + kafka + "'}",
                "  - name: replica",
                "    type: postgres",
                "    host: 127.0.0.1",
                "    port: " + dst.port(),
                "    database: sb_dst",
                "    user: postgres",
                "pipeline:",
                "  linger_ms: 20",
                "operations:",
                "  retry: {initial_ms: 200, max_ms: 1000, attempts: 0}",
                "");
    }

    /** A primary with the fault rig's tables ({@code rows} items) and a standby of it, streaming through physical slot standby_1. */
    private EmbeddedPg[] pair(int rows, String... standbySettings) throws Exception {
        EmbeddedPg primary = keep(EmbeddedPg.builder().major(17).start());
        primary.createDatabase("sb_src");
        try (Connection c = primary.connect("sb_src")) {
            FaultRig.schema(c, rows);
        }
        EmbeddedPg.Builder b = EmbeddedPg.builder().major(17);
        for (int i = 0; i < standbySettings.length; i += 2) {
            b.setting(standbySettings[i], standbySettings[i + 1]);
        }
        EmbeddedPg standby = keep(b.standbyOf(primary, "standby_1").start());
        try (Connection c = primary.connect("postgres")) {
            E2e.awaitRow(c, "SELECT count(*) FROM pg_stat_replication WHERE application_name = 'standby_1' AND state = 'streaming'",
                    Duration.ofSeconds(60));
        }
        return new EmbeddedPg[] {primary, standby};
    }

    private static long scans(EmbeddedPg pg, String table) throws Exception {
        try (Connection c = pg.connect("sb_src")) {
            return E2e.queryLong(c, "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = '"
                    + table + "'");
        }
    }

    private static long readEvents(Path events, String table) throws Exception {
        return E2e.events(events).stream().filter(e -> E2e.isTable(e, table) && e.path("op").asText().equals("r")).count();
    }

    @Test
    void theSlotAndTheSnapshotAreOnTheStandbyAndThePipelineOutlivesItsPromotion() throws Exception {
        E2e.init();
        EmbeddedPg[] pair = pair(3000);
        EmbeddedPg primary = pair[0];
        EmbeddedPg standby = pair[1];
        EmbeddedPg dst = keep(EmbeddedPg.builder().major(17).start());
        dst.createDatabase("sb_dst");
        KafkaBroker kafka = servers.keep(KafkaBroker.start());
        String yaml = yaml("sb", primary, standby, dst, kafka.bootstrapServers());
        long seed = System.nanoTime();
        FaultRig.Load load = new FaultRig.Load(primary.jdbcUrl("sb_src"), seed, 1);
        try {
            try (FaultRig.Running run = new FaultRig.Running(yaml, dir)) {
                run.awaitState("streaming", Duration.ofSeconds(90));
                assertThat(run.supervisor.status().source()).as("the status names the server the stream is read from")
                        .isEqualTo("127.0.0.1:" + standby.port() + "/sb_src");
                // an online copy while streaming: its watermarks are written on the primary and decoded on the standby
                run.supervisor.snapshot(List.of(TableRef.parse("public.items")), null);
                long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
                while (readEvents(dir.resolve("events"), "items") < 5000) { // 3000 from the initial snapshot, the rest the online copy's
                    assertThat(System.nanoTime()).as("the online copy of items did not land").isLessThan(deadline);
                    Thread.sleep(200);
                }
            }
            try (Connection s = standby.connect("sb_src")) {
                assertThat(E2e.queryString(s, "SELECT slot_type || ' ' || plugin FROM pg_replication_slots WHERE slot_name = 'sb'"))
                        .as("the slot is on the standby").isEqualTo("logical pgoutput");
            }
            try (Connection p = primary.connect("sb_src")) {
                assertThat(E2e.queryLong(p, "SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'logical'"))
                        .as("no logical slot on the primary").isZero();
            }
            // txlog is only inserted into by the load: its scans are the initial snapshot's, all on the standby
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (scans(standby, "txlog") == 0) {
                assertThat(System.nanoTime()).as("the standby's statistics show no read of txlog").isLessThan(deadline);
                Thread.sleep(300);
            }
            assertThat(scans(primary, "txlog")).as("reads of txlog on the primary").isZero();

            // a restart resumes from the checkpoints on the standby's slot
            try (FaultRig.Running run = new FaultRig.Running(yaml, dir)) {
                run.awaitState("streaming", Duration.ofSeconds(90));
                Thread.sleep(1000);
                try (Connection s = primary.connect("sb_src"); Connection d = dst.connect("sb_dst")) {
                    FaultRig.assertEqualAndOnce(s, d, load);
                }
                assertThat(load.committed.get()).isPositive();

                // the primary dies and the standby is promoted: it kept the slot, the pipeline reads it there
                primary.killPostmaster();
                standby.promote();
                int before = run.supervisor.restarts();
                for (int tx = 1; tx <= 20; tx++) {
                    standby.execute("sb_src", "INSERT INTO txlog VALUES (" + (900_000 + tx) + ", 'after the promotion')",
                            "UPDATE items SET v = 'promoted' WHERE id = " + (tx * 7));
                }
                try (Connection s = standby.connect("sb_src"); Connection d = dst.connect("sb_dst")) {
                    io.millrace.engine.RunningEngine.awaitEqual(s, d, FaultRig.REFS, null, Duration.ofSeconds(90));
                    assertThat(FaultRig.duplicateTxIds(d)).as("transactions applied twice").isEmpty();
                    assertThat(FaultRig.count(d, "SELECT count(*) FROM txlog WHERE tx_id > 900000")).isEqualTo(20);
                }
                assertThat(run.supervisor.restarts()).as("the engine reconnected after the primary died").isGreaterThan(before);
                assertThat(run.supervisor.status().source()).isEqualTo("127.0.0.1:" + standby.port() + "/sb_src");
            }
        } finally {
            load.close();
        }
        // DuckDB (its file free once the engine stopped) and Kafka (read_committed) hold what the promoted server has
        List<String> items;
        List<String> txIds;
        try (Connection s = standby.connect("sb_src")) {
            items = lines(s, "SELECT id || '|' || v || '|' || n FROM items ORDER BY id");
            txIds = lines(s, "SELECT tx_id::text FROM txlog ORDER BY txlog.tx_id");
        }
        try (Connection d = java.sql.DriverManager.getConnection("jdbc:duckdb:" + dir.resolve("mirror.duckdb").toAbsolutePath())) {
            assertThat(lines(d, "SELECT id || '|' || v || '|' || n FROM public.items ORDER BY id")).as("DuckDB items").isEqualTo(items);
            assertThat(lines(d, "SELECT CAST(tx_id AS VARCHAR) FROM public.txlog ORDER BY txlog.tx_id")).as("DuckDB txlog, each once").isEqualTo(txIds);
        }
        assertThat(FaultRig.itemLines(FaultRig.kafkaItems(kafka, "sb.public.items"))).as("Kafka items rebuilt").isEqualTo(items);
        java.util.Map<String, Integer> created = FaultRig.kafkaTxIds(kafka, "sb.public.txlog");
        assertThat(created.keySet()).as("Kafka txlog: every transaction").containsExactlyInAnyOrderElementsOf(txIds);
    }

    private static List<String> lines(Connection c, String sql) throws java.sql.SQLException {
        List<String> out = new java.util.ArrayList<>();
        try (java.sql.Statement st = c.createStatement(); java.sql.ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }

    @Test
    void aStandbyWithoutHotStandbyFeedbackIsRefusedNamingTheSettingAndNoSlotIsMade() throws Exception {
        E2e.init();
        EmbeddedPg[] pair = pair(10, "hot_standby_feedback", "off");
        EmbeddedPg primary = pair[0];
        EmbeddedPg standby = pair[1];
        EmbeddedPg dst = keep(EmbeddedPg.builder().major(17).start());
        dst.createDatabase("sb_dst");
        String yaml = yaml("nofeedback", primary, standby, dst);
        Preflight.Report report;
        try (Connection c = primary.connect("sb_src")) {
            report = Preflight.run(new ConfigLoader(Map.<String, String>of()::get).parse(yaml, dir).source(), c);
        }
        assertThat(report.ok()).as(report.render()).isFalse();
        assertThat(report.render()).contains("FAIL  capture standby 127.0.0.1:" + standby.port()).contains("hot_standby_feedback is off")
                .contains("ALTER SYSTEM SET hot_standby_feedback = on");
        FaultRig.Running run = new FaultRig.Running(yaml, dir);
        Throwable end = run.awaitEnd(Duration.ofSeconds(60));
        assertThat(end).isInstanceOf(MillraceException.class);
        assertThat(((MillraceException) end).kind()).isEqualTo(Kind.SOURCE_SETUP);
        assertThat(end.getMessage()).contains("hot_standby_feedback is off").contains("invalidates the slot");
        for (EmbeddedPg pg : pair) {
            try (Connection c = pg.connect("sb_src")) {
                assertThat(E2e.queryLong(c, "SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'logical'")).isZero();
                assertThat(E2e.queryLong(c, "SELECT count(*) FROM pg_publication")).as("nothing written on the primary").isZero();
            }
        }
    }

    @Test
    void aSnapshotReadTheStandbyCancelsForALockReplayedFromThePrimaryIsRetriedAndLands() throws Exception {
        E2e.init();
        EmbeddedPg[] pair = pair(0, "max_standby_streaming_delay", "0"); // replay cancels a conflicting read at once
        EmbeddedPg primary = pair[0];
        EmbeddedPg standby = pair[1];
        EmbeddedPg dst = keep(EmbeddedPg.builder().major(17).start());
        dst.createDatabase("sb_dst");
        primary.execute("sb_src", "INSERT INTO items SELECT g, repeat('x', 200), g FROM generate_series(1, 200000) g");
        try (Connection s = standby.connect("sb_src")) {
            E2e.awaitRow(s, "SELECT (count(*) = 200000)::int FROM items", Duration.ofSeconds(60));
        }
        // an ACCESS EXCLUSIVE lock taken on the primary again and again: replayed on the standby, it conflicts with the
        // snapshot reader's ACCESS SHARE lock there
        java.util.concurrent.atomic.AtomicBoolean locking = new java.util.concurrent.atomic.AtomicBoolean(true);
        Thread locker = new Thread(() -> {
            try (Connection c = primary.connect("sb_src")) {
                while (locking.get()) {
                    c.setAutoCommit(false);
                    try (java.sql.Statement st = c.createStatement()) {
                        st.execute("LOCK TABLE items IN ACCESS EXCLUSIVE MODE");
                    }
                    c.commit();
                    Thread.sleep(10);
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }, "test-locker");
        locker.setDaemon(true);
        locker.start();
        try (FaultRig.Running run = new FaultRig.Running(yaml("conflict", primary, standby, dst), dir)) {
            String seen = null;
            long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
            while (seen == null && System.nanoTime() < deadline) {
                var st = run.supervisor.status();
                if (st.lastError() != null && st.lastError().contains("conflict with recovery")) {
                    seen = st.lastError();
                }
                Thread.sleep(20);
            }
            locking.set(false);
            locker.join(10_000);
            assertThat(seen).as("the status while the standby cancels the snapshot's read").isNotNull()
                    .contains("the standby cancelled it to replay a change from the primary").contains("max_standby_streaming_delay")
                    .contains("Retried");
            run.awaitState("streaming", Duration.ofSeconds(120));
            primary.execute("sb_src", "INSERT INTO txlog VALUES (1, 'after the snapshot')");
            try (Connection s = primary.connect("sb_src"); Connection d = dst.connect("sb_dst")) {
                io.millrace.engine.RunningEngine.awaitEqual(s, d, FaultRig.REFS, null, Duration.ofSeconds(90));
            }
        } finally {
            locking.set(false);
        }
    }

    /**
     * A standby that refuses the pipeline's user (here its pg_hba.conf rejects it; a wrong password on a server of its own
     * is the same) is a set-up error, the same on every attempt: the engine stops at once naming the host and the fix,
     * instead of retrying as for a silent host, and makes no slot anywhere.
     */
    @Test
    void aStandbyThatRefusesTheUserStopsAtOnceNamingIt() throws Exception {
        E2e.init();
        Path hba = dir.resolve("standby_hba.conf");
        java.nio.file.Files.writeString(hba, String.join("\n", "local all all trust", "host all cap 127.0.0.1/32 reject",
                "host all postgres 127.0.0.1/32 trust", "host replication postgres 127.0.0.1/32 trust",
                "host all all 127.0.0.1/32 scram-sha-256", ""));
        EmbeddedPg[] pair = pair(10, "hba_file", hba.toString());
        EmbeddedPg primary = pair[0];
        EmbeddedPg standby = pair[1];
        primary.execute("postgres", "CREATE ROLE cap LOGIN SUPERUSER REPLICATION PASSWORD 'capture-pw'");
        java.nio.file.Files.writeString(dir.resolve("pw"), "capture-pw\n");
        EmbeddedPg dst = keep(EmbeddedPg.builder().major(17).start());
        dst.createDatabase("sb_dst");
        String yaml = yaml("refused", primary, standby, dst).replace("  user: postgres\n  slot:", "  user: cap\n  password_file: pw\n  slot:");
        FaultRig.Running run = new FaultRig.Running(yaml, dir);
        Throwable end = run.awaitEnd(Duration.ofSeconds(30));
        assertThat(end).isInstanceOf(MillraceException.class);
        assertThat(((MillraceException) end).kind()).isEqualTo(Kind.AUTHENTICATION);
        assertThat(end.getMessage()).contains("127.0.0.1:" + standby.port()).contains("pg_hba.conf");
        assertThat(run.supervisor.restarts()).as("not retried").isZero();
        try (Connection c = primary.connect("postgres")) {
            assertThat(E2e.queryString(c, "SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'logical'")).isEqualTo("0");
        }
    }
}
