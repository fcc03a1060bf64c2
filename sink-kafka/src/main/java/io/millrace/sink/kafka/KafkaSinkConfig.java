package io.millrace.sink.kafka;

import io.millrace.core.MillraceException;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.Sink;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Settings of a {@code kafka} destination: the YAML's {@code type: kafka} reads into one ({@link KafkaDestinationProvider});
 * an application may build one with {@link #of} and the {@code with...} methods, or this constructor, which checks every value.
 *
 * @param name             the destination's name in the configuration (part of the checkpoint identity)
 * @param bootstrapServers {@code host:port[,host:port...]} of the Kafka cluster
 * @param topicFormat      topic name of a table, with the placeholders {@code {prefix}}, {@code {schema}} and
 *                         {@code {table}} ({@link #DEFAULT_TOPIC_FORMAT}, Debezium's convention); characters
 *                         Kafka does not allow in a topic name become {@code _}, as Debezium does
 * @param topicPrefix      the {@code {prefix}} (Debezium's {@code topic.prefix}); the pipeline name by default
 * @param tombstones       whether a delete is followed by a tombstone (same key, {@code null} value), so that
 *                         log compaction can drop the key (Debezium's {@code tombstones.on.delete}, default true)
 * @param truncates        whether a TRUNCATE is written as an event with {@code op "t"} (and a {@code null} key);
 *                         Debezium skips them unless {@code skipped.operations} is changed
 * @param partitions       partitions of each topic Millrace creates (a topic that exists is left as it is)
 * @param replication      replication factor of the topics Millrace creates; -1 takes the broker's default
 * @param checkpointTopic  the compacted topic holding the checkpoint, one record per transactional id
 * @param transactionalId  the producer's {@code transactional.id}: one per pipeline and destination, so that a
 *                         second engine running the same pipeline fences the first (INV: IDENTITY)
 * @param producer         further producer settings, passed through as they are (e.g. {@code compression.type},
 *                         {@code linger.ms}, {@code security.protocol}); those that keep exactly-once are refused
 * @param meta             the source's logical name and database, written into every event
 */
public record KafkaSinkConfig(String name, String bootstrapServers, String topicFormat, String topicPrefix, boolean tombstones,
                              boolean truncates, int partitions, short replication, String checkpointTopic, String transactionalId,
                              Map<String, String> producer, SourceMeta meta) implements DestinationConfig {
    public static final String DEFAULT_TOPIC_FORMAT = "{prefix}.{schema}.{table}";
    public static final String DEFAULT_CHECKPOINT_TOPIC = "millrace.checkpoints";
    /** Producer settings the sink sets itself: changing them would break exactly once. */
    static final List<String> RESERVED = List.of("transactional.id", "enable.idempotence", "acks", "key.serializer",
            "value.serializer", "bootstrap.servers");

    public KafkaSinkConfig {
        if (name == null || name.isBlank()) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "kafka destination: 'name' must not be empty");
        }
        if (bootstrapServers == null || bootstrapServers.isBlank()) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name
                    + "': 'bootstrap_servers' is required, e.g. bootstrap_servers: kafka1:9092,kafka2:9092");
        }
        if (meta == null) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name
                    + "': the source's logical name and database (meta) must be given");
        }
        if (topicFormat == null) {
            topicFormat = DEFAULT_TOPIC_FORMAT;
        }
        if (!topicFormat.contains("{table}")) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name + "': 'topic' must contain {table}"
                    + " (one topic per table), e.g. " + DEFAULT_TOPIC_FORMAT + "; got '" + topicFormat + "'");
        }
        if (topicPrefix != null && !Topics.valid(topicPrefix)) {
            // refused as Debezium refuses its topic.prefix: the topics would be named after another prefix than the one given
            // (found by a user: 'shop/x' became shop_x.public.* without a word)
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name + "': 'topic_prefix' '" + topicPrefix
                    + "' is not valid in a topic name (letters, digits, '.', '_', '-'; at most 249), e.g. topic_prefix: "
                    + topicPrefix.replaceAll("[^A-Za-z0-9._-]", "_"));
        }
        if (topicPrefix == null) {
            topicPrefix = meta.name();
        }
        if (partitions < 1) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name + "': 'partitions' must be at least 1, got "
                    + partitions);
        }
        if (replication < 1 && replication != -1) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name
                    + "': 'replication_factor' must be at least 1 (or -1 for the broker's default), got " + replication);
        }
        if (checkpointTopic == null) {
            checkpointTopic = DEFAULT_CHECKPOINT_TOPIC;
        }
        if (!Topics.valid(checkpointTopic)) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name + "': 'checkpoint_topic' '" + checkpointTopic
                    + "' is not a valid topic name (letters, digits, '.', '_', '-'; at most 249)");
        }
        if (transactionalId == null || transactionalId.isBlank()) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name + "': 'transactional_id' must not be empty");
        }
        producer = producer == null ? Map.of() : Map.copyOf(new LinkedHashMap<>(producer));
        for (String k : RESERVED) {
            if (producer.containsKey(k)) {
                throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name + "': producer setting '" + k
                        + "' is set by Millrace (exactly once needs it); remove it from 'producer'"
                        + (k.equals("bootstrap.servers") ? " and use 'bootstrap_servers'" : "")
                        + (k.equals("transactional.id") ? " and use 'transactional_id'" : ""));
            }
        }
    }

    /** Debezium's defaults: {@code <prefix>.<schema>.<table>}, tombstones on, truncates written, one partition. */
    public static KafkaSinkConfig of(String name, String bootstrapServers, String transactionalId, SourceMeta meta) {
        return new KafkaSinkConfig(name, bootstrapServers, null, null, true, true, 1, (short) -1, null, transactionalId, Map.of(), meta);
    }

    @Override
    public String type() {
        return KafkaDestinationProvider.TYPE;
    }

    @Override
    public Sink newSink() {
        return new KafkaSink(this);
    }

    /** Asks the cluster for its brokers, as the sink's start does (see {@link KafkaSink#preflight()}). */
    @Override
    public void preflight() {
        new KafkaSink(this).preflight();
    }

    public KafkaSinkConfig withProducer(Map<String, String> settings) {
        return new KafkaSinkConfig(name, bootstrapServers, topicFormat, topicPrefix, tombstones, truncates, partitions, replication,
                checkpointTopic, transactionalId, settings, meta);
    }

    public KafkaSinkConfig withTombstones(boolean on) {
        return new KafkaSinkConfig(name, bootstrapServers, topicFormat, topicPrefix, on, truncates, partitions, replication,
                checkpointTopic, transactionalId, producer, meta);
    }

    public KafkaSinkConfig withTopicPrefix(String prefix) {
        return new KafkaSinkConfig(name, bootstrapServers, topicFormat, prefix, tombstones, truncates, partitions, replication,
                checkpointTopic, transactionalId, producer, meta);
    }
}
