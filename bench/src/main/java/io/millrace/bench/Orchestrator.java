package io.millrace.bench;

import io.millrace.embedded.EmbeddedPg;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One benchmark run: starts its own PostgreSQL, loads the table, then runs each selected contestant
 * alone in its own process, phase by phase, and prints and writes the table of {@link Results}.
 *
 * <p>Snapshot phase: the table holds N rows; each contestant copies all of them (Millrace and Debezium
 * create, and the run then drops, a slot of their own).
 *
 * <p>Streaming phase: the table is emptied, one pgoutput slot per contestant is created, then N rows are
 * inserted in transactions of {@code --tx-rows}. Every slot then holds the same N changes, and each
 * contestant drains its own slot up to the WAL position after the last insert.
 */
final class Orchestrator {
    private final Options o;
    private final PrintStreamLog log = new PrintStreamLog();
    /** --kafka: the broker the Kafka contestants write to, in this JVM. */
    private io.millrace.sink.kafka.testing.KafkaBroker kafka;

    Orchestrator(Options o) {
        this.o = o;
    }

    /** Progress lines on stdout, prefixed with the elapsed time. */
    private static final class PrintStreamLog {
        private final long t0 = System.nanoTime();

        void info(String fmt, Object... args) {
            System.out.printf(Locale.ROOT, "[%6.1fs] %s%n", (System.nanoTime() - t0) / 1e9, String.format(Locale.ROOT, fmt, args));
            System.out.flush();
        }
    }

