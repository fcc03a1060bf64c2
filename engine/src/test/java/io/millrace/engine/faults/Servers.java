package io.millrace.engine.faults;

import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.ArrayList;
import java.util.List;

/**
 * The servers a test started, closed after it ({@code @RegisterExtension final Servers servers = new Servers();}); a
 * server the test killed closes quietly.
 */
final class Servers implements AfterEachCallback {
    private final List<EmbeddedPg> started = new ArrayList<>();

    /** {@code pg}, closed after the test. */
    EmbeddedPg keep(EmbeddedPg pg) {
        started.add(pg);
        return pg;
    }

    /** No longer closed after the test (the test closed it). */
    void forget(EmbeddedPg pg) {
        started.remove(pg);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        for (EmbeddedPg pg : started) {
            try {
                pg.close();
            } catch (RuntimeException ignored) {
                // killed
            }
        }
        started.clear();
    }
}
