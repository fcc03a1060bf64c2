package io.millrace.connect;

import io.millrace.api.SnapshotSettings;
import io.millrace.api.SourceSettings;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigValue;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Debezium's keys map onto Millrace's settings; every key Millrace does not support is refused by name. */
class ConnectorSettingsTest {
    /** A Debezium PostgreSQL connector configuration, as a user has it, with connector.class changed. */
    private static Map<String, String> debezium() {
        Map<String, String> m = new HashMap<>();
        m.put("name", "inventory");
        m.put("connector.class", "io.millrace.connect.MillraceSourceConnector");
        m.put("tasks.max", "1");
        m.put("database.hostname", "db.example");
        m.put("database.port", "5433");
        m.put("database.user", "cdc");
        m.put("database.password", "s3cret");
        m.put("database.dbname", "shop");
        m.put("topic.prefix", "shop");
        m.put("slot.name", "shop_slot");
        m.put("publication.name", "shop_pub");
        m.put("plugin.name", "pgoutput");
        m.put("table.include.list", "public\\.orders,inventory\\..*");
        m.put("table.exclude.list", "inventory\\.audit");
        m.put("snapshot.mode", "initial");
        m.put("tombstones.on.delete", "false");
        m.put("signal.data.collection", "public.signals");
        m.put("key.converter", "org.apache.kafka.connect.json.JsonConverter");
        m.put("value.converter.schemas.enable", "false");
        m.put("transforms", "unwrap");
        m.put("transforms.unwrap.type", "io.debezium.transforms.ExtractNewRecordState");
        m.put("exactly.once.support", "required");
        m.put("transaction.boundary", "connector");
        return m;
    }

    private static Map<String, List<String>> errors(Map<String, String> props) {
        return ConnectorSettings.validate(props).stream().filter(v -> !v.errorMessages().isEmpty())
                .collect(Collectors.toMap(ConfigValue::name, ConfigValue::errorMessages));
    }

    @Test
    void debeziumKeysMapOntoMillracesSettings() {
        Map<String, String> props = debezium();
        assertThat(errors(props)).isEmpty();
        ConnectorSettings s = new ConnectorSettings(props);
        SourceSettings src = s.source();
        assertThat(src.host()).isEqualTo("db.example");
        assertThat(src.port()).isEqualTo(5433);
        assertThat(src.user()).isEqualTo("cdc");
        assertThat(src.database()).isEqualTo("shop");
        assertThat(src.slot()).isEqualTo("shop_slot");
        assertThat(src.publication()).isEqualTo("shop_pub");
        assertThat(src.tables()).extracting(Object::toString).containsExactly("public.orders", "inventory.*");
        assertThat(src.excludeTables()).extracting(Object::toString).containsExactly("inventory.audit");
        assertThat(src.password().equals(io.millrace.core.Secret.of("s3cret"))).isTrue();
        assertThat(s.snapshot().mode()).isEqualTo(SnapshotSettings.Mode.INITIAL);
        assertThat(s.snapshot().signalTable()).hasToString("public.signals");
        assertThat(s.tombstones()).isFalse();
        assertThat(s.truncates()).isFalse(); // Debezium's default skipped.operations=t
        assertThat(s.heartbeatTopic()).isEqualTo("__debezium-heartbeat.shop");
    }

    @Test
    void snapshotModesAndMillraceKeys() {
        Map<String, String> props = debezium();
        props.put("snapshot.mode", "no_data");
        props.put("skipped.operations", "none");
        props.put("millrace.snapshot.readers", "4");
        props.put("millrace.pipeline.memory.budget.mb", "64");
        props.put("millrace.source.binary", "off");
        ConnectorSettings s = new ConnectorSettings(props);
        assertThat(s.snapshot().mode()).isEqualTo(SnapshotSettings.Mode.NEVER);
        assertThat(s.snapshot().readers()).isEqualTo(4);
        assertThat(s.pipeline().memoryBudgetMb()).isEqualTo(64);
        assertThat(s.source().binary()).isEqualTo(SourceSettings.BinaryMode.OFF);
        assertThat(s.truncates()).isTrue();
        props.put("snapshot.mode", "initial_only");
        assertThat(new ConnectorSettings(props).snapshot().mode()).isEqualTo(SnapshotSettings.Mode.INITIAL_ONLY);
    }

