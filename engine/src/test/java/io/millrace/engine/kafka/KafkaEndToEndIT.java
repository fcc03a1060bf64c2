package io.millrace.engine.kafka;

import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import io.millrace.sink.kafka.testing.KafkaBroker;
import io.millrace.sink.kafka.testing.TopicState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Snapshot and streaming of a mixed workload into a real Kafka broker: a read_committed consumer that
 * applies the events per key rebuilds exactly the source's rows, and sees each change once and in
 * order (INV: ORDER, INV: RESUME — versions and positions checked by {@link TopicState}).
 */
class KafkaEndToEndIT {
    private static EmbeddedPg pg;
    private static KafkaBroker kafka;

    @BeforeAll
    static void start() throws Exception {
        kafka = KafkaBroker.start();
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase("kt");
        pg.execute("kt", "CREATE TABLE public.accounts (id int PRIMARY KEY, owner text, balance numeric(12,2), version int NOT NULL,"
                        + " note text)",
                "INSERT INTO public.accounts SELECT g, 'o' || g, g * 1.5, 0, CASE WHEN g % 500 = 0"
                        + " THEN (SELECT string_agg(md5(g::text || x::text), '') FROM generate_series(1, 200) x) END"
                        + " FROM generate_series(1, 10000) g",
                "CREATE TABLE public.lines (order_id bigint, line int, sku text, version int NOT NULL, PRIMARY KEY (order_id, line))",
                "INSERT INTO public.lines SELECT g / 4, g % 4, 'sku' || g, 0 FROM generate_series(1, 2000) g");
    }

    @AfterAll
    static void stop() throws Exception {
        pg.close();
        kafka.close();
    }

