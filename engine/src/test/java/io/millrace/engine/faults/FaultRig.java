package io.millrace.engine.faults;

import io.millrace.core.schema.TableRef;
import io.millrace.engine.Supervisor;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/** Test support for the fault tests: configuration, a supervised pipeline on a thread, a write load, checks. */
final class FaultRig {
    static final String TABLES = "[public.items, public.txlog]";
    static final List<io.millrace.core.schema.TableRef> REFS = List.of(TableRef.parse("public.items"),
            TableRef.parse("public.txlog"));

    private FaultRig() {
    }

    /** Source on {@code srcPort} (the proxy's or the server's), postgres destination on {@code dstPort}, and a jsonl one. */
    static String yaml(String name, int srcPort, String srcDb, int dstPort, String dstDb, Path jsonl, String retry) {
        return String.join("\n",
                "name: " + name,
                "source:",
                "  host: 127.0.0.1",
                "  port: " + srcPort,
                "  database: " + srcDb,
                "  user: postgres",
                "  slot: " + name,
                "  publication: " + name,
                "  tables: " + TABLES,
                "  status_interval_ms: 500",
                "destinations:",
                "  - name: replica",
                "    type: postgres",
                "    host: 127.0.0.1",
                "    port: " + dstPort,
                "    database: " + dstDb,
                "    user: postgres",
                "  - name: files",
                "    type: jsonl",
                "    directory: " + jsonl.toAbsolutePath(),
                "pipeline:",
                "  linger_ms: 20",
                "operations:",
                "  retry: " + retry,
                "");
    }

    /** items as a read_committed consumer rebuilds it from {@code topic} ({@code id|v|n} lines by id), and the rules' breaks. */
    static io.millrace.sink.kafka.testing.TopicState kafkaItems(io.millrace.sink.kafka.testing.KafkaBroker kafka, String topic) {
        return io.millrace.sink.kafka.testing.TopicState.rebuild(kafka.readCommitted(topic), null);
    }

    /** The rebuilt items' rows as {@code id|v|n} lines ordered by id. */
    static List<String> itemLines(io.millrace.sink.kafka.testing.TopicState items) {
        return items.rows().values().stream().map(a -> a.get("id").asText() + "|" + a.get("v").asText() + "|" + a.get("n").asText())
                .sorted(java.util.Comparator.comparingLong(x -> Long.parseLong(x.substring(0, x.indexOf('|'))))).toList();
    }

    /** How many create or read events of {@code topic} (txlog) carry each tx_id, for a read_committed consumer. */
    static Map<String, Integer> kafkaTxIds(io.millrace.sink.kafka.testing.KafkaBroker kafka, String topic) throws Exception {
        Map<String, Integer> created = new java.util.TreeMap<>();
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        for (var r : kafka.readCommitted(topic)) {
            if (r.value() != null) {
                var e = json.readTree(r.value());
                if (e.path("op").asText().equals("c") || e.path("op").asText().equals("r")) {
                    created.merge(e.path("after").path("tx_id").asText(), 1, Integer::sum);
                }
            }
        }
        return created;
    }

    static void schema(Connection src, int rows) throws SQLException {
        try (Statement s = src.createStatement()) {
            s.execute("CREATE TABLE items (id bigint PRIMARY KEY, v text, n bigint)");
            s.execute("CREATE TABLE txlog (tx_id bigint NOT NULL, note text)");
            s.execute("ALTER TABLE txlog REPLICA IDENTITY FULL"); // no key: Millrace refuses it otherwise (the source's UPDATEs would fail)
            s.execute("INSERT INTO items SELECT g, 'seed ' || g, g FROM generate_series(1, " + rows + ") g");
        }
    }

    /** A supervised pipeline on its own thread. */
    static final class Running implements AutoCloseable {
        final Supervisor supervisor;
        final Thread thread;
        final AtomicReference<Throwable> error = new AtomicReference<>();

        Running(String yaml, Path base) {
            EngineConfig cfg = new ConfigLoader(Map.<String, String>of()::get).parse(yaml, base);
            supervisor = new Supervisor(cfg);
            thread = new Thread(() -> {
                try {
                    supervisor.run();
                } catch (Throwable t) {
                    error.set(t);
                }
            }, "test-supervisor");
            thread.setDaemon(true);
            thread.start();
        }

        void awaitState(String state, Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (!state.equals(supervisor.status().state())) {
                if (!thread.isAlive()) {
                    throw new AssertionError("pipeline ended before '" + state + "': " + error.get(), error.get());
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("pipeline not '" + state + "' after " + timeout + ": " + supervisor.status());
                }
                Thread.sleep(20);
            }
        }