    /**
     * Debezium's incremental.snapshot.chunk.size is a fixed number of rows per chunk: so are the online snapshot's chunks
     * then, also below Millrace's adaptive floor (500). Before, the key was refused, pointing at millrace.snapshot.* keys
     * that have no chunk size.
     */
    @Test
    void debeziumsChunkSizeFixesTheOnlineChunks() {
        Map<String, String> props = debezium();
        assertThat(new ConnectorSettings(props).snapshot().minChunkRows()).as("adaptive when not set")
                .isLessThan(new ConnectorSettings(props).snapshot().maxChunkRows());
        props.put("incremental.snapshot.chunk.size", "100");
        assertThat(errors(props)).isEmpty();
        SnapshotSettings s = new ConnectorSettings(props).snapshot();
        assertThat(List.of(s.minChunkRows(), s.chunkRows(), s.maxChunkRows())).containsExactly(100, 100, 100);
        props.put("incremental.snapshot.chunk.size", "0");
        assertThat(errors(props)).containsOnlyKeys("incremental.snapshot.chunk.size");
    }

    /**
     * INV: BOUNDED. A budget above half the worker's heap is refused on its key at validate; left out, it follows the heap
     * (a fixed 256 MiB would have been refused on a worker with less than 512 MiB of heap).
     */
    @Test
    void theMemoryBudgetFitsTheWorkersHeap() {
        Map<String, String> props = debezium();
        int huge = (int) Math.min(1 << 20, (Runtime.getRuntime().maxMemory() >> 20) + 1);
        props.put("millrace.pipeline.memory.budget.mb", String.valueOf(huge));
        assertThat(errors(props)).containsOnlyKeys("millrace.pipeline.memory.budget.mb");
        assertThat(errors(props).get("millrace.pipeline.memory.budget.mb").get(0))
                .contains("must be at most about half of the worker's maximum heap").contains("KAFKA_HEAP_OPTS");
        assertThatThrownBy(() -> new ConnectorSettings(props)).hasMessageContaining("millrace.pipeline.memory.budget.mb");
        props.remove("millrace.pipeline.memory.budget.mb");
        assertThat(new ConnectorSettings(props).pipeline().memoryBudgetMb())
                .isEqualTo(ConnectorSettings.defaultBudgetMb(Runtime.getRuntime().maxMemory()));
        assertThat(ConnectorSettings.defaultBudgetMb(8L << 30)).isEqualTo(256);
        assertThat(ConnectorSettings.defaultBudgetMb(512L << 20)).as("a 512 MiB worker").isEqualTo(128);
        assertThat(ConnectorSettings.defaultBudgetMb(32L << 20)).isEqualTo(16);
        assertThatThrownBy(() -> ConnectorSettings.heapHolds("k", 300, 512L << 20)).hasMessageContaining("so at most 281");
        ConnectorSettings.heapHolds("k", 281, 512L << 20);
    }

    @Test
    void unsupportedDebeziumKeysAndUnknownKeysAreRefusedByName() {
        Map<String, String> props = debezium();
        props.put("max.batch.size", "2048");
        props.put("time.precision.mode", "connect");
        props.put("millrace.no.such.thing", "1");
        props.put("databse.hostname", "typo");
        Map<String, List<String>> errors = errors(props);
        assertThat(errors).containsOnlyKeys("max.batch.size", "time.precision.mode", "millrace.no.such.thing", "databse.hostname");
        assertThat(errors.get("max.batch.size").get(0)).contains("max.batch.size").contains("Debezium setting that Millrace does not support");
        assertThat(errors.get("databse.hostname").get(0)).contains("databse.hostname").contains("unknown setting");
        assertThatThrownBy(() -> new ConnectorSettings(props)).isInstanceOf(ConfigException.class).hasMessageContaining("max.batch.size")
                .hasMessageContaining("databse.hostname");
    }

