package io.millrace.engine;

import io.millrace.api.Millrace;
import io.millrace.api.TestConfigs;
import io.millrace.core.schema.TableRef;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.engine.verify.Verifier;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/** Test support: an {@link Engine} running on its own thread. */
public final class RunningEngine implements AutoCloseable {
    private final Engine engine;
    private final Thread thread;
    private final AtomicReference<Throwable> error = new AtomicReference<>();

    private RunningEngine(EngineConfig config) {
        this.engine = new Engine(config);
        this.thread = new Thread(() -> {
            try {
                engine.run();
            } catch (Throwable t) {
                error.set(t);
            }
        }, "test-engine");
        thread.setDaemon(true);
        thread.start();
    }

    /** Parses {@code yaml} (relative paths against {@code base}; env lookups from {@code env}) and starts it. */
    public static RunningEngine start(String yaml, Path base, Map<String, String> env) {
        return new RunningEngine(new ConfigLoader(env::get).parse(yaml, base));
    }

    public static RunningEngine start(String yaml, Path base) {
        return start(yaml, base, Map.of());
    }

    /** Starts the pipeline {@code pipeline} describes (as {@link Millrace.Builder#build()} would check it). */
    public static RunningEngine start(Millrace.Builder pipeline) {
        return new RunningEngine(TestConfigs.of(pipeline));
    }

    public Engine engine() {
        return engine;
    }

    /**
     * Waits until the engine streams and its reader holds the slot (STREAMING is reported a moment before
     * START_REPLICATION); fails with the engine's error if it stopped.
     */
    public RunningEngine awaitStreaming(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (engine.state() != Engine.State.STREAMING || !engine.readerStarted()) {
            if (!thread.isAlive()) {
                throw new AssertionError("engine stopped before streaming: " + error.get(), error.get());
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("engine not streaming after " + timeout + " (state " + engine.state() + ")");
            }
            Thread.sleep(20);
        }
        return this;
    }

    /** Waits for the engine's thread to end by itself (a start that fails); returns its error or null. */
    public Throwable awaitEnd(Duration timeout) throws InterruptedException {
        thread.join(timeout.toMillis());
        if (thread.isAlive()) {
            throw new AssertionError("engine still running after " + timeout + " (state " + engine.state() + ")");
        }
        return error.get();
    }

    /** Polls until every table of the destination equals the source, or fails with the last difference. */
    public static void awaitEqual(Connection source, Connection target, List<TableRef> tables, String targetSchema, Duration timeout)
            throws SQLException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<Verifier.TableResult> last;
        do {
            last = Verifier.compare(source, target, tables, targetSchema);
            if (last.stream().allMatch(Verifier.TableResult::equal)) {
                return;
            }
            Thread.sleep(100);
        } while (System.nanoTime() < deadline);
        throw new AssertionError("destination differs from source after " + timeout + ": " + last);
    }

    /** Stops the engine and rethrows its error, if it had one. */
    @Override
    public void close() throws Exception {
        engine.stop();
        thread.join(30_000);
        if (thread.isAlive()) {
            throw new AssertionError("engine did not stop within 30 s");
        }
        Throwable t = error.get();
        if (t instanceof Exception e) {
            throw e;
        }
        if (t != null) {
            throw new AssertionError(t);
        }
    }
}
