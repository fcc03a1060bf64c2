package io.millrace.bench;

import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.Json;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import org.postgresql.PGConnection;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code java -jar millrace-bench.jar online [--rows N]}: the online (watermark) snapshot of the bench table beside
 * the initial snapshot and PostgreSQL's {@code COPY ... TO STDOUT}, and Debezium's incremental snapshot (an
 * {@code execute-snapshot} signal) of the same table, one after the other in this JVM, every copy into a
 * destination that discards (Millrace) or a consumer that counts (Debezium, JSON without schemas).
 * Prints rows/s and the ratio to COPY.
 */
final class OnlineBench {
    private final long rows;
    private final Path work;

    private OnlineBench(long rows, Path work) {
        this.rows = rows;
        this.work = work;
    }

    static void main(List<String> args) throws Exception {
        long rows = 1_000_000;
        for (int i = 0; i < args.size(); i++) {
            if (args.get(i).equals("--rows")) {
                rows = Long.parseLong(args.get(++i).replace("_", ""));
            } else {
                throw new IllegalArgumentException("usage: online [--rows N]");
            }
        }
        new OnlineBench(rows, Files.createTempDirectory("millrace-online-bench-")).run();
    }

    private static void log(String fmt, Object... args) {
        System.out.printf(Locale.ROOT, "%s%n", String.format(Locale.ROOT, fmt, args));
        System.out.flush();
    }

    private void run() throws Exception {
        log("online snapshot benchmark, %,d rows; load average %s", rows, Files.readString(Path.of("/proc/loadavg")).strip());
        try (EmbeddedPg pg = EmbeddedPg.builder().major(17).dataDirectory(work.resolve("pgdata"), true)
                .setting("shared_buffers", "512MB").setting("max_wal_size", "8GB").setting("max_replication_slots", "10")
                .setting("synchronous_commit", "on").start()) {
            pg.createDatabase("bench");
            try (Connection c = pg.connect("bench")) {
                Workload.createTable(c);
                Workload.insert(c, 1, rows, 50_000, n -> { });
                try (Statement s = c.createStatement()) {
                    s.execute("VACUUM ANALYZE bench");
                    s.execute("CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))");
                }
                log("%s", Workload.rowSizes(c));
            }
            double copy = copy(pg);
            log("COPY bench TO STDOUT:            %8.2f s  %,10.0f rows/s", copy, rows / copy);
            double initial = millraceInitial(pg);
            log("Millrace initial snapshot:       %8.2f s  %,10.0f rows/s  %.2fx COPY", initial, rows / initial, copy / initial);
            double[] online = millraceOnline(pg);
            log("Millrace online snapshot:        %8.2f s  %,10.0f rows/s  %.2fx COPY (chunks %d, peak %,d rows buffered)", online[0],
                    rows / online[0], copy / online[0], (long) online[1], (long) online[2]);
            double dbz = debeziumIncremental(pg);
            log("Debezium incremental snapshot:   %8.2f s  %,10.0f rows/s  %.2fx COPY", dbz, rows / dbz, copy / dbz);
            log("Millrace online / Debezium incremental: %.2fx", dbz / online[0]);
        }
    }

    private double copy(EmbeddedPg pg) throws Exception {
        try (Connection c = pg.connect("bench")) {
            long start = System.nanoTime();
            Child.CountingNullStream out = new Child.CountingNullStream(start);
            c.unwrap(PGConnection.class).getCopyAPI().copyOut("COPY bench TO STDOUT", out);
            return (System.nanoTime() - start) / 1e9;
        }
    }

    private String yaml(EmbeddedPg pg, String slot, String mode) {
        return String.join("\n", "name: bench", "source:", "  host: 127.0.0.1", "  port: " + pg.port(), "  database: bench", "  user: postgres",
                "  slot: " + slot, "  publication: " + Workload.PUBLICATION, "  tables: [public.bench]", "snapshot:", "  mode: " + mode,
                "destinations:", "  - name: out", "    type: discard", "");
    }

    private Thread start(Engine e, AtomicReference<Throwable> error) {
        Thread t = new Thread(() -> {
            try {
                e.run();
            } catch (Throwable x) {
                error.set(x);
            }
        }, "bench-engine");
        t.start();
        return t;
    }

    private double millraceInitial(EmbeddedPg pg) throws Exception {
        Engine e = new Engine(new ConfigLoader(System::getenv).parse(yaml(pg, "m_initial", "initial_only"), work));
        AtomicReference<Throwable> error = new AtomicReference<>();
        long start = System.nanoTime();
        Thread t = start(e, error);
        t.join();
        double secs = (System.nanoTime() - start) / 1e9;
        if (error.get() != null) {
            throw new IllegalStateException(error.get());
        }
        pg.execute("bench", "SELECT pg_drop_replication_slot('m_initial')");
        return secs;
    }