    @Test
    void snapshotAndStreamingLandExactlyOnceInKafka(@TempDir Path dir) throws Exception {
        String yaml = String.join("\n",
                "name: kt",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: kt, user: postgres, slot: kt, publication: kt,",
                "         tables: [public.accounts, public.lines]}",
                "destinations:",
                "  - name: bus",
                "    type: kafka",
                "    bootstrap_servers: " + kafka.bootstrapServers(),
                "    producer: {compression.type: lz4, linger.ms: 2}",
                "");
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(Duration.ofSeconds(90))) {
            pg.execute("kt",
                    "UPDATE public.accounts SET balance = balance + 1, version = version + 1 WHERE id % 10 = 0", // TOASTed note unchanged
                    "DELETE FROM public.accounts WHERE id % 7 = 0",
                    "INSERT INTO public.accounts VALUES (20000, 'late', 9.99, 0, NULL)",
                    "UPDATE public.accounts SET id = 30000, version = version + 1 WHERE id = 1", // key change
                    "BEGIN; UPDATE public.accounts SET version = version + 1 WHERE id BETWEEN 100 AND 120;"
                            + " UPDATE public.accounts SET version = version + 1, owner = 'twice' WHERE id BETWEEN 100 AND 110; COMMIT",
                    "UPDATE public.lines SET sku = sku || '!', version = version + 1 WHERE line = 2",
                    "DELETE FROM public.lines WHERE order_id < 10");
            awaitEqual("accounts", "SELECT json_build_object('id', id)::text, owner, balance::text, version, md5(note) FROM public.accounts",
                    "kt.public.accounts", "owner", "balance", "version", "note");
            awaitEqual("lines", "SELECT json_build_object('order_id', order_id, 'line', line)::text, sku, version FROM public.lines",
                    "kt.public.lines", "sku", "version");
        }
        TopicState accounts = TopicState.rebuild(kafka.readCommitted("kt.public.accounts"), "version");
        assertThat(accounts.problems()).isEmpty();
        // 10000 read + 1000 updated + 1428 deleted + 1 insert + key change (delete + create) + 18 + 10 updates
        // (105, 112 and 119 were deleted before the transaction)
        assertThat(accounts.events()).isEqualTo(10000 + 1000 + 1428 + 1 + 2 + 18 + 10);
        List<ConsumerRecord<String, String>> tombstones = kafka.readCommitted("kt.public.accounts").stream().filter(r -> r.value() == null).toList();
        assertThat(tombstones).hasSize(1428 + 1);
        assertThat(kafka.topics()).contains("millrace.checkpoints");
    }

    /**
     * A REPLICA IDENTITY FULL table with a TOASTed column an update leaves unchanged: PostgreSQL sends the whole old
     * row, and the value goes into {@code after} as Debezium puts it (docs/EVENTS.md), in Kafka and in jsonl files —
     * never the placeholder while {@code before} holds the value.
     */
    @Test
    void anUnchangedToastValueOfAFullIdentityTableIsCopiedFromBeforeInKafkaAndJsonl(@TempDir Path dir) throws Exception {
        pg.execute("kt", "CREATE TABLE public.docs (id int PRIMARY KEY, v int NOT NULL, body text)",
                "ALTER TABLE public.docs REPLICA IDENTITY FULL",
                "ALTER TABLE public.docs ALTER COLUMN body SET STORAGE EXTERNAL", // out of line, uncompressed: TOASTed for sure
                "INSERT INTO public.docs VALUES (1, 0, repeat('toasted body ', 2000))");
        String yaml = String.join("\n",
                "name: kd",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: kt, user: postgres, slot: kd, publication: kd,",
                "         tables: [public.docs]}",
                "destinations:",
                "  - {name: bus, type: kafka, bootstrap_servers: '" + kafka.bootstrapServers() + "'}",
                "  - {name: files, type: jsonl, directory: '" + dir.resolve("events") + "'}",
                "");
        String body = "toasted body ".repeat(2000);
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(Duration.ofSeconds(90))) {
            pg.execute("kt", "UPDATE public.docs SET v = 1 WHERE id = 1");
            List<com.fasterxml.jackson.databind.JsonNode> jsonl = io.millrace.engine.e2e.E2e.awaitEvent(dir.resolve("events"),
                    n -> "u".equals(n.path("op").asText()), "the update in the jsonl files", Duration.ofSeconds(60));
            com.fasterxml.jackson.databind.JsonNode u = jsonl.stream().filter(n -> "u".equals(n.path("op").asText())).findFirst().orElseThrow();
            assertThat(u.path("before").path("body").asText().equals(body)).as("jsonl before.body").isTrue();
            assertThat(u.path("after").path("body").asText().equals(body)).as("jsonl after.body is the value, not "
                    + io.millrace.engine.e2e.E2e.shorten(u.path("after").path("body").asText())).isTrue();
            assertThat(u.path("after").path("v").asInt()).isEqualTo(1);

            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            com.fasterxml.jackson.databind.JsonNode k = null;
            while (k == null && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : kafka.readCommitted("kd.public.docs")) {
                    com.fasterxml.jackson.databind.JsonNode n = r.value() == null ? null : io.millrace.engine.e2e.E2e.JSON.readTree(r.value());
                    if (n != null && "u".equals(n.path("op").asText())) {
                        k = n;
                    }
                }
                Thread.sleep(200);
            }
            assertThat(k).as("the update in Kafka").isNotNull();
            assertThat(k.path("before").path("body").asText().equals(body)).as("Kafka before.body").isTrue();
            assertThat(k.path("after").path("body").asText().equals(body)).as("Kafka after.body is the value, not "
                    + io.millrace.engine.e2e.E2e.shorten(k.path("after").path("body").asText())).isTrue();
        }
    }

    /** Polls until the state rebuilt from {@code topic} equals the source query's rows (key, then the columns). */
    private static void awaitEqual(String what, String sql, String topic, String... columns) throws Exception {
        Map<String, String> source = new TreeMap<>();
        try (Connection c = pg.connect("kt"); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                StringBuilder sb = new StringBuilder(rs.getString(1).replace(" ", "")).append(" ->");
                for (int i = 0; i < columns.length; i++) {
                    sb.append(' ').append(columns[i]).append('=').append(rs.getString(i + 2));
                }
                source.put(rs.getString(1).replace(" ", ""), sb.toString());
            }
        }
        List<String> expected = new ArrayList<>(source.values());
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        List<String> got;
        while (true) {
            TopicState st = TopicState.rebuild(kafka.readCommitted(topic), columns[columns.length - 1].equals("version") ? "version" : null);
            got = lines(st, columns);
            if (got.equals(expected) || System.nanoTime() > deadline) {
                break;
            }
            Thread.sleep(500);
        }
        assertThat(got).as(what).isEqualTo(expected);
    }

    /** The rebuilt rows in the source query's form: text columns as they are, the note as its md5. */
    private static List<String> lines(TopicState st, String... columns) throws Exception {
        List<String> out = new ArrayList<>();
        for (var e : st.rows().entrySet()) {
            StringBuilder sb = new StringBuilder(e.getKey()).append(" ->");
            for (String c : columns) {
                var n = e.getValue().get(c);
                String v = n == null || n.isNull() ? null : n.asText();
                if (c.equals("note") && v != null) {
                    v = md5(v);
                }
                sb.append(' ').append(c).append('=').append(v);
            }
            out.add(sb.toString());
        }
        return out;
    }

    private static String md5(String s) throws Exception {
        byte[] d = java.security.MessageDigest.getInstance("MD5").digest(s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return java.util.HexFormat.of().formatHex(d);
    }
}
