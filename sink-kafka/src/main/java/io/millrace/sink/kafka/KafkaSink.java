package io.millrace.sink.kafka;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.CheckpointJson;
import io.millrace.core.change.Op;
import io.millrace.core.event.EnvelopeWriter;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.fault.Faults;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.sink.Sink;
import io.millrace.core.sink.SinkLifecycle;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The {@code kafka} destination, exactly once for {@code read_committed} consumers.
 *
 * <p><b>Records.</b> One topic per table ({@link KafkaSinkConfig#topicFormat()}); the key is the JSON of
 * the replica identity columns ({@code {"id":1}}, {@code null} for a table without one), the value the
 * Debezium-compatible envelope of {@link EnvelopeWriter} (docs/EVENTS.md). A delete is followed by a
 * tombstone (same key, {@code null} value) when enabled. An update that changes the key becomes, as in
 * Debezium, a delete of the old key (plus its tombstone) and a create of the new one, so that the old
 * key's history ends and compaction can drop it.
 *
 * <p><b>Exactly once (INV: DURABLE, INV: RESUME).</b> Each {@link #write} is one Kafka transaction of a
 * transactional, idempotent producer ({@code acks=all}): the batch's records and one record holding the
 * checkpoint ({@link CheckpointJson}) in a compacted checkpoint topic, keyed by the transactional id.
 * The write returns only after {@code commitTransaction}; a failure aborts the transaction, so neither
 * records nor checkpoint of that batch become visible to {@code read_committed} readers. {@link #open()}
 * calls {@code initTransactions}, which aborts the transaction a killed predecessor left open, and then
 * reads the checkpoint topic to its end with {@code read_committed}: the checkpoint found is exactly the
 * one committed with the last visible batch.
 *
 * <p><b>Fencing (INV: IDENTITY).</b> The transactional id is derived from the pipeline and destination;
 * a second engine on the same pipeline bumps the producer epoch and the first one's next write fails
 * with a clear error instead of interleaving records.
 *
 * <p><b>Errors.</b> Brokers that cannot be reached, and writes that fail for a reason Kafka calls retriable (time-outs,
 * lost connections, leader changes), are {@link Kind#CONNECTION}: the engine stops and its supervisor starts it
 * again with backoff, from the checkpoint. Records the brokers refuse are {@link Kind#SINK}; a fenced producer is
 * {@link Kind#IDENTITY}. Nothing of a failed batch becomes visible to {@code read_committed} readers.
 *
 * <p><b>Lifecycle.</b> {@code NEW → OPEN → (FAILED) → CLOSED}, changed by compare-and-set. One writer
 * thread owns the sink (see {@link Sink}).
 */
public final class KafkaSink implements Sink {
    private static final Logger LOG = LoggerFactory.getLogger(KafkaSink.class);
    private static final JsonFactory JSON = JsonFactory.builder().build();
    private static final long DEFAULT_MAX_BLOCK_MS = 60_000;
    /**
     * How long the first call to the brokers may take, unless {@code max.block.ms} is set: a server on the port that is
     * not a Kafka listener accepts the connection and never answers, and the clients' 60 s per attempt read as a hang.
     */
    private static final long FIRST_ANSWER_MS = 15_000;

    private final KafkaSinkConfig config;
    private final EnvelopeWriter envelope;
    private final SinkLifecycle state;
    private final byte[] checkpointKey;
    private final long timeoutMs;

    // Owned by the writer thread.
    private Admin admin;
    private Producer<byte[], byte[]> producer;
    private final Set<String> topics = new HashSet<>();
    private final Map<RelationInfo, String> topicOf = new IdentityHashMap<>();
    /** The table (source name and oid) each topic of this run carries: two tables the topic pattern names alike are refused. */
    private final Map<String, RelationInfo> tableOfTopic = new java.util.HashMap<>();
    /** The schema changes written by this sink (to {@link #schemaTopic()}). */
    private final io.millrace.core.event.SchemaChanges schemaChanges = new io.millrace.core.event.SchemaChanges();
    private final ByteArrayBuilder buffer = new ByteArrayBuilder(1024);
    private final JsonGenerator gen;
    private long records;

    public KafkaSink(KafkaSinkConfig config) {
        this(config, new EnvelopeWriter(config.meta()));
    }

    /** With a given envelope writer (tests pin its clock and version). */
    public KafkaSink(KafkaSinkConfig config, EnvelopeWriter envelope) {
        this.config = Objects.requireNonNull(config, "config");
        this.envelope = Objects.requireNonNull(envelope, "envelope");
        this.state = new SinkLifecycle(config.name());
        this.checkpointKey = config.transactionalId().getBytes(StandardCharsets.UTF_8);
        this.timeoutMs = parseLong(config.producer().get(ProducerConfig.MAX_BLOCK_MS_CONFIG), DEFAULT_MAX_BLOCK_MS);
        try {
            this.gen = JSON.createGenerator(buffer);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        gen.setRootValueSeparator(null);
    }

    @Override
    public String name() {
        return config.name();
    }

    @Override
    public boolean transactional() {
        return true;
    }

    /**
     * The topic of schema-change events (docs/EVENTS.md): {@code <prefix>.schema_changes}, one partition, keyed by the
     * table, written in the batch's transaction before the first change in the new shape.
     */
    public String schemaTopic() {
        return Topics.name("{prefix}.schema_changes", config.topicPrefix(), new io.millrace.core.schema.TableRef("x", "x"));
    }

    /** The topic that receives the changes of {@code table}. */
    public String topic(io.millrace.core.schema.TableRef table) {
        return Topics.name(config.topicFormat(), config.topicPrefix(), table);
    }

    @Override
    public Optional<Checkpoint> open() {
        state.open();
        try {
            answers();
            createTopics(List.of(config.checkpointTopic()), true);
            producer = new KafkaProducer<>(producerProps());
            try {
                // INV: RESUME — fences an older producer of this id and aborts the transaction it left open
                producer.initTransactions();
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                throw unreachable("initialising the transactional producer", e);
            }
            Optional<Checkpoint> cp = readCheckpoint();
            cp.ifPresent(this::topicsOfHeldTables);
            LOG.info("destination '{}': Kafka at {}, transactional id '{}', checkpoint {}", config.name(), config.bootstrapServers(),
                    config.transactionalId(), cp.map(c -> "at " + c.applied()).orElse("none"));
            return cp;
        } catch (RuntimeException e) {
            state.openFailed();
            closeClients();
            if (e instanceof MillraceException m) {
                throw m;
            }
            if (fenced(e)) {
                throw fencedError(e);
            }
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': cannot open Kafka at " + config.bootstrapServers()
                    + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            state.openFailed();
            closeClients();
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': interrupted while opening", e);
        }
    }

    @Override
    public void write(List<ChangeEvent> events, Checkpoint checkpoint) {
        state.requireOpen();
        Objects.requireNonNull(checkpoint, "checkpoint");
        long start = System.nanoTime();
        io.millrace.core.schema.SchemaChange[] announce = null; // the schema-change event due before each event, if any
        for (int i = 0; i < events.size(); i++) {
            io.millrace.core.schema.SchemaChange c = schemaChanges.due(events.get(i));
            if (c != null) {
                if (announce == null) {
                    announce = new io.millrace.core.schema.SchemaChange[events.size()];
                }
                announce[i] = c;
            }
        }
        try {
            if (announce != null) {
                createTopics(List.of(schemaTopic()), false);
            }
            ensureTopics(events);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': interrupted while creating topics", e);
        }
        // names this batch's checkpoint record (a header), so that after a refused commit a read can tell whether it landed
        byte[] batchId = java.util.UUID.randomUUID().toString().getBytes(StandardCharsets.UTF_8);
        for (int attempt = 1; ; attempt++) {
            boolean begun = false;
            boolean committing = false;
            try {
                producer.beginTransaction();
                begun = true;
                for (int i = 0; i < events.size(); i++) {
                    ChangeEvent e = events.get(i);
                    if (announce != null && announce[i] != null) {
                        io.millrace.core.schema.SchemaChange c = announce[i];
                        send(schemaTopic(), c.table().sql().getBytes(StandardCharsets.UTF_8), envelope.schemaChangeBytes(c, e));
                    }
                    send(e);
                }
                failedAtOnce(producer.send(new ProducerRecord<>(config.checkpointTopic(), null, checkpointKey,
                        CheckpointJson.write(checkpoint).getBytes(StandardCharsets.UTF_8),
                        List.of(new org.apache.kafka.common.header.internals.RecordHeader(BATCH_HEADER, batchId)))));
                Faults.hit(FaultPoint.SINK_KAFKA_BEFORE_COMMIT);
                committing = true;
                producer.commitTransaction(); // INV: DURABLE — records and checkpoint become visible together, only now
                commitAnswered.run();
                break;
            } catch (RuntimeException e) {
                if (attempt == 1 && invalidTxnState(e)) {
                    renewProducer(e, events.size());
                    // A commit refused may still have happened (a retried EndTxn answered after the first one committed):
                    // the new producer's initTransactions has ended it either way, and the checkpoint topic says which.
                    // Written again only when it did not land (INV: RESUME, exactly once).
                    if (committing && Arrays.equals(batchId, readCheckpointRecord().batch())) {
                        LOG.warn("destination '{}': the refused commit had landed; the batch is not written again", config.name());
                        break;
                    }
                    continue;
                }
                throw failed(e, begun, events.size());
            }
        }
        Faults.hit(FaultPoint.SINK_KAFKA_AFTER_COMMIT);
        if (LOG.isDebugEnabled()) {
            LOG.debug("destination '{}': batch of {} change(s) committed at {} in {} ms", config.name(), events.size(),
                    checkpoint.applied(), (System.nanoTime() - start) / 1_000_000);
        }
    }

    /**
     * The reset of this destination: a tombstone for its checkpoint record, written by its own transactional producer
     * (which also aborts a transaction a killed engine left open). The topics and their records stay whatever
     * {@code data} says: Kafka cannot take records back, and consumers may still be reading them.
     */
    @Override
    public io.millrace.core.sink.SinkReset reset(List<io.millrace.core.schema.TableRef> tables, io.millrace.core.sink.SinkReset.Data data) {
        state.reset();
        Optional<Checkpoint> cp;
        List<String> kept;
        try (Admin a = Admin.create(clientProps(AdminClientConfig.configNames()))) {
            Set<String> names;
            try {
                names = a.listTopics(new ListTopicsOptions().timeoutMs((int) timeoutMs)).names().get(timeoutMs + 5_000, TimeUnit.MILLISECONDS);
            } catch (ExecutionException | TimeoutException e) {
                throw unreachable("listing the topics", e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': interrupted while listing the topics", e);
            }
            cp = names.contains(config.checkpointTopic()) ? readCheckpoint() : Optional.empty();
            kept = java.util.stream.Stream.concat(tables.stream().map(this::topic), java.util.stream.Stream.of(schemaTopic()))
                    .filter(names::contains).distinct().toList();
        }
        return new io.millrace.core.sink.SinkReset() {
            @Override
            public Optional<Checkpoint> checkpoint() {
                return cp;
            }

            @Override
            public List<String> actions() {
                return cp.isEmpty() ? List.of() : List.of("delete its checkpoint: a tombstone for key '" + config.transactionalId()
                        + "' in topic " + config.checkpointTopic() + " at " + config.bootstrapServers() + " (at " + cp.get().applied() + ")");
            }

            @Override
            public List<String> keeps() {
                return kept.isEmpty() || cp.isEmpty() ? List.of() : List.of("the topics " + String.join(", ", kept) + " and their records:"
                        + " Kafka cannot take records back; after the next run consumers read every row again (op r)");
            }

            @Override
            public void apply() {
                if (cp.isEmpty()) {
                    return;
                }
                try (Producer<byte[], byte[]> p = new KafkaProducer<>(producerProps())) {
                    p.initTransactions();
                    p.beginTransaction();
                    p.send(new ProducerRecord<>(config.checkpointTopic(), checkpointKey, null));
                    p.commitTransaction();
                } catch (RuntimeException e) {
                    if (fenced(e)) {
                        throw fencedError(e);
                    }
                    throw new MillraceException(retriable(e) ? Kind.CONNECTION : Kind.SINK, "destination '" + config.name()
                            + "': could not delete the checkpoint in topic " + config.checkpointTopic() + " at " + config.bootstrapServers()
                            + ": " + e.getMessage() + " (nothing was removed there; run the reset again)", e);
                }
            }

            @Override
            public void close() {
            }
        };
    }

    /** Records sent since open (data records and tombstones, not checkpoints). */
    public long records() {
        return records;
    }

    @Override
    public void close() {
        if (state.close()) {
            closeClients();
        }
    }

    private void send(ChangeEvent e) {
        RelationInfo rel = e.relation();
        String topic = topicOf.get(rel);
        switch (e.op()) {
            case TRUNCATE -> {
                if (config.truncates()) {
                    send(topic, null, value(e));
                }
            }
            case DELETE -> {
                byte[] key = key(e);
                send(topic, key, value(e));
                tombstone(topic, key);
            }
            case UPDATE -> {
                if (e.keyChanged()) {
                    // As Debezium: the old key's history ends with a delete (and tombstone), the new key starts with a create.
                    ChangeEvent del = new ChangeEvent(Op.DELETE, rel, e.before(), null, e.lsn(), e.position(), e.xid(),
                            e.commitTimeMicros(), e.snapshot());
                    byte[] oldKey = key(del);
                    send(topic, oldKey, value(del));
                    tombstone(topic, oldKey);
                    ChangeEvent ins = new ChangeEvent(Op.CREATE, rel, null, e.after(), e.lsn(), e.position(), e.xid(),
                            e.commitTimeMicros(), e.snapshot());
                    send(topic, key(ins), value(ins));
                } else {
                    send(topic, key(e), value(e));
                }
            }
            default -> send(topic, key(e), value(e));
        }
    }

    private void send(String topic, byte[] key, byte[] value) {
        // errors surface in commitTransaction, except one the producer had at once
        failedAtOnce(producer.send(new ProducerRecord<>(topic, key, value)));
        records++;
    }

    /**
     * Throws the error of a send the producer failed without sending: its wait for the topic's metadata ran out
     * ({@code max.block.ms}, 60 s by default), as when the brokers went away. The producer does not throw it: it returns
     * a failed future and takes the next record, which waits as long again — a batch of N records held the writer for
     * N minutes with the status still "streaming" (found by a user: a broker killed with SIGKILL, a 50-record batch stuck
     * for 5 minutes). The batch then fails after that wait and the abort's (which waits for the brokers as long), and is
     * retried.
     */
    private static void failedAtOnce(java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata> sent) {
        if (!sent.isDone()) {
            return;
        }
        try {
            sent.get();
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new KafkaException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KafkaException("interrupted while sending", e);
        }
    }

    private void tombstone(String topic, byte[] key) {
        if (config.tombstones() && key != null) {
            send(topic, key, null);
        }
    }

    private byte[] key(ChangeEvent e) {
        if (!e.relation().hasKey() || e.op() == Op.TRUNCATE) {
            return null; // as Kafka Connect writes a null key: no bytes at all
        }
        envelope.writeKey(gen, e);
        return drain();
    }

    private byte[] value(ChangeEvent e) {
        envelope.writeValue(gen, e);
        return drain();
    }

    private byte[] drain() {
        try {
            gen.flush();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        byte[] out = buffer.toByteArray();
        buffer.reset();
        return out;
    }

    private void ensureTopics(List<ChangeEvent> events) throws InterruptedException {
        if (topicOf.size() > 4096) {
            topicOf.clear(); // relations replaced by schema changes would otherwise stay reachable
            tableOfTopic.clear();
        }
        List<String> missing = null;
        for (ChangeEvent e : events) {
            RelationInfo rel = e.relation();
            if (topicOf.containsKey(rel)) {
                continue;
            }
            String t = topic(rel.table());
            RelationInfo other = tableOfTopic.putIfAbsent(t, rel);
            if (other != null && other.oid() != rel.oid() && !other.table().equals(rel.table())) {
                // the same table under a new name (its oid), or dropped and created again (its name): one topic, rightly
                throw new MillraceException(Kind.CONFIG, "config: destination '" + config.name() + "': topic '" + config.topicFormat()
                        + "' names " + other.table() + " and " + rel.table() + " alike, " + t + " (characters a topic cannot have become"
                        + " '_'): their records would mix under colliding keys, and a compacted topic would lose rows. This batch was"
                        + " not written. Fix: a topic pattern with {schema} and {table} (the default " + KafkaSinkConfig.DEFAULT_TOPIC_FORMAT
                        + "), or capture one of the two");
            }
            tableOfTopic.put(t, rel);
            topicOf.put(rel, t);
            if (!topics.contains(t)) {
                if (missing == null) {
                    missing = new ArrayList<>();
                }
                if (!missing.contains(t)) {
                    missing.add(t);
                }
            }
        }
        if (missing != null) {
            createTopics(missing, false);
        }
    }

    /**
     * A {@code replication_factor} larger than the cluster's brokers is refused at the start: Kafka creates no topic with
     * it, and the first one needed would otherwise be a table's, in the middle of the stream (found by a user: exit 10 at
     * a new table's first change, with a hint about permissions).
     */
    private void brokersForReplication() throws InterruptedException {
        if (config.replication() <= 0) {
            return;
        }
        int brokers;
        try {
            brokers = admin.describeCluster(new org.apache.kafka.clients.admin.DescribeClusterOptions().timeoutMs((int) timeoutMs))
                    .nodes().get(timeoutMs + 5_000, TimeUnit.MILLISECONDS).size();
        } catch (ExecutionException | TimeoutException e) {
            throw unreachable("describing the cluster", e);
        }
        if (brokers < config.replication()) {
            // CONNECTION, retried: the cluster reports the brokers that are up, and one may be down for a while (a rolling
            // restart); a cluster that has fewer ends the retries with this message
            throw new MillraceException(Kind.CONNECTION, "destination '" + config.name() + "': replication_factor " + config.replication()
                    + " is more than the " + brokers + " broker(s) of the Kafka cluster at " + config.bootstrapServers() + " that are"
                    + " up: Kafka would create no topic for a table. Fix: if the cluster has fewer brokers, set replication_factor to"
                    + " at most their number, or to -1 for the brokers' default.replication.factor; otherwise bring the brokers up");
        }
    }

    /**
     * INV: RESUME — a checkpoint whose tables have none of their topics under the naming configured now: {@code topic_prefix} (or
     * {@code topic}) changed since it was written, or the topics were deleted. Resuming would send the changes from here
     * on into new topics that hold no copy of the rows before (found by a user: the old topics just stopped and the new
     * ones held one row). Refused, naming both ways out. Only when none has its topic: one missing may have been deleted
     * by hand, and its next change creates it again.
     */
    private void topicsOfHeldTables(Checkpoint cp) {
        if (cp.tables().isEmpty()) {
            return;
        }
        List<String> expected = new ArrayList<>();
        for (io.millrace.core.schema.TableRef t : cp.tables().values()) {
            expected.add(topic(t));
        }
        if (expected.stream().noneMatch(topics::contains)) {
            throw new MillraceException(Kind.CONFIG, "destination '" + config.name() + "' holds a checkpoint of " + expected.size()
                    + " table(s), and none of their topics exists under the naming configured now (e.g. " + expected.get(0) + "):"
                    + " topic_prefix or topic changed since, or the topics were deleted; the new topics would hold only the changes"
                    + " from here on. Fix: set topic_prefix (and topic) back, or start over into the new topics (millrace reset"
                    + " CONFIG, then run: every table is copied again)");
        }
    }

    private void createTopics(List<String> names, boolean compacted) throws InterruptedException {
        List<NewTopic> create = new ArrayList<>();
        for (String n : names) {
            if (topics.contains(n)) {
                continue;
            }
            NewTopic t = new NewTopic(n, Optional.of(compacted ? 1 : config.partitions()),
                    config.replication() == -1 ? Optional.empty() : Optional.of(config.replication()));
            if (compacted) {
                t.configs(Map.of("cleanup.policy", "compact"));
            }
            create.add(t);
        }
        if (create.isEmpty()) {
            return;
        }
        var result = admin.createTopics(create, new CreateTopicsOptions().timeoutMs((int) timeoutMs));
        for (NewTopic t : create) {
            try {
                result.values().get(t.name()).get(timeoutMs + 5_000, TimeUnit.MILLISECONDS);
                LOG.info("destination '{}': created topic {} ({} partition(s){})", config.name(), t.name(), t.numPartitions(),
                        compacted ? ", compacted" : "");
            } catch (ExecutionException e) {
                if (e.getCause() instanceof org.apache.kafka.common.errors.InvalidReplicationFactorException) {
                    throw new MillraceException(Kind.CONNECTION, "destination '" + config.name() + "': cannot create topic " + t.name()
                            + " on " + config.bootstrapServers() + ": " + e.getCause().getMessage() + ". Fix: bring the brokers up, or"
                            + " lower replication_factor (now " + config.replication() + ") to the number of brokers the cluster has, or"
                            + " -1 for the brokers' default", e.getCause());
                }
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': cannot create topic " + t.name()
                            + " on " + config.bootstrapServers() + ": " + e.getCause().getMessage()
                            + " (create it yourself, or give Millrace's principal the CREATE permission)", e.getCause());
                }
            } catch (TimeoutException e) {
                throw unreachable("creating topic " + t.name(), e);
            }
            topics.add(t.name());
            if (producer != null) {
                // Learn the new topic's leader before the first send: a send that races the metadata fails its first
                // batches (and retries the ones behind them) — correct, but seconds slower.
                producer.partitionsFor(t.name());
            }
        }
    }

    /** Runs after each commit returned, inside the write's handling of a refused commit: a test's seam (KafkaSinkIT). */
    Runnable commitAnswered = () -> { };

    /** The header naming the write that made a checkpoint record (a random id per batch; see {@link #write}). */
    static final String BATCH_HEADER = "millrace.batch";

    /** The last committed checkpoint record of this pipeline: its value and its {@link #BATCH_HEADER} (each null when none). */
    private record Stored(byte[] value, byte[] batch) {
    }

    private Optional<Checkpoint> readCheckpoint() {
        byte[] last = readCheckpointRecord().value();
        if (last == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(CheckpointJson.read(new String(last, StandardCharsets.UTF_8)));
        } catch (IllegalArgumentException e) {
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': the checkpoint stored in topic "
                    + config.checkpointTopic() + " under key '" + config.transactionalId() + "' is unreadable (" + e.getMessage() + ")", e);
        }
    }

    /** Reads the checkpoint topic to its end as a read_committed consumer; the last record of our key wins. */
    private Stored readCheckpointRecord() {
        Map<String, Object> props = clientProps(ConsumerConfig.configNames());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, config.transactionalId() + "-checkpoint-reader");
        byte[] last = null;
        byte[] batch = null;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(config.checkpointTopic(), Duration.ofMillis(timeoutMs))) {
                parts.add(new TopicPartition(p.topic(), p.partition()));
            }
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
            Map<TopicPartition, Long> end = stableEnd(consumer, parts, deadline);
            while (!reached(consumer, end)) {
                if (System.nanoTime() > deadline) {
                    throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': could not read checkpoint topic "
                            + config.checkpointTopic() + " to its end within " + timeoutMs + " ms");
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    if (Arrays.equals(r.key(), checkpointKey)) {
                        last = r.value();
                        org.apache.kafka.common.header.Header h = r.headers().lastHeader(BATCH_HEADER);
                        batch = h == null ? null : h.value();
                    }
                }
            }
        }
        return new Stored(last, batch);
    }

    /**
     * The end of the checkpoint topic as it is now, once every transaction open before it is over. INV: RESUME — the
     * topic is shared by every pipeline writing to these brokers, and a {@code read_committed} reader stops at the first
     * record of a transaction still open (the last stable offset): another pipeline killed between its checkpoint record
     * and its commit holds that bound back until the broker aborts its transaction ({@code transaction.timeout.ms}), and
     * our own checkpoints committed after its record would not be read. Resuming from an older checkpoint than the one
     * the slot was confirmed for, the engine would refuse to start. Our own earlier producer's transaction was ended by
     * {@code initTransactions}; a commit whose markers the broker has not written yet (it answers a commit before) is
     * waited for the same way.
     */
    private Map<TopicPartition, Long> stableEnd(KafkaConsumer<byte[], byte[]> consumer, List<TopicPartition> parts, long deadline) {
        Map<String, Object> props = clientProps(ConsumerConfig.configNames());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, config.transactionalId() + "-checkpoint-end");
        Map<TopicPartition, Long> written;
        try (KafkaConsumer<byte[], byte[]> all = new KafkaConsumer<>(props)) {
            written = all.endOffsets(parts, Duration.ofMillis(timeoutMs)); // the high watermark: committed or not
        }
        long loggedAt = System.nanoTime();
        while (true) {
            Map<TopicPartition, Long> stable = consumer.endOffsets(parts, Duration.ofMillis(timeoutMs)); // read_committed: the LSO
            boolean settled = true;
            for (TopicPartition p : parts) {
                settled &= stable.getOrDefault(p, 0L) >= written.getOrDefault(p, 0L);
            }
            if (settled) {
                return stable;
            }
            long now = System.nanoTime();
            if (now > deadline) {
                ownHanging(parts);
                // CONNECTION: the broker ends the other transaction at its timeout; the supervisor starts again then.
                throw new MillraceException(Kind.CONNECTION, "destination '" + config.name() + "': a transaction on checkpoint topic "
                        + config.checkpointTopic() + " stayed open for " + timeoutMs + " ms (up to offsets " + written + ", readable up to "
                        + stable + "): another pipeline writing its checkpoints there was stopped in the middle of a batch; the broker"
                        + " aborts it after that pipeline's transaction.timeout.ms, and this pipeline starts once it has");
            }
            if (now - loggedAt > TimeUnit.SECONDS.toNanos(5)) {
                LOG.info("destination '{}': waiting for a transaction open on checkpoint topic {} to end (readable up to {}, written up"
                        + " to {}) before reading this pipeline's checkpoint", config.name(), config.checkpointTopic(), stable, written);
                loggedAt = now;
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': interrupted while reading the checkpoint", e);
            }
        }
    }

    /**
     * A transaction of this pipeline's own producer still open on the checkpoint topic after {@code initTransactions}
     * (which ends every transaction of the id it knows of) has lost its markers, for now or for ever. Seen with a single
     * broker stopped while it completed a commit ("Couldn't find leader endpoint for partitions ... these partitions are
     * likely deleted already and hence can be skipped" in its log, KafkaOutageIT): the commit the producer was told of
     * never reaches the partitions, and {@code read_committed} readers stop at it. Millrace cannot complete it: the error
     * says what happened and what to do (CONNECTION: retried, should the broker still write them). Nothing when the look
     * itself is not allowed, or finds nothing.
     */
    private void ownHanging(List<TopicPartition> parts) {
        if (admin == null) {
            return;
        }
        try {
            long pid = admin.describeTransactions(List.of(config.transactionalId())).description(config.transactionalId())
                    .get(timeoutMs, TimeUnit.MILLISECONDS).producerId();
            Map<TopicPartition, org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState> states = admin.describeProducers(parts).all()
                    .get(timeoutMs, TimeUnit.MILLISECONDS);
            for (Map.Entry<TopicPartition, org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState> e : states.entrySet()) {
                for (org.apache.kafka.clients.admin.ProducerState p : e.getValue().activeProducers()) {
                    if (p.producerId() == pid && p.currentTransactionStartOffset().isPresent()) {
                        throw new MillraceException(Kind.CONNECTION, "destination '" + config.name() + "': a transaction of this pipeline"
                                + " (transactional id '" + config.transactionalId() + "', producer id " + pid + ", epoch "
                                + p.producerEpoch() + ") is hanging on " + e.getKey() + " from offset "
                                + p.currentTransactionStartOffset().getAsLong() + ": the broker ended it but never wrote its commit or abort"
                                + " markers there (a broker shut down while it completed the transaction?), so Kafka keeps it open and"
                                + " read_committed consumers, Millrace's checkpoint reader too, stop at it. Fix: find it with"
                                + " kafka-transactions.sh --bootstrap-server " + config.bootstrapServers() + " find-hanging --broker-id <the"
                                + " partition leader>, abort it (kafka-transactions.sh abort --topic " + e.getKey().topic() + " --partition "
                                + e.getKey().partition() + " --start-offset " + p.currentTransactionStartOffset().getAsLong() + "); its"
                                + " records are then lost to read_committed consumers: start this pipeline again with a new snapshot"
                                + " (millrace reset) if Millrace then refuses its slot");
                    }
                }
            }
        } catch (ExecutionException | TimeoutException e) {
            LOG.debug("destination '{}': could not look for a hanging transaction of its own: {}", config.name(), e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': interrupted while reading the checkpoint", e);
        }
    }

    private static boolean reached(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            if (consumer.position(e.getKey()) < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    /**
     * A transaction refused as InvalidTxnStateException, first of all a new producer's first: the broker's view of this
     * transactional id is not the producer's. Seen right after the previous engine of this id stopped (DdlTriggerIT, in one
     * JVM: the coordinator, its state EMPTY, received the new producer's COMMIT) or was SIGKILLed (KafkaCrashIT in CI at
     * 5004c54). The producer is in a fatal state. A new producer's initTransactions bumps the epoch and ends whatever the
     * broker holds for the id (INV: RESUME); the batch is then written again by it, unless the refusal came from the commit
     * and the checkpoint topic holds this batch's record ({@link #BATCH_HEADER}): a refused commit may have committed.
     * What a new engine start would do (it reads the checkpoint), without stopping the pipeline; once per batch.
     * <p>Also seen after commits: the in-JVM broker of KafkaSinkContractIT (Kafka 4, transactions version 2, which bumps the
     * epoch at every commit) logged "state is COMPLETE_COMMIT, but received transaction marker result to send: COMMIT" for
     * the previous commit and refused the next transaction, the first to add a new partition, in a CI run on a loaded
     * machine. The supervisor would have retried it as a CONNECTION error from a new engine start.
     */
    private void renewProducer(RuntimeException cause, int size) {
        LOG.warn("destination '{}': Kafka refused the producer's transaction ({}); a new producer takes over", config.name(),
                cause.getMessage());
        try {
            producer.close(Duration.ZERO);
        } catch (KafkaException e) {
            cause.addSuppressed(e);
        }
        producer = new KafkaProducer<>(producerProps());
        try {
            producer.initTransactions();
        } catch (RuntimeException e) {
            e.addSuppressed(cause);
            throw failed(e, false, size);
        }
    }

    private static boolean invalidTxnState(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof org.apache.kafka.common.errors.InvalidTxnStateException) {
                return true;
            }
        }
        return false;
    }

    /** Aborts the open transaction where possible (INV: RESUME) and returns the error to throw. */
    private MillraceException failed(RuntimeException e, boolean begun, int size) {
        if (fenced(e)) {
            state.fail();
            closeClients();
            return fencedError(e);
        }
        if (begun) {
            try {
                producer.abortTransaction(); // INV: RESUME — nothing of this batch, not its checkpoint, becomes visible
            } catch (RuntimeException abort) {
                state.fail(); // the producer is unusable: a new engine start re-initialises it
                e.addSuppressed(abort);
                closeClients();
            }
        }
        if (e instanceof MillraceException m) {
            return m;
        }
        // A broker that is away or slow (time-outs, lost connections, leader changes) is CONNECTION, which the supervisor
        // retries; a record the brokers refuse (too large, not authorised) is SINK: the same batch would fail again.
        Kind kind = retriable(e) ? Kind.CONNECTION : Kind.SINK;
        return new MillraceException(kind, "destination '" + config.name() + "': could not write a batch of " + size
                + " change(s) to Kafka at " + config.bootstrapServers() + ": " + e.getMessage()
                + " (the transaction was aborted and the checkpoint has not advanced; check that the brokers are up)", e);
    }

    private static boolean retriable(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof org.apache.kafka.common.errors.RetriableException) {
                return true;
            }
            if (t instanceof org.apache.kafka.common.errors.InvalidTxnStateException) {
                // The broker's view of this transactional id's transaction is not the producer's (seen right after the
                // previous engine was SIGKILLed mid-transaction: KafkaCrashIT in CI at 5004c54). The producer is unusable,
                // but nothing of the batch became visible: a new start re-initialises the transactional id, which ends
                // the old transaction, and resumes from the checkpoint (INV: RESUME). Retried, not a stop.
                return true;
            }
        }
        return false;
    }

    private static boolean fenced(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException) {
                return true;
            }
        }
        return false;
    }

    private MillraceException fencedError(Throwable e) {
        return new MillraceException(Kind.IDENTITY, "destination '" + config.name() + "': another Millrace engine took over this"
                + " pipeline (a producer with transactional id '" + config.transactionalId() + "' started after this one and fenced it)."
                + " Run one engine per pipeline; if this was a restart, this engine's process is stale and must stop", e);
    }

    /** How long a bootstrap server may take to accept a TCP connection before it counts as down. */
    private static final int CONNECT_CHECK_MS = 5_000;

    /**
     * Fails at once (CONNECTION, retried with backoff) when no bootstrap server accepts a TCP connection: the clients
     * would wait their {@code max.block.ms} (60 s) per attempt, a warning a second, and with the default retries give up
     * after ten minutes or more (found by a user starting with the broker down).
     */
    private void reachable() {
        Exception last = null;
        for (String server : config.bootstrapServers().split(",")) {
            String hostPort = server.strip();
            int colon = hostPort.lastIndexOf(':');
            if (colon <= 0) {
                return; // not host:port: the clients say what is wrong with it
            }
            String host = hostPort.substring(0, colon).replaceFirst("^[A-Za-z_]+://", "").replaceAll("^\\[|]$", "");
            try {
                int port = Integer.parseInt(hostPort.substring(colon + 1));
                for (java.net.InetAddress address : java.net.InetAddress.getAllByName(host)) { // the clients try each too
                    try (java.net.Socket socket = new java.net.Socket()) {
                        socket.connect(new java.net.InetSocketAddress(address, port), CONNECT_CHECK_MS);
                        return;
                    } catch (java.io.IOException e) {
                        last = e;
                    }
                }
            } catch (java.io.IOException | NumberFormatException e) {
                last = e;
            }
        }
        throw unreachable("connecting to the bootstrap servers", last);
    }

    /**
     * The cluster's first answers, as {@link #open()} needs them: the bootstrap servers accept connections, a broker lists
     * the topics (with the producer's security settings), and as many brokers are up as {@code replication_factor} asks.
     */
    private void answers() throws InterruptedException {
        reachable();
        admin = Admin.create(clientProps(AdminClientConfig.configNames()));
        // the first answer: a server that accepts connections but is not a Kafka listener (a wrong port) never gives it
        long first = config.producer().containsKey(ProducerConfig.MAX_BLOCK_MS_CONFIG) ? timeoutMs : FIRST_ANSWER_MS;
        try {
            topics.addAll(admin.listTopics(new ListTopicsOptions().timeoutMs((int) first)).names().get(first + 5_000,
                    TimeUnit.MILLISECONDS));
        } catch (ExecutionException | TimeoutException e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            throw unreachable(cause instanceof org.apache.kafka.common.errors.TimeoutException || cause instanceof TimeoutException
                    ? "listing the topics: a server accepts connections there but gave no answer as a Kafka broker within "
                    + first / 1000 + " s; check that the port is the brokers' listener (as in their advertised.listeners) and"
                    + " that security.protocol matches it" : "listing the topics", e);
        }
        brokersForReplication();
    }

    /** For {@code millrace preflight}: {@link #answers()}, then nothing is left open. Writes nothing. */
    void preflight() {
        try {
            answers();
        } catch (MillraceException e) {
            throw e;
        } catch (RuntimeException e) { // a client setting Kafka refuses (security.protocol, sasl.*): as open() says it
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': cannot open Kafka at " + config.bootstrapServers()
                    + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new MillraceException(Kind.CONNECTION, "destination '" + config.name() + "': interrupted", e);
        } finally {
            if (admin != null) {
                admin.close(java.time.Duration.ofSeconds(5));
                admin = null;
            }
        }
    }

    private MillraceException unreachable(String doing, Exception e) {
        Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        if (cause instanceof TransactionalIdAuthorizationException) {
            return new MillraceException(Kind.PERMISSION, "destination '" + config.name() + "': the Kafka principal may not use"
                    + " transactional id '" + config.transactionalId() + "': grant WRITE and DESCRIBE on it", cause);
        }
        // CONNECTION: the brokers may come back; the supervisor restarts the engine with backoff (INV: RESUME)
        return new MillraceException(Kind.CONNECTION, "destination '" + config.name() + "': cannot reach Kafka at " + config.bootstrapServers()
                + " (" + doing + ": " + cause.getMessage() + "). Check 'bootstrap_servers' and that the brokers are up and reachable"
                + " from this host; security settings (security.protocol, sasl.*, ssl.*) go under 'producer'", cause);
    }

    private Map<String, Object> producerProps() {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
        p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, 64L * 1024 * 1024);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, config.transactionalId());
        p.putAll(config.producer()); // the user's settings win, except the reserved ones below
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers());
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, config.transactionalId());
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return p;
    }

    /** The user's producer settings that the other client also knows (security, timeouts), plus the servers. */
    private Map<String, Object> clientProps(Set<String> known) {
        Map<String, Object> p = new HashMap<>();
        for (Map.Entry<String, String> e : config.producer().entrySet()) {
            if (known.contains(e.getKey()) && !e.getKey().equals("client.id")) {
                p.put(e.getKey(), e.getValue());
            }
        }
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers());
        return p;
    }

    private void closeClients() {
        if (producer != null) {
            try {
                producer.close(Duration.ofSeconds(5));
            } catch (KafkaException e) {
                LOG.warn("destination '{}': closing the producer failed: {}", config.name(), e.getMessage());
            }
            producer = null;
        }
        if (admin != null) {
            admin.close(Duration.ofSeconds(5));
            admin = null;
        }
    }

    private static long parseLong(String v, long dflt) {
        if (v == null) {
            return dflt;
        }
        try {
            return Long.parseLong(v.strip());
        } catch (NumberFormatException e) {
            throw new MillraceException(Kind.CONFIG, "producer setting max.block.ms must be a whole number of milliseconds, got '" + v + "'");
        }
    }
}