    int run() throws Exception {
        List<Contestant> selected = Contestant.all().stream().filter(o::selected).toList();
        if (selected.isEmpty()) {
            throw new IllegalArgumentException("--only/--skip select no contestant");
        }
        Path work = o.work() != null ? o.work() : Files.createTempDirectory("millrace-bench-");
        Files.createDirectories(work);
        Path logs = o.out().toAbsolutePath().getParent().resolve("bench-logs");
        Files.createDirectories(logs);
        String machine = machine();
        log.info("millrace bench: %,d rows per phase, contestants %s", o.rows(), selected.stream().map(Contestant::id).toList());
        log.info("%s", machine);
        log.info("scratch folder %s, child logs in %s", work, logs);
        Results results = new Results();
        String rowSizes;
        if (selected.stream().anyMatch(x -> "kafka".equals(x.dest()))) {
            kafka = io.millrace.sink.kafka.testing.KafkaBroker.start();
            log.info("Kafka broker (KRaft, in this JVM) at %s", kafka.bootstrapServers());
        }
        try (EmbeddedPg pg = EmbeddedPg.builder().major(o.pgMajor()).dataDirectory(work.resolve("pgdata"), true)
                .setting("shared_buffers", "512MB")
                .setting("max_wal_size", "8GB")
                .setting("checkpoint_timeout", "30min")
                .setting("max_replication_slots", "30")
                .setting("max_wal_senders", "30")
                .start()) {
            log.info("PostgreSQL %d on port %d (shared_buffers=512MB, max_wal_size=8GB, checkpoint_timeout=30min; EmbeddedPg's fsync=off,"
                    + " full_page_writes=off; synchronous_commit=off while loading)", o.pgMajor(), pg.port());
            pg.createDatabase("bench");
            try (Connection c = pg.connect("bench")) {
                Workload.createTable(c);
            }
            List<Contestant> snap = selected.stream().filter(x -> x.phase() == Contestant.Phase.SNAPSHOT).toList();
            List<Contestant> stream = selected.stream().filter(x -> x.phase() == Contestant.Phase.STREAMING).toList();
            rowSizes = "";
            if (!snap.isEmpty()) {
                try (Connection c = pg.connect("bench")) {
                    long t = System.nanoTime();
                    Workload.insert(c, 1, o.rows(), 100_000, n -> {
                    });
                    try (Statement s = c.createStatement()) {
                        s.execute("VACUUM (FREEZE, ANALYZE) bench");
                        s.execute("CHECKPOINT");
                    }
                    rowSizes = Workload.rowSizes(c);
                    log.info("snapshot phase: loaded %,d rows in %.1f s (%s)", Workload.count(c), (System.nanoTime() - t) / 1e9, rowSizes);
                }
                for (int run = 1; run <= o.repeat(); run++) {
                    for (Contestant x : snap) {
                        results.add(x, runOne(pg, x, run, work, logs, null));
                        dropSlot(pg, x.slot(run));
                    }
                }
            }
            if (!stream.isEmpty()) {
                String endLsn;
                try (Connection c = pg.connect("bench"); Statement s = c.createStatement()) {
                    s.execute("TRUNCATE bench");
                    s.execute("CHECKPOINT");
                    for (int run = 1; run <= o.repeat(); run++) {
                        for (Contestant x : stream) {
                            s.execute("SELECT pg_create_logical_replication_slot('" + x.slot(run) + "', 'pgoutput')");
                        }
                    }
                    long t = System.nanoTime();
                    Workload.insert(c, 1, o.rows(), o.txRows(), n -> {
                    });
                    try (ResultSet rs = s.executeQuery("SELECT pg_current_wal_insert_lsn()")) {
                        rs.next();
                        endLsn = rs.getString(1);
                    }
                    s.execute("CHECKPOINT");
                    if (rowSizes.isEmpty()) {
                        rowSizes = Workload.rowSizes(c);
                    }
                    log.info("streaming phase: %d slots, then %,d rows inserted in transactions of %,d in %.1f s; end LSN %s",
                            stream.size() * o.repeat(), o.rows(), o.txRows(), (System.nanoTime() - t) / 1e9, endLsn);
                }
                for (int run = 1; run <= o.repeat(); run++) {
                    for (Contestant x : stream) {
                        results.add(x, runOne(pg, x, run, work, logs, endLsn));
                        dropSlot(pg, x.slot(run));
                    }
                }
            }
        } finally {
            if (kafka != null) {
                kafka.close();
            }
            if (!o.keep()) {
                deleteTree(work);
            }
        }
        String table = results.text();
        System.out.println();
        System.out.print(table);
        String md = "# Millrace benchmark results\n\n"
                + "- command: `java -jar bench/target/millrace-bench.jar " + String.join(" ", argsForDoc()) + "`\n"
                + "- finished: " + Instant.now() + "\n"
                + "- " + machine + "\n"
                + "- rows: " + String.format(Locale.ROOT, "%,d", o.rows()) + " per phase (" + rowSizes + "); streaming transactions of "
                + String.format(Locale.ROOT, "%,d", o.txRows()) + " rows\n"
                + "- every contestant in its own process, each run " + o.repeat() + " time(s) (interleaved: all contestants of a phase, then again);"
                + " the table shows the run with the median rows/s; JVM contestants with -Xmx" + o.xmx()
                + (o.millraceJvm() == null ? "" : " (Millrace's: " + o.millraceJvm() + ")") + "; seconds from the contestant's start"
                + " (after JVM start-up) to its last row, 'first row s' to its first; ratios of rows/s, > 1 is faster than the"
                + " reference; CPU s of the contestant's process over its whole life; load = 1-minute load average at its start\n\n"
                + results.markdown();
        Files.createDirectories(o.out().toAbsolutePath().getParent());
        Files.writeString(o.out(), md, StandardCharsets.UTF_8);
        log.info("results written to %s", o.out());
        return results.allOk() ? 0 : 1;
    }

    private List<String> argsForDoc() {
        List<String> a = new ArrayList<>(List.of("--rows", Long.toString(o.rows())));
        if (o.repeat() != 1) {
            a.addAll(List.of("--repeat", Integer.toString(o.repeat())));
        }
        if (o.txRows() != 10_000) {
            a.addAll(List.of("--tx-rows", Integer.toString(o.txRows())));
        }
        if (!o.xmx().equals("2g")) {
            a.addAll(List.of("--xmx", o.xmx()));
        }
        if (o.millraceJvm() != null) {
            a.addAll(List.of("--millrace-jvm", "'" + o.millraceJvm() + "'"));
        }
        if (!o.only().isEmpty()) {
            a.addAll(List.of("--only", String.join(",", o.only())));
        }
        if (!o.skip().isEmpty()) {
            a.addAll(List.of("--skip", String.join(",", o.skip())));
        }
        if (o.kafka()) {
            a.add("--kafka");
        }
        return a;
    }

