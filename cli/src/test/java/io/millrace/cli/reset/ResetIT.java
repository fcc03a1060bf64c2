package io.millrace.cli.reset;

import io.millrace.cli.Main;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.verify.Verifier;
import io.millrace.sink.kafka.testing.KafkaBroker;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code millrace reset} on a real PostgreSQL with postgres, DuckDB, jsonl and Kafka destinations: refused while the
 * engine runs and when a destination holds another pipeline's checkpoint; a dry run by default; with {@code --yes}
 * the slot and every checkpoint go, the copied tables are emptied, and the next run starts afresh — a new slot and a
 * new snapshot — with no manual step, ending with every destination equal to the source although rows were deleted
 * on the source after the last checkpoint (the changes in the dropped slot are never streamed).
 */
class ResetIT {
    private static final List<TableRef> TABLES = List.of(TableRef.parse("public.customers"), TableRef.parse("public.audit"));
    private static EmbeddedPg pg;
    private static KafkaBroker kafka;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() throws Exception {
        pg = EmbeddedPg.builder().major(17).setting("synchronous_commit", "on").start();
        kafka = KafkaBroker.start();
    }

    @AfterAll
    static void stop() throws Exception {
        if (kafka != null) {
            kafka.close();
        }
        if (pg != null) {
            pg.close();
        }
    }

    private record Run(int code, String out, String err) {
    }

    private static Run cli(String... args) {
        StringWriter err = new StringWriter();
        PrintStream old = System.out;
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        System.setOut(new PrintStream(stdout, true, StandardCharsets.UTF_8));
        try {
            int code = Main.execute(new PrintWriter(stdout, true, StandardCharsets.UTF_8), new PrintWriter(err, true), args);
            return new Run(code, stdout.toString(StandardCharsets.UTF_8), err.toString());
        } finally {
            System.setOut(old);
        }
    }

    private String yaml(String name, String db, String publication, boolean withKafka) {
        return String.join("\n",
                "name: " + name,
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: " + db + ", user: postgres, slot: " + name
                        + ", publication: " + publication + ", tables: [public.customers, public.audit]}",
                "destinations:",
                "  - {name: replica, type: postgres, host: 127.0.0.1, port: " + pg.port() + ", database: " + db + "_dst, user: postgres}",
                "  - {name: mirror, type: duckdb, file: " + dir.resolve(name + ".duckdb") + "}",
                "  - {name: files, type: jsonl, directory: " + dir.resolve(name + "-events") + "}",
                withKafka ? "  - {name: bus, type: kafka, bootstrap_servers: '" + kafka.bootstrapServers() + "'}" : "",
                "pipeline: {linger_ms: 20}",
                "");
    }

    private Path write(String file, String yaml) throws Exception {
        Path f = dir.resolve(file);
        Files.writeString(f, yaml);
        return f;
    }

    /** An engine of {@code config} on its own thread. */
    private static final class Running implements AutoCloseable {
        final Engine engine;
        final Thread thread;
        final AtomicReference<Throwable> error = new AtomicReference<>();

        Running(Path config) throws Exception {
            engine = new Engine(ConfigLoader.fromSystem().load(config));
            thread = new Thread(() -> {
                try {
                    engine.run();
                } catch (Throwable t) {
                    error.set(t);
                }
            }, "reset-it-engine");
            thread.start();
            long deadline = System.currentTimeMillis() + 90_000;
            while (engine.state() != Engine.State.STREAMING || !engine.readerStarted()) {
                assertThat(error.get()).as("engine failed").isNull();
                assertThat(System.currentTimeMillis()).as("streaming within 90 s").isLessThan(deadline);
                Thread.sleep(20);
            }
        }

        @Override
        public void close() throws Exception {
            engine.stop();
            thread.join(60_000);
            assertThat(thread.isAlive()).isFalse();
            assertThat(error.get()).as("engine error").isNull();
        }
    }

    private static void seed(String db) throws SQLException {
        pg.createDatabase(db);
        pg.createDatabase(db + "_dst");
        pg.execute(db, "CREATE TABLE customers (id int PRIMARY KEY, name text)",
                "CREATE TABLE audit (at int, note text)", "ALTER TABLE audit REPLICA IDENTITY FULL",
                "INSERT INTO customers SELECT g, 'c' || g FROM generate_series(1, 500) g",
                "INSERT INTO audit SELECT g, 'a' || g FROM generate_series(1, 200) g");
    }