        Throwable awaitEnd(Duration timeout) throws InterruptedException {
            thread.join(timeout.toMillis());
            if (thread.isAlive()) {
                throw new AssertionError("pipeline still running after " + timeout + ": " + supervisor.status());
            }
            return error.get();
        }

        @Override
        public void close() throws Exception {
            supervisor.stop();
            thread.join(30_000);
            if (thread.isAlive()) {
                throw new AssertionError("pipeline did not stop within 30 s");
            }
            Throwable t = error.get();
            if (t instanceof Exception e) {
                throw e;
            }
            if (t != null) {
                throw new AssertionError(t);
            }
        }
    }

    /**
     * Writes to the source one transaction after another (inserts, updates, deletes of items; each transaction one
     * unique txlog row), reconnecting after a lost connection. Connects to the server directly, not through a proxy.
     */
    static final class Load implements Runnable, AutoCloseable {
        private final String url;
        private final Random rnd;
        private final long firstId;
        private final AtomicLong txId;
        final AtomicLong committed = new AtomicLong();
        final AtomicLong failures = new AtomicLong();
        private volatile boolean stop;
        private final Thread thread;

        Load(String url, long seed, long firstTxId) {
            this.url = url;
            this.rnd = new Random(seed);
            this.firstId = 1_000_000 * firstTxId;
            this.txId = new AtomicLong(firstTxId);
            this.thread = new Thread(this, "test-load");
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void run() {
            Connection c = null;
            long nextId = firstId;
            while (!stop) {
                try {
                    if (c == null) {
                        Properties p = new Properties();
                        p.setProperty("user", "postgres");
                        p.setProperty("connectTimeout", "2");
                        c = DriverManager.getConnection(url, p);
                        c.setAutoCommit(false);
                    }
                    try (Statement s = c.createStatement()) {
                        long tx = txId.get();
                        s.execute("INSERT INTO txlog VALUES (" + tx + ", 'load')");
                        for (int i = 0, n = 1 + rnd.nextInt(5); i < n; i++) {
                            switch (rnd.nextInt(4)) {
                                case 0, 1 -> s.execute("INSERT INTO items VALUES (" + (nextId++) + ", md5(random()::text), " + tx + ")");
                                case 2 -> s.execute("UPDATE items SET v = md5(random()::text), n = " + tx + " WHERE id = "
                                        + (1 + rnd.nextInt(2000)));
                                default -> s.execute("DELETE FROM items WHERE id = " + (1 + rnd.nextInt(2000)));
                            }
                        }
                        if (rnd.nextInt(40) == 0) {
                            s.execute("INSERT INTO items SELECT g, 'bulk', " + tx + " FROM generate_series(" + nextId + ", "
                                    + (nextId + 4999) + ") g");
                            nextId += 5000;
                        }
                    }
                    c.commit();
                    txId.incrementAndGet();
                    committed.incrementAndGet();
                    Thread.sleep(2);
                } catch (SQLException e) {
                    failures.incrementAndGet();
                    txId.incrementAndGet(); // an unknown outcome keeps its id; the next transaction takes a new one
                    closeQuietly(c);
                    c = null;
                    sleep(100);
                } catch (InterruptedException e) {
                    return;
                }
            }
            closeQuietly(c);
        }

        private static void sleep(long ms) {
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        private static void closeQuietly(Connection c) {
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

    /**
     * Stops the load, then waits until the destination equals the source row for row, and checks that every source
     * transaction is there exactly once (INV: RESUME — every reconnect resumes from the durable checkpoints).
     */
    static void assertEqualAndOnce(Connection src, Connection dst, Load load) throws Exception {
        load.close();
        io.millrace.engine.RunningEngine.awaitEqual(src, dst, REFS, null, Duration.ofSeconds(90));
        org.assertj.core.api.Assertions.assertThat(duplicateTxIds(dst)).as("transactions applied twice").isEmpty();
        org.assertj.core.api.Assertions.assertThat(count(dst, "SELECT count(*) FROM txlog"))
                .isEqualTo(count(src, "SELECT count(*) FROM txlog")).isGreaterThan(10);
    }

    static List<Long> duplicateTxIds(Connection dst) throws SQLException {
        List<Long> out = new ArrayList<>();
        try (Statement s = dst.createStatement();
             ResultSet rs = s.executeQuery("SELECT tx_id FROM public.txlog GROUP BY tx_id HAVING count(*) > 1 LIMIT 20")) {
            while (rs.next()) {
                out.add(rs.getLong(1));
            }
        }
        return out;
    }

    static long count(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

}
