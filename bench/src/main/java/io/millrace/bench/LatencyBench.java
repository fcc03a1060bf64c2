package io.millrace.bench;

import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.pipeline.PipelineStats;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Latency from source commit to durable in the destination at a steady rate: a writer inserts rows
 * of the bench table at {@code rate} changes/s (transactions of {@code --tx-rows}, paced by the
 * clock), Millrace streams them into jsonl (fsync, then the checkpoint), and every streamed event's
 * latency is taken when its batch is durable ({@link PipelineStats#eachLatency}: now − the source
 * transaction's commit timestamp; one machine, one clock). The first {@code --warmup} seconds of each
 * rate are left out.
 *
 * <pre>
 * java -cp bench/target/millrace-bench.jar io.millrace.bench.LatencyBench [--rates 5000,20000] [--seconds 30]
 *      [--warmup 5] [--tx-rows 20] [--dest jsonl|postgres|null] [--decoders N] [--pg setting=value ...] [--async-commit]
 * </pre>
 */
public final class LatencyBench {
    private LatencyBench() {
    }

    public static void main(String[] args) throws Exception {
        List<Integer> rates = List.of(5_000, 20_000);
        int seconds = 30;
        int warmup = 5;
        int txRows = 20;
        String dest = "jsonl";
        int decoders = 0;
        java.util.Map<String, String> pgSettings = new java.util.LinkedHashMap<>();
        boolean asyncCommit = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rates" -> rates = Arrays.stream(args[++i].split(",")).map(Integer::parseInt).toList();
                case "--seconds" -> seconds = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--tx-rows" -> txRows = Integer.parseInt(args[++i]);
                case "--dest" -> dest = args[++i];
                case "--decoders" -> decoders = Integer.parseInt(args[++i]);
                case "--async-commit" -> asyncCommit = true;
                case "--pg" -> {
                    String[] kv = args[++i].split("=", 2);
                    pgSettings.put(kv[0], kv[1]);
                }
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        Path work = Files.createTempDirectory("millrace-latency-");
        System.out.println(Orchestrator.machine() + "; load average " + Files.readString(Path.of("/proc/loadavg")).trim());
        System.out.println("| rate (changes/s) | achieved | transactions of | destination | events measured | p50 ms | p90 ms | p99 ms | max ms | load |");
        System.out.println("|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|");
        EmbeddedPg.Builder server = EmbeddedPg.builder().major(15).dataDirectory(work.resolve("pgdata"), true);
        pgSettings.forEach(server::setting);
        try (EmbeddedPg pg = server.start()) {
            pg.createDatabase("bench");
            try (Connection c = pg.connect("bench")) {
                Workload.createTable(c);
            }
            long nextId = 1;
            for (int rate : rates) {
                String slot = "latency_" + rate;
                try (Connection c = pg.connect("bench"); Statement s = c.createStatement()) {
                    s.execute("SELECT pg_create_logical_replication_slot('" + slot + "', 'pgoutput')");
                }
                Path dir = work.resolve(slot);
                Files.createDirectories(dir);
                String yaml = String.join("\n", "name: latency", "source:", "  host: 127.0.0.1", "  port: " + pg.port(), "  database: bench",
                        "  user: postgres", "  slot: " + slot, "  publication: " + Workload.PUBLICATION, "  tables: [public.bench]",
                        "snapshot:", "  mode: never", "pipeline:", "  decoders: " + decoders, "destinations:", "  - name: out",
                        "    type: " + (dest.equals("null") ? "discard" : dest), dest.equals("jsonl") ? "    directory: " + dir.resolve("events")
                                : dest.equals("postgres") ? "    host: 127.0.0.1\n    port: " + pg.port() + "\n    database: " + slot
                                + "\n    user: postgres" : "",
                        "");
                if (dest.equals("postgres")) {
                    pg.createDatabase(slot); // a destination database on the same server
                }
                EngineConfig cfg = new ConfigLoader(System::getenv).parse(yaml, dir);
                Engine engine = new Engine(cfg);
                AtomicReference<Throwable> error = new AtomicReference<>();
                Thread t = new Thread(() -> {
                    try {
                        engine.run();
                    } catch (Throwable e) {
                        error.set(e);
                    }
                }, "latency-engine");
                t.start();
                while (engine.stats() == null && t.isAlive()) {
                    Thread.sleep(10);
                }
                long[] lat = new long[(int) Math.min(Integer.MAX_VALUE - 8, (long) rate * (seconds + 5) + 1000)];
                int[] n = {0};
                long measureFromMicros = (System.currentTimeMillis() + warmup * 1000L) * 1000;
                double load = Proc.load1();
                long written = 0;
                try (Connection c = pg.connect("bench"); Statement s = c.createStatement()) {
                    // An asynchronous commit reaches the walsender only when the WAL writer flushes it (wal_writer_delay,
                    // 200 ms): that would be the source's latency, not Millrace's. Applications commit synchronously by default.
                    if (asyncCommit) {
                        s.execute("SET synchronous_commit = off");
                    }
                    engine.stats().eachLatency(l -> {
                        // commit time = now − latency; only changes committed after the warm-up count
                        java.time.Instant now = java.time.Instant.now();
                        long commit = now.getEpochSecond() * 1_000_000L + now.getNano() / 1000 - l;
                        if (commit >= measureFromMicros && n[0] < lat.length) {
                            lat[n[0]++] = l;
                        }
                    });
                    long start = System.nanoTime();
                    long end = start + (warmup + seconds) * 1_000_000_000L;
                    double txPerNano = rate / (double) txRows / 1e9;
                    long tx = 0;
                    while (System.nanoTime() < end) {
                        long due = start + (long) (tx / txPerNano);
                        long wait = due - System.nanoTime();
                        if (wait > 0) {
                            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                        }
                        s.execute("INSERT INTO bench SELECT " + Workload.rowSql("i") + " FROM generate_series(" + nextId + "::bigint, "
                                + (nextId + txRows - 1) + "::bigint) i");
                        nextId += txRows;
                        written += txRows;
                        tx++;
                    }
                    double achieved = written / ((System.nanoTime() - start) / 1e9);
                    long deadline = System.currentTimeMillis() + 60_000;
                    while (engine.stats().eventsWritten() < written && System.currentTimeMillis() < deadline && t.isAlive()) {
                        Thread.sleep(5);
                    }
                    engine.stop();
                    t.join();
                    if (error.get() != null) {
                        throw new IllegalStateException("engine failed", error.get());
                    }
                    long[] v = Arrays.copyOf(lat, n[0]);
                    Arrays.sort(v);
                    System.out.printf(Locale.ROOT, "| %,d | %,.0f | %d rows | %s | %,d | %s | %s | %s | %s | %.1f |%n", rate, achieved, txRows, dest,
                            v.length, ms(v, 0.50), ms(v, 0.90), ms(v, 0.99), v.length == 0 ? "-" : String.format(Locale.ROOT, "%.1f",
                                    v[v.length - 1] / 1000.0), load);
                }
            }
        } finally {
            try (var s = Files.walk(work)) {
                s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    private static String ms(long[] sorted, double q) {
        if (sorted.length == 0) {
            return "-";
        }
        return String.format(Locale.ROOT, "%.1f", sorted[(int) Math.min(sorted.length - 1, Math.floor(q * sorted.length))] / 1000.0);
    }
}