    private static long scalar(String db, String sql) throws SQLException {
        try (Connection c = pg.connect(db); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? rs.getLong(1) : -1;
        }
    }

    private static String text(String db, String sql) throws SQLException {
        try (Connection c = pg.connect(db); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        }
    }

    private static void awaitEqual(String db) throws Exception {
        try (Connection src = pg.connect(db); Connection dst = pg.connect(db + "_dst")) {
            long deadline = System.currentTimeMillis() + 90_000;
            List<Verifier.TableResult> r;
            while (!(r = Verifier.compare(src, dst, TABLES, null)).stream().allMatch(Verifier.TableResult::equal)) {
                assertThat(System.currentTimeMillis()).as("postgres destination equals the source: %s", r).isLessThan(deadline);
                Thread.sleep(100);
            }
        }
    }

    private long duck(String name, String sql) throws SQLException {
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:" + dir.resolve(name + ".duckdb").toAbsolutePath());
             Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? rs.getLong(1) : -1;
        }
    }

    private List<String> eventsFiles(String name) throws Exception {
        Path d = dir.resolve(name + "-events");
        if (!Files.isDirectory(d)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(d)) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("events-")).sorted().toList();
        }
    }

    /** Ops of the jsonl events, in file order. */
    private List<String> jsonlOps(String name) throws Exception {
        List<String> ops = new java.util.ArrayList<>();
        for (String f : eventsFiles(name)) {
            for (String line : Files.readAllLines(dir.resolve(name + "-events").resolve(f))) {
                ops.add(line.replaceAll(".*\"op\":\"(.)\".*", "$1"));
            }
        }
        return ops;
    }

    private static String kafkaCheckpoint() {
        String last = null;
        for (ConsumerRecord<String, String> r : kafka.readCommitted("millrace.checkpoints")) {
            if ("millrace.rs.rs.bus".equals(r.key())) {
                last = r.value();
            }
        }
        return last;
    }

    @Test
    void resetRemovesThisPipelinesStateOnlyAndTheNextRunStartsAfresh() throws Exception {
        seed("rs");
        Path config = write("rs.yaml", yaml("rs", "rs", "rs", true));
        String firstConsistentPoint;
        try (Running e = new Running(config)) {
            pg.execute("rs", "INSERT INTO customers SELECT g, 'late' FROM generate_series(501, 510) g", "INSERT INTO audit VALUES (201, 'late')");
            awaitEqual("rs");
            // refused while an engine runs the pipeline: exit 7, and nothing removed
            Run running = cli("reset", config.toString(), "--yes");
            assertThat(running.code()).as(running.out() + running.err()).isEqualTo(7);
            assertThat(running.err()).contains("cannot reset pipeline 'rs' while it runs").contains("stop that engine");
            assertThat(scalar("rs", "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'rs'")).isEqualTo(1);
            pg.execute("rs", "INSERT INTO customers VALUES (511, 'after the refusal')");
            pg.execute("rs", "INSERT INTO customers VALUES (512, 'after the refusal')");
            awaitEqual("rs");
            firstConsistentPoint = text("rs_dst", "SELECT checkpoint->'snapshot'->>'consistent_point' FROM millrace.checkpoints WHERE destination = 'replica'");
        }
        assertThat(kafkaCheckpoint()).isNotNull();
        assertThat(duck("rs", "SELECT count(*) FROM public.customers")).isEqualTo(512);

        // While stopped: changes that the slot holds. A reset drops them with the slot; the new snapshot must not bring back
        // the deleted rows (the kept rows are emptied first).
        pg.execute("rs", "DELETE FROM customers WHERE id <= 100", "DELETE FROM audit WHERE at <= 50", "UPDATE customers SET name = 'new' WHERE id = 200");

        // another pipeline's configuration on the same destinations (another publication): refused, nothing removed
        Path other = write("other.yaml", yaml("rs", "rs", "other_pub", true));
        Run foreign = cli("reset", other.toString(), "--yes");
        assertThat(foreign.code()).as(foreign.out() + foreign.err()).isEqualTo(8);
        assertThat(foreign.err()).contains("destination 'replica' holds a checkpoint of another pipeline").contains("publication 'rs'")
                .contains("removed nothing");
        assertThat(scalar("rs", "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'rs'")).isEqualTo(1);
        assertThat(scalar("rs_dst", "SELECT count(*) FROM millrace.checkpoints")).isEqualTo(1);

        // without --yes (and no terminal): a dry run listing everything
        Run dry = cli("reset", config.toString());
        assertThat(dry.code()).as(dry.out() + dry.err()).isZero();
        assertThat(dry.out()).contains("drop replication slot 'rs' on 127.0.0.1:" + pg.port() + "/rs")
                .contains("destination 'replica': delete its checkpoint: row 'replica' of millrace.checkpoints")
                .contains("destination 'replica': truncate public.customers, public.audit")
                .contains("destination 'mirror': delete its checkpoint").contains("destination 'mirror': truncate public.customers, public.audit")
                .contains("destination 'files': delete 1 events file(s) (events-000001.jsonl)").contains("destination 'files': delete its state file")
                .contains("destination 'bus': delete its checkpoint: a tombstone for key 'millrace.rs.rs.bus'")
                .contains("destination 'bus': the topics rs.public.customers, rs.public.audit and their records")
                .contains("publication 'rs' (it holds no position").contains("Nothing was removed");
        assertThat(scalar("rs", "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'rs'")).isEqualTo(1);
        assertThat(scalar("rs_dst", "SELECT count(*) FROM millrace.checkpoints")).isEqualTo(1);
        assertThat(eventsFiles("rs")).containsExactly("events-000001.jsonl");

        // --yes: done
        Run done = cli("reset", config.toString(), "--yes");
        assertThat(done.code()).as(done.out() + done.err()).isZero();
        assertThat(done.out()).contains("Done. The next 'millrace run");
        assertThat(scalar("rs", "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'rs'")).isZero();
        assertThat(scalar("rs", "SELECT count(*) FROM pg_publication WHERE pubname = 'rs'")).as("the publication is kept").isEqualTo(1);
        assertThat(scalar("rs_dst", "SELECT count(*) FROM millrace.checkpoints")).isZero();
        assertThat(scalar("rs_dst", "SELECT count(*) FROM public.customers")).as("truncated, kept").isZero();
        assertThat(duck("rs", "SELECT count(*) FROM millrace.checkpoints")).isZero();
        assertThat(duck("rs", "SELECT count(*) FROM public.customers")).isZero();
        assertThat(eventsFiles("rs")).isEmpty();
        assertThat(dir.resolve("rs-events/checkpoint.json")).doesNotExist();
        assertThat(kafkaCheckpoint()).as("a tombstone").isNull();
        long kafkaBefore = kafka.countCommitted("rs.public.customers");

        // a second reset finds nothing to do
        Run again = cli("reset", config.toString(), "--yes");
        assertThat(again.code()).isZero();
        assertThat(again.out()).contains("nothing to remove");

        // the next run starts afresh, with no manual step: a new slot, a new snapshot, every destination equal to the source
        try (Running e = new Running(config)) {
            pg.execute("rs", "INSERT INTO customers VALUES (9001, 'streamed after the reset')");
            awaitEqual("rs");
            String cp = text("rs_dst", "SELECT checkpoint->'snapshot'->>'consistent_point' FROM millrace.checkpoints WHERE destination = 'replica'");
            assertThat(io.millrace.core.Lsn.parse(cp).isAfter(io.millrace.core.Lsn.parse(firstConsistentPoint))).as("a new snapshot: %s after %s",
                    cp, firstConsistentPoint).isTrue();
            assertThat(text("rs_dst", "SELECT checkpoint->'snapshot'->>'state' FROM millrace.checkpoints WHERE destination = 'replica'"))
                    .isEqualTo("DONE");
        }
        long customers = scalar("rs", "SELECT count(*) FROM customers");
        long audit = scalar("rs", "SELECT count(*) FROM audit");
        assertThat(customers).isEqualTo(413);
        assertThat(duck("rs", "SELECT count(*) FROM public.customers")).isEqualTo(customers);
        assertThat(duck("rs", "SELECT count(*) FROM public.audit")).isEqualTo(audit);
        assertThat(duck("rs", "SELECT sum(id) FROM public.customers")).isEqualTo(scalar("rs", "SELECT sum(id) FROM customers"));
        assertThat(duck("rs", "SELECT count(*) FROM public.customers WHERE id = 200 AND name = 'new'")).isEqualTo(1);
        List<String> ops = jsonlOps("rs");
        assertThat(ops.stream().filter("r"::equals).count()).as("jsonl: the new snapshot only").isEqualTo(customers - 1 + audit);
        assertThat(ops).doesNotContain("d").endsWith("c");
        assertThat(kafka.countCommitted("rs.public.customers") - kafkaBefore).as("kafka: the new snapshot and the insert")
                .isEqualTo(customers);
        assertThat(kafkaCheckpoint()).isNotNull().contains("\"state\":\"DONE\"");
    }

    @Test
    void dropDataAndPublicationThenRunCreatesThemAgain() throws Exception {
        seed("rd");
        Path config = write("rd.yaml", yaml("rd", "rd", "rd", false));
        try (Running e = new Running(config)) {
            awaitEqual("rd");
        }
        pg.execute("rd", "DELETE FROM customers WHERE id > 250");
        Run done = cli("reset", config.toString(), "--yes", "--data", "drop", "--drop-publication");
        assertThat(done.code()).as(done.out() + done.err()).isZero();
        assertThat(done.out()).contains("drop publication 'rd'").contains("destination 'replica': drop the tables public.customers, public.audit")
                .contains("destination 'mirror': drop the tables");
        assertThat(scalar("rd", "SELECT count(*) FROM pg_publication WHERE pubname = 'rd'")).isZero();
        assertThat(scalar("rd_dst", "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")).isZero();
        assertThat(duck("rd", "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")).isZero();
        try (Running e = new Running(config)) {
            awaitEqual("rd");
        }
        assertThat(scalar("rd", "SELECT count(*) FROM pg_publication WHERE pubname = 'rd'")).isEqualTo(1);
        assertThat(duck("rd", "SELECT count(*) FROM public.customers")).isEqualTo(250);

        // --data keep: the rows stay, jsonl events files move aside, and the listing says what the next copy does to them
        Run keep = cli("reset", config.toString(), "--yes", "--data", "keep");
        assertThat(keep.code()).as(keep.out() + keep.err()).isZero();
        assertThat(keep.out()).contains("with their rows (--data keep)").contains("move 1 events file(s)");
        assertThat(scalar("rd_dst", "SELECT count(*) FROM public.customers")).isEqualTo(250);
        assertThat(eventsFiles("rd")).isEmpty();
        try (Stream<Path> s = Files.list(dir.resolve("rd-events"))) {
            assertThat(s.filter(p -> p.getFileName().toString().startsWith("reset-")).count()).isEqualTo(1);
        }
        Run bad = cli("reset", config.toString(), "--data", "shred");
        assertThat(bad.code()).isEqualTo(2);
        assertThat(bad.err()).contains("--data must be keep, truncate or drop");
        assertThat(Map.of("ok", true)).containsEntry("ok", true);

        // A publication without Millrace's mark may be another consumer's: --drop-publication keeps it, naming why
        pg.execute("rd_dst", "TRUNCATE public.customers, public.audit"); // kept above, they would come twice (audit has no key)
        try (Running e = new Running(config)) {
            awaitEqual("rd");
        }
        pg.execute("rd", "COMMENT ON PUBLICATION rd IS NULL");
        Run theirs = cli("reset", config.toString(), "--yes", "--data", "keep", "--drop-publication");
        assertThat(theirs.code()).as(theirs.out() + theirs.err()).isZero();
        assertThat(theirs.out()).doesNotContain("drop publication 'rd'").contains("Millrace did not create it")
                .contains("DROP PUBLICATION \"rd\";");
        assertThat(scalar("rd", "SELECT count(*) FROM pg_publication WHERE pubname = 'rd'")).as("kept").isEqualTo(1);
    }
}
