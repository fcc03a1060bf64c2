package io.millrace.connect;

import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
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

    /** The {@link ConfigDef}'s checks, plus an error naming each key this connector does not support. */
    @Override
    public Config validate(Map<String, String> connectorConfigs) {
        return new Config(ConnectorSettings.validate(connectorConfigs));
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
