package io.millrace.sink.kafka;

import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.DestinationContext;
import io.millrace.core.sink.DestinationProvider;
import io.millrace.core.sink.DestinationSettings;

/** {@code type: kafka}: one topic per table in Debezium's format, exactly once through transactions ({@link KafkaSinkConfig}). */
public final class KafkaDestinationProvider implements DestinationProvider {
    public static final String TYPE = "kafka";

    @Override
    public String type() {
        return TYPE;
    }

    @Override
    public DestinationConfig configure(String name, DestinationSettings s, DestinationContext context) {
        s.allow("bootstrap_servers", "topic", "topic_prefix", "tombstones", "truncates", "partitions", "replication_factor",
                "checkpoint_topic", "transactional_id", "producer");
        // One transactional id per pipeline, slot and destination: a second engine on the same pipeline fences the first.
        String txId = s.string("transactional_id", "millrace." + context.meta().name() + "." + context.slot() + "." + name);
        return new KafkaSinkConfig(name, s.requireString("bootstrap_servers", "kafka1:9092,kafka2:9092"), s.string("topic", null),
                s.string("topic_prefix", null), s.bool("tombstones", true), s.bool("truncates", true),
                s.integer("partitions", 1, 1, 100_000), (short) s.integer("replication_factor", -1, -1, Short.MAX_VALUE),
                s.string("checkpoint_topic", null), txId, s.stringMap("producer"), context.meta());
    }
}