    static String machine() {
        String mem = "?";
        try {
            for (String l : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (l.startsWith("MemTotal:")) {
                    mem = String.format(Locale.ROOT, "%.1f GiB", Long.parseLong(l.replaceAll("[^0-9]", "")) / 1024.0 / 1024.0);
                }
            }
        } catch (IOException e) {
            // leave "?"
        }
        String cpu = "?";
        try {
            cpu = Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name")).findFirst()
                    .map(l -> l.substring(l.indexOf(':') + 1).trim()).orElse("?");
        } catch (IOException e) {
            // leave "?"
        }
        return String.format(Locale.ROOT, "machine: %d cores (%s), %s RAM, %s %s (%s), load average at start %.2f",
                Runtime.getRuntime().availableProcessors(), cpu, mem, System.getProperty("java.vm.name"),
                System.getProperty("java.runtime.version"), System.getProperty("java.vendor"), Proc.load1());
    }

    private Measurement runOne(EmbeddedPg pg, Contestant x, int run, Path work, Path logs, String endLsn) throws Exception {
        Path dir = work.resolve(x.id() + "-" + run);
        Files.createDirectories(dir);
        String name = o.repeat() == 1 ? x.id() : x.id() + " #" + run;
        Path logFile = logs.resolve(x.id() + (o.repeat() == 1 ? "" : "-" + run) + ".log");
        double load = Proc.load1();
        log.info("%-32s starting (load %.2f)", name, load);
        Measurement m;
        try {
            m = x.kind() == Contestant.Kind.RECVLOGICAL ? recvlogical(pg, x, x.slot(run), endLsn, logFile, load)
                    : child(pg, x, x.slot(run), dir, endLsn, logFile, load);
        } catch (Exception e) {
            m = Measurement.failed(e.getMessage(), load);
        }
        if (m.ok() && m.rows() != o.rows()) {
            m = Measurement.failed("counted " + m.rows() + " rows, expected " + o.rows(), load);
        }
        if (m.ok() && "kafka".equals(x.dest())) {
            // what a read_committed consumer finds in the contestant's topic
            long inKafka = kafka.countCommitted(x.slot(run) + ".public.bench");
            log.info("%-32s %,d records in topic %s.public.bench (read_committed)", name, inKafka, x.slot(run));
            if (inKafka != o.rows()) {
                m = Measurement.failed(inKafka + " records in Kafka, expected " + o.rows(), load);
            }
        }
        if (m.ok()) {
            log.info("%-32s %,d rows in %.2f s = %,.0f rows/s, peak RSS %d MB", name, m.rows(), m.seconds(), m.rowsPerSecond(),
                    m.peakRssKb() / 1024);
        } else {
            log.info("%-32s FAILED: %s (log: %s)", name, m.error(), logFile);
        }
        deleteTree(dir);
        return m;
    }

