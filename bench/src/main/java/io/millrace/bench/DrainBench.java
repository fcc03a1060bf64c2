package io.millrace.bench;

import io.millrace.core.ByteBudget;
import io.millrace.core.Lsn;
import io.millrace.core.Secret;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.pipeline.PipelineStats;
import io.millrace.source.PgConnections;
import io.millrace.source.ReplicationReader;
import io.millrace.source.SourceConfig;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Side-by-side drain of pre-filled slots by <em>variants of Millrace itself</em> (and pg_recvlogical as
 * the reference), interleaved in one run on one server: for A/B measurements of the streaming path on
 * a machine whose load changes from minute to minute (docs/BENCHMARKS.md, "Drain A/B").
 *
 * <pre>
 * java -cp bench/target/millrace-bench.jar io.millrace.bench.DrainBench [--rows N] [--repeat K] [--tx-rows N]
 *      [--xmx SIZE] [--variants a,b,...] [--recvlogical PATH]
 * </pre>
 *
 * Variants (each run in its own JVM, all with the same -Xmx):
 * <ul>
 *   <li>{@code recvlogical}: pg_recvlogical, text, into /dev/null (the reference);</li>
 *   <li>{@code reader-poll}, {@code reader-wait}: the replication reader alone with a handler that counts
 *       inserts, polling ({@code -Dmillrace.reader.poll=true}, the loop before issue 4) or waiting on the socket;</li>
 *   <li>{@code DEST-poll}, {@code DEST-dN} (DEST {@code null} or {@code jsonl}): the whole engine, text values;
 *       {@code poll} = polling reader and no decoder pool (the engine before issue 4), {@code dN} = waiting reader
 *       and {@code pipeline.decoders: N} (d0: decoded on the assembler thread); a suffix {@code -cR} sets
 *       {@code pipeline.decode_chunk_rows: R}, {@code -bM} sets {@code pipeline.memory_budget_mb: M}; JVM settings
 *       follow a {@code ~}: {@code serial}, {@code parallel}, a heap size ({@code 128m}) or {@code lean} (bin/millrace's
 *       defaults), e.g. {@code jsonl-d0-b16~serial~160m}; after a {@code @}, the path of another build's bench jar to run
 *       the variant from (A/B against the commit before), e.g. {@code jsonl-d0~lean@/tmp/base/bench/target/millrace-bench.jar}.</li>
 * </ul>
 * Per variant: the median over the repetitions of seconds from its start to its last row, of the
 * drain rate from its first row to its last (start-up excluded), process CPU seconds, reader-thread
 * CPU seconds, voluntary context switches, peak RSS; and the load average at its start.
 */
public final class DrainBench {
    private DrainBench() {
    }

