package io.millrace.connect;

/**
 * {@link ConnectClusterTests} with exactly-once source support on the workers and connector-defined transaction
 * boundaries: a {@code read_committed} consumer sees each change exactly once, also across failovers.
 */
class ConnectClusterIT extends ConnectClusterTests {
    @Override
    boolean exactlyOnce() {
        return true;
    }
}