    private Measurement child(EmbeddedPg pg, Contestant x, String slot, Path dir, String endLsn, Path logFile, double load)
            throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        if (o.millraceJvm() != null && x.id().contains("millrace")) {
            cmd.addAll(List.of(o.millraceJvm().trim().split("\\s+")));
        } else {
            cmd.add("-Xmx" + o.xmx());
        }
        if (o.jfr() != null && List.of(o.jfr().split(",")).contains(x.id())) {
            Path jfr = o.out().toAbsolutePath().getParent().resolve(logFile.getFileName().toString().replace(".log", ".jfr"));
            cmd.add("-XX:StartFlightRecording=filename=" + jfr + ",settings=profile");
            log.info("%-32s recording a profile into %s", x.id(), jfr);
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName(), "child", x.id(),
                "port=" + pg.port(), "rows=" + o.rows(), "slot=" + slot, "dir=" + dir, "timeoutSeconds=" + o.timeoutSeconds()));
        if (endLsn != null) {
            cmd.add("endLsn=" + endLsn);
        }
        if (kafka != null) {
            cmd.add("kafka=" + kafka.bootstrapServers());
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(logFile.toFile()).start();
        if (!p.waitFor(o.timeoutSeconds() + 120L, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            p.waitFor();
            return Measurement.failed("did not finish in " + o.timeoutSeconds() + " s", load);
        }
        List<String> lines = Files.readAllLines(logFile, StandardCharsets.UTF_8);
        for (String l : lines) {
            Measurement m = Measurement.parse(l, load);
            if (m != null) {
                return m;
            }
        }
        String tail = lines.stream().filter(l -> l.contains("Exception") || l.contains("ERROR")).findFirst()
                .orElse(lines.isEmpty() ? "no output" : lines.get(lines.size() - 1));
        return Measurement.failed("exit " + p.exitValue() + ": " + tail, load);
    }

    /**
     * PostgreSQL's streaming limit: pg_recvlogical (the system binary of the same major) drains the slot
     * into /dev/null up to the end LSN. Its peak RSS and CPU are polled from /proc while it runs.
     */
    private Measurement recvlogical(EmbeddedPg pg, Contestant x, String slot, String endLsn, Path logFile, double load) throws Exception {
        if (!Files.isExecutable(o.recvlogical())) {
            return Measurement.failed(o.recvlogical() + " not found (apt-get install postgresql-client-15, or --recvlogical PATH)", load);
        }
        List<String> cmd = new ArrayList<>(List.of(o.recvlogical().toString(), "-h", "127.0.0.1", "-p", Integer.toString(pg.port()),
                "-U", "postgres", "-d", "bench", "-S", slot, "--start", "--no-loop", "--endpos=" + endLsn,
                "-o", "proto_version=1", "-o", "publication_names=" + Workload.PUBLICATION));
        if (x.binary()) {
            cmd.addAll(List.of("-o", "binary=true"));
        }
        cmd.addAll(List.of("-f", "/dev/null"));
        Files.writeString(logFile, String.join(" ", cmd) + "\n");
        long start = System.nanoTime();
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile())).start();
        long rss = 0;
        long cpu = -1;
        long deadline = start + TimeUnit.SECONDS.toNanos(o.timeoutSeconds());
        while (!p.waitFor(10, TimeUnit.MILLISECONDS)) {
            rss = Math.max(rss, Proc.peakRssKb(p.pid()));
            cpu = Math.max(cpu, Proc.cpuNanos(p.pid()));
            if (System.nanoTime() > deadline) {
                p.destroyForcibly();
                p.waitFor();
                return Measurement.failed("did not reach " + endLsn + " in " + o.timeoutSeconds() + " s", load);
            }
        }
        long nanos = System.nanoTime() - start;
        if (p.exitValue() != 0) {
            return Measurement.failed("pg_recvlogical exit " + p.exitValue() + ": " + Files.readString(logFile).trim(), load);
        }
        String confirmed;
        try (Connection c = pg.connect("bench");
             PreparedStatement s = c.prepareStatement("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = ?")) {
            s.setString(1, slot);
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                confirmed = rs.getString(1);
            }
        }
        Files.writeString(logFile, "exit 0 after " + nanos / 1_000_000 + " ms; slot confirmed_flush_lsn " + confirmed + ", end " + endLsn
                + "\n", java.nio.file.StandardOpenOption.APPEND);
        // pg_recvlogical counts no rows: exit 0 at --endpos means it received the whole stream up to the last insert.
        return new Measurement(o.rows(), nanos, -1, cpu, rss, load, null);
    }

    private static void dropSlot(EmbeddedPg pg, String slot) throws SQLException, InterruptedException {
        try (Connection c = pg.connect("bench")) {
            for (int i = 0; i < 200; i++) {
                try (PreparedStatement s = c.prepareStatement("SELECT active FROM pg_replication_slots WHERE slot_name = ?")) {
                    s.setString(1, slot);
                    try (ResultSet rs = s.executeQuery()) {
                        if (!rs.next()) {
                            return;
                        }
                        if (!rs.getBoolean(1)) {
                            try (PreparedStatement d = c.prepareStatement("SELECT pg_drop_replication_slot(?)")) {
                                d.setString(1, slot);
                                d.execute();
                            }
                            return;
                        }
                    }
                }
                Thread.sleep(50);
            }
            throw new IllegalStateException("slot " + slot + " still active 10 s after its contestant ended");
        }
    }

    static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(p)) {
            for (Path x : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(x);
            }
        }
    }

}
