package io.millrace.engine.kafka;

import io.millrace.core.MillraceException;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.sink.kafka.KafkaSinkConfig;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The {@code type: kafka} destination in the configuration file. */
class KafkaConfigTest {
    private static final String SOURCE = "name: shop\nsource: {database: app, user: millrace, slot: s1}\n";

    private static KafkaSinkConfig parse(String destination) {
        EngineConfig c = new ConfigLoader(Map.<String, String>of()::get).parse(SOURCE + "destinations:\n" + destination, Path.of("/tmp"));
        return (KafkaSinkConfig) c.destinations().get(0);
    }

    @Test
    void defaultsFollowDebezium() {
        KafkaSinkConfig k = parse("  - {name: bus, type: kafka, bootstrap_servers: 'k1:9092,k2:9092'}\n");
        assertThat(k.bootstrapServers()).isEqualTo("k1:9092,k2:9092");
        assertThat(k.topicPrefix()).isEqualTo("shop");
        assertThat(k.topicFormat()).isEqualTo("{prefix}.{schema}.{table}");
        assertThat(k.tombstones()).isTrue();
        assertThat(k.truncates()).isTrue();
        assertThat(k.partitions()).isEqualTo(1);
        assertThat(k.replication()).isEqualTo((short) -1);
        assertThat(k.checkpointTopic()).isEqualTo("millrace.checkpoints");
        assertThat(k.transactionalId()).isEqualTo("millrace.shop.s1.bus"); // one per pipeline, slot and destination
        assertThat(k.producer()).isEmpty();
        assertThat(k.meta().database()).isEqualTo("app");
    }

    @Test
    void everySettingIsRead() {
        KafkaSinkConfig k = parse(String.join("\n",
                "  - name: bus",
                "    type: kafka",
                "    bootstrap_servers: k1:9092",
                "    topic: 'cdc-{schema}-{table}'",
                "    topic_prefix: other",
                "    tombstones: false",
                "    truncates: false",
                "    partitions: 6",
                "    replication_factor: 3",
                "    checkpoint_topic: my.checkpoints",
                "    transactional_id: my-tx",
                "    producer: {compression.type: zstd, linger.ms: 20, enable.metrics.push: false}",
                ""));
        assertThat(k.topicFormat()).isEqualTo("cdc-{schema}-{table}");
        assertThat(k.topicPrefix()).isEqualTo("other");
        assertThat(k.tombstones()).isFalse();
        assertThat(k.truncates()).isFalse();
        assertThat(k.partitions()).isEqualTo(6);
        assertThat(k.replication()).isEqualTo((short) 3);
        assertThat(k.checkpointTopic()).isEqualTo("my.checkpoints");
        assertThat(k.transactionalId()).isEqualTo("my-tx");
        assertThat(k.producer()).containsExactlyInAnyOrderEntriesOf(Map.of("compression.type", "zstd", "linger.ms", "20",
                "enable.metrics.push", "false"));
    }

    @Test
    void mistakesNameTheSetting() {
        assertThatThrownBy(() -> parse("  - {name: bus, type: kafka}\n")).isInstanceOf(MillraceException.class)
                .hasMessageContaining("bootstrap_servers").hasMessageContaining("is required");
        assertThatThrownBy(() -> parse("  - {name: bus, type: kafka, bootstrap_servers: k:9092, tombstone: false}\n"))
                .hasMessageContaining("tombstone").hasMessageContaining("did you mean 'tombstones'");
        assertThatThrownBy(() -> parse("  - {name: bus, type: kafka, bootstrap_servers: k:9092, producer: {acks: '1'}}\n"))
                .hasMessageContaining("'acks' is set by Millrace");
        assertThatThrownBy(() -> parse("  - {name: bus, type: kafka, bootstrap_servers: k:9092, producer: [a]}\n"))
                .hasMessageContaining("producer").hasMessageContaining("must be a mapping");
        assertThatThrownBy(() -> parse("  - {name: bus, type: kafka, bootstrap_servers: k:9092, topic: '{schema}'}\n"))
                .hasMessageContaining("must contain {table}");
        assertThatThrownBy(() -> parse("  - {name: bus, type: kafka, bootstrap_servers: k:9092, partitions: 0}\n"))
                .hasMessageContaining("partitions");
    }
}
