package io.millrace.cli.crash;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.Lsn;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.verify.Verifier;
import io.millrace.sink.kafka.testing.KafkaBroker;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One large transaction into every destination at once — postgres, DuckDB, jsonl and Kafka — with {@code millrace run}
 * in its own JVM at {@code bin/millrace}'s default JVM options (read from the script), killed with SIGKILL while the
 * transaction is being applied, then started again (INV: BOUNDED, DURABLE, RESUME).
 *
 * <p>A large transaction reaches the engine in one of two ways, and each has a test: <b>streamed</b> while still in
 * progress (it outgrows the server's {@code logical_decoding_work_mem}, 64 MB by default; the engine spills it), or
 * <b>whole at its commit</b> (a server with a larger {@code logical_decoding_work_mem}: the walsender decodes it all,
 * then sends it as fast as the engine reads).
 *
 * <p>What must hold:
 * <ul>
 *   <li>INV: BOUNDED — the engine, at the heap {@code bin/millrace} gives it, neither runs out of memory nor stalls: it
 *       is alive when it is killed in the middle of the transaction, and the restarted engine lands all of it;</li>
 *   <li>INV: DURABLE — sampled every ~50 ms for the whole test ({@link DurableSampler}): the slot's
 *       {@code confirmed_flush_lsn} is never past the checkpoint of the postgres, jsonl or Kafka destination; DuckDB's
 *       file is locked while the engine runs, so its checkpoint is compared with the slot after the kill;</li>
 *   <li>INV: RESUME — the restart resumes (no refusal), the postgres destination equals the source row for row, DuckDB
 *       holds every row once with the source's values, a {@code read_committed} Kafka consumer reads every row exactly
 *       once, and the jsonl files hold every row, a repeat only at the position of its first copy;</li>
 *   <li>and a SIGTERM at the end stops the engine with status 0.</li>
 * </ul>
 * The source is the machine's own PostgreSQL installation with its default settings where there is one (not the
 * embedded server the other tests use). {@value #DEFAULT_ROWS} rows by default; {@code -Dmillrace.large.rows=5000000} is the documented long run
 * (docs/RELIABILITY.md). Each run's log is in {@code target/large-tx/<name>/engine-N.log}; the peak RSS of each run is
 * printed.
 */
class LargeTransactionCrashIT {
    static final int DEFAULT_ROWS = 1_200_000; // keeps the suite in its 30 minutes; decoded, about 1.6 times what -Xmx192m holds
    private static final int ROWS = Integer.getInteger("millrace.large.rows", DEFAULT_ROWS);
    private static final String SRC = "large_src";
    private static final ObjectMapper JSON = new ObjectMapper();

    private static EmbeddedPg pg;
    private static KafkaBroker kafka;

    @BeforeAll
    static void start() throws Exception {
        kafka = KafkaBroker.start();
        // The machine's own PostgreSQL with its default settings (the user who found the defects ran a PostgreSQL 15
        // server); where there is none, the embedded 15 with fsync on, as a real server has it.
        pg = EmbeddedPg.systemBinaries().map(bin -> EmbeddedPg.builder().system(bin))
                .orElseGet(() -> EmbeddedPg.builder().major(15).setting("fsync", "on")).start();
        System.out.printf("LargeTransactionCrashIT: PostgreSQL %d, %s%n", pg.major(), pg.system() ? "the machine's own installation"
                : "embedded (no installation under /usr/lib/postgresql)");
        pg.createDatabase(SRC);
    }

    @AfterAll
    static void stop() throws Exception {
        if (pg != null) {
            pg.close();
        }
        if (kafka != null) {
            kafka.close();
        }
    }

    @Test
    void aTransactionStreamedWhileInProgressReachesEveryDestinationAcrossAKill() throws Exception {
        run("streamed", "64MB");
    }

    @Test
    void aTransactionSentWholeAtItsCommitReachesEveryDestinationAcrossAKill() throws Exception {
        run("whole", "2GB");
    }

    private void run(String name, String decodingWorkMem) throws Exception {
        pg.execute(SRC, "ALTER SYSTEM SET logical_decoding_work_mem = '" + decodingWorkMem + "'", "SELECT pg_reload_conf()");
        String table = "big_" + name;
        String dstDb = "large_dst_" + name;
        String slot = "large_" + name;
        pg.createDatabase(dstDb);
        // Narrow rows: what the wire carries in a few bytes takes many more on the heap once decoded (INV: BOUNDED).
        pg.execute(SRC, "CREATE TABLE public." + table + " (id bigint PRIMARY KEY, qty int NOT NULL, price numeric(12,2),"
                + " ts timestamptz)");
        Path work = Path.of("target", "large-tx", name).toAbsolutePath();
        CrashIT.deleteTree(work);
        Path events = work.resolve("events");
        Path duck = work.resolve("mirror.duckdb");
        Files.createDirectories(events);
        Path config = work.resolve("config.yaml");
        Files.writeString(config, config(name, table, dstDb, slot, events, duck), StandardCharsets.UTF_8);
        List<String> jvm = EngineProcess.binMillraceJvmOptions();
        System.out.printf("LargeTransactionCrashIT[%s]: %d rows, logical_decoding_work_mem %s, engine JVM %s%n", name, ROWS,
                decodingWorkMem, jvm);

        DurableSampler sampler = new DurableSampler(pg, SRC, slot, List.of(DurableSampler.postgres(pg, dstDb, "replica"),
                DurableSampler.jsonl(events.resolve("checkpoint.json")), kafkaCheckpoint(slot)));
        Thread samplerThread = new Thread(sampler, "large-tx-sampler");
        samplerThread.setDaemon(true);
        EngineProcess engine = EngineProcess.startWith(config, work.resolve("engine-1.log"), jvm);
        try (Connection src = pg.connect(SRC); Connection dst = pg.connect(dstDb)) {
            CrashIT.awaitLog(engine, CrashIT.STREAMING_LINE, "streaming");
            samplerThread.start();
            long t0 = System.currentTimeMillis();
            try (Statement s = src.createStatement()) {
                s.execute("INSERT INTO public." + table + " SELECT g, g % 1000, (g % 100000) / 100.0,"
                        + " timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second' FROM generate_series(1, " + ROWS + ") g");
                s.execute("INSERT INTO public." + table + " VALUES (0, 0, 0, now())"); // a small transaction after it
            }
            Lsn end = currentLsn(src);
            long committedMillis = System.currentTimeMillis() - t0;

            // Kill in the middle: once a quarter of the rows are in the postgres destination (batches commit one by one).
            while (count(dst, table) < ROWS / 4) {
                assertThat(engine.alive()).as("INV: BOUNDED — the engine ended during the large transaction; log %s:%n%s",
                        engine.log(), engine.logTail(30)).isTrue();
                assertThat(System.currentTimeMillis() - t0).as("a quarter of the rows in the postgres destination within"
                        + " 10 minutes; log %s", engine.log()).isLessThan(600_000);
                Thread.sleep(100);
            }
            long rowsAtKill = count(dst, table);
            long rss1 = engine.peakRssKb();
            assertThat(engine.kill()).as("exit status after SIGKILL (the engine was alive); log %s", engine.log())
                    .isEqualTo(EngineProcess.SIGKILL_EXIT);
            CrashIT.awaitSlotIdle(src, slot);
            // INV: DURABLE for DuckDB, whose file is unlocked now: the slot (idle, it cannot move) is not past its checkpoint.
            Lsn confirmed = DurableSampler.confirmedFlush(src, slot);
            Lsn duckCheckpoint = duckCheckpoint(duck);
            System.out.printf("LargeTransactionCrashIT[%s]: killed with %d rows in the postgres destination, %d ms after the"
                    + " commit; slot %s, DuckDB checkpoint %s; peak RSS %d MB%n", name, rowsAtKill,
                    System.currentTimeMillis() - t0 - committedMillis, confirmed, duckCheckpoint, rss1 / 1024);
            assertThat(duckCheckpoint).as("DuckDB checkpoint").isNotNull();
            assertThat(confirmed.compareTo(duckCheckpoint)).as("INV: DURABLE: slot %s not past the DuckDB checkpoint %s",
                    confirmed, duckCheckpoint).isLessThanOrEqualTo(0);
            assertThat(sampler.violations()).as("INV: DURABLE").isEmpty();

            // The restart resumes and lands everything.
            engine = EngineProcess.startWith(config, work.resolve("engine-2.log"), jvm);
            long t1 = System.currentTimeMillis();
            while (count(dst, table) < ROWS + 1 || !reached(DurableSampler.jsonlCheckpoint(events.resolve("checkpoint.json")), end)
                    || !reached(kafkaCheckpoint(slot).reader().read(), end)) {
                assertThat(engine.alive()).as("the restarted engine ended; log %s:%n%s", engine.log(), engine.logTail(30)).isTrue();
                assertThat(System.currentTimeMillis() - t1).as("the restart landed the transaction within 10 minutes; log %s",
                        engine.log()).isLessThan(600_000);
                Thread.sleep(200);
            }
            long rss2 = engine.peakRssKb();
            int exit = engine.terminate(60);
            engine = null;
            sampler.stop();
            samplerThread.join(5_000);
            System.out.printf("LargeTransactionCrashIT[%s]: restart landed the rest in %d ms; peak RSS %d MB; %s%n", name,
                    System.currentTimeMillis() - t1, rss2 / 1024, sampler.summary());
            assertThat(exit).as("exit status after SIGTERM").isEqualTo(0);
            assertThat(sampler.errors()).as("sampler errors").isEmpty();
            assertThat(sampler.violations()).as("INV: DURABLE").isEmpty();
            assertThat(sampler.checked()).as("DURABLE samples taken").isPositive();

            TableRef ref = new TableRef("public", table);
            assertThat(Verifier.compare(src, dst, List.of(ref), null)).as("postgres destination equals the source")
                    .allMatch(Verifier.TableResult::equal);
            assertThat(duckAggregates(duck, table)).as("DuckDB destination: rows and values").isEqualTo(sourceAggregates(src, table));
            assertKafkaExactlyOnce(name + ".public." + table);
            assertJsonlAtLeastOnce(events);
            try (Stream<Path> left = Files.list(work.resolve("spill"))) {
                assertThat(left.filter(f -> !f.getFileName().toString().equals(".lock")).toList()).as("spill files left").isEmpty();
            }
        } finally {
            if (engine != null) {
                engine.destroyQuietly();
            }
            sampler.stop();
        }
    }

    private static String config(String name, String table, String dstDb, String slot, Path events, Path duck) {
        return String.join("\n",
                "name: " + name,
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: " + SRC + ", user: postgres, slot: " + slot
                        + ", publication: " + slot + ", tables: [public." + table + "]}",
                "destinations:",
                "  - {name: replica, type: postgres, host: 127.0.0.1, port: " + pg.port() + ", database: " + dstDb + ", user: postgres}",
                "  - {name: mirror, type: duckdb, file: " + duck + "}",
                "  - {name: files, type: jsonl, directory: " + events + "}",
                "  - {name: bus, type: kafka, bootstrap_servers: " + kafka.bootstrapServers() + ", transactional_id: " + slot + "}",
                "pipeline: {spill_dir: " + events.resolveSibling("spill") + "}",
                "operations: {retry: {initial_ms: 200, max_ms: 2000, attempts: 5}}",
                "");
    }

    /** The checkpoint the Kafka destination committed last (read_committed), keyed by its transactional id. */
    private static DurableSampler.Destination kafkaCheckpoint(String transactionalId) {
        return new DurableSampler.Destination("kafka", () -> {
            if (!kafka.topics().contains("millrace.checkpoints")) {
                return null;
            }
            DurableSampler.Durable[] last = {null};
            kafka.readCommitted("millrace.checkpoints", r -> {
                if (r.value() != null && transactionalId.equals(r.key())) {
                    try {
                        JsonNode cp = JSON.readTree(r.value());
                        last[0] = new DurableSampler.Durable(Lsn.parse(cp.get("flush_lsn").asText()),
                                cp.path("applied_commit_lsn").asText() + "#" + cp.path("applied_ordinal").asText(),
                                cp.path("snapshot").path("state").asText());
                    } catch (IOException e) {
                        throw new IllegalStateException(e);
                    }
                }
            });
            return last[0];
        });
    }

    private static boolean reached(DurableSampler.Durable d, Lsn end) {
        return d != null && d.flushLsn().compareTo(end) >= 0;
    }

    private static Lsn duckCheckpoint(Path file) throws SQLException {
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:" + file); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT checkpoint FROM millrace.checkpoints WHERE destination = 'mirror'")) {
            if (!rs.next()) {
                return null;
            }
            try {
                return Lsn.parse(JSON.readTree(rs.getString(1)).get("flush_lsn").asText());
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    private static final String AGGREGATES = "SELECT count(*), count(DISTINCT id), sum(id), sum(qty), sum(price),"
            + " count(DISTINCT ts), min(ts), max(ts) FROM public.";

    private static List<String> sourceAggregates(Connection c, String table) throws SQLException {
        return aggregates(c, AGGREGATES + table);
    }

    private static List<String> duckAggregates(Path file, String table) throws SQLException {
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:" + file)) {
            try (Statement s = c.createStatement()) {
                s.execute("SET TimeZone = 'UTC'");
            }
            return aggregates(c, AGGREGATES.replace("sum(price)", "sum(price)::DECIMAL(18,2)") + table);
        }
    }

    private static List<String> aggregates(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            List<String> out = new ArrayList<>();
            for (int i = 1; i <= 6; i++) {
                out.add(rs.getString(i));
            }
            out.add(rs.getObject(7, java.time.OffsetDateTime.class).toInstant().toString());
            out.add(rs.getObject(8, java.time.OffsetDateTime.class).toInstant().toString());
            return out;
        }
    }

    /** Every row once, for a read_committed consumer (INV: RESUME, exactly once). */
    private static void assertKafkaExactlyOnce(String topic) throws Exception {
        BitSet seen = new BitSet(ROWS + 1);
        long[] records = {0};
        List<String> twice = new ArrayList<>();
        kafka.readCommitted(topic, (ConsumerRecord<String, String> r) -> {
            if (r.value() == null) {
                return;
            }
            records[0]++;
            int id = idOf(r.key());
            if (seen.get(id) && twice.size() < 10) {
                twice.add(r.key());
            }
            seen.set(id);
        });
        assertThat(twice).as("rows a read_committed consumer reads twice from %s", topic).isEmpty();
        assertThat(records[0]).as("records in %s", topic).isEqualTo(ROWS + 1);
        assertThat(seen.cardinality()).isEqualTo(ROWS + 1);
    }

    private static int idOf(String key) {
        return Integer.parseInt(key.substring(key.indexOf(':') + 1, key.indexOf('}')).trim());
    }

    /**
     * Every row at least once in the files, and a row written twice only at the same position (INV: RESUME, at least
     * once with recognisable repeats). Streams the files: millions of events.
     */
    private static void assertJsonlAtLeastOnce(Path events) throws IOException {
        long[] ordinal = new long[ROWS + 1];
        long[] commit = {-1};
        long lines = 0;
        List<String> problems = new ArrayList<>();
        List<Path> files;
        try (Stream<Path> l = Files.list(events)) {
            files = l.filter(p -> p.getFileName().toString().matches("events-\\d+\\.jsonl")).sorted().toList(); // not schema-changes.jsonl
        }
        JsonFactory f = JSON.getFactory();
        for (Path file : files) {
            try (InputStream in = Files.newInputStream(file); JsonParser p = f.createParser(in)) {
                while (p.nextToken() == JsonToken.START_OBJECT) {
                    JsonNode e = JSON.readTree(p);
                    lines++;
                    if (!"c".equals(e.path("op").asText())) {
                        continue;
                    }
                    int id = e.path("after").path("id").asInt();
                    long ord = e.path("source").path("ordinal").asLong();
                    long cl = e.path("source").path("commit_lsn").asLong();
                    if (id > 0) {
                        if (commit[0] == -1) {
                            commit[0] = cl;
                        }
                        if (cl != commit[0] && problems.size() < 10) {
                            problems.add("row " + id + " at commit_lsn " + cl + ", others at " + commit[0]);
                        }
                    }
                    if (ordinal[id] != 0 && ordinal[id] != ord && problems.size() < 10) {
                        problems.add("row " + id + " at ordinal " + ord + " and " + ordinal[id]);
                    }
                    ordinal[id] = ord;
                }
            }
        }
        long missing = 0;
        for (long o : ordinal) {
            if (o == 0) {
                missing++;
            }
        }
        System.out.printf("LargeTransactionCrashIT: %d jsonl events in %d files%n", lines, files.size());
        assertThat(problems).as("jsonl repeats at another position").isEmpty();
        assertThat(missing).as("rows missing from the jsonl files").isZero();
    }

    private static long count(Connection dst, String table) throws SQLException {
        try (Statement s = dst.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT to_regclass('public." + table + "') IS NULL")) {
                rs.next();
                if (rs.getBoolean(1)) {
                    return 0;
                }
            }
            try (ResultSet rs = s.executeQuery("SELECT count(*) FROM public." + table)) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private static Lsn currentLsn(Connection c) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_current_wal_lsn()::text")) {
            rs.next();
            return Lsn.parse(rs.getString(1));
        }
    }
}
