package io.millrace.connect;

import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import io.millrace.api.Checkpoints;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.ConnectorTransactionBoundaries;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;

import java.util.List;
import java.util.Map;

/**
 * Millrace on Kafka Connect: a source connector for PostgreSQL that takes Debezium's PostgreSQL connector configuration
 * (change only {@code connector.class}) and writes the records Debezium's would, exactly once when the worker has
 * exactly-once source support ({@code exactly.once.source.support=enabled}; best with
 * {@code transaction.boundary=connector}: one Kafka transaction per engine batch). One task, as Debezium's: a slot
 * has one reader. See README "On Kafka Connect" and {@link MillraceSourceTask}.
 */
public final class MillraceSourceConnector extends SourceConnector {
    private Map<String, String> props;

    @Override
    public String version() {
        return Version.VERSION;
    }

    @Override
    public void start(Map<String, String> props) {
        new ConnectorSettings(props); // refuses what validate() would
        this.props = Map.copyOf(props);
    }

    @Override
    public Class<? extends Task> taskClass() {
        return MillraceSourceTask.class;
    }

    /** One task whatever {@code tasks.max} says: one replication slot has one reader. */
    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        return List.of(props);
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return ConnectorSettings.DEF;
    }

    /**
     * The {@link ConfigDef}'s checks, plus an error naming each key this connector does not support; once the settings
     * hold, the source database's checks ({@link SourceValidation}): a connector that could not start is refused here.
     */
    @Override
    public Config validate(Map<String, String> connectorConfigs) {
        List<org.apache.kafka.common.config.ConfigValue> values = ConnectorSettings.validate(connectorConfigs);
        SourceValidation.check(connectorConfigs, values);
        return new Config(values);
    }

    /**
     * Offsets altered or reset through the REST API ({@code PATCH}/{@code DELETE /connectors/<name>/offsets}, the
     * connector stopped): a reset (a null offset) starts the pipeline over; an offset must hold a Millrace checkpoint
     * (the engine then checks its identity at start: INV: IDENTITY); the partition must be this connector's.
     */
    @Override
    public boolean alterOffsets(Map<String, String> connectorConfig, Map<Map<String, ?>, Map<String, ?>> offsets) {
        String prefix = new ConnectorSettings(connectorConfig).topicPrefix();
        for (Map.Entry<Map<String, ?>, Map<String, ?>> e : offsets.entrySet()) {
            if (!Map.of(RecordMaker.PARTITION_KEY, prefix).equals(e.getKey())) {
                throw new ConnectException("the source partition of this connector is {\"" + RecordMaker.PARTITION_KEY + "\": \""
                        + prefix + "\"}, not " + e.getKey());
            }
            Map<String, ?> offset = e.getValue();
            if (offset == null) {
                continue;
            }
            Object json = offset.get(MillraceSourceTask.OFFSET_KEY);
            Object transaction = offset.get(TransactionMetadata.OFFSET_KEY);
            if (json == null || offset.size() != (transaction == null ? 1 : 2)) {
                throw new ConnectException("an offset of this connector is {\"" + MillraceSourceTask.OFFSET_KEY
                        + "\": <checkpoint JSON>} (and, inside a source transaction with transaction metadata, \""
                        + TransactionMetadata.OFFSET_KEY + "\": <its counts>), not " + offset);
            }
            try {
                Checkpoints.fromJson(json.toString());
                if (transaction != null) {
                    TransactionMetadata.check(transaction.toString());
                }
            } catch (IllegalArgumentException ex) {
                throw new ConnectException("the offset cannot be read: " + ex.getMessage(), ex);
            }
        }
        return true;
    }

    /** Supported: offsets are committed in the records' Kafka transaction, and the engine resumes from them. */
    @Override
    public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> connectorConfig) {
        return ExactlyOnceSupport.SUPPORTED;
    }

    /** Supported: with {@code transaction.boundary=connector} each engine batch is one transaction. */
    @Override
    public ConnectorTransactionBoundaries canDefineTransactionBoundaries(Map<String, String> connectorConfig) {
        return ConnectorTransactionBoundaries.SUPPORTED;
    }
}