    private double[] millraceOnline(EmbeddedPg pg) throws Exception {
        Engine e = new Engine(new ConfigLoader(System::getenv).parse(yaml(pg, "m_online", "never"), work));
        AtomicReference<Throwable> error = new AtomicReference<>();
        Thread t = start(e, error);
        while (e.state() != Engine.State.STREAMING) {
            if (error.get() != null) {
                throw new IllegalStateException(error.get());
            }
            Thread.sleep(10);
        }
        long start = System.nanoTime();
        e.snapshot(List.of(TableRef.parse("public.bench")), null);
        while (!e.onlineSnapshots().isEmpty() || e.stats().eventsWritten() < rows) {
            if (error.get() != null) {
                throw new IllegalStateException(error.get());
            }
            Thread.sleep(5);
        }
        double secs = (System.nanoTime() - start) / 1e9;
        double[] out = {secs, e.onlineSnapshotter().chunksRead(), e.onlineSnapshotter().peakBufferedRows()};
        e.stop();
        t.join();
        pg.execute("bench", "SELECT pg_drop_replication_slot('m_online')");
        return out;
    }

    /** Debezium 3.6.1 embedded, streaming only, then an incremental snapshot asked through its signal table. */
    private double debeziumIncremental(EmbeddedPg pg) throws Exception {
        // Added here, not at set-up: Millrace's phases before this one keep the publication to their source.tables and took
        // the signal table out of it, and Debezium then never saw its signal (the phase sat idle until its 30-minute limit).
        pg.execute("bench", "ALTER PUBLICATION " + Workload.PUBLICATION + " ADD TABLE debezium_signal");
        pg.execute("bench", "SELECT pg_create_logical_replication_slot('dbz_online', 'pgoutput')");
        Properties p = new Properties();
        p.setProperty("name", "bench-online");
        p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        p.setProperty("offset.storage", "org.apache.kafka.connect.storage.MemoryOffsetBackingStore");
        p.setProperty("offset.flush.interval.ms", "10000");
        p.setProperty("database.hostname", "127.0.0.1");
        p.setProperty("database.port", Integer.toString(pg.port()));
        p.setProperty("database.user", "postgres");
        p.setProperty("database.password", "");
        p.setProperty("database.dbname", "bench");
        p.setProperty("topic.prefix", "bench");
        p.setProperty("table.include.list", "public.bench,public.debezium_signal");
        p.setProperty("plugin.name", "pgoutput");
        p.setProperty("slot.name", "dbz_online");
        p.setProperty("publication.name", Workload.PUBLICATION);
        p.setProperty("publication.autocreate.mode", "disabled");
        p.setProperty("snapshot.mode", "no_data");
        p.setProperty("signal.data.collection", "public.debezium_signal");
        p.setProperty("converter.schemas.enable", "false");
        AtomicLong count = new AtomicLong();
        AtomicLong firstAt = new AtomicLong();
        AtomicLong doneAt = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        AtomicReference<Throwable> error = new AtomicReference<>();
        DebeziumEngine<ChangeEvent<String, String>> engine = DebeziumEngine.create(Json.class).using(p)
                .notifying((List<ChangeEvent<String, String>> records, DebeziumEngine.RecordCommitter<ChangeEvent<String, String>> committer) -> {
                    for (ChangeEvent<String, String> r : records) {
                        if (r.value() != null && r.destination().endsWith(".public.bench") && r.value().contains("\"op\":\"r\"")) {
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
                    committer.markBatchFinished();
                })
                .using((success, message, err) -> {
                    if (!success) {
                        error.set(err == null ? new IllegalStateException(message) : err);
                    }
                    done.countDown();
                }).build();
        ExecutorService ex = Executors.newSingleThreadExecutor();
        ex.execute(engine);
        long start = System.nanoTime();
        pg.execute("bench", "INSERT INTO debezium_signal VALUES ('bench-1', 'execute-snapshot',"
                + " '{\"data-collections\": [\"public.bench\"], \"type\": \"incremental\"}')");
        boolean finished = done.await(30, TimeUnit.MINUTES);
        engine.close();
        ex.shutdown();
        ex.awaitTermination(60, TimeUnit.SECONDS);
        if (doneAt.get() == 0) {
            throw new IllegalStateException("Debezium " + (finished ? "stopped" : "timed out") + " after " + count.get() + " rows"
                    + (error.get() == null ? "" : ": " + error.get()), error.get());
        }
        log("(Debezium: first snapshot row %.2f s after the signal; the time below counts from the signal to the last row)",
                (firstAt.get() - start) / 1e9);
        pg.execute("bench", "SELECT pg_drop_replication_slot('dbz_online')");
        return (doneAt.get() - start) / 1e9;
    }
}
