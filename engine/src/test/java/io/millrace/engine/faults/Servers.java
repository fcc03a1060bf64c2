package io.millrace.engine.faults;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.ArrayList;
import java.util.List;

/**
 * The servers (PostgreSQL, Kafka) a test started, closed after it ({@code @RegisterExtension final Servers servers = new Servers();}); a
 * server the test killed closes quietly.
 */
final class Servers implements AfterEachCallback {
    private final List<AutoCloseable> started = new ArrayList<>();

    /** {@code server} (a PostgreSQL, a Kafka broker), closed after the test. */
    <T extends AutoCloseable> T keep(T server) {
        started.add(server);
        return server;
    }

    /** No longer closed after the test (the test closed it). */
    void forget(AutoCloseable pg) {
        started.remove(pg);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        for (AutoCloseable server : started) {
            try {
                server.close();
            } catch (Exception ignored) {
                // killed
            }
        }
        started.clear();
    }
}
