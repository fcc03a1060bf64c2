package io.millrace.bench;

import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.Json;
import io.millrace.core.Lsn;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.pipeline.PipelineStats;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs one contestant in this JVM (started by the orchestrator with the same heap limit for all) and
 * prints one {@link Measurement#line()} on stdout: rows counted, nanoseconds from the contestant's
 * start (after JVM start-up) to its last row, this process's CPU time and peak RSS (VmHWM).
 *
 * <p>Arguments: {@code child <contestant-id> key=value...} with keys {@code port}, {@code rows},
 * {@code slot}, {@code dir} (a scratch folder), {@code endLsn} (streaming: the WAL position after the
 * last insert), {@code timeoutSeconds}, {@code kafka} (bootstrap servers, for the Kafka contestants).
 */
final class Child {
    private final Contestant c;
    private final int port;
    private final long rows;
    private final String slot;
    private final Path dir;
    private final Lsn endLsn;
    private final long timeoutNanos;
    /** Bootstrap servers of the benchmark's broker (--kafka), or null. */
    private final String kafka;

    private Child(Contestant c, Map<String, String> a) {
        this.c = c;
        this.port = Integer.parseInt(a.get("port"));
        this.rows = Long.parseLong(a.get("rows"));
        this.slot = a.get("slot");
        this.dir = Path.of(a.get("dir"));
        this.endLsn = a.containsKey("endLsn") ? Lsn.parse(a.get("endLsn")) : null;
        this.timeoutNanos = TimeUnit.SECONDS.toNanos(Long.parseLong(a.getOrDefault("timeoutSeconds", "1800")));
        this.kafka = a.get("kafka");
    }

    static int main(List<String> args) throws Exception {
        Contestant c = Contestant.byId(args.get(0));
        Map<String, String> a = new HashMap<>();
        for (String kv : args.subList(1, args.size())) {
            String[] p = kv.split("=", 2);
            a.put(p[0], p[1]);
        }
        Child child = new Child(c, a);
        Files.createDirectories(child.dir);
        long[] result = switch (c.kind()) {
            case COPY -> child.copy();
            case MILLRACE -> child.millrace();
            case DEBEZIUM -> child.debezium();
            case RECVLOGICAL -> throw new IllegalArgumentException("pg_recvlogical is not a JVM contestant");
        };
        long cpu = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
        System.out.println(new Measurement(result[0], result[1], result[2], cpu, Proc.peakRssKb(ProcessHandle.current().pid()), 0, null).line());
        System.out.flush();
        return 0;
    }

    private String jdbcUrl() {
        return "jdbc:postgresql://127.0.0.1:" + port + "/bench";
    }

    /** PostgreSQL's limit for a snapshot: one COPY of the whole table, text format, into a counting null stream. */
    private long[] copy() throws Exception {
        Properties p = new Properties();
        p.setProperty("user", "postgres");
        long start = System.nanoTime();
        try (Connection conn = DriverManager.getConnection(jdbcUrl(), p)) {
            CopyManager cm = conn.unwrap(PGConnection.class).getCopyAPI();
            CountingNullStream out = new CountingNullStream(start);
            long n = cm.copyOut("COPY bench TO STDOUT", out);
            long nanos = System.nanoTime() - start;
            if (n != out.lines) {
                throw new IllegalStateException("COPY reported " + n + " rows but " + out.lines + " lines arrived");
            }
            return new long[]{n, nanos, out.firstAt - start};
        }
    }

    /** Counts bytes and line ends, keeps nothing. */
    static final class CountingNullStream extends OutputStream {
        long bytes;
        long lines;
        long firstAt;

        CountingNullStream(long start) {
            this.firstAt = start - 1;
        }

        @Override
        public void write(int b) {
            first();
            bytes++;
            if (b == '\n') {
                lines++;
            }
        }

        @Override
        public void write(byte[] b, int off, int len) {
            first();
            bytes += len;
            for (int i = off; i < off + len; i++) {
                if (b[i] == '\n') {
                    lines++;
                }
            }
        }

        private void first() {
            if (bytes == 0) {
                firstAt = System.nanoTime();
            }
        }
    }

    private String millraceYaml() {
        boolean snapshot = c.phase() == Contestant.Phase.SNAPSHOT;
        String binary = snapshot ? "auto" : (c.binary() ? "on" : "off");
        return String.join("\n",
                "name: bench",
                "source:",
                "  host: 127.0.0.1",
                "  port: " + port,
                "  database: bench",
                "  user: postgres",
                "  slot: " + slot,
                "  publication: " + Workload.PUBLICATION,
                "  tables: [public.bench]",
                "  binary: \"" + binary + "\"", // quoted: YAML 1.1 reads a bare on/off as a boolean
                "snapshot:",
                "  mode: " + (snapshot ? "initial_only" : "never"),
                "destinations:",
                "  - name: out",
                "    type: " + (c.dest().equals("null") ? "discard" : c.dest()), // discard: the engine's null destination
                c.dest().equals("jsonl") ? "    directory: " + dir.resolve("events") : "",
                c.dest().equals("kafka") ? "    bootstrap_servers: \"" + kafka + "\"\n    topic_prefix: " + slot : "",
                "");
    }

    /** Bytes in the jsonl destination's events files (0 for other destinations). */
    private long eventsBytes() throws IOException {
        Path events = dir.resolve("events");
        if (!Files.isDirectory(events)) {
            return 0;
        }
        try (var files = Files.list(events)) {
            long sum = 0;
            for (Path f : files.toList()) {
                sum += Files.size(f);
            }
            return sum;
        }
    }

    /**
     * Millrace in-process. Snapshot ({@code initial_only}): {@link Engine#run()} returns when the copy
     * has landed. Streaming ({@code never}, from the pre-filled slot): done when every row was written
     * and the durable position reached the end of the last insert.
     */
    private long[] millrace() throws Exception {
        long start = System.nanoTime();
        EngineConfig cfg = new ConfigLoader(System::getenv).parse(millraceYaml(), dir);
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
        if (c.phase() == Contestant.Phase.SNAPSHOT) {
            long deadline = start + timeoutNanos;
            Proc.ThreadCpu cpu = new Proc.ThreadCpu();
            long sampled = 0;
            boolean lastSampled = false;
            while (t.isAlive() && System.nanoTime() < deadline) {
                PipelineStats s = engine.stats();
                if (first < 0 && s != null && s.eventsWritten() > 0) {
                    first = System.nanoTime() - start;
                }
                // The pipeline's threads end with the snapshot: their CPU is read while they run, every 500 ms (a read of
                // every thread's /proc stat file costs the harness CPU) and once more when the last row is written.
                boolean last = s != null && s.eventsWritten() >= rows && !lastSampled;
                if (last || System.nanoTime() - sampled > 500_000_000L) {
                    cpu.sample();
                    sampled = System.nanoTime();
                    lastSampled |= last;
                }
                t.join(1);
            }
            cpu.sample();
            long nanos = System.nanoTime() - start;
            if (t.isAlive()) {
                engine.stop();
                throw new IllegalStateException("snapshot not done after the timeout");
            }
            if (error.get() != null) {
                throw new IllegalStateException("engine failed: " + error.get(), error.get());
            }
            System.err.printf("millrace: %d events in %d batches, first row after %.2f s, %,d bytes of events files%n",
                    engine.stats().eventsWritten(), engine.stats().batchesWritten(), first / 1e9, eventsBytes());
            System.err.println("millrace: CPU by thread (sampled every 500 ms and at the last row, also the threads that ended; threads of one name"
                    + " summed): " + cpu);
            return new long[]{engine.stats().eventsWritten(), nanos, first};
        }
        long nanos;
        long deadline = start + timeoutNanos;
        while (true) {
            PipelineStats s = engine.stats();
            if (first < 0 && s != null && s.eventsWritten() > 0) {
                first = System.nanoTime() - start;
            }
            if (s != null && s.eventsWritten() >= rows && s.durable().compareTo(endLsn) >= 0) {
                nanos = System.nanoTime() - start;
                break;
            }
            if (!t.isAlive() || System.nanoTime() > deadline) {
                engine.stop();
                throw new IllegalStateException("engine " + (t.isAlive() ? "timed out" : "stopped") + " after "
                        + (s == null ? 0 : s.eventsWritten()) + " of " + rows + " rows, durable "
                        + (s == null ? "-" : s.durable()) + ", end " + endLsn + (error.get() == null ? "" : ": " + error.get()),
                        error.get());
            }
            Thread.sleep(1);
        }
        long written = engine.stats().eventsWritten();
        long[] switches = Proc.contextSwitches(); // the engine's threads are still alive here
        System.err.printf("millrace: %d events in %d batches, durable %s (end %s), first row after %.2f s;"
                        + " context switches of the live threads: %d voluntary, %d involuntary%n", written,
                engine.stats().batchesWritten(), engine.stats().durable(), endLsn, first / 1e9, switches[0], switches[1]);
        System.err.println("millrace: CPU by thread (threads of one name summed; Linux truncates names to 15 characters): "
                + Proc.busiestThreads(12));
        engine.stop();
        t.join();
        if (error.get() != null) {
            throw new IllegalStateException("engine failed while stopping: " + error.get(), error.get());
        }
        return new long[]{written, nanos, first};
    }

    /**
     * Debezium's embedded engine (the async engine that {@code DebeziumEngine.create} builds in 3.x)
     * with its PostgreSQL connector and the JSON format; counts change records of table bench until
     * {@code rows}, then closes the engine.
     */
    private long[] debezium() throws Exception {
        long start = System.nanoTime();
        Properties p = new Properties();
        p.setProperty("name", "bench-" + c.id());
        p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        p.setProperty("offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore");
        p.setProperty("offset.storage.file.filename", dir.resolve("offsets.dat").toString());
        p.setProperty("offset.flush.interval.ms", "10000");
        p.setProperty("database.hostname", "127.0.0.1");
        p.setProperty("database.port", Integer.toString(port));
        p.setProperty("database.user", "postgres");
        p.setProperty("database.password", "");
        p.setProperty("database.dbname", "bench");
        p.setProperty("topic.prefix", "bench");
        p.setProperty("table.include.list", "public.bench");
        p.setProperty("plugin.name", "pgoutput");
        p.setProperty("slot.name", slot);
        p.setProperty("slot.drop.on.stop", "false");
        p.setProperty("publication.name", Workload.PUBLICATION);
        p.setProperty("publication.autocreate.mode", "disabled");
        p.setProperty("snapshot.mode", c.phase() == Contestant.Phase.SNAPSHOT ? "initial" : "no_data");
        if (!c.schemas()) {
            // The converter settings apply to key and value alike (Debezium's ConverterBuilder reads "converter.*").
            p.setProperty("converter.schemas.enable", "false");
        }
        AtomicLong count = new AtomicLong();
        AtomicLong doneAt = new AtomicLong();
        AtomicLong firstAt = new AtomicLong();
        AtomicLong bytes = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        AtomicReference<Throwable> error = new AtomicReference<>();
        // "kafka": every record goes to the broker, as Debezium Server's Kafka sink sends it (the same producer settings as
        // Millrace's kafka destination, but not transactional); a batch counts once the producer has flushed it.
        org.apache.kafka.clients.producer.Producer<String, String> producer = "kafka".equals(c.dest()) ? producer() : null;
        DebeziumEngine<ChangeEvent<String, String>> engine = DebeziumEngine.create(Json.class)
                .using(p)
                .notifying((List<ChangeEvent<String, String>> records, DebeziumEngine.RecordCommitter<ChangeEvent<String, String>> committer) -> {
                    if (producer != null) {
                        for (ChangeEvent<String, String> r : records) {
                            if (r.destination().endsWith(".public.bench")) {
                                producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>(slot + ".public.bench", r.key(), r.value()));
                            }
                        }
                        producer.flush();
                    }
                    long b = 0;
                    for (ChangeEvent<String, String> r : records) {
                        if (r.value() != null && r.destination().endsWith(".public.bench")) {
                            b += r.value().length() + (r.key() == null ? 0 : r.key().length());
                            long n = count.incrementAndGet();
                            if (n == 1) {
                                firstAt.set(System.nanoTime());
                            }
                            if (n == rows) {
                                doneAt.set(System.nanoTime());
                                done.countDown();
                            }
                        }
                        committer.markProcessed(r);
                    }
                    bytes.addAndGet(b);
                    committer.markBatchFinished();
                })
                .using((success, message, err) -> {
                    if (!success) {
                        error.set(err == null ? new IllegalStateException(message) : err);
                    }
                    done.countDown();
                })
                .build();
        ExecutorService ex = Executors.newSingleThreadExecutor();
        ex.execute(engine);
        boolean finished = done.await(timeoutNanos, TimeUnit.NANOSECONDS);
        String threads = Proc.busiestThreads(12); // before close: the engine's threads are still alive
        engine.close();
        ex.shutdown();
        ex.awaitTermination(60, TimeUnit.SECONDS);
        if (producer != null) {
            producer.close();
        }
        if (doneAt.get() == 0) {
            throw new IllegalStateException("Debezium " + (finished ? "stopped" : "timed out") + " after " + count.get() + " of " + rows
                    + " rows" + (error.get() == null ? "" : ": " + error.get()), error.get());
        }
        System.err.println("debezium: " + count.get() + " records, " + bytes.get() + " chars of key+value JSON");
        System.err.println("debezium: CPU by thread (threads of one name summed): " + threads);
        return new long[]{count.get(), doneAt.get() - start, firstAt.get() - start};
    }

    private org.apache.kafka.clients.producer.Producer<String, String> producer() {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", kafka);
        p.setProperty("acks", "all");
        p.setProperty("enable.idempotence", "true");
        p.setProperty("compression.type", "lz4");
        p.setProperty("linger.ms", "5");
        p.setProperty("batch.size", Integer.toString(256 * 1024));
        p.setProperty("buffer.memory", Long.toString(64L * 1024 * 1024));
        p.setProperty("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.setProperty("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        return new org.apache.kafka.clients.producer.KafkaProducer<>(p);
    }
}
