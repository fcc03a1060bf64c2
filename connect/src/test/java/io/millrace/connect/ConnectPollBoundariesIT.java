package io.millrace.connect;

/**
 * {@link ConnectClusterTests} with exactly-once source support on the workers and the connector's configuration as a
 * Debezium user has it: no {@code transaction.boundary}, so the worker commits a Kafka transaction per poll. A
 * {@code read_committed} consumer sees each change exactly once, also across failovers, and the slot is never confirmed
 * past the committed offset. The hand-off releases a batch once Connect's offset store holds its offset after the commit
 * that follows its acknowledgements (before, each batch waited for two more polls: about 110 changes/s, found by a user).
 */
class ConnectPollBoundariesIT extends ConnectClusterTests {
    @Override
    boolean exactlyOnce() {
        return true;
    }

    @Override
    boolean connectorBoundaries() {
        return false;
    }
}
