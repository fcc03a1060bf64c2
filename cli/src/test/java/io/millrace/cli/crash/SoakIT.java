package io.millrace.cli.crash;

import io.millrace.core.Lsn;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.sink.kafka.testing.KafkaBroker;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The soak (issue 14): {@code millrace run} in a JVM of its own at {@code bin/millrace}'s JVM options, from a PostgreSQL 17
 * primary with a synchronous standby that synchronises the failover slot, into the four destinations (postgres on a
 * server of its own, DuckDB, Kafka in this JVM, jsonl), under a steady write load with a larger transaction now and then,
 * and a fault every few seconds or minutes, in turn: the engine SIGKILLed, the source primary restarted, every connection
 * of the engine cut on both servers, the postgres destination down, a failover (the primary's postmaster SIGKILLed, the
 * standby promoted, a new standby built from it), Kafka down. Sampled throughout: the engine's RSS, the lag (the age of
 * the oldest source transaction the postgres destination lacks), the WAL the slot retains, and INV: DURABLE (the slot
 * confirmed no further than the postgres, jsonl and Kafka checkpoints, and after each kill the DuckDB one). At the end
 * (the load stopped, the engine caught up and stopped with SIGTERM, exit 0) every destination equals the last primary:
 * postgres and DuckDB row for row with each transaction once, Kafka rebuilt by a {@code read_committed} consumer with each
 * change once and in order, the jsonl files replayed ({@link JsonlReplay}).
 *
 * <p>CI runs a short one ({@value #CI_SECONDS} s, a fault every {@value #CI_FAULT_EVERY_S} s: each kind once). The
 * documented soak (docs/RELIABILITY.md): {@code -Dsoak.seconds=3600 -Dsoak.fault_every_s=180}. Results, a row per sample
 * period, in {@code cli/target/soak/samples.tsv} and a summary line in {@code cli/target/soak/summary.txt}.
 */
class SoakIT {
    static final int CI_SECONDS = 45;
    static final int CI_FAULT_EVERY_S = 7;
    private static final String SRC = "soak_src";
    private static final String DST = "soak_dst";
    private static final String SLOT = "soak";
    private static final String PG_DEST = "replica";
    private static final String DUCK_DEST = "mirror";
    private static final int SEED_ROWS = 5_000;

    enum Fault { ENGINE_KILL, SOURCE_RESTART, CONNECTIONS_CUT, DESTINATION_DOWN, FAILOVER, KAFKA_DOWN }

    /** A server with a data directory of its own, so that it can be stopped and started again on the same port. */
    static final class Node {
        final Path dir;
        final int port;
        EmbeddedPg pg;

        Node(Path dir, int port, EmbeddedPg pg) {
            this.dir = dir;
            this.port = port;
            this.pg = pg;
        }

        static Node primary(Path dir, int port) {
            return new Node(dir, port, EmbeddedPg.builder().major(17).dataDirectory(dir, false).port(port).start());
        }

        static Node standbyOf(Node primary, Path dir, int port, String slot) {
            return new Node(dir, port, EmbeddedPg.builder().major(17).dataDirectory(dir, false).port(port).standbyOf(primary.pg, slot).start());
        }

        /** A clean shutdown; returns how long it took (EmbeddedPg.close waits for the postmaster to be gone). */
        long stop() {
            long t0 = System.currentTimeMillis();
            pg.close();
            return System.currentTimeMillis() - t0;
        }

        /** Starts the stopped server again on its directory and port. */
        void start() {
            pg = EmbeddedPg.builder().major(17).dataDirectory(dir, false).port(port).start();
        }

        String url(String db) {
            return "jdbc:postgresql://127.0.0.1:" + port + "/" + db;
        }
    }

    @Test
    void aSteadyLoadUnderAFaultEveryFewMinutesEndsEqualEverywhereWithFlatMemoryAndBoundedLag() throws Exception {
        long seconds = Long.getLong("soak.seconds", CI_SECONDS);
        long faultEvery = Long.getLong("soak.fault_every_s", CI_FAULT_EVERY_S) * 1000;
        long seed = Long.getLong("soak.seed", System.nanoTime());
        int tps = Integer.getInteger("soak.tps", 200);
        long sampleEvery = Math.max(5_000, Math.min(60_000, seconds * 1000 / 60));
        System.out.printf("SoakIT: %d s, a fault every %d s, %d tx/s, seed %d (-Dsoak.seed=%d replays the load)%n",
                seconds, faultEvery / 1000, tps, seed, seed);
        Path work = Path.of("target", "soak").toAbsolutePath();
        CrashIT.deleteTree(work);
        Files.createDirectories(work);
        Path events = work.resolve("events");
        Path duckFile = work.resolve("mirror.duckdb");
        int[] ports = quietPorts(3);
        List<Node> nodes = new ArrayList<>();
        KafkaBroker kafka = null;
        EngineProcess engine = null;
        Load load = null;
        try {
            Node primary = Node.primary(work.resolve("pg-1"), ports[0]);
            nodes.add(primary);
            primary.pg.createDatabase(SRC);
            try (Connection c = primary.pg.connect(SRC); Statement s = c.createStatement()) {
                s.execute("CREATE TABLE items (id bigint PRIMARY KEY, v text, n bigint)");
                s.execute("CREATE TABLE txlog (tx_id bigint NOT NULL, note text)");
                s.execute("ALTER TABLE txlog REPLICA IDENTITY FULL");
                s.execute("INSERT INTO items SELECT g, 'seed ' || g, g FROM generate_series(1, " + SEED_ROWS + ") g");
            }
            int standbys = 1;
            Node standby = Node.standbyOf(primary, work.resolve("pg-2"), ports[1], "standby_1");
            nodes.add(standby);
            primary.pg.makeSynchronous("standby_1");
            Node dst = Node.primary(work.resolve("pg-dst"), ports[2]);
            nodes.add(dst);
            dst.pg.createDatabase(DST);
            kafka = KafkaBroker.startBehindProxy(); // its outages cut it off (KafkaBroker.startBehindProxy: no hanging transactions)
            Path config = work.resolve("config.yaml");
            Files.writeString(config, config(ports[0], ports[1], dst.port, kafka.bootstrapServers(), duckFile, events), StandardCharsets.UTF_8);
            List<String> jvm = EngineProcess.binMillraceJvmOptions();
            int run = 1;
            engine = EngineProcess.startWith(config, work.resolve("engine-01.log"), jvm);
            CrashIT.awaitLog(engine, CrashIT.STREAMING_LINE, "streaming");
            load = new Load(primary.url(SRC), seed, tps);

            Sampler sampler = new Sampler(work.resolve("samples.tsv"), events.resolve("checkpoint.json"), new KafkaCheck(kafka, "soak"));
            DuckCheck duck = new DuckCheck(duckFile, DUCK_DEST);
            Map<Fault, Integer> faults = new TreeMap<>();
            List<Long> shutdowns = new ArrayList<>();
            long t0 = System.currentTimeMillis();
            long end = t0 + seconds * 1000;
            long nextFault = t0 + faultEvery;
            long nextSample = t0;
            long nextLag = t0;
            int turn = 0;
            String lastFault = "-";
            while (System.currentTimeMillis() < end || faults.size() < Fault.values().length) {
                if (!engine.alive()) {
                    throw new AssertionError("the engine ended by itself (exit " + engine.awaitExit(0) + "); log " + engine.log() + ":\n"
                            + engine.logTail(60));
                }
                sampler.durable(primary, dst);
                if (System.currentTimeMillis() >= nextLag) {
                    sampler.lagTick(dst, load);
                    nextLag += 1000;
                }
                if (System.currentTimeMillis() >= nextSample) {
                    sampler.sample((System.currentTimeMillis() - t0) / 1000, lastFault, engine, primary, dst, load);
                    nextSample += sampleEvery;
                }
                if (System.currentTimeMillis() >= nextFault) {
                    Fault f = Fault.values()[turn++ % Fault.values().length];
                    long started = System.currentTimeMillis();
                    long at = (started - t0) / 1000;
                    System.out.printf("SoakIT: %5d s: %s%n", at, f);
                    lastFault = f.name().toLowerCase(java.util.Locale.ROOT) + "@" + at + "s";
                    long outage = Math.min(30_000, faultEvery / 3);
                    switch (f) {
                        case ENGINE_KILL -> {
                            engine.kill();
                            sampler.duckDurable(primary, duck);
                            engine = EngineProcess.startWith(config, work.resolve(String.format("engine-%02d.log", ++run)), jvm);
                        }
                        case SOURCE_RESTART -> {
                            long took = primary.stop();
                            primary.start();
                            shutdowns.add(took);
                            System.out.printf("SoakIT: the source's clean shutdown took %d ms%n", took);
                        }
                        case CONNECTIONS_CUT -> {
                            cut(primary.pg, SRC);
                            cut(dst.pg, DST);
                        }
                        case DESTINATION_DOWN -> {
                            dst.stop();
                            Thread.sleep(outage);
                            dst.start();
                        }
                        case FAILOVER -> {
                            standby.pg.awaitSyncedSlot(SLOT);
                            primary.pg.killPostmaster();
                            standby.pg.promote();
                            load.url = standby.url(SRC);
                            Node killed = primary;
                            primary = standby;
                            killed.pg.close();
                            nodes.remove(killed);
                            CrashIT.deleteTree(killed.dir);
                            String slot = "standby_" + (++standbys);
                            standby = Node.standbyOf(primary, killed.dir, killed.port, slot);
                            nodes.add(standby);
                            primary.pg.makeSynchronous(slot);
                        }
                        case KAFKA_DOWN -> {
                            kafka.cutOff();
                            Thread.sleep(outage);
                            kafka.reconnect();
                        }
                        default -> throw new IllegalStateException(f.name());
                    }
                    faults.merge(f, 1, Integer::sum);
                    System.out.printf("SoakIT: %5d s: %s done in %d ms%n", (System.currentTimeMillis() - t0) / 1000, f,
                            System.currentTimeMillis() - started);
                    nextFault += faultEvery;
                }
                Thread.sleep(200);
            }
            // the end: the load stops, the engine catches up on the last primary and stops
            load.close();
            long committed = load.committed.get();
            long catchUp = System.currentTimeMillis();
            try (Connection s = primary.pg.connect(SRC); Connection d = dst.pg.connect(DST)) {
                awaitPostgresEqual(s, d, engine, Math.max(180, seconds / 4));
                catchUp = System.currentTimeMillis() - catchUp;
                sampler.sample((System.currentTimeMillis() - t0) / 1000, "caught up", engine, primary, dst, load);
                assertThat(engine.terminate(60)).as("SIGTERM exit status; log %s", engine.log()).isZero();
                assertThat(duplicates(d)).as("transactions applied twice in the postgres destination").isEmpty();
                assertThat(DuckCheck.sourceRows(s, items(), List.of("id", "v", "n"))).as("DuckDB items = source")
                        .isEqualTo(duck.rows(items(), List.of("id", "v", "n")));
                assertThat(DuckCheck.sourceRows(s, txlog(), List.of("tx_id"))).as("DuckDB txlog = source, each transaction once")
                        .isEqualTo(duck.rows(txlog(), List.of("tx_id")));
                Map<String, String[]> keyed = new LinkedHashMap<>();
                keyed.put("items", new String[] {"v", "n"});
                assertThat(new KafkaCheck(kafka, "soak").differences(s, keyed)).as("Kafka, read_committed: rebuilt = source, each change once")
                        .isEmpty();
                JsonlReplay replay = replay(events);
                assertThat(replay.anomalies).as("jsonl anomalies").isEmpty();
                assertThat(replay.table(items().toString())).as("jsonl replayed items = source").isEqualTo(CrashIT.rows(s, items()));
                assertThat(replay.table(txlog().toString())).as("jsonl replayed txlog = source").isEqualTo(CrashIT.rows(s, txlog()));
                assertThat(sampler.violations).as("INV: DURABLE").isEmpty();
                String summary = String.format("SoakIT summary: seed %d; %d s, faults %s; %d transactions committed (%d larger of %d rows),"
                                + " %d engine runs; peak RSS %d MB (first sample after the first minute %d MB); lag (sampled each second) max %d ms, p50 %d ms, p99 %d ms;"
                                + " retained WAL max %d MB; source clean shutdowns took %s ms; DURABLE samples %d checked, %d violations;"
                                + " catch-up %d ms; destinations equal"
                                + " the last primary (port %d): postgres, DuckDB, Kafka (read_committed), jsonl (%d events replayed)",
                        seed, seconds, faults, committed, load.large.get(), Load.LARGE_ROWS, run, sampler.peakRssKb / 1024,
                        sampler.firstMinuteRssKb / 1024, sampler.maxLagMs, sampler.lagPercentile(50), sampler.lagPercentile(99), sampler.maxRetainedBytes >> 20,
                        shutdowns, sampler.checked, sampler.violations.size(), catchUp, primary.port, replay.events);
                System.out.println(summary);
                Files.writeString(work.resolve("summary.txt"), summary + "\n", StandardCharsets.UTF_8);
                assertThat(faults.keySet()).as("every kind of fault ran").containsExactlyInAnyOrder(Fault.values());
            }
        } finally {
            if (load != null) {
                load.close();
            }
            if (engine != null) {
                engine.destroyQuietly();
            }
            for (Node n : nodes) {
                try {
                    n.pg.close();
                } catch (RuntimeException ignored) {
                    // killed or stopped already
                }
            }
            if (kafka != null) {
                kafka.close();
            }
        }
    }

    private static TableRef items() {
        return TableRef.parse("public.items");
    }

    private static TableRef txlog() {
        return TableRef.parse("public.txlog");
    }

    /** Ends every connection of the engine's on {@code db} (its walsender and its SQL sessions), not the load's. */
    private static void cut(EmbeddedPg pg, String db) {
        pg.execute("postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db
                + "' AND pid <> pg_backend_pid() AND application_name <> 'soak-load'");
    }

    private static List<Long> duplicates(Connection d) throws SQLException {
        List<Long> out = new ArrayList<>();
        try (Statement s = d.createStatement(); ResultSet rs = s.executeQuery("SELECT tx_id FROM txlog GROUP BY tx_id HAVING count(*) > 1 LIMIT 10")) {
            while (rs.next()) {
                out.add(rs.getLong(1));
            }
        }
        return out;
    }

    private static String queryString(Connection c, String sql) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    private static void awaitPostgresEqual(Connection s, Connection d, EngineProcess engine, long seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000;
        String q = "SELECT count(*) || ' ' || coalesce(sum(hashtext(id || '|' || v || '|' || n)), 0) FROM items";
        String tq = "SELECT count(*) || ' ' || coalesce(sum(tx_id), 0) FROM txlog";
        while (true) {
            String want = queryString(s, q) + " / " + queryString(s, tq);
            String got;
            try {
                got = queryString(d, q) + " / " + queryString(d, tq);
            } catch (SQLException notYet) {
                got = notYet.getMessage();
            }
            if (want.equals(got)) {
                return;
            }
            assertThat(engine.alive()).as("engine ended before catching up; log %s:%n%s", engine.log(), engine.logTail(60)).isTrue();
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("postgres destination not equal to the source after " + seconds + " s: source " + want
                        + ", destination " + got + "; log " + engine.log() + ":\n" + engine.logTail(40));
            }
            Thread.sleep(500);
        }
    }

    private static JsonlReplay replay(Path events) throws IOException {
        Map<String, JsonlReplay.TableShape> shapes = new LinkedHashMap<>();
        shapes.put(items().toString(), new JsonlReplay.TableShape(List.of("id", "v", "n"), 0));
        shapes.put(txlog().toString(), new JsonlReplay.TableShape(List.of("tx_id", "note"), -1));
        JsonlReplay r = new JsonlReplay(shapes);
        r.readAll(events);
        r.finish();
        return r;
    }

    private static String config(int p1, int p2, int dstPort, String bootstrap, Path duck, Path events) {
        return String.join("\n",
                "name: soak",
                "source:",
                "  hosts: [127.0.0.1:" + p1 + ", 127.0.0.1:" + p2 + "]",
                "  failover: true",
                "  database: " + SRC,
                "  user: postgres",
                "  slot: " + SLOT,
                "  publication: soak",
                "  tables: [public.items, public.txlog]",
                "destinations:",
                "  - {name: " + DUCK_DEST + ", type: duckdb, file: '" + duck + "'}",
                "  - {name: " + KafkaCheck.DEST + ", type: kafka, bootstrap_servers: '" + bootstrap + "', topic_prefix: soak}",
                "  - {name: files, type: jsonl, directory: '" + events + "', rotate_mb: 16}",
                "  - {name: " + PG_DEST + ", type: postgres, host: 127.0.0.1, port: " + dstPort + ", database: " + DST + ", user: postgres}",
                "operations:",
                "  retry: {initial_ms: 200, max_ms: 2000, attempts: 0}",
                "");
    }

    /** {@code n} free ports in 61000-64999, above the ephemeral range: a server started again later finds its port free. */
    private static int[] quietPorts(int n) throws IOException {
        Random rnd = new Random();
        int[] out = new int[n];
        for (int k = 0, tries = 0; k < n; tries++) {
            if (tries > 1000) {
                throw new IOException("no free port in 61000-64999");
            }
            int port = 61_000 + rnd.nextInt(4_000);
            if (java.util.Arrays.stream(out).anyMatch(p -> p == port)) {
                continue;
            }
            try (java.net.ServerSocket s = new java.net.ServerSocket()) {
                s.bind(new java.net.InetSocketAddress("127.0.0.1", port));
                out[k++] = port;
            } catch (IOException taken) {
                // another
            }
        }
        return out;
    }

    /** The periodic figures and INV: DURABLE, on the test's thread. */
    static final class Sampler {
        private final Path tsv;
        private final Path jsonlState;
        private final KafkaCheck kafka;
        final List<String> violations = new ArrayList<>();
        long checked;
        long peakRssKb;
        long firstMinuteRssKb;
        long maxLagMs;
        long maxRetainedBytes;
        private final List<Long> lags = new ArrayList<>();
        private int durableCalls;

        Sampler(Path tsv, Path jsonlState, KafkaCheck kafka) throws IOException {
            this.tsv = tsv;
            this.jsonlState = jsonlState;
            this.kafka = kafka;
            Files.writeString(tsv, "elapsed_s\tlast_fault\tengine_rss_mb\tengine_peak_rss_mb\tlag_max_ms\tretained_wal_mb\tunconfirmed_mb\tcommitted_tx\n");
        }

        /** INV: DURABLE: the slot (read first) confirmed no further than the postgres, jsonl and (every 50th call) Kafka checkpoints. */
        void durable(Node primary, Node dst) {
            try (Connection s = primary.pg.connect(SRC)) {
                Lsn confirmed = DurableSampler.confirmedFlush(s, SLOT);
                if (confirmed == null) {
                    return;
                }
                List<Lsn> checkpoints = new ArrayList<>();
                try (Connection d = dst.pg.connect(DST)) {
                    DurableSampler.Durable pgCp = DurableSampler.postgresCheckpoint(d, PG_DEST);
                    checkpoints.add(pgCp == null ? null : pgCp.flushLsn());
                }
                DurableSampler.Durable files = DurableSampler.jsonlCheckpoint(jsonlState);
                checkpoints.add(files == null ? null : files.flushLsn());
                if (++durableCalls % 50 == 0) {
                    checkpoints.add(kafka.flushLsn());
                }
                check(confirmed, checkpoints, "postgres, jsonl" + (checkpoints.size() > 2 ? ", kafka" : ""));
            } catch (Exception down) {
                // a server or the broker is down for a fault: no sample
            }
        }

        /** After the engine's SIGKILL (DuckDB's file is free): the slot is not past the DuckDB checkpoint either. */
        void duckDurable(Node primary, DuckCheck duck) {
            try (Connection s = primary.pg.connect(SRC)) {
                Lsn confirmed = DurableSampler.confirmedFlush(s, SLOT);
                if (confirmed != null) {
                    check(confirmed, List.of(duck.flushLsn()), "duckdb");
                }
            } catch (Exception e) {
                throw new AssertionError("could not read the DuckDB checkpoint after a kill", e);
            }
        }

        private void check(Lsn confirmed, List<Lsn> checkpoints, String what) {
            if (checkpoints.stream().anyMatch(java.util.Objects::isNull)) {
                return;
            }
            checked++;
            Lsn min = checkpoints.stream().reduce(Lsn::min).orElseThrow();
            if (confirmed.isAfter(min)) {
                violations.add("slot confirmed " + confirmed + " past checkpoints " + checkpoints + " (" + what + ")");
            }
        }

        void sample(long elapsed, String lastFault, EngineProcess engine, Node primary, Node dst, Load load) throws IOException {
            long rss = rssKb(engine.pid(), "VmRSS:");
            long hwm = rssKb(engine.pid(), "VmHWM:");
            peakRssKb = Math.max(peakRssKb, hwm);
            if (elapsed >= 60 && firstMinuteRssKb == 0) {
                firstMinuteRssKb = rss;
            }
            lagTick(dst, load);
            long lag = rowMaxLag;
            rowMaxLag = -1;
            long retained = -1;
            long unconfirmed = -1;
            try (Connection s = primary.pg.connect(SRC); Statement st = s.createStatement(); ResultSet rs = st.executeQuery(
                    "SELECT pg_current_wal_lsn() - restart_lsn, pg_current_wal_lsn() - confirmed_flush_lsn FROM pg_replication_slots"
                            + " WHERE slot_name = '" + SLOT + "'")) {
                if (rs.next()) {
                    retained = rs.getLong(1);
                    unconfirmed = rs.getLong(2);
                }
            } catch (SQLException down) {
                // the source is down for a fault
            }
            maxRetainedBytes = Math.max(maxRetainedBytes, retained);
            String row = String.format("%d\t%s\t%d\t%d\t%d\t%.1f\t%.1f\t%d%n", elapsed, lastFault, rss / 1024, hwm / 1024, lag,
                    retained / 1048576.0, unconfirmed / 1048576.0, load.committed.get());
            Files.writeString(tsv, row, StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.APPEND);
            System.out.print("SoakIT sample: " + row);
        }

        private long rowMaxLag = -1;

        /**
         * One lag sample (called about every second): the age of the oldest source transaction the postgres destination
         * lacks; the row of the table takes the largest since the last row.
         */
        void lagTick(Node dst, Load load) {
            try (Connection d = dst.pg.connect(DST); Statement st = d.createStatement();
                 ResultSet rs = st.executeQuery("SELECT coalesce(max(tx_id), 0) FROM txlog")) {
                rs.next();
                long lag = load.ageOfFirstCommittedAfter(rs.getLong(1));
                lags.add(lag);
                maxLagMs = Math.max(maxLagMs, lag);
                rowMaxLag = Math.max(rowMaxLag, lag);
            } catch (SQLException down) {
                // the destination is down for a fault
            }
        }

        long lagPercentile(int p) {
            List<Long> sorted = new ArrayList<>(lags);
            sorted.sort(null);
            return sorted.isEmpty() ? -1 : sorted.get(Math.min(sorted.size() - 1, sorted.size() * p / 100));
        }

        private static long rssKb(long pid, String field) {
            try {
                for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                    if (line.startsWith(field)) {
                        return Long.parseLong(line.replaceAll("[^0-9]", ""));
                    }
                }
            } catch (IOException | RuntimeException gone) {
                // the process ended
            }
            return -1;
        }
    }

    /**
     * A steady load on the current primary: {@code tps} transactions a second, each one txlog row (its id) and one to four
     * changes of items; every 60 s a larger one ({@value #LARGE_ROWS} rows). Reconnects after a failure; a transaction whose
     * outcome is unknown keeps its id and the next takes a new one. The commit time of each id is kept, for the lag.
     */
    static final class Load implements Runnable, AutoCloseable {
        static final int LARGE_ROWS = 20_000;
        volatile String url;
        final AtomicLong committed = new AtomicLong();
        final AtomicLong large = new AtomicLong();
        private final AtomicLongArray commitMillis = new AtomicLongArray(4_000_000);
        private final AtomicLong lastCommitted = new AtomicLong();
        private final Random rnd;
        private final int tps;
        private volatile boolean stop;
        private final Thread thread;

        Load(String url, long seed, int tps) {
            this.url = url;
            this.rnd = new Random(seed);
            this.tps = tps;
            thread = new Thread(this, "soak-load");
            thread.setDaemon(true);
            thread.start();
        }

        /** Milliseconds since the commit of the first transaction after {@code applied} (0 when there is none). */
        long ageOfFirstCommittedAfter(long applied) {
            for (long id = applied + 1; id <= lastCommitted.get(); id++) {
                long at = commitMillis.get((int) id);
                if (at > 0) {
                    return System.currentTimeMillis() - at;
                }
            }
            return 0;
        }

        @Override
        public void run() {
            Connection c = null;
            String at = null;
            long txId = 1;
            long nextId = 1_000_000_000L;
            long lastLarge = System.currentTimeMillis();
            long t0 = System.nanoTime();
            long done = 0;
            while (!stop) {
                try {
                    if (c == null || !url.equals(at)) {
                        close(c);
                        at = url;
                        Properties p = new Properties();
                        p.setProperty("user", "postgres");
                        p.setProperty("connectTimeout", "2");
                        p.setProperty("socketTimeout", "30");
                        p.setProperty("ApplicationName", "soak-load");
                        c = DriverManager.getConnection(at, p);
                        c.setAutoCommit(false);
                    }
                    boolean big = System.currentTimeMillis() - lastLarge > 60_000;
                    try (Statement s = c.createStatement()) {
                        s.execute("INSERT INTO txlog VALUES (" + txId + ", 'load')");
                        if (big) {
                            s.execute("INSERT INTO items SELECT g, md5(g::text), " + txId + " FROM generate_series(" + nextId + ", "
                                    + (nextId + LARGE_ROWS - 1) + ") g");
                            s.execute("DELETE FROM items WHERE id BETWEEN " + nextId + " AND " + (nextId + LARGE_ROWS / 2 - 1));
                            nextId += LARGE_ROWS;
                        }
                        for (int i = 0, n = 1 + rnd.nextInt(4); i < n; i++) {
                            switch (rnd.nextInt(4)) {
                                case 0, 1 -> s.execute("INSERT INTO items VALUES (" + (nextId++) + ", md5(random()::text), " + txId + ")");
                                case 2 -> s.execute("UPDATE items SET v = md5(random()::text), n = " + txId + " WHERE id = "
                                        + (1 + rnd.nextInt(SEED_ROWS)));
                                default -> s.execute("DELETE FROM items WHERE id = " + (1 + rnd.nextInt(SEED_ROWS)));
                            }
                        }
                    }
                    c.commit();
                    commitMillis.set((int) txId, System.currentTimeMillis());
                    lastCommitted.set(txId);
                    committed.incrementAndGet();
                    if (big) {
                        large.incrementAndGet();
                        lastLarge = System.currentTimeMillis();
                    }
                    txId++;
                    done++;
                    long ahead = t0 + done * 1_000_000_000L / tps - System.nanoTime();
                    if (ahead > 0) {
                        Thread.sleep(ahead / 1_000_000, (int) (ahead % 1_000_000));
                    }
                } catch (SQLException e) {
                    txId++; // an unknown outcome keeps its id
                    close(c);
                    c = null;
                    t0 = System.nanoTime(); // no burst to make up for the outage
                    done = 0;
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException i) {
                        return;
                    }
                } catch (InterruptedException e) {
                    return;
                }
            }
            close(c);
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
            thread.join(60_000);
        }
    }
}