    @Test
    void valuesMillraceCannotHonourAreRefusedByName() {
        for (Map.Entry<String, String> bad : Map.of("snapshot.mode", "when_needed", "decimal.handling.mode", "exact",
                "plugin.name", "decoderbufs", "publication.autocreate.mode", "all_tables", "topic.transaction", "tx topic",
                "table.include.list", "public\\.(a|b)", "skipped.operations", "c", "slot.name", "Bad-Slot", "topic.prefix", "a b",
                "database.port", "0").entrySet()) {
            Map<String, String> props = debezium();
            props.put(bad.getKey(), bad.getValue());
            assertThat(errors(props)).as(bad.toString()).containsOnlyKeys(bad.getKey());
        }
        // The engine refuses a linger of 0 (1 to 60000 ms): the validate call did not, and the task failed at its start
        Map<String, String> linger = debezium();
        linger.put(ConnectorSettings.M_LINGER, "0");
        assertThat(errors(linger)).containsOnlyKeys(ConnectorSettings.M_LINGER);
        Map<String, String> missing = debezium();
        missing.remove("database.hostname");
        assertThat(errors(missing)).containsOnlyKeys("database.hostname");
    }

    @Test
    void transactionMetadataGoesToDebeziumsTopic() {
        Map<String, String> props = debezium();
        assertThat(new ConnectorSettings(props).transactionTopic()).as("off by default, as Debezium's").isNull();
        props.put("provide.transaction.metadata", "true");
        assertThat(errors(props)).isEmpty();
        assertThat(new ConnectorSettings(props).transactionTopic()).isEqualTo("shop.transaction");
        props.put("topic.transaction", "tx-meta");
        assertThat(new ConnectorSettings(props).transactionTopic()).isEqualTo("shop.tx-meta");
    }

    @Test
    void anAlteredOffsetMayCarryAnOpenTransactionsCountsAndTheyAreChecked() {
        String checkpoint = io.millrace.api.Checkpoints.toJson(new io.millrace.core.change.Checkpoint(
                io.millrace.core.change.Checkpoint.VERSION, new io.millrace.core.change.Identity("1", "shop", "shop_slot", "shop_pub",
                "connect"), io.millrace.core.Lsn.of(100), new io.millrace.core.Position(io.millrace.core.Lsn.of(200), 3),
                io.millrace.core.change.SnapshotProgress.skipped(io.millrace.core.Lsn.of(50))));
        String counts = "{\"xid\":7,\"commit_lsn\":200,\"ts_ms\":1,\"event_count\":3,\"data_collections\":{\"public.orders\":3}}";
        MillraceSourceConnector connector = new MillraceSourceConnector();
        Map<String, String> props = debezium();
        Map<String, ?> partition = Map.of("server", "shop");
        assertThat(connector.alterOffsets(props, Map.of(partition, Map.of("checkpoint", checkpoint)))).isTrue();
        assertThat(connector.alterOffsets(props, Map.of(partition, Map.of("checkpoint", checkpoint, "transaction", counts)))).isTrue();
        assertThatThrownBy(() -> connector.alterOffsets(props, Map.of(partition, Map.of("checkpoint", checkpoint, "transaction",
                "{\"xid\":7}")))).hasMessageContaining("commit_lsn");
        assertThatThrownBy(() -> connector.alterOffsets(props, Map.of(partition, Map.of("checkpoint", checkpoint, "other", "1"))))
                .hasMessageContaining("not {");
    }

    @Test
    void debeziumRegexesBecomeMillracePatterns() {
        assertThat(ConnectorSettings.pattern("k", "public\\.orders")).isEqualTo("public.orders");
        assertThat(ConnectorSettings.pattern("k", "public.orders")).isEqualTo("public.orders");
        assertThat(ConnectorSettings.pattern("k", "public\\..*")).isEqualTo("public.*");
        assertThat(ConnectorSettings.pattern("k", "public\\.order.")).isEqualTo("public.order?");
        // Debezium matches whole names: its anchors add nothing (a trailing $ was taken for part of the name); \$ is a $
        assertThat(ConnectorSettings.pattern("k", "^public\\.orders$")).isEqualTo("public.orders");
        assertThat(ConnectorSettings.pattern("k", "public\\.price\\$")).isEqualTo("public.price$");
        assertThatThrownBy(() -> ConnectorSettings.pattern("k", "orders")).hasMessageContaining("<schema>");
        assertThatThrownBy(() -> ConnectorSettings.pattern("k", "public\\.[ab]")).hasMessageContaining("'['");
    }
}
