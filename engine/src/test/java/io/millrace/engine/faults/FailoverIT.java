package io.millrace.engine.faults;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.e2e.E2e;
import io.millrace.sink.kafka.testing.KafkaBroker;
import io.millrace.sink.kafka.testing.TopicState;
import io.millrace.source.Preflight;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A primary failover under a running pipeline with {@code source.failover} (PostgreSQL 17 failover slots): a primary
 * and a synchronous streaming standby that synchronises the slot ({@code sync_replication_slots}, {@code
 * hot_standby_feedback}, the primary's {@code synchronized_standby_slots} = the standby's physical slot), a write load,
 * the primary's postmaster killed (SIGKILL) and the standby promoted; Millrace, given both hosts, reconnects to the
 * promoted one and continues from the destination's checkpoint on the synchronised slot (INV: RESUME, IDENTITY). At the
 * end the postgres and DuckDB destinations equal the new primary and no transaction was applied twice; a Kafka
 * {@code read_committed} consumer rebuilds items equal to it with each change once and in order, and finds each of its
 * transactions once; the jsonl one has each of the new primary's transactions, no other, and any repeat at the same
 * position.
 *
 * <p>CI runs one promotion. More, each on a standby built from the last promoted server (on the killed one's port):
 * {@code -Dmillrace.failover.promotions=5} (with a seed: {@code -Dmillrace.failover.seed=N}), e.g.
 * {@code mvn -B -o -pl engine -am verify -Dtest=NONE -Dit.test=FailoverIT -Dmillrace.failover.promotions=5
 * -Dsurefire.failIfNoSpecifiedTests=false}.
 */
class FailoverIT {
    @org.junit.jupiter.api.extension.RegisterExtension
    final Servers servers = new Servers();

    @TempDir
    Path dir;

    private EmbeddedPg keep(EmbeddedPg pg) {
        return servers.keep(pg);
    }

    private static String yaml(String name, int p1, int p2, int dstPort) {
        return yaml(name, p1, p2, dstPort, null);
    }

    /**
     * With {@code duckdb} a DuckDB destination and a jsonl one (directory {@code events} beside it) too, before the postgres
     * one: the writer gives them each batch first, so they hold all once the postgres one does.
     */
    private static String yaml(String name, int p1, int p2, int dstPort, Path duckdb) {
        return yaml(name, p1, p2, dstPort, duckdb, null);
    }

    /** As {@link #yaml(String, int, int, int, Path)}, with a Kafka destination ({@code bus}, topics {@code <name>.public.*}) too. */
    private static String yaml(String name, int p1, int p2, int dstPort, Path duckdb, String kafka) {
        return String.join("\n",
                "name: " + name,
                "source:",
                "  hosts: [127.0.0.1:" + p1 + ", 127.0.0.1:" + p2 + "]",
                "  failover: true",
                "  database: fo_src",
                "  user: postgres",
                "  slot: " + name,
                "  publication: " + name,
                "  tables: " + FaultRig.TABLES,
                "  status_interval_ms: 200",
                "destinations:",
                duckdb == null ? "" : "  - {name: mirror, type: duckdb, file: '" + duckdb.toAbsolutePath() + "'}",
                duckdb == null ? "" : "  - {name: files, type: jsonl, directory: '" + duckdb.resolveSibling("events").toAbsolutePath() + "'}",
                kafka == null ? "" : "  - {name: bus, type: kafka, bootstrap_servers: '" + kafka + "'}",
                "  - name: replica",
                "    type: postgres",
                "    host: 127.0.0.1",
                "    port: " + dstPort,
                "    database: fo_dst",
                "    user: postgres",
                "pipeline:",
                "  linger_ms: 20",
                "operations:",
                "  retry: {initial_ms: 200, max_ms: 1000, attempts: 0}",
                "");
    }

    @Test
    void thePipelineContinuesOnThePromotedStandbyWithNothingLostOrRepeated() throws Exception {
        E2e.init();
        int promotions = Integer.getInteger("millrace.failover.promotions", 1);
        long seed = Long.getLong("millrace.failover.seed", System.nanoTime());
        Random rnd = new Random(seed);
        System.out.println("FailoverIT: " + promotions + " promotion(s), -Dmillrace.failover.seed=" + seed + " replays the kill moments");
        int[] ports = {QuietPort.pick(0), 0};
        ports[1] = QuietPort.pick(ports[0]);
        EmbeddedPg primary = keep(EmbeddedPg.builder().major(17).port(ports[0]).start());
        EmbeddedPg dst = keep(EmbeddedPg.builder().major(17).start());
        primary.createDatabase("fo_src");
        dst.createDatabase("fo_dst");
        try (Connection c = primary.connect("fo_src")) {
            FaultRig.schema(c, 2000);
        }
        EmbeddedPg standby = keep(EmbeddedPg.builder().major(17).port(ports[1]).standbyOf(primary, "standby_1").start());
        primary.makeSynchronous("standby_1");
        Load load = new Load("jdbc:postgresql://127.0.0.1:" + primary.port() + "/fo_src", seed);
        Path duck = dir.resolve("mirror.duckdb");
        List<String> expectedItems;
        List<String> expectedTx;
        KafkaBroker kafka = KafkaBroker.start();
        servers.keep(kafka);
        try (FaultRig.Running run = new FaultRig.Running(yaml("fo", ports[0], ports[1], dst.port(), duck, kafka.bootstrapServers()), dir)) {
            run.awaitState("streaming", Duration.ofSeconds(60));
            for (int i = 1; i <= promotions; i++) {
                standby.awaitSyncedSlot("fo");
                Thread.sleep(500 + rnd.nextInt(2000)); // the load runs: the kill comes at a random moment of it
                primary.killPostmaster();
                standby.promote();
                load.url = "jdbc:postgresql://127.0.0.1:" + standby.port() + "/fo_src";
                int freed = primary.port();
                primary = standby;
                run.awaitState("streaming", Duration.ofSeconds(90));
                if (i < promotions) { // the next standby, on the killed server's port, from the promoted one
                    String slot = "standby_" + (i + 1);
                    standby = keep(EmbeddedPg.builder().major(17).port(freed).standbyOf(primary, slot).start());
                    primary.makeSynchronous(slot);
                }
            }
            Thread.sleep(1000); // the load writes on the last primary
            try (Connection s = primary.connect("fo_src"); Connection d = dst.connect("fo_dst")) {
                load.close();
                io.millrace.engine.RunningEngine.awaitEqual(s, d, FaultRig.REFS, null, Duration.ofSeconds(90));
                assertThat(FaultRig.duplicateTxIds(d)).as("transactions applied twice (seed %d)", seed).isEmpty();
                assertThat(FaultRig.count(d, "SELECT count(*) FROM txlog")).isEqualTo(FaultRig.count(s, "SELECT count(*) FROM txlog"))
                        .isGreaterThan(10);
                assertThat(E2e.queryString(s, "SELECT synced::text || ' ' || failover::text FROM pg_replication_slots WHERE slot_name = 'fo'"))
                        .as("the pipeline reads the slot synchronised from the old primary").isEqualTo("true true");
                expectedItems = rows(s, "SELECT id || '|' || v || '|' || n FROM items ORDER BY id");
                expectedTx = rows(s, "SELECT tx_id FROM txlog ORDER BY tx_id");
            }
            assertThat(load.committedAfterFirstPromotion.get()).as("the load wrote on the promoted server").isPositive();
            assertThat(run.supervisor.restarts()).isGreaterThanOrEqualTo(promotions);
            assertThat(run.supervisor.status().source()).as("the status names the server it reads").isEqualTo("127.0.0.1:" + primary.port() + "/fo_src");
        } finally {
            load.close();
        }
        // the DuckDB file, once the engine let it go (DuckDB's lock): equal to the new primary, each transaction once
        try (Connection d = DriverManager.getConnection("jdbc:duckdb:" + duck)) {
            assertThat(rows(d, "SELECT id || '|' || v || '|' || n FROM public.items ORDER BY id")).isEqualTo(expectedItems);
            assertThat(rows(d, "SELECT tx_id FROM public.txlog ORDER BY tx_id")).as("txlog: none lost, none twice").isEqualTo(expectedTx);
        }
        // Kafka, read_committed: the topics rebuild items as the new primary has them, each change once and in order
        // (TopicState), and carry each of its transactions' txlog row in one create event (or the initial copy's read)
        TopicState items = FaultRig.kafkaItems(kafka, "fo.public.items");
        assertThat(items.problems()).as("Kafka items: each change once and in order").isEmpty();
        assertThat(FaultRig.itemLines(items)).as("Kafka items rebuilt = the new primary").isEqualTo(expectedItems);
        java.util.Map<String, Integer> created = FaultRig.kafkaTxIds(kafka, "fo.public.txlog");
        assertThat(created.keySet()).as("Kafka txlog: the new primary's transactions, none lost, none it lacks")
                .containsExactlyInAnyOrderElementsOf(expectedTx);
        assertThat(created.entrySet().stream().filter(x -> x.getValue() > 1).map(Object::toString).toList())
                .as("Kafka txlog: no transaction twice").isEmpty();
        // jsonl, at least once: every transaction of the new primary is there, none other, and a repeat has the same position
        java.util.Map<String, java.util.Set<String>> positions = new java.util.TreeMap<>();
        for (var e : E2e.events(dir.resolve("events"))) {
            String op = e.path("op").asText();
            if (e.path("source").path("table").asText().equals("txlog") && (op.equals("c") || op.equals("r"))) {
                positions.computeIfAbsent(e.path("after").path("tx_id").asText(), k -> new java.util.TreeSet<>())
                        .add(e.path("source").path("commit_lsn").asText() + "#" + e.path("source").path("ordinal").asText());
            }
        }
        assertThat(positions.keySet()).as("jsonl: the new primary's transactions, none lost, none it lacks")
                .containsExactlyInAnyOrderElementsOf(expectedTx);
        assertThat(positions.entrySet().stream().filter(x -> x.getValue().size() > 1).map(Object::toString).toList())
                .as("jsonl: a transaction sent again has the same (commit_lsn, ordinal)").isEmpty();
    }

    private static List<String> rows(Connection c, String sql) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement st = c.createStatement(); var rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }

    @Test
    void aPromotedStandbyWithoutTheSynchronisedSlotStopsWithAnErrorNamingIt() throws Exception {
        E2e.init();
        int p1 = QuietPort.pick(0);
        int p2 = QuietPort.pick(p1);
        EmbeddedPg primary = keep(EmbeddedPg.builder().major(17).port(p1).start());
        EmbeddedPg dst = keep(EmbeddedPg.builder().major(17).start());
        primary.createDatabase("fo_src");
        dst.createDatabase("fo_dst");
        try (Connection c = primary.connect("fo_src")) {
            FaultRig.schema(c, 100);
        }
        // a standby that does not synchronise slots: the command line's setting wins over standbyOf's
        EmbeddedPg standby = keep(EmbeddedPg.builder().major(17).port(p2).setting("sync_replication_slots", "off")
                .standbyOf(primary, "standby_1").start());
        String yaml = yaml("nosync", p1, p2, dst.port());
        Preflight.Report report;
        try (Connection c = primary.connect("fo_src")) {
            report = Preflight.run(new ConfigLoader(Map.<String, String>of()::get).parse(yaml, dir).source(), c);
        }
        assertThat(report.ok()).as(report.render()).isTrue();
        assertThat(report.render()).contains("WARN  synchronized_standby_slots").contains("is empty on the primary")
                .contains("ALTER SYSTEM SET synchronized_standby_slots")
                .contains("WARN  standby 127.0.0.1:" + p2).contains("sync_replication_slots is off")
                .contains("ALTER SYSTEM SET sync_replication_slots = on");
        FaultRig.Running run = new FaultRig.Running(yaml, dir); // ends by itself, with the error
        {
            run.awaitState("streaming", Duration.ofSeconds(60));
            primary.execute("fo_src", "INSERT INTO txlog VALUES (1, 'before the failover')");
            try (Connection d = dst.connect("fo_dst")) {
                E2e.awaitRow(d, "SELECT count(*) FROM txlog WHERE tx_id = 1", Duration.ofSeconds(30));
            }
            primary.killPostmaster();
            standby.promote();
            Throwable end = run.awaitEnd(Duration.ofSeconds(60));
            assertThat(end).isInstanceOf(MillraceException.class);
            MillraceException e = (MillraceException) end;
            assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
            assertThat(e.getMessage()).contains("replication slot 'nosync' does not exist on 127.0.0.1:" + p2)
                    .contains("promoted standby").contains("sync_replication_slots").contains("does not skip");
            assertThat(run.supervisor.restarts()).as("retried while no server was the primary").isPositive();
        }
        try (Connection s = standby.connect("fo_src")) {
            assertThat(E2e.queryString(s, "SELECT count(*) FROM pg_replication_slots")).as("no slot created in its place").isEqualTo("0");
        }
    }

    @Test
    void aFormerPrimaryBackBesideThePromotedOneIsNotChosen() throws Exception {
        E2e.init();
        int p1 = QuietPort.pick(0);
        int p2 = QuietPort.pick(p1);
        Path oldData = dir.resolve("old-primary");
        EmbeddedPg primary = EmbeddedPg.builder().major(17).dataDirectory(oldData, false).port(p1).start();
        servers.keep(primary);
        EmbeddedPg dst = keep(EmbeddedPg.builder().major(17).start());
        primary.createDatabase("fo_src");
        dst.createDatabase("fo_dst");
        try (Connection c = primary.connect("fo_src")) {
            FaultRig.schema(c, 500);
        }
        EmbeddedPg standby = keep(EmbeddedPg.builder().major(17).port(p2).standbyOf(primary, "standby_1").start());
        primary.makeSynchronous("standby_1");
        Load load = new Load("jdbc:postgresql://127.0.0.1:" + p1 + "/fo_src", 7);
        try (FaultRig.Running run = new FaultRig.Running(yaml("brain", p1, p2, dst.port()), dir)) {
            run.awaitState("streaming", Duration.ofSeconds(60));
            standby.awaitSyncedSlot("brain");
            Thread.sleep(500);
            primary.killPostmaster();
            standby.promote();
            load.url = "jdbc:postgresql://127.0.0.1:" + p2 + "/fo_src";
            run.awaitState("streaming", Duration.ofSeconds(90));
            int restarts = run.supervisor.restarts();
            // the former primary comes back on its own data directory, a primary again on its old timeline (no rewind)
            primary.close();
            servers.forget(primary);
            EmbeddedPg former = keep(EmbeddedPg.builder().major(17).dataDirectory(oldData, false).port(p1).start());
            standby.execute("postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_replication WHERE application_name = 'millrace'");
            String retrying = null;
            for (int i = 0; i < 300 && retrying == null; i++) {
                var st = run.supervisor.status();
                if ("retrying".equals(st.state()) && st.lastError() != null && st.lastError().contains("more than one")) {
                    retrying = st.lastError();
                }
                Thread.sleep(50);
            }
            assertThat(retrying).as("status while two hosts are primaries").isNotNull()
                    .contains("more than one of source.hosts is a primary").contains("127.0.0.1:" + p1 + " (the primary)")
                    .contains("127.0.0.1:" + p2 + " (the primary)").contains("pg_rewind");
            assertThat(run.supervisor.restarts()).isGreaterThan(restarts);
            former.close(); // fenced: the pipeline goes on with the promoted one
            servers.forget(former);
            run.awaitState("streaming", Duration.ofSeconds(90));
            Thread.sleep(500);
            try (Connection s = standby.connect("fo_src"); Connection d = dst.connect("fo_dst")) {
                load.close();
                io.millrace.engine.RunningEngine.awaitEqual(s, d, FaultRig.REFS, null, Duration.ofSeconds(90));
                assertThat(FaultRig.duplicateTxIds(d)).as("transactions applied twice").isEmpty();
            }
        } finally {
            load.close();
        }
    }

    @Test
    void anExistingSlotIsMadeAFailoverSlotWhenFailoverIsTurnedOn() throws Exception {
        E2e.init();
        EmbeddedPg pg = keep(EmbeddedPg.builder().major(17).start());
        pg.createDatabase("fo_src");
        pg.createDatabase("fo_dst");
        try (Connection c = pg.connect("fo_src")) {
            FaultRig.schema(c, 10);
        }
        String on = yaml("alter", pg.port(), pg.port() + 1, pg.port()).replace("  hosts: [127.0.0.1:" + pg.port() + ", 127.0.0.1:"
                + (pg.port() + 1) + "]", "  host: 127.0.0.1\n  port: " + pg.port());
        try (FaultRig.Running run = new FaultRig.Running(on.replace("  failover: true\n", ""), dir)) {
            run.awaitState("streaming", Duration.ofSeconds(60));
        }
        try (Connection c = pg.connect("fo_src")) {
            assertThat(E2e.queryString(c, "SELECT failover::text FROM pg_replication_slots WHERE slot_name = 'alter'")).isEqualTo("false");
        }
        try (FaultRig.Running run = new FaultRig.Running(on, dir)) {
            run.awaitState("streaming", Duration.ofSeconds(60));
            pg.execute("fo_src", "INSERT INTO txlog VALUES (1, 'after')");
            try (Connection d = pg.connect("fo_dst")) {
                E2e.awaitRow(d, "SELECT count(*) FROM txlog WHERE tx_id = 1", Duration.ofSeconds(30));
            }
        }
        try (Connection c = pg.connect("fo_src")) {
            assertThat(E2e.queryString(c, "SELECT failover::text FROM pg_replication_slots WHERE slot_name = 'alter'"))
                    .as("the same slot, now synchronised to standbys").isEqualTo("true");
        }
    }

    @Test
    void failoverBelowPostgres17IsRefusedNamingTheSetting() throws Exception {
        E2e.init();
        try (EmbeddedPg pg15 = EmbeddedPg.builder().major(15).start()) {
            pg15.createDatabase("fo_src");
            try (Connection c = pg15.connect("fo_src")) {
                FaultRig.schema(c, 10);
                var cfg = new ConfigLoader(Map.<String, String>of()::get).parse(yaml("old", pg15.port(), pg15.port() + 1, 1), dir).source();
                Preflight.Report report = Preflight.run(cfg, c);
                assertThat(report.ok()).isFalse();
                org.assertj.core.api.Assertions.assertThatThrownBy(report::throwIfFailed).isInstanceOf(MillraceException.class)
                        .hasMessageContaining("source.failover needs PostgreSQL 17 or newer").hasMessageContaining("set source.failover: false")
                        .matches(t -> ((MillraceException) t).kind() == Kind.CONFIG);
            }
        }
    }

    /** One transaction after another on the current primary (each with one unique txlog row), reconnecting after a failure. */
    private static final class Load implements Runnable, AutoCloseable {
        volatile String url;
        private final Random rnd;
        private final AtomicLong txId = new AtomicLong(1);
        final AtomicLong committedAfterFirstPromotion = new AtomicLong();
        private final String firstUrl;
        private volatile boolean stop;
        private final Thread thread;

        Load(String url, long seed) {
            this.url = url;
            this.firstUrl = url;
            this.rnd = new Random(seed);
            thread = new Thread(this, "test-load");
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void run() {
            Connection c = null;
            String at = null;
            long nextId = 1_000_000;
            while (!stop) {
                try {
                    if (c == null || !url.equals(at)) {
                        close(c);
                        at = url;
                        Properties p = new Properties();
                        p.setProperty("user", "postgres");
                        p.setProperty("connectTimeout", "2");
                        c = DriverManager.getConnection(at, p);
                        c.setAutoCommit(false);
                    }
                    try (Statement s = c.createStatement()) {
                        long tx = txId.get();
                        s.execute("INSERT INTO txlog VALUES (" + tx + ", 'load')");
                        for (int i = 0, n = 1 + rnd.nextInt(5); i < n; i++) {
                            switch (rnd.nextInt(4)) {
                                case 0, 1 -> s.execute("INSERT INTO items VALUES (" + (nextId++) + ", md5(random()::text), " + tx + ")");
                                case 2 -> s.execute("UPDATE items SET v = md5(random()::text), n = " + tx + " WHERE id = " + (1 + rnd.nextInt(2000)));
                                default -> s.execute("DELETE FROM items WHERE id = " + (1 + rnd.nextInt(2000)));
                            }
                        }
                    }
                    c.commit();
                    txId.incrementAndGet();
                    if (!at.equals(firstUrl)) {
                        committedAfterFirstPromotion.incrementAndGet();
                    }
                    Thread.sleep(2);
                } catch (SQLException e) {
                    txId.incrementAndGet(); // an unknown outcome keeps its id; the next transaction takes a new one
                    close(c);
                    c = null;
                    sleepQuietly(100);
                } catch (InterruptedException e) {
                    return;
                }
            }
            close(c);
        }

        private static void sleepQuietly(long ms) {
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        private static void close(Connection c) {
            if (c != null) {
                try {
                    c.close();
                } catch (SQLException ignored) {
                    // gone anyway
                }
            }
        }

        @Override
        public void close() throws InterruptedException {
            stop = true;
            thread.join(30_000);
        }
    }
}
