package io.millrace.bench;

import ch.qos.logback.classic.Level;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.Json;
import io.millrace.core.Lsn;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.sink.kafka.testing.KafkaBroker;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Debezium compatibility: the same changes, captured from two slots of one publication by Debezium
 * 3.6.1 (embedded, PostgreSQL connector, pgoutput, JsonConverter with schemas off) and by Millrace's
 * kafka destination (into a real broker, read with read_committed), give the same records, in the
 * same order: key, {@code op}, {@code before} and {@code after} equal field by field for the common
 * types — int2/4/8, text, varchar, bool, numeric, float4/8, date, time, timestamp, timestamptz, uuid,
 * json, jsonb, bytea, arrays — and the same tombstones; {@code source} agrees on connector, name, db,
 * schema, table, txId, lsn and snapshot.
 *
 * <p>Deliberate differences (docs/EVENTS.md "Differences from Debezium", docs/TYPES.md), which this test
 * states instead of hiding: Debezium is configured with {@code decimal.handling.mode=string} (its default,
 * {@code precise}, writes numerics as base64 bytes, which need the schema to decode); {@code timestamptz}
 * fractions are compared as instants (Debezium drops trailing zeros, Millrace writes 0 or 6 digits).
 */
class DebeziumCompatIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String COLUMNS = "id int PRIMARY KEY, i2 smallint, i8 bigint, t text, vc varchar(20), b boolean, n numeric(12,3),"
            + " f4 real, f8 double precision, d date, tm time, ts timestamp, tstz timestamptz, u uuid, j json, jb jsonb, by bytea,"
            + " ai int[], at text[]";
    private static final List<String> TSTZ = List.of("tstz");
    private static EmbeddedPg pg;
    private static KafkaBroker kafka;

    @BeforeAll
    static void start() throws Exception {
        ((ch.qos.logback.classic.Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).setLevel(Level.WARN);
        kafka = KafkaBroker.start();
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase("compat");
        pg.execute("compat", "CREATE TABLE public.t_default (" + COLUMNS + ")",
                "CREATE TABLE public.t_full (" + COLUMNS + ")", "ALTER TABLE public.t_full REPLICA IDENTITY FULL",
                "CREATE PUBLICATION compat FOR TABLE public.t_default, public.t_full",
                "SELECT pg_create_logical_replication_slot('dbz', 'pgoutput')",
                "SELECT pg_create_logical_replication_slot('mr', 'pgoutput')");
    }

    @AfterAll
    static void stop() throws Exception {
        pg.close();
        kafka.close();
    }

    @Test
    void sameChangesGiveTheSameRecordsAsDebezium(@TempDir Path dir) throws Exception {
        for (String t : List.of("public.t_default", "public.t_full")) {
            pg.execute("compat",
                    "INSERT INTO " + t + " VALUES (1, -32768, 9223372036854775807, 'text ü ✓', 'vc', true, 123456789.125, 1.5, 0.1,"
                            + " '2024-02-29', '23:59:59.999999', '2024-01-02 03:04:05.123456', '2024-01-02 08:34:05.123456+05:30',"
                            + " 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"a\": [1, 2]}', '{\"b\": {\"c\": null}}', '\\x000102ff',"
                            + " '{1,NULL,3}', '{\"x y\",z}')",
                    "INSERT INTO " + t + " VALUES (2, 0, -1, '', 'x', false, -0.001, -0.0, -1e300, '1970-01-01', '00:00:00',"
                            + " '1970-01-01 00:00:00', '2000-01-01 00:00:00+00', '00000000-0000-0000-0000-000000000000', '[]', '[]',"
                            + " '\\x', '{}', '{}')",
                    "INSERT INTO " + t + " (id) VALUES (3)", // NULLs everywhere
                    "INSERT INTO " + t + " (id, tstz, n) VALUES (4, '2024-05-06 07:08:09.5+00', 42)",
                    "UPDATE " + t + " SET t = 'updated', n = n + 1, b = NOT b WHERE id = 1",
                    "UPDATE " + t + " SET id = 10 WHERE id = 2", // a key change
                    "DELETE FROM " + t + " WHERE id = 3",
                    "BEGIN; UPDATE " + t + " SET i2 = 7 WHERE id = 1; DELETE FROM " + t + " WHERE id = 4; COMMIT");
        }
        Lsn end;
        try (Connection c = pg.connect("compat"); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT pg_current_wal_insert_lsn()")) {
            rs.next();
            end = Lsn.parse(rs.getString(1));
        }

        List<ChangeEvent<String, String>> debezium = debezium(dir.resolve("dbz"), 2 * 13); // per table 10 events and 3 tombstones
        millrace(dir.resolve("mr"), end);

        int compared = 0;
        for (String table : List.of("t_default", "t_full")) {
            List<ConsumerRecord<String, String>> ours = kafka.readCommitted("compat.public." + table);
            List<ChangeEvent<String, String>> theirs = debezium.stream().filter(e -> e.destination().equals("compat.public." + table)).toList();
            assertThat(ours).as("records of %s", table).hasSize(theirs.size());
            for (int i = 0; i < ours.size(); i++) {
                String where = table + " record " + i;
                ConsumerRecord<String, String> m = ours.get(i);
                ChangeEvent<String, String> d = theirs.get(i);
                assertThat(tree(m.key())).as("key of %s", where).isEqualTo(tree(d.key()));
                if (d.value() == null) {
                    assertThat(m.value()).as("%s: Debezium wrote a tombstone", where).isNull();
                    continue;
                }
                assertThat(m.value()).as("%s: Millrace wrote a tombstone, Debezium %s", where, d.value()).isNotNull();
                JsonNode mv = JSON.readTree(m.value());
                JsonNode dv = JSON.readTree(d.value());
                assertThat(mv.get("op")).as("op of %s", where).isEqualTo(dv.get("op"));
                assertThat(normalise(mv.get("before"))).as("before of %s", where).isEqualTo(normalise(dv.get("before")));
                assertThat(normalise(mv.get("after"))).as("after of %s", where).isEqualTo(normalise(dv.get("after")));
                for (String f : List.of("connector", "name", "db", "schema", "table", "txId", "lsn", "snapshot")) {
                    assertThat(mv.get("source").get(f)).as("source.%s of %s", f, where).isEqualTo(dv.get("source").get(f));
                }
                compared++;
            }
        }
        assertThat(compared).isEqualTo(2 * 10); // per table: 4 c, u, key change (d, c), d, then u and d in one transaction
    }

    private static JsonNode tree(String json) throws Exception {
        return json == null ? null : JSON.readTree(json);
    }

    /** timestamptz as an instant (fraction digits differ by design); everything else as it is. */
    private static JsonNode normalise(JsonNode row) {
        if (row == null || !row.isObject()) {
            return row;
        }
        ObjectNode copy = row.deepCopy();
        for (String f : TSTZ) {
            JsonNode v = copy.get(f);
            if (v != null && v.isTextual()) {
                copy.put(f, Instant.parse(v.asText()).toString());
            }
        }
        return copy;
    }

    private static void millrace(Path dir, Lsn end) throws Exception {
        java.nio.file.Files.createDirectories(dir);
        String yaml = String.join("\n",
                "name: compat",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: compat, user: postgres, slot: mr, publication: compat,",
                "         tables: [public.t_default, public.t_full], create_publication: false}",
                "snapshot: {mode: never}",
                "destinations:",
                "  - {name: bus, type: kafka, bootstrap_servers: \"" + kafka.bootstrapServers() + "\"}",
                "");
        Engine engine = new Engine(new ConfigLoader(System::getenv).parse(yaml, dir));
        AtomicReference<Throwable> error = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                engine.run();
            } catch (Throwable e) {
                error.set(e);
            }
        }, "compat-millrace");
        t.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (engine.stats() == null || engine.stats().durable().compareTo(end) < 0) {
            assertThat(t.isAlive()).as("Millrace stopped: %s", error.get()).isTrue();
            assertThat(System.nanoTime()).as("Millrace did not reach %s", end).isLessThan(deadline);
            Thread.sleep(50);
        }
        engine.stop();
        t.join(30_000);
    }

    /** Debezium's embedded engine on slot dbz until {@code records} records (tombstones included) arrived. */
    private static List<ChangeEvent<String, String>> debezium(Path dir, int records) throws Exception {
        java.nio.file.Files.createDirectories(dir);
        Properties p = new Properties();
        p.setProperty("name", "compat");
        p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        p.setProperty("offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore");
        p.setProperty("offset.storage.file.filename", dir.resolve("offsets.dat").toString());
        p.setProperty("offset.flush.interval.ms", "1000");
        p.setProperty("database.hostname", "127.0.0.1");
        p.setProperty("database.port", Integer.toString(pg.port()));
        p.setProperty("database.user", "postgres");
        p.setProperty("database.password", "");
        p.setProperty("database.dbname", "compat");
        p.setProperty("topic.prefix", "compat");
        p.setProperty("table.include.list", "public.t_default,public.t_full");
        p.setProperty("plugin.name", "pgoutput");
        p.setProperty("slot.name", "dbz");
        p.setProperty("publication.name", "compat");
        p.setProperty("publication.autocreate.mode", "disabled");
        p.setProperty("snapshot.mode", "no_data");
        p.setProperty("decimal.handling.mode", "string"); // deliberate: Millrace writes numerics as strings (docs/TYPES.md)
        p.setProperty("converter.schemas.enable", "false");
        List<ChangeEvent<String, String>> out = Collections.synchronizedList(new ArrayList<>());
        AtomicReference<Throwable> error = new AtomicReference<>();
        DebeziumEngine<ChangeEvent<String, String>> engine = DebeziumEngine.create(Json.class)
                .using(p)
                .notifying((batch, committer) -> {
                    for (ChangeEvent<String, String> r : batch) {
                        if (r.destination().startsWith("compat.public.")) {
                            out.add(r);
                        }
                        committer.markProcessed(r);
                    }
                    committer.markBatchFinished();
                })
                .using((success, message, err) -> {
                    if (!success) {
                        error.set(err == null ? new IllegalStateException(message) : err);
                    }
                })
                .build();
        ExecutorService ex = Executors.newSingleThreadExecutor();
        ex.execute(engine);
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (out.size() < records && System.nanoTime() < deadline && error.get() == null) {
                Thread.sleep(50);
            }
            Thread.sleep(500); // nothing more may come
        } finally {
            try {
                engine.close();
            } catch (IllegalStateException alreadyDown) {
                // it stopped by itself: the error below says why
            }
            ex.shutdown();
            ex.awaitTermination(60, TimeUnit.SECONDS);
        }
        if (error.get() != null) {
            throw new AssertionError("Debezium failed: " + error.get(), error.get());
        }
        assertThat(out).as("Debezium's records").hasSize(records);
        return new ArrayList<>(out);
    }
}
