package io.millrace.sink.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.MillraceException;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.schema.RelationInfo;
import io.millrace.sink.kafka.testing.KafkaBroker;
import io.millrace.testkit.Events;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class KafkaSinkIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final RelationInfo ITEMS = Events.rel(100, "shop.items", 'd', "*id:23", "name:25", "n:20");
    private static final RelationInfo LOG = Events.rel(101, "shop.log", 'n', "line:25");
    private static KafkaBroker kafka;

    @BeforeAll
    static void start() throws Exception {
        kafka = KafkaBroker.start();
    }

    @AfterAll
    static void stop() throws Exception {
        kafka.close();
    }

    private static KafkaSinkConfig config(String pipeline) {
        return KafkaSinkConfig.of("k", kafka.bootstrapServers(), "millrace." + pipeline, new SourceMeta(pipeline, "db"));
    }

    private static String json(String s) throws Exception {
        return s == null ? null : JSON.readTree(s).toString();
    }

    /** "key -> op after" lines, or "key -> tombstone". */
    private static List<String> summary(String topic) throws Exception {
        List<String> out = new ArrayList<>();
        for (ConsumerRecord<String, String> r : kafka.readCommitted(topic)) {
            if (r.value() == null) {
                out.add(r.key() + " -> tombstone");
                continue;
            }
            JsonNode v = JSON.readTree(r.value());
            out.add(r.key() + " -> " + v.get("op").asText() + " " + v.get("before") + " " + v.get("after"));
        }
        return out;
    }

    @Test
    void batchesLandInOrderWithKeysTombstonesAndTheCheckpointComesBack() throws Exception {
        Checkpoint last = Events.checkpoint("k", 300);
        try (KafkaSink sink = new KafkaSink(config("p1"))) {
            assertEquals(Optional.empty(), sink.open());
            Events ev = Events.transaction(100);
            sink.write(List.of(ev.insertText(ITEMS, 1, "a", 10), ev.insertText(ITEMS, 2, "b", 20), ev.insertText(LOG, "hello")), Events.checkpoint("k", 100));
            Events ev2 = Events.transaction(200);
            sink.write(List.of(ev2.updateText(ITEMS, null, 1, "a2", 11), ev2.deleteText(ITEMS, 2, null, null), ev2.updateText(ITEMS, new Object[] {1, null, null}, 3, "a3", 12)),
                    Events.checkpoint("k", 200));
            sink.write(List.of(Events.transaction(300).truncate(ITEMS)), last); // a truncate: op t, null key
            sink.write(List.of(), last.advance(io.millrace.core.Lsn.of(301), last.applied())); // the checkpoint alone
        }
        assertEquals(List.of(
                "{\"id\":1} -> c null {\"id\":1,\"name\":\"a\",\"n\":10}",
                "{\"id\":2} -> c null {\"id\":2,\"name\":\"b\",\"n\":20}",
                "{\"id\":1} -> u null {\"id\":1,\"name\":\"a2\",\"n\":11}",
                "{\"id\":2} -> d {\"id\":2,\"name\":null,\"n\":null} null",
                "{\"id\":2} -> tombstone",
                // a key change: delete + tombstone of the old key, create of the new one (as Debezium)
                "{\"id\":1} -> d {\"id\":1,\"name\":null,\"n\":null} null",
                "{\"id\":1} -> tombstone",
                "{\"id\":3} -> c null {\"id\":3,\"name\":\"a3\",\"n\":12}",
                "null -> t null null"), summary("p1.shop.items"));
        List<ConsumerRecord<String, String>> log = kafka.readCommitted("p1.shop.log");
        assertEquals(1, log.size());
        assertNull(log.get(0).key(), "a table without a key: records without a key");
        JsonNode v = JSON.readTree(log.get(0).value());
        assertEquals("p1", v.at("/source/name").asText());
        assertEquals("log", v.at("/source/table").asText());
        assertEquals(100, v.at("/source/commit_lsn").asLong());

        try (KafkaSink again = new KafkaSink(config("p1"))) {
            Checkpoint cp = again.open().orElseThrow();
            assertEquals(301, cp.flushLsn().value());
            assertEquals(last.applied(), cp.applied());
            assertEquals(last.identity(), cp.identity());
        }
        // the checkpoint topic is compacted, keyed by the transactional id
        assertEquals("millrace.p1", kafka.readCommitted(KafkaSinkConfig.DEFAULT_CHECKPOINT_TOPIC).stream()
                .filter(r -> r.key().equals("millrace.p1")).findFirst().orElseThrow().key());
    }

    @Test
    void withoutTombstonesAndTruncatesOnlyTheEventsLand() throws Exception {
        KafkaSinkConfig c = config("p2").withTombstones(false);
        c = new KafkaSinkConfig(c.name(), c.bootstrapServers(), "cdc-{table}", c.topicPrefix(), false, false, 2, (short) 1,
                "p2.checkpoints", c.transactionalId(), Map.of("compression.type", "zstd"), c.meta());
        try (KafkaSink sink = new KafkaSink(c)) {
            sink.open();
            Events ev = Events.transaction(100);
            sink.write(List.of(ev.insertText(ITEMS, 1, "a", 10), ev.deleteText(ITEMS, 1, null, null), ev.truncate(ITEMS)), Events.checkpoint("k", 100));
        }
        assertEquals(List.of("{\"id\":1} -> c null {\"id\":1,\"name\":\"a\",\"n\":10}", "{\"id\":1} -> d {\"id\":1,\"name\":null,\"n\":null} null"),
                summary("cdc-items"));
        assertTrue(kafka.topics().contains("p2.checkpoints"));
    }

    /**
     * replication_factor 3 on a cluster of one broker: refused when the sink opens (retried: the count is of the brokers
     * up), naming the setting and the broker count (before, the start ran and the first table topic failed in the middle of the stream, with a hint about
     * permissions).
     */
    @Test
    void aReplicationFactorAboveTheBrokerCountIsRefusedAtOpen() {
        KafkaSinkConfig c = config("p6");
        KafkaSinkConfig three = new KafkaSinkConfig(c.name(), c.bootstrapServers(), c.topicFormat(), c.topicPrefix(), c.tombstones(),
                c.truncates(), c.partitions(), (short) 3, c.checkpointTopic(), c.transactionalId(), c.producer(), c.meta());
        try (KafkaSink sink = new KafkaSink(three)) {
            MillraceException e = assertThrows(MillraceException.class, sink::open);
            assertEquals(MillraceException.Kind.CONNECTION, e.kind(), "retried: a broker may be down for a while");
            assertTrue(e.getMessage().contains("replication_factor 3 is more than the 1 broker(s)"), e.getMessage());
        }
    }

    /**
     * The checkpoint names the tables this destination holds; with topic_prefix changed none of their topics exists under
     * the new naming, and the new topics would hold only the changes from here on: refused at open, naming the way back and
     * the way forward (before, the old topics just stopped; found by a user). Back to the old prefix, it opens.
     */
    @Test
    void aCheckpointWhoseTablesHaveNoTopicUnderTheNamingNowIsRefused() throws Exception {
        KafkaSinkConfig c = config("p7");
        Checkpoint held = Events.checkpoint("k", 100).withTables(new java.util.TreeMap<>(Map.of(100, ITEMS.table())));
        try (KafkaSink sink = new KafkaSink(c)) {
            sink.open();
            sink.write(List.of(Events.transaction(100).insertText(ITEMS, 1, "a", 10)), held);
        }
        KafkaSinkConfig renamed = new KafkaSinkConfig(c.name(), c.bootstrapServers(), c.topicFormat(), "p7_new", c.tombstones(), c.truncates(),
                c.partitions(), c.replication(), c.checkpointTopic(), c.transactionalId(), c.producer(), c.meta());
        try (KafkaSink sink = new KafkaSink(renamed)) {
            MillraceException e = assertThrows(MillraceException.class, sink::open);
            assertEquals(MillraceException.Kind.CONFIG, e.kind());
            assertTrue(e.getMessage().contains("none of their topics exists under the naming configured now (e.g. p7_new.shop.items)"),
                    e.getMessage());
        }
        try (KafkaSink sink = new KafkaSink(c)) {
            assertEquals(Optional.of(held), sink.open());
        }
    }

    /**
     * A topic pattern without {schema}: two tables of one name in two schemas would share a topic, their records mixed under
     * colliding keys (a user's {@code {prefix}.{table}} did so silently). Refused, nothing written; the same table under
     * a new name, or dropped and created again, keeps a topic as before.
     */
    @Test
    void twoTablesTheTopicPatternNamesAlikeAreRefused() throws Exception {
        KafkaSinkConfig c = config("p8");
        KafkaSinkConfig byTable = new KafkaSinkConfig(c.name(), c.bootstrapServers(), "{prefix}.{table}", c.topicPrefix(), c.tombstones(),
                c.truncates(), c.partitions(), c.replication(), c.checkpointTopic(), c.transactionalId(), c.producer(), c.meta());
        RelationInfo otherItems = Events.rel(102, "other.items", 'd', "*id:23", "name:25", "n:20");
        RelationInfo recreated = Events.rel(103, "shop.items", 'd', "*id:23", "name:25", "n:20");
        try (KafkaSink sink = new KafkaSink(byTable)) {
            sink.open();
            sink.write(List.of(Events.transaction(100).insertText(ITEMS, 1, "a", 10)), Events.checkpoint("k", 100));
            sink.write(List.of(Events.transaction(110).insertText(recreated, 2, "b", 20)), Events.checkpoint("k", 110));
            MillraceException e = assertThrows(MillraceException.class,
                    () -> sink.write(List.of(Events.transaction(120).insertText(otherItems, 1, "clash", 1)), Events.checkpoint("k", 120)));
            assertEquals(MillraceException.Kind.CONFIG, e.kind());
            assertTrue(e.getMessage().contains("names shop.items and other.items alike, p8.items"), e.getMessage());
        }
        assertEquals(List.of("{\"id\":1} -> c null {\"id\":1,\"name\":\"a\",\"n\":10}", "{\"id\":2} -> c null {\"id\":2,\"name\":\"b\",\"n\":20}"),
                summary("p8.items"));
    }

    @Test
    void aSecondSinkWithTheSameIdentityFencesTheFirst() throws Exception {
        try (KafkaSink first = new KafkaSink(config("p3"))) {
            first.open();
            first.write(List.of(Events.transaction(100).insertText(ITEMS, 1, "first", 1)), Events.checkpoint("k", 100));
            try (KafkaSink second = new KafkaSink(config("p3"))) {
                assertEquals(100, second.open().orElseThrow().flushLsn().value());
                MillraceException e = assertThrows(MillraceException.class,
                        () -> first.write(List.of(Events.transaction(200).insertText(ITEMS, 2, "stale", 2)), Events.checkpoint("k", 200)));
                assertEquals(MillraceException.Kind.IDENTITY, e.kind());
                assertTrue(e.getMessage().contains("another Millrace engine took over this pipeline"), e.getMessage());
                second.write(List.of(Events.transaction(200).insertText(ITEMS, 3, "second", 3)), Events.checkpoint("k", 200));
            }
        }
        assertEquals(List.of("{\"id\":1} -> c null {\"id\":1,\"name\":\"first\",\"n\":1}", "{\"id\":3} -> c null {\"id\":3,\"name\":\"second\",\"n\":3}"),
                summary("p3.shop.items"));
    }

    /**
     * The checkpoint topic is shared by every pipeline writing to these brokers. Another pipeline killed between its
     * checkpoint record and its commit leaves a transaction open on it until the broker times it out, and a
     * {@code read_committed} reader stops at that transaction's first record (the last stable offset): this pipeline's
     * checkpoints written after it were not seen, so its engine resumed from an older checkpoint, found the slot
     * confirmed past it and refused to start (IDENTITY: "the slot was re-created or advanced by another process").
     * Now open() waits until the open transactions before the topic's end are over.
     */
    @Test
    void anotherPipelinesOpenTransactionOnTheCheckpointTopicDoesNotHideOurLatestCheckpoint() throws Exception {
        KafkaSink sink = new KafkaSink(config("p9"));
        sink.open();
        sink.write(List.of(Events.transaction(100).insertText(ITEMS, 1, "a", 1)), Events.checkpoint("k", 100));
        Map<String, Object> props = Map.of("bootstrap.servers", kafka.bootstrapServers(), "transactional.id", "millrace.killed-mid-batch",
                "key.serializer", org.apache.kafka.common.serialization.StringSerializer.class.getName(),
                "value.serializer", org.apache.kafka.common.serialization.StringSerializer.class.getName());
        try (org.apache.kafka.clients.producer.KafkaProducer<String, String> other = new org.apache.kafka.clients.producer.KafkaProducer<>(props)) {
            other.initTransactions();
            other.beginTransaction();
            other.send(new org.apache.kafka.clients.producer.ProducerRecord<>(KafkaSinkConfig.DEFAULT_CHECKPOINT_TOPIC,
                    "millrace.killed-mid-batch", "{}")).get();
            sink.write(List.of(Events.transaction(200).insertText(ITEMS, 2, "b", 2)), Events.checkpoint("k", 200));
            sink.close();
            java.util.concurrent.CompletableFuture<Optional<Checkpoint>> opened = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try (KafkaSink again = new KafkaSink(config("p9"))) {
                    return again.open();
                }
            });
            Thread.sleep(1_500);
            assertFalse(opened.isDone(), "open() read the checkpoint topic while a transaction before its end was open: "
                    + (opened.isDone() ? opened.get() : ""));
            other.abortTransaction(); // what the broker does at the killed producer's transaction timeout
            assertEquals(200, opened.get(30, java.util.concurrent.TimeUnit.SECONDS).orElseThrow().flushLsn().value(),
                    "the checkpoint committed after the other pipeline's open transaction began");
        }
    }

    @Test
    void aFailedWriteIsAbortedAndTheCheckpointDoesNotAdvance() throws Exception {
        KafkaSinkConfig c = config("p4").withProducer(Map.of("max.request.size", "20000"));
        try (KafkaSink sink = new KafkaSink(c)) {
            sink.open();
            sink.write(List.of(Events.transaction(100).insertText(ITEMS, 1, "ok", 1)), Events.checkpoint("k", 100));
            Events ev = Events.transaction(200);
            List<ChangeEvent> batch = List.of(ev.insertText(ITEMS, 2, "fits", 2), ev.insertText(ITEMS, 3, "x".repeat(50_000), 3));
            MillraceException e = assertThrows(MillraceException.class, () -> sink.write(batch, Events.checkpoint("k", 200)));
            assertEquals(MillraceException.Kind.SINK, e.kind());
            assertTrue(e.getMessage().contains("the checkpoint has not advanced"), e.getMessage());
            // the sink goes on after an aborted transaction
            sink.write(List.of(Events.transaction(300).insertText(ITEMS, 4, "after", 4)), Events.checkpoint("k", 300));
        }
        try (KafkaSink again = new KafkaSink(c)) {
            assertEquals(300, again.open().orElseThrow().flushLsn().value());
        }
        List<String> rows = summary("p4.shop.items");
        assertEquals(2, rows.size(), rows.toString());
        assertTrue(rows.get(0).contains("\"ok\"") && rows.get(1).contains("\"after\""), rows.toString());
    }

    /**
     * Brokers that go away abruptly (a SIGKILL: every connection dropped) while a batch goes to a topic this producer has
     * not written to yet: each record's send waits {@code max.block.ms} for the topic's metadata and fails without
     * throwing, and the next waits again. Before, the writer was held N times that wait for a batch of N records (a
     * user's 50-record batch: 5 minutes, the status "streaming" all along), and the error said only "Cannot execute
     * transactional method because we are in an error state". Now the batch fails at the first such send, naming it,
     * retryable, and nothing of it is visible.
     */
    @Test
    void brokersThatWentAwayFailTheBatchAtItsFirstSendNotOncePerRecord() throws Exception {
        try (KafkaBroker gone = KafkaBroker.startBehindProxy()) {
            KafkaSinkConfig c = KafkaSinkConfig.of("k", gone.bootstrapServers(), "millrace.p9", new SourceMeta("p9", "db"))
                    .withProducer(Map.of("max.block.ms", "1000"));
            RelationInfo other = Events.rel(102, "shop.other", 'd', "*id:23", "name:25");
            try (org.apache.kafka.clients.admin.Admin admin = org.apache.kafka.clients.admin.Admin.create(Map.of("bootstrap.servers",
                    gone.bootstrapServers()))) {
                admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic("p9.shop.other", 1, (short) 1))).all().get();
            }
            try (KafkaSink sink = new KafkaSink(c)) {
                sink.open(); // lists the topics: p9.shop.other exists, so the write creates none
                sink.write(List.of(Events.transaction(100).insertText(ITEMS, 1, "ok", 1)), Events.checkpoint("k", 100));
                gone.cutOff();
                Events ev = Events.transaction(200);
                List<ChangeEvent> batch = new ArrayList<>();
                for (int i = 1; i <= 30; i++) {
                    batch.add(ev.insertText(other, i, "row " + i));
                }
                long t0 = System.nanoTime();
                MillraceException e = assertThrows(MillraceException.class, () -> sink.write(batch, Events.checkpoint("k", 200)));
                long seconds = (System.nanoTime() - t0) / 1_000_000_000L;
                assertTrue(seconds < 20, "the batch failed after " + seconds + " s: one wait of max.block.ms per record is 30 s and more");
                assertEquals(MillraceException.Kind.CONNECTION, e.kind(), e.getMessage());
                assertTrue(e.getMessage().contains("p9.shop.other") && e.getMessage().contains("metadata"), e.getMessage());
            }
            gone.reconnect();
            try (KafkaSink again = new KafkaSink(c)) {
                assertEquals(100, again.open().orElseThrow().flushLsn().value(), "the failed batch's checkpoint is not there");
            }
            assertEquals(0, gone.countCommitted("p9.shop.other"), "nothing of the failed batch is visible");
        }
    }

    /**
     * A commit refused as InvalidTxnStateException that had in fact committed (a retried EndTxn answered after the first
     * one committed): the new producer that takes over must not write the batch again, or its records are there twice.
     * The batch's checkpoint record carries the write's id (a header), and the checkpoint topic says whether it landed.
     */
    @Test
    void aRefusedCommitThatHadCommittedIsNotWrittenAgain() throws Exception {
        KafkaSinkConfig c = config("p10");
        try (KafkaSink sink = new KafkaSink(c)) {
            sink.open();
            sink.write(List.of(Events.transaction(100).insertText(ITEMS, 1, "first", 1)), Events.checkpoint("k", 100));
            int[] refused = {0};
            sink.commitAnswered = () -> {
                if (refused[0]++ == 0) {
                    throw new org.apache.kafka.common.errors.InvalidTxnStateException("the broker answered the retried commit so");
                }
            };
            Events ev = Events.transaction(200);
            sink.write(List.of(ev.insertText(ITEMS, 2, "once", 2), ev.insertText(ITEMS, 3, "once", 3)), Events.checkpoint("k", 200));
            assertEquals(1, refused[0], "the commit was answered once: the batch was not written again");
            sink.commitAnswered = () -> { };
            sink.write(List.of(Events.transaction(300).insertText(ITEMS, 4, "after", 4)), Events.checkpoint("k", 300));
        }
        try (KafkaSink again = new KafkaSink(c)) {
            assertEquals(300, again.open().orElseThrow().flushLsn().value());
        }
        List<String> rows = summary("p10.shop.items");
        assertEquals(4, rows.size(), "each row once: " + rows);
    }

    @Test
    void anUnreachableBrokerIsAClearError() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        // max.block.ms at its default (60 s): the attempt fails at the TCP check, not after the clients' wait
        KafkaSinkConfig c = KafkaSinkConfig.of("k", "127.0.0.1:" + port, "millrace.none", new SourceMeta("none", "db"));
        try (KafkaSink sink = new KafkaSink(c)) {
            long t0 = System.nanoTime();
            MillraceException e = assertThrows(MillraceException.class, sink::open);
            assertTrue(System.nanoTime() - t0 < 30_000_000_000L, "an attempt against a broker that is down ends in seconds");
            assertEquals(MillraceException.Kind.CONNECTION, e.kind(), "retryable: the brokers may come back");
            assertTrue(e.getMessage().contains("cannot reach Kafka at 127.0.0.1:" + port), e.getMessage());
            assertTrue(e.getMessage().contains("bootstrap_servers"), e.getMessage());
        }
    }

    /**
     * bootstrap_servers naming a port where something that is not Kafka listens (a user's typo: PostgreSQL's port): the
     * connection is accepted and never answered. The attempt ends in seconds, retryable, and says to check the port
     * (before: 60 s per attempt, and a message that the brokers were not reachable).
     */
    @Test
    void aPortThatIsNotAKafkaListenerIsNamedInSeconds() throws Exception {
        try (ServerSocket silent = new ServerSocket(0)) { // accepts (the backlog completes the handshake) and never answers
            KafkaSinkConfig c = KafkaSinkConfig.of("k", "127.0.0.1:" + silent.getLocalPort(), "millrace.silent", new SourceMeta("none", "db"));
            try (KafkaSink sink = new KafkaSink(c)) {
                long t0 = System.nanoTime();
                MillraceException e = assertThrows(MillraceException.class, sink::open);
                assertTrue(System.nanoTime() - t0 < 40_000_000_000L, "ends in seconds, not the clients' 60 s");
                assertEquals(MillraceException.Kind.CONNECTION, e.kind(), e.getMessage());
                assertTrue(e.getMessage().contains("gave no answer as a Kafka broker within 15 s; check that the port is the brokers'"
                        + " listener"), e.getMessage());
            }
        }
    }

    @Test
    void settingsThatWouldBreakExactlyOnceAreRefused() {
        MillraceException e = assertThrows(MillraceException.class, () -> config("p5").withProducer(Map.of("acks", "1")));
        assertEquals(MillraceException.Kind.CONFIG, e.kind());
        assertTrue(e.getMessage().contains("'acks'"), e.getMessage());
        assertFalse(Topics.valid("a b"));
        KafkaSinkConfig c = config("p5");
        MillraceException prefix = assertThrows(MillraceException.class, () -> new KafkaSinkConfig(c.name(), c.bootstrapServers(),
                c.topicFormat(), "shop/x", true, true, 1, (short) 1, null, null, Map.of(), c.meta()));
        assertEquals(MillraceException.Kind.CONFIG, prefix.kind());
        assertTrue(prefix.getMessage().contains("'topic_prefix' 'shop/x' is not valid in a topic name") && prefix.getMessage()
                .contains("topic_prefix: shop_x"), prefix.getMessage());
        assertEquals("p.my_schema.t_1", Topics.name(KafkaSinkConfig.DEFAULT_TOPIC_FORMAT, "p", new io.millrace.core.schema.TableRef("my schema", "t$1")));
    }
}
