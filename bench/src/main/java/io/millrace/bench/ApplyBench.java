package io.millrace.bench;

import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Applying a stream into PostgreSQL: Millrace's postgres destination beside PostgreSQL's own logical replication
 * ({@code CREATE SUBSCRIPTION}), and Millrace's DuckDB destination beside them, on the same changes.
 *
 * <p>A source server and a target server (separate embedded PostgreSQL 15, {@code fsync=off} as every benchmark
 * server). Per phase — {@code rows} inserts, then as many updates, then as many deletes of the bench table, in
 * transactions of {@code tx-rows} rows, made by a server-side procedure while no contestant runs — each
 * contestant drains the same changes from its own slot, one after another (the order rotates per round), from
 * start to the phase's last change durable in its target:
 * <ul>
 *   <li>{@code native}: {@code ALTER SUBSCRIPTION ... ENABLE} until the phase's marker (a one-row table updated by
 *       the phase's last transaction) is in the target, then {@code DISABLE};</li>
 *   <li>{@code millrace-postgres}, {@code millrace-duckdb}: an engine started in this JVM until the phase's events
 *       and the marker are written durably, then stopped.</li>
 * </ul>
 * CPU: the source server's (walsender), the target server's (apply worker, or Millrace's destination session) and
 * Millrace's JVM, each as CPU-seconds per 1M changes. At the end of each shape the targets are compared with the
 * source.
 *
 * <pre>
 * java -cp bench/target/millrace-bench.jar io.millrace.bench.ApplyBench [--rows 1000000] [--tx-rows 10000,10]
 *      [--rounds 1] [--only native,millrace-postgres,millrace-duckdb] [--keyless]
 * </pre>
 *
 * <p>{@code --keyless}: the bench table has no primary key and REPLICA IDENTITY FULL (the source keeps a plain index on
 * {@code id} for its own UPDATE and DELETE), in the source and in every target: each update and delete is matched by
 * its whole old row.
 */
public final class ApplyBench {
    private static final String[] PHASES = {"insert", "update", "delete"};

    private ApplyBench() {
    }

    public static void main(String[] args) throws Exception {
        long rows = 1_000_000;
        List<Integer> txRows = List.of(10_000, 10);
        int rounds = 1;
        List<String> contestants = List.of("native", "millrace-postgres", "millrace-duckdb");
        boolean keyless = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rows" -> rows = Long.parseLong(args[++i]);
                case "--tx-rows" -> txRows = Arrays.stream(args[++i].split(",")).map(Integer::parseInt).toList();
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--only" -> contestants = List.of(args[++i].split(","));
                case "--keyless" -> keyless = true;
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        Path work = Files.createTempDirectory("millrace-apply-");
        System.out.println(Orchestrator.machine() + "; load average " + Files.readString(Path.of("/proc/loadavg")).trim());
        System.out.println("| round | transactions of | phase | contestant | seconds | changes/s | ÷ native | CPU s/1M: JVM | source server | target server | load |");
        System.out.println("|--:|--:|---|---|--:|--:|--:|--:|--:|--:|--:|");
        try (EmbeddedPg src = EmbeddedPg.builder().major(15).dataDirectory(work.resolve("src"), true)
                .setting("max_wal_size", "8GB").setting("checkpoint_timeout", "30min").start();
             EmbeddedPg tgt = EmbeddedPg.builder().major(15).dataDirectory(work.resolve("tgt"), true)
                     .setting("max_wal_size", "8GB").setting("checkpoint_timeout", "30min")
                     .setting("wal_receiver_status_interval", "1s")
                     // the launcher starts a re-enabled subscription's worker at most this often (default 5 s)
                     .setting("wal_retrieve_retry_interval", "100ms").start()) {
            for (int shape : txRows) {
                for (int round = 0; round < rounds; round++) {
                    runShape(src, tgt, work, rows, shape, round, contestants, keyless);
                }
            }
        } finally {
            try (var s = Files.walk(work)) {
                s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    private static void runShape(EmbeddedPg src, EmbeddedPg tgt, Path work, long rows, int txRows, int round, List<String> contestants,
                                 boolean keyless) throws Exception {
        String tag = "s" + txRows + "_" + round;
        String srcDb = "src_" + tag;
        src.createDatabase(srcDb);
        try (Connection c = src.connect(srcDb); Statement s = c.createStatement()) {
            Workload.createTable(c);
            if (keyless) {
                s.execute("ALTER TABLE bench DROP CONSTRAINT bench_pkey");
                s.execute("CREATE INDEX bench_id ON bench (id)");
                s.execute("ALTER TABLE bench REPLICA IDENTITY FULL");
            }
            s.execute("CREATE TABLE bench_mark (id int PRIMARY KEY, phase int NOT NULL)");
            s.execute("INSERT INTO bench_mark VALUES (1, 0)");
            s.execute("ALTER PUBLICATION " + Workload.PUBLICATION + " ADD TABLE bench_mark");
            s.execute("CREATE PROCEDURE bench_phase(kind text, n bigint, per bigint, mark int) LANGUAGE plpgsql AS $$"
                    + " DECLARE lo bigint := 1; BEGIN WHILE lo <= n LOOP"
                    + "   IF kind = 'insert' THEN INSERT INTO bench SELECT " + Workload.rowSql("i")
                    + "       FROM generate_series(lo, least(lo + per - 1, n)) i;"
                    + "   ELSIF kind = 'update' THEN UPDATE bench SET a = a + 1, e = md5(e) WHERE id BETWEEN lo AND least(lo + per - 1, n);"
                    + "   ELSE DELETE FROM bench WHERE id BETWEEN lo AND least(lo + per - 1, n); END IF;"
                    + "   COMMIT; lo := lo + per; END LOOP;"
                    + " UPDATE bench_mark SET phase = mark WHERE id = 1; COMMIT; END $$");
        }
        List<Contestant> all = new ArrayList<>();
        for (String name : contestants) {
            all.add(switch (name) {
                case "native" -> new Native(src, tgt, srcDb, "native_" + tag, keyless);
                case "millrace-postgres", "millrace-duckdb" -> new Millrace(src, tgt, srcDb, name, tag, work);
                default -> throw new IllegalArgumentException("unknown contestant " + name);
            });
        }
        for (Contestant k : all) {
            k.prepare();
        }
        for (int p = 0; p < PHASES.length; p++) {
            try (Connection c = src.connect(srcDb); Statement s = c.createStatement()) {
                s.execute("SET synchronous_commit = off");
                s.execute("CALL bench_phase('" + PHASES[p] + "', " + rows + ", " + txRows + ", " + (p + 1) + ")");
            }
            double nativeRate = 0;
            List<String[]> lines = new ArrayList<>();
            List<Double> rates = new ArrayList<>();
            for (int j = 0; j < all.size(); j++) {
                Contestant k = all.get((j + round + p) % all.size());
                double load = Proc.load1();
                long[] cpu0 = {jvmCpu(), serverCpu(src), serverCpu(tgt)};
                long t0 = System.nanoTime();
                k.drain(p + 1, rows + 1);
                double seconds = (System.nanoTime() - t0) / 1e9;
                // a backend that ended (the destination session, the apply worker) counts in its postmaster's cutime
                // once reaped: give the postmaster a moment, outside the measured time
                Thread.sleep(500);
                long[] cpu1 = {jvmCpu(), serverCpu(src), serverCpu(tgt)};
                double rate = rows / seconds;
                if (k instanceof Native) {
                    nativeRate = rate;
                }
                double perM = 1e6 / rows / 1e9;
                rates.add(k instanceof Native ? -1 : rate);
                lines.add(new String[]{String.format(Locale.ROOT, "| %d | %,d rows | %s | %s | %.2f | %,.0f |", round, txRows, PHASES[p],
                        k.name(), seconds, rate), String.format(Locale.ROOT, " %s | %.2f | %.2f | %.1f |", k instanceof Native ? "-"
                        : String.format(Locale.ROOT, "%.2f", (cpu1[0] - cpu0[0]) * perM), (cpu1[1] - cpu0[1]) * perM,
                        (cpu1[2] - cpu0[2]) * perM, load)});
            }
            for (int j = 0; j < lines.size(); j++) {
                double r = rates.get(j);
                System.out.println(lines.get(j)[0] + (r < 0 || nativeRate == 0 ? " -" : String.format(Locale.ROOT, " %.2f", r / nativeRate))
                        + " |" + lines.get(j)[1]);
            }
            if (p == 1) {
                for (Contestant k : all) {
                    k.check(src, srcDb);
                }
            }
        }
        for (Contestant k : all) {
            k.close();
        }
    }

    private interface Contestant {
        String name();

        void prepare() throws Exception;

        /** Runs until the phase's marker {@code mark} (and {@code events} changes) are durable in the target, then stops. */
        void drain(int mark, long events) throws Exception;

        /** Fails unless the target's bench table has the source's rows. */
        void check(EmbeddedPg src, String srcDb) throws Exception;

        void close() throws Exception;
    }

    private static final class Native implements Contestant {
        private final EmbeddedPg src;
        private final EmbeddedPg tgt;
        private final String srcDb;
        private final String db;
        private final boolean keyless;

        Native(EmbeddedPg src, EmbeddedPg tgt, String srcDb, String db, boolean keyless) {
            this.src = src;
            this.tgt = tgt;
            this.srcDb = srcDb;
            this.db = db;
            this.keyless = keyless;
        }

        @Override
        public String name() {
            return "native";
        }

        @Override
        public void prepare() {
            tgt.createDatabase(db);
            tgt.execute(db, "CREATE TABLE bench (id bigint" + (keyless ? "" : " PRIMARY KEY") + ", a int, b text, c timestamptz, d numeric(12,2), e text)",
                    "CREATE TABLE bench_mark (id int PRIMARY KEY, phase int NOT NULL)", "INSERT INTO bench_mark VALUES (1, 0)",
                    "CREATE SUBSCRIPTION " + db + " CONNECTION 'host=" + src.host() + " port=" + src.port() + " dbname=" + srcDb
                            + " user=postgres' PUBLICATION " + Workload.PUBLICATION + " WITH (copy_data = false, enabled = false)");
        }

        @Override
        public void drain(int mark, long events) throws Exception {
            tgt.execute(db, "ALTER SUBSCRIPTION " + db + " ENABLE");
            try (Connection c = tgt.connect(db); Statement s = c.createStatement()) {
                while (scalar(s, "SELECT phase FROM bench_mark WHERE id = 1") < mark) {
                    Thread.sleep(5);
                }
                s.execute("ALTER SUBSCRIPTION " + db + " DISABLE");
                while (scalar(s, "SELECT count(*) FROM pg_stat_subscription WHERE subname = '" + db + "' AND pid IS NOT NULL") > 0) {
                    Thread.sleep(5);
                }
            }
        }

        @Override
        public void check(EmbeddedPg source, String sourceDb) throws Exception {
            compare(source, sourceDb, tgt, db, "bench");
        }

        @Override
        public void close() {
            tgt.execute(db, "DROP SUBSCRIPTION " + db);
        }
    }

    private static final class Millrace implements Contestant {
        private final EmbeddedPg src;
        private final EmbeddedPg tgt;
        private final String srcDb;
        private final String name;
        private final String slot;
        private final Path dir;
        private final boolean duck;

        Millrace(EmbeddedPg src, EmbeddedPg tgt, String srcDb, String name, String tag, Path work) {
            this.src = src;
            this.tgt = tgt;
            this.srcDb = srcDb;
            this.name = name;
            this.duck = name.endsWith("duckdb");
            this.slot = (duck ? "duck_" : "pg_") + tag;
            this.dir = work.resolve(slot);
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public void prepare() throws Exception {
            Files.createDirectories(dir);
            if (!duck) {
                tgt.createDatabase(slot);
            }
            src.execute(srcDb, "SELECT pg_create_logical_replication_slot('" + slot + "', 'pgoutput')");
        }

        @Override
        public void drain(int mark, long events) throws Exception {
            String dest = duck ? "    type: duckdb\n    file: " + dir.resolve("target.duckdb")
                    : "    type: postgres\n    host: 127.0.0.1\n    port: " + tgt.port() + "\n    database: " + slot + "\n    user: postgres";
            String yaml = String.join("\n", "name: " + slot, "source:", "  host: 127.0.0.1", "  port: " + src.port(), "  database: " + srcDb,
                    "  user: postgres", "  slot: " + slot, "  publication: " + Workload.PUBLICATION, "  tables: [public.bench, public.bench_mark]",
                    "snapshot:", "  mode: never", "destinations:", "  - name: out", dest, "");
            EngineConfig cfg = new ConfigLoader(System::getenv).parse(yaml, dir);
            Engine engine = new Engine(cfg);
            AtomicReference<Throwable> error = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    engine.run();
                } catch (Throwable e) {
                    error.set(e);
                }
            }, "apply-engine");
            t.start();
            while ((engine.stats() == null || engine.stats().eventsWritten() < events) && t.isAlive()) {
                Thread.sleep(5);
            }
            engine.stop();
            t.join();
            if (error.get() != null) {
                throw new IllegalStateException(name + " failed", error.get());
            }
        }

        @Override
        public void check(EmbeddedPg source, String sourceDb) throws Exception {
            if (duck) {
                long want;
                try (Connection c = source.connect(sourceDb); Statement s = c.createStatement()) {
                    want = scalar(s, "SELECT count(*) FROM bench");
                }
                try (Connection c = java.sql.DriverManager.getConnection("jdbc:duckdb:" + dir.resolve("target.duckdb"));
                     Statement s = c.createStatement()) {
                    long got = scalar(s, "SELECT count(*) FROM public.bench");
                    long sum = scalar(s, "SELECT coalesce(sum(a), 0) FROM public.bench");
                    try (Connection sc = source.connect(sourceDb); Statement ss = sc.createStatement()) {
                        long wantSum = scalar(ss, "SELECT coalesce(sum(a), 0) FROM bench");
                        if (got != want || sum != wantSum) {
                            throw new IllegalStateException(name + ": " + got + " rows (sum of a " + sum + ") where the source has " + want
                                    + " (" + wantSum + ")");
                        }
                    }
                }
            } else {
                compare(source, sourceDb, tgt, slot, "bench");
            }
        }

        @Override
        public void close() {
            src.execute(srcDb, "SELECT pg_drop_replication_slot('" + slot + "')");
        }
    }

    private static void compare(EmbeddedPg src, String srcDb, EmbeddedPg tgt, String tgtDb, String table) throws SQLException {
        String q = "SELECT count(*) || ' ' || coalesce(md5(string_agg(md5(t::text), '' ORDER BY id)), '') FROM " + table + " t";
        String want;
        String got;
        try (Connection c = src.connect(srcDb); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(q)) {
            rs.next();
            want = rs.getString(1);
        }
        try (Connection c = tgt.connect(tgtDb); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(q)) {
            rs.next();
            got = rs.getString(1);
        }
        if (!want.equals(got)) {
            throw new IllegalStateException(tgtDb + "." + table + " has (rows, hash) " + got + " where the source has " + want);
        }
    }

    private static long scalar(Statement s, String sql) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static long jvmCpu() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /**
     * CPU nanoseconds of a server: its postmaster's own and its ended children's (cutime, cstime: the postmaster waits
     * for each), plus every live child's.
     */
    static long serverCpu(EmbeddedPg pg) {
        long pm = postmasterPid(pg);
        long sum = 0;
        try {
            String st = Files.readString(Path.of("/proc/" + pm + "/stat"));
            String[] f = st.substring(st.lastIndexOf(')') + 2).split(" ");
            sum += (Long.parseLong(f[11]) + Long.parseLong(f[12]) + Long.parseLong(f[13]) + Long.parseLong(f[14])) * 10_000_000L;
        } catch (java.io.IOException | RuntimeException e) {
            return -1;
        }
        for (ProcessHandle child : ProcessHandle.of(pm).map(h -> h.children().toList()).orElse(List.of())) {
            long n = Proc.cpuNanos(child.pid());
            if (n > 0) {
                sum += n;
            }
        }
        return sum;
    }

    private static long postmasterPid(EmbeddedPg pg) {
        try {
            return Long.parseLong(Files.readAllLines(pg.dataDirectory().resolve("postmaster.pid")).get(0).trim());
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
