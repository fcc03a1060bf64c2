package io.millrace.connect;

import com.sun.management.OperatingSystemMXBean;
import io.millrace.embedded.EmbeddedPg;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.connect.util.clusters.EmbeddedConnectCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 18's benchmark: N inserts (default 1,000,000 when enabled) into Kafka through Kafka Connect, Millrace's connector
 * beside Debezium's PostgreSQL connector (3.6.1) on one Connect cluster ({@link EmbeddedConnectCluster}, Kafka 4.3: two
 * distributed workers, one KRaft broker, exactly-once source support enabled) and one PostgreSQL 17, in one run.
 *
 * <p>Runs only when asked ({@code -Dmillrace.connect.bench.rows=N}; docs/BENCHMARKS.md "Kafka Connect"). Before any
 * connector exists, one slot per contestant and round is created on one publication, then the N rows are inserted in
 * transactions of 10,000 (the bench module's table, {@code bench}); so every contestant drains the same pre-filled WAL
 * from its own slot into its own topic. First a warm-up round, not counted: each contestant drains
 * {@code millrace.connect.bench.warmup.rows} (default 100,000) rows of a table of its own, so that neither measured
 * round pays for the JIT compiling the worker's paths they share (converter, producer). Then the rounds, interleaved,
 * the order alternating (Millrace, Debezium, then Debezium, Millrace, ...). Each connector is made through the REST API from the same JSON (both with
 * {@code snapshot.mode=no_data}, {@code JsonConverter} without schemas, {@code decimal.handling.mode=string}); Millrace
 * with connector-defined transaction boundaries (a Kafka transaction per engine batch), Debezium with Connect's
 * default for it on an exactly-once worker (a transaction per poll). Defaults otherwise, for both.
 *
 * <p>Measured per round: seconds from the connector's creation (the REST call) until a {@code read_committed} consumer
 * has seen all N records, and from the first record it saw to the last; the JVM's CPU seconds in that time
 * ({@link OperatingSystemMXBean#getProcessCpuTime()}: the test JVM is the worker, broker and consumer, so this includes
 * the broker's work for the records and the consumer's), and the CPU of the connector's threads ({@link ThreadMXBean}:
 * the threads started during the round and alive at its end — its producer, its engine threads — plus the worker's
 * pooled thread renamed {@code task-thread-<connector>-0}, which polls, converts and sends; the connector alone runs in
 * the round, so these are its threads, less any that ended before the round did); the JVM's peak RSS in the round
 * ({@code VmHWM} after resetting it through {@code /proc/self/clear_refs}; the whole JVM's, broker and workers included).
 * It asserts only that every contestant delivered exactly N records, nothing about speed.
 */
@EnabledIfSystemProperty(named = "millrace.connect.bench.rows", matches = "[0-9]+")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ConnectBenchIT {
    private static final long ROWS = Long.getLong("millrace.connect.bench.rows", 0);
    private static final int ROUNDS = Integer.getInteger("millrace.connect.bench.rounds", 2);
    /** Rows of the warm-up round (each contestant once, not counted), from a table and slots of their own. */
    private static final long WARMUP_ROWS = Long.getLong("millrace.connect.bench.warmup.rows", 100_000);
    /**
     * Whether the workers have exactly-once source support (the default); {@code -Dmillrace.connect.bench.exactly.once=false}:
     * a worker at its defaults, as a Debezium user runs one (at least once, offsets flushed every 60 s), both connectors
     * without exactly-once keys.
     */
    private static final boolean EXACTLY_ONCE = Boolean.parseBoolean(System.getProperty("millrace.connect.bench.exactly.once", "true"));
    private static final int PER_TX = 10_000;
    private static final String DB = "bench";
    private static final List<String> CONTESTANTS = List.of("millrace", "debezium");
    private static final Map<String, String> CLASSES = Map.of("millrace", "io.millrace.connect.MillraceSourceConnector", "debezium",
            "io.debezium.connector.postgresql.PostgresConnector");
    private static final String CONSUMER_THREAD = "bench-consumer";

    private EmbeddedPg pg;
    private EmbeddedConnectCluster connect;

    @BeforeAll
    void start() {
        pg = EmbeddedPg.builder().major(17).start();
        Properties broker = new Properties();
        broker.put("transaction.state.log.replication.factor", "1");
        broker.put("transaction.state.log.min.isr", "1");
        connect = new EmbeddedConnectCluster.Builder().name("millrace-bench").numWorkers(2).numBrokers(1)
                .workerProps(new HashMap<>(Map.of("exactly.once.source.support", EXACTLY_ONCE ? "enabled" : "disabled")))
                .brokerProps(broker).build();
        connect.start();
    }

    @AfterAll
    void stop() {
        if (connect != null) {
            connect.stop();
        }
        if (pg != null) {
            pg.close();
        }
    }

    /** One contestant's round. */
    record Result(String contestant, int round, long rows, double seconds, double firstToLast, double firstAfter, double cpu,
                  double threadCpu, long peakRssMb, Map<String, Double> topThreads) {
        double rate() {
            return rows / seconds;
        }
    }

    @Test
    void insertsIntoKafkaThroughConnect() throws Exception {
        pg.createDatabase(DB);
        List<String> slots = new ArrayList<>();
        for (int r = 1; r <= ROUNDS; r++) {
            for (String c : CONTESTANTS) {
                slots.add(name(c, r));
            }
        }
        try (Connection c = pg.connect(DB); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE bench (id bigint PRIMARY KEY, a int, b text, c timestamptz, d numeric(12,2), e text)");
            s.execute("CREATE PUBLICATION bench_pub FOR TABLE bench");
            for (String slot : slots) {
                s.execute("SELECT pg_create_logical_replication_slot('" + slot + "', 'pgoutput')");
            }
            long t0 = System.nanoTime();
            s.execute("SET synchronous_commit = off");
            for (long lo = 1; lo <= ROWS; lo += PER_TX) {
                long hi = Math.min(ROWS, lo + PER_TX - 1);
                s.execute("INSERT INTO bench SELECT i, (i * 7919 % 1000000)::int, 'name-' || md5(i::text), timestamptz"
                        + " '2026-01-01 00:00:00+00' + i * interval '1.000137 second', ((i * 104729) % 10000000000 / 100.0)::numeric(12,2),"
                        + " md5(i::text || 'e') || md5(i::text || 'f') FROM generate_series(" + lo + "::bigint, " + hi + "::bigint) i");
            }
            System.out.printf(Locale.ROOT, "inserted %,d rows in %.1f s into %d pre-created slots%n", ROWS, (System.nanoTime() - t0) / 1e9,
                    slots.size());
            if (WARMUP_ROWS > 0) {
                // Created after the measured rows: these slots see only the warm-up table's rows (and the measured slots
                // none of them: their publication is bench's).
                s.execute("CREATE TABLE warm (id bigint PRIMARY KEY, a int, b text, c timestamptz, d numeric(12,2), e text)");
                s.execute("CREATE PUBLICATION warm_pub FOR TABLE warm");
                for (String w : CONTESTANTS) {
                    s.execute("SELECT pg_create_logical_replication_slot('" + name(w, 0) + "', 'pgoutput')");
                }
                s.execute("INSERT INTO warm SELECT * FROM bench WHERE id <= " + WARMUP_ROWS);
            }
        }
        for (String c : WARMUP_ROWS > 0 ? CONTESTANTS : List.<String>of()) {
            System.out.println("warm-up " + line(round(c, 0, "warm", WARMUP_ROWS), null));
        }

        List<Result> results = new ArrayList<>();
        for (int r = 1; r <= ROUNDS; r++) {
            List<String> order = r % 2 == 1 ? CONTESTANTS : List.of(CONTESTANTS.get(1), CONTESTANTS.get(0));
            for (String c : order) {
                Result res = round(c, r, "bench", ROWS);
                results.add(res);
                System.out.println(line(res, null));
            }
        }
        String table = table(results);
        System.out.println(table);
        Path out = Path.of("target", "connect-bench.md");
        Files.createDirectories(out.getParent());
        Files.writeString(out, table);
    }

    private static String name(String contestant, int round) {
        return (contestant.equals("millrace") ? "mr" : "dbz") + round;
    }

    private Map<String, String> config(String contestant, String name, String table) {
        Map<String, String> m = new HashMap<>();
        m.put("connector.class", CLASSES.get(contestant));
        m.put("tasks.max", "1");
        m.put("database.hostname", pg.host());
        m.put("database.port", Integer.toString(pg.port()));
        m.put("database.user", "postgres");
        m.put("database.password", "");
        m.put("database.dbname", DB);
        m.put("topic.prefix", name);
        m.put("slot.name", name);
        m.put("publication.name", table + "_pub");
        m.put("publication.autocreate.mode", "disabled");
        m.put("plugin.name", "pgoutput");
        m.put("table.include.list", "public\\." + table);
        m.put("snapshot.mode", "no_data");
        m.put("decimal.handling.mode", "string");
        m.put("key.converter", "org.apache.kafka.connect.json.JsonConverter");
        m.put("key.converter.schemas.enable", "false");
        m.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
        m.put("value.converter.schemas.enable", "false");
        m.put("topic.creation.default.replication.factor", "1");
        m.put("topic.creation.default.partitions", "1");
        if (contestant.equals("millrace") && EXACTLY_ONCE) {
            m.put("exactly.once.support", "required");
            m.put("transaction.boundary", "connector");
        }
        // Settings of one contestant for a what-if run: -Dmillrace.connect.bench.millrace.config=key=value,key=value
        String extra = System.getProperty("millrace.connect.bench." + contestant + ".config", "");
        for (String kv : extra.split(",")) {
            if (!kv.isBlank()) {
                m.put(kv.substring(0, kv.indexOf('=')).trim(), kv.substring(kv.indexOf('=') + 1).trim());
            }
        }
        return m;
    }

    private Result round(String contestant, int round, String table, long rows) throws Exception {
        String name = name(contestant, round);
        String topic = name + ".public." + table;
        connect.kafka().createTopic(topic, 1);
        System.gc();
        Thread.sleep(1000);

        AtomicLong count = new AtomicLong();
        AtomicLong first = new AtomicLong();
        AtomicLong last = new AtomicLong();
        AtomicBoolean consuming = new AtomicBoolean(true);
        Thread consumer = new Thread(() -> consume(topic, count, first, last, consuming), CONSUMER_THREAD);
        consumer.start();
        Thread.sleep(500); // the consumer is assigned and polling

        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        Map<Long, Long> before = threadCpu(threads);
        boolean hwmReset = resetPeakRss();
        long cpu0 = os.getProcessCpuTime();
        long t0 = System.nanoTime();
        connect.configureConnector(name, config(contestant, name, table));
        long deadline = t0 + Duration.ofSeconds(Math.max(600, rows / 500)).toNanos();
        long sampledPeak = 0;
        while (count.get() < rows) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(name + ": " + count.get() + " of " + rows + " records in time; " + connect.connectorStatus(name));
            }
            sampledPeak = Math.max(sampledPeak, rssKb("VmRSS"));
            Thread.sleep(100);
        }
        long t1 = System.nanoTime();
        long cpu1 = os.getProcessCpuTime();
        long peak = hwmReset ? rssKb("VmHWM") : Math.max(sampledPeak, rssKb("VmRSS"));
        Map<String, Double> top = new TreeMap<>();
        double threadCpu = 0;
        for (long id : threads.getAllThreadIds()) {
            var info = threads.getThreadInfo(id);
            long cpu = threads.getThreadCpuTime(id);
            if (info == null || cpu < 0 || info.getThreadName().equals(CONSUMER_THREAD)) {
                continue;
            }
            // The worker runs tasks on a pooled thread it renames task-thread-<connector>-<n>: an older thread, counted
            // from the round's start.
            boolean ours = !before.containsKey(id) || info.getThreadName().startsWith("task-thread-" + name + "-");
            if (!ours) {
                continue;
            }
            long delta = cpu - before.getOrDefault(id, 0L);
            threadCpu += delta / 1e9;
            top.merge(info.getThreadName().replaceAll("[0-9]+", "#"), delta / 1e9, Double::sum);
        }

        Thread.sleep(1000); // nothing more may come
        consuming.set(false);
        consumer.join();
        assertThat(count.get()).as(name + ": records in " + topic).isEqualTo(rows);
        connect.deleteConnector(name);
        connect.assertions().assertConnectorDoesNotExist(name, name + " is deleted");
        dropSlot(name);
        Map<String, Double> busiest = new java.util.LinkedHashMap<>();
        top.entrySet().stream().sorted((a, b) -> Double.compare(b.getValue(), a.getValue())).limit(4)
                .forEach(e -> busiest.put(e.getKey(), e.getValue()));
        return new Result(contestant, round, rows, (t1 - t0) / 1e9, (last.get() - first.get()) / 1e9, (first.get() - t0) / 1e9,
                (cpu1 - cpu0) / 1e9, threadCpu, peak / 1024, busiest);
    }

    private void consume(String topic, AtomicLong count, AtomicLong first, AtomicLong last, AtomicBoolean running) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, connect.kafka().bootstrapServers());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            while (running.get()) {
                ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(50));
                if (!recs.isEmpty()) {
                    long now = System.nanoTime();
                    if (count.get() == 0) {
                        first.set(now);
                    }
                    last.set(now);
                    count.addAndGet(recs.count());
                }
            }
        }
    }

    private static Map<Long, Long> threadCpu(ThreadMXBean threads) {
        Map<Long, Long> out = new HashMap<>();
        for (long id : threads.getAllThreadIds()) {
            out.put(id, threads.getThreadCpuTime(id));
        }
        return out;
    }

    /** Resets the process's peak RSS (VmHWM) to its current RSS: {@code echo 5 > /proc/self/clear_refs} (Linux). */
    private static boolean resetPeakRss() {
        try {
            Files.writeString(Path.of("/proc/self/clear_refs"), "5");
            return true;
        } catch (Exception e) {
            return false;
        }
    }

    private static long rssKb(String field) {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (l.startsWith(field + ":")) {
                    return Long.parseLong(l.replaceAll("[^0-9]", ""));
                }
            }
        } catch (Exception e) {
            // not Linux
        }
        return 0;
    }

    private void dropSlot(String slot) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (true) {
            try (Connection c = pg.connect(DB); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT active FROM pg_replication_slots WHERE slot_name = '" + slot + "'")) {
                if (!rs.next()) {
                    return;
                }
                if (!rs.getBoolean(1)) {
                    s.execute("SELECT pg_drop_replication_slot('" + slot + "')");
                    return;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("slot " + slot + " still active after its connector was deleted");
            }
            Thread.sleep(200);
        }
    }

    private static String line(Result r, Double debeziumRate) {
        return String.format(Locale.ROOT, "| %d | %s | %.2f | %.2f | %.2f | %,.0f | %s | %.1f | %.1f | %d | %s |", r.round(), r.contestant(),
                r.seconds(), r.firstAfter(), r.firstToLast(), r.rate(), debeziumRate == null ? "" : String.format(Locale.ROOT, "%.2f×",
                        r.rate() / debeziumRate), r.cpu(), r.threadCpu(), r.peakRssMb(), r.topThreads().entrySet().stream()
                        .map(e -> String.format(Locale.ROOT, "%s %.1f", e.getKey(), e.getValue())).toList());
    }

    private static String table(List<Result> results) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%,d rows, %d rounds%n%n", ROWS, ROUNDS));
        sb.append("| round | connector | s (creation → last) | first record after s | s (first → last) | rows/s | × Debezium |"
                + " JVM CPU s | connector threads CPU s | peak RSS MB | busiest new threads (CPU s) |\n");
        sb.append("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|---|\n");
        for (Result r : results) {
            double dbz = results.stream().filter(x -> x.round() == r.round() && x.contestant().equals("debezium")).findFirst()
                    .map(Result::rate).orElse(Double.NaN);
            sb.append(line(r, dbz)).append('\n');
        }
        for (String c : CONTESTANTS) {
            List<Result> mine = results.stream().filter(r -> r.contestant().equals(c)).toList();
            sb.append(String.format(Locale.ROOT, "%n%s: best %.2f s, median of %d %.2f s; first → last best %.2f s; CPU median %.1f s",
                    c, mine.stream().mapToDouble(Result::seconds).min().orElse(0), mine.size(), median(mine.stream()
                            .mapToDouble(Result::seconds).toArray()), mine.stream().mapToDouble(Result::firstToLast).min().orElse(0),
                    median(mine.stream().mapToDouble(Result::cpu).toArray())));
        }
        sb.append('\n');
        return sb.toString();
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        java.util.Arrays.sort(s);
        return s.length == 0 ? 0 : s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}