    /** The JVM options bin/millrace starts the engine with unless MILLRACE_JAVA_OPTS is set (variant suffix {@code ~lean}). */
    static final String LEAN_JVM = System.getProperty("millrace.bench.lean", "-Xmx192m -XX:+UseParallelGC");

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("child")) {
            System.exit(child(args));
        }
        long rows = 300_000;
        int repeat = 3;
        int txRows = 10_000;
        String xmx = "2g";
        List<String> variants = List.of("recvlogical", "reader-poll", "reader-wait", "null-poll", "null-d0", "jsonl-poll", "jsonl-d0");
        Path recv = Path.of("/usr/lib/postgresql/15/bin/pg_recvlogical");
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rows" -> rows = Long.parseLong(args[++i]);
                case "--repeat" -> repeat = Integer.parseInt(args[++i]);
                case "--tx-rows" -> txRows = Integer.parseInt(args[++i]);
                case "--xmx" -> xmx = args[++i];
                case "--variants" -> variants = List.of(args[++i].split(","));
                case "--recvlogical" -> recv = Path.of(args[++i]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + " (--rows N --repeat K --tx-rows N --xmx SIZE --variants a,b --recvlogical PATH)");
            }
        }
        Path work = Files.createTempDirectory("millrace-drain-");
        System.out.printf(Locale.ROOT, "drain A/B: %,d rows in transactions of %,d, %d repetitions, -Xmx%s, variants %s%n", rows, txRows,
                repeat, xmx, variants);
        System.out.println(Orchestrator.machine() + "; load average at start " + Files.readString(Path.of("/proc/loadavg")).trim());
        Map<String, List<double[]>> results = new LinkedHashMap<>();
        try (EmbeddedPg pg = EmbeddedPg.builder().major(15).dataDirectory(work.resolve("pgdata"), true)
                .setting("shared_buffers", "512MB").setting("max_wal_size", "8GB").setting("checkpoint_timeout", "30min")
                .setting("max_replication_slots", "60").setting("max_wal_senders", "60").start()) {
            pg.createDatabase("bench");
            String endLsn;
            try (Connection c = pg.connect("bench"); Statement s = c.createStatement()) {
                Workload.createTable(c);
                for (int run = 1; run <= repeat; run++) {
                    for (String v : variants) {
                        s.execute("SELECT pg_create_logical_replication_slot('" + slot(v, run) + "', 'pgoutput')");
                    }
                }
                Workload.insert(c, 1, rows, txRows, n -> {
                });
                try (ResultSet rs = s.executeQuery("SELECT pg_current_wal_insert_lsn()")) {
                    rs.next();
                    endLsn = rs.getString(1);
                }
                s.execute("CHECKPOINT");
            }
            System.out.println("slots filled; end LSN " + endLsn);
            for (int run = 1; run <= repeat; run++) {
                for (String v : variants) {
                    double load = Proc.load1();
                    double[] m = v.equals("recvlogical") ? recvlogical(recv, pg.port(), slot(v, run), endLsn)
                            : jvm(v, xmx, pg.port(), slot(v, run), endLsn, rows, work);
                    m[6] = load;
                    results.computeIfAbsent(v, k -> new ArrayList<>()).add(m);
                    System.out.printf(Locale.ROOT, "%-14s #%d  %6.2f s  first %5.2f s  drain %,9.0f rows/s  cpu %5.1f s  reader %4.1f s"
                                    + "  vcsw %,8.0f  rss %5.0f MB  load %4.1f%n", v, run, m[0], m[1], rows / (m[0] - Math.max(0, m[1])), m[2],
                            m[3], m[4], m[5], load);
                    try (Connection c = pg.connect("bench"); Statement s = c.createStatement()) {
                        s.execute("SELECT pg_drop_replication_slot('" + slot(v, run) + "')");
                    }
                }
            }
        } finally {
            deleteTree(work);
        }
        double ref = results.containsKey("recvlogical") ? median(results.get("recvlogical"), 0) : Double.NaN;
        System.out.println();
        System.out.println("| variant | runs | seconds (median) | first row s | drain rows/s (first→last row) | total rows/s | × pg_recvlogical"
                + " (total) | CPU s | reader CPU s | voluntary ctx switches | peak RSS MB | load |");
        System.out.println("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
        for (Map.Entry<String, List<double[]>> e : results.entrySet()) {
            List<double[]> ms = e.getValue();
            double sec = median(ms, 0);
            double first = median(ms, 1);
            long n = rows;
            List<Double> drains = ms.stream().map(m -> n / (m[0] - Math.max(0, m[1]))).sorted().toList();
            System.out.printf(Locale.ROOT, "| %s | %d | %.2f (%.2f–%.2f) | %s | %,.0f | %,.0f | %.2f× | %.1f | %s | %,.0f | %.0f | %.1f–%.1f |%n",
                    e.getKey(), ms.size(), sec, min(ms, 0), max(ms, 0), first < 0 ? "-" : String.format(Locale.ROOT, "%.2f", first),
                    drains.get(drains.size() / 2), rows / sec, ref / sec, median(ms, 2), median(ms, 3) < 0 ? "-"
                            : String.format(Locale.ROOT, "%.1f", median(ms, 3)), median(ms, 4), median(ms, 5), min(ms, 6), max(ms, 6));
        }
    }

    /** A slot name per variant and run; a variant run from another build's jar ({@code @path}) is told apart by a hash. */
    private static String slot(String variant, int run) {
        int at = variant.indexOf('@');
        String name = at < 0 ? variant : variant.substring(0, at) + "_b" + Integer.toHexString(variant.substring(at).hashCode());
        return ("drain_" + name.replaceAll("[^a-zA-Z0-9]", "_") + "_" + run).toLowerCase(Locale.ROOT);
    }

    private static double median(List<double[]> ms, int i) {
        List<Double> v = ms.stream().map(m -> m[i]).sorted(Comparator.naturalOrder()).toList();
        return v.get(v.size() / 2);
    }

    private static double min(List<double[]> ms, int i) {
        return ms.stream().mapToDouble(m -> m[i]).min().orElse(Double.NaN);
    }

    private static double max(List<double[]> ms, int i) {
        return ms.stream().mapToDouble(m -> m[i]).max().orElse(Double.NaN);
    }

    /** {seconds, first-row seconds (-1: unknown), CPU s, reader CPU s (-1: none), voluntary ctx switches, peak RSS MB, load}. */
    private static double[] recvlogical(Path recv, int port, String slot, String endLsn) throws Exception {
        List<String> cmd = List.of(recv.toString(), "-h", "127.0.0.1", "-p", Integer.toString(port), "-U", "postgres", "-d", "bench", "-S",
                slot, "--start", "--no-loop", "--endpos=" + endLsn, "-o", "proto_version=1", "-o", "publication_names=" + Workload.PUBLICATION,
                "-f", "/dev/null");
        long start = System.nanoTime();
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        long rss = 0;
        long cpu = 0;
        long vcsw = 0;
        while (!p.waitFor(10, TimeUnit.MILLISECONDS)) {
            rss = Math.max(rss, Proc.peakRssKb(p.pid()));
            cpu = Math.max(cpu, Proc.cpuNanos(p.pid()));
            vcsw = Math.max(vcsw, switches(p.pid()));
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException("pg_recvlogical exit " + p.exitValue());
        }
        return new double[]{(System.nanoTime() - start) / 1e9, -1, cpu / 1e9, -1, vcsw, rss / 1024.0, 0};
    }

    private static long switches(long pid) {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (l.startsWith("voluntary_ctxt_switches:")) {
                    return Long.parseLong(l.replaceAll("[^0-9]", ""));
                }
            }
        } catch (Exception e) {
            return 0;
        }
        return 0;
    }

    private static double[] jvm(String name, String xmx, int port, String slot, String endLsn, long rows, Path work) throws Exception {
        // JVM settings after '~': serial / parallel (garbage collector), a heap size (128m), or "lean" (bin/millrace's
        // default options), e.g. jsonl-d0~lean or jsonl-d0~serial~128m. After '@': the bench jar of another build to run
        // the variant from (the commit before, for A/B), e.g. jsonl-d0~lean@/tmp/base/bench/target/millrace-bench.jar.
        String classPath = System.getProperty("java.class.path");
        int at = name.indexOf('@');
        if (at > 0) {
            classPath = name.substring(at + 1);
            name = name.substring(0, at);
        }
        String[] parts = name.split("~");
        String variant = parts[0];
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        boolean heapSet = false;
        for (int i = 1; i < parts.length; i++) {
            switch (parts[i]) {
                case "serial" -> cmd.add("-XX:+UseSerialGC");
                case "parallel" -> cmd.add("-XX:+UseParallelGC");
                case "lean" -> {
                    cmd.addAll(List.of(LEAN_JVM.split(" ")));
                    heapSet = true;
                }
                default -> {
                    if (!parts[i].matches("[0-9]+[mg]")) {
                        throw new IllegalArgumentException("unknown JVM setting '" + parts[i] + "' in variant " + name);
                    }
                    cmd.add("-Xmx" + parts[i]);
                    heapSet = true;
                }
            }
        }
        if (!heapSet) {
            cmd.add("-Xmx" + xmx);
        }
        if (variant.endsWith("-poll")) {
            cmd.add("-Dmillrace.reader.poll=true");
        }
        Path dir = work.resolve(slot);
        Files.createDirectories(dir);
        cmd.addAll(List.of("-cp", classPath, DrainBench.class.getName(), "child", variant, Integer.toString(port),
                slot, endLsn, Long.toString(rows), dir.toString()));
        Path log = work.resolve(slot + ".log");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!p.waitFor(30, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            throw new IllegalStateException(variant + " did not finish in 30 minutes");
        }
        List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
        for (String l : lines) {
            if (l.startsWith("DRAIN ")) {
                String[] f = l.substring(6).split(" ");
                double[] m = new double[7];
                for (int i = 0; i < 6; i++) {
                    m[i] = Double.parseDouble(f[i]);
                }
                deleteTree(dir);
                return m;
            }
        }
        throw new IllegalStateException(variant + " failed (exit " + p.exitValue() + "):\n" + String.join("\n", lines));
    }

    // ---- child ----------------------------------------------------------------------------------

    private static int child(String[] a) throws Exception {
        String variant = a[1];
        int port = Integer.parseInt(a[2]);
        String slot = a[3];
        Lsn end = Lsn.parse(a[4]);
        long rows = Long.parseLong(a[5]);
        Path dir = Path.of(a[6]);
        long start = System.nanoTime();
        long[] r = variant.startsWith("reader-") ? reader(port, slot, rows) : engine(variant, port, slot, end, rows, dir, start);
        long cpu = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
        System.out.printf(Locale.ROOT, "DRAIN %.4f %.4f %.3f %.3f %d %.1f%n", r[0] / 1e9, r[1] / 1e9, cpu / 1e9, r[2] / 1e9, r[3],
                Proc.peakRssKb(ProcessHandle.current().pid()) / 1024.0);
        System.out.println("threads: " + Proc.busiestThreads(12));
        return 0;
    }

    /** {nanos, first-row nanos, reader-thread CPU nanos, voluntary context switches}: the reader alone, counting inserts. */
    private static long[] reader(int port, String slot, long rows) throws Exception {
        long start = System.nanoTime();
        SourceConfig sc = new SourceConfig("127.0.0.1", port, "bench", "postgres", Secret.NONE, slot, Workload.PUBLICATION, List.of(),
                List.of(), false, SourceConfig.BinaryMode.OFF, Duration.ofSeconds(10), Map.of());
        ByteBudget budget = new ByteBudget(64L << 20);
        AtomicLong count = new AtomicLong();
        AtomicLong first = new AtomicLong();
        AtomicLong last = new AtomicLong();
        AtomicReference<Throwable> error = new AtomicReference<>();
        ReplicationReader reader = new ReplicationReader(new PgConnections(sc),
                new ReplicationReader.Options(Lsn.ZERO, 1, false, false, false, 10_000), budget, Lsn.ZERO,
                (at, data, off, len) -> {
                    budget.release(len);
                    if (data[off] == 'I') {
                        long n = count.incrementAndGet();
                        if (n == 1) {
                            first.set(System.nanoTime());
                        }
                        if (n == rows) {
                            last.set(System.nanoTime());
                        }
                    }
                }, error::set);
        Thread t = new Thread(reader, "millrace-reader");
        t.start();
        long tid = t.getId();
        long cpu = 0;
        while (last.get() == 0 && error.get() == null) {
            Thread.sleep(2);
            cpu = Math.max(cpu, ManagementFactory.getThreadMXBean().getThreadCpuTime(tid));
        }
        long[] sw = Proc.contextSwitches();
        cpu = Math.max(cpu, ManagementFactory.getThreadMXBean().getThreadCpuTime(tid));
        reader.stop();
        t.join();
        if (error.get() != null) {
            throw new IllegalStateException("reader failed", error.get());
        }
        return new long[]{last.get() - start, first.get() - start, cpu, sw[0]};
    }

    private static long[] engine(String variant, int port, String slot, Lsn end, long rows, Path dir, long start) throws Exception {
        String[] parts = variant.split("-");
        String dest = parts[0];
        int decoders = 0;
        Integer chunk = null;
        Integer budgetMb = null;
        for (String p : parts) {
            if (p.matches("b\\d+")) {
                budgetMb = Integer.parseInt(p.substring(1));
            } else if (p.matches("d\\d+")) {
                decoders = Integer.parseInt(p.substring(1));
            } else if (p.matches("c\\d+")) {
                chunk = Integer.parseInt(p.substring(1));
            }
        }
        String yaml = String.join("\n", "name: drain", "source:", "  host: 127.0.0.1", "  port: " + port, "  database: bench",
                "  user: postgres", "  slot: " + slot, "  publication: " + Workload.PUBLICATION, "  tables: [public.bench]",
                "  binary: \"off\"", "snapshot:", "  mode: never", "pipeline:", "  decoders: " + decoders,
                chunk == null ? "" : "  decode_chunk_rows: " + chunk,
                budgetMb == null ? "" : "  memory_budget_mb: " + budgetMb + "\n  batch_kb: " + Math.min(8192, budgetMb * 1024 / 4),
                "destinations:", "  - name: out",
                "    type: " + (dest.equals("null") ? "discard" : dest), dest.equals("jsonl") ? "    directory: " + dir.resolve("events") : "", "");
        EngineConfig cfg = new ConfigLoader(System::getenv).parse(yaml, dir);
        Engine engine = new Engine(cfg);
        AtomicReference<Throwable> error = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                engine.run();
            } catch (Throwable e) {
                error.set(e);
            }
        }, "bench-engine");
        t.start();
        long first = -1;
        long nanos;
        long readerCpu = 0;
        while (true) {
            PipelineStats s = engine.stats();
            if (first < 0 && s != null && s.eventsWritten() > 0) {
                first = System.nanoTime() - start;
            }
            if (s != null && s.eventsWritten() >= rows && s.durable().compareTo(end) >= 0) {
                nanos = System.nanoTime() - start;
                break;
            }
            if (!t.isAlive()) {
                throw new IllegalStateException("engine stopped after " + (s == null ? 0 : s.eventsWritten()) + " rows", error.get());
            }
            Thread.sleep(1);
        }
        long[] sw = Proc.contextSwitches();
        for (Thread th : Thread.getAllStackTraces().keySet()) {
            if (th.getName().equals("millrace-reader")) {
                readerCpu = ManagementFactory.getThreadMXBean().getThreadCpuTime(th.getId());
            }
        }
        engine.stop();
        t.join();
        return new long[]{nanos, first, readerCpu, sw[0]};
    }

    private static void deleteTree(Path p) {
        if (!Files.exists(p)) {
            return;
        }
        try (var s = Files.walk(p)) {
            s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (Exception e) {
            // scratch only
        }
    }
}
