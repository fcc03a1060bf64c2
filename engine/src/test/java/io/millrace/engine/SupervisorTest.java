package io.millrace.engine;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.TableRef;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.pipeline.PipelineStats;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** The restart loop of {@link Supervisor} with scripted attempts (no server): what is retried, how often, how long it waits. */
class SupervisorTest {
    private static EngineConfig config(String retry) {
        String yaml = "source:\n  database: app\n  user: postgres\n  tables: [public.t]\n"
                + "destinations:\n  - type: jsonl\n    directory: out\n"
                + (retry == null ? "" : "operations:\n  retry: " + retry + "\n");
        return new ConfigLoader(Map.<String, String>of()::get).parse(yaml, Path.of("."));
    }

    /** Attempts that throw the scripted errors in turn, then run until stopped. */
    private static final class Script implements java.util.function.Supplier<Supervisor.Attempt> {
        final Deque<RuntimeException> errors;
        final AtomicInteger started = new AtomicInteger();
        final CountDownLatch lastRunning = new CountDownLatch(1);

        Script(RuntimeException... errors) {
            this.errors = new ArrayDeque<>(List.of(errors));
        }

        @Override
        public Supervisor.Attempt get() {
            RuntimeException e = errors.poll();
            started.incrementAndGet();
            CountDownLatch stop = new CountDownLatch(1);
            return new Supervisor.Attempt() {
                @Override
                public void run() throws InterruptedException {
                    if (e != null) {
                        throw e;
                    }
                    lastRunning.countDown();
                    stop.await();
                }

                @Override
                public void stop() {
                    stop.countDown();
                }

                @Override
                public EngineStatus status() {
                    return new EngineStatus("p", "streaming", "h:1/app", "s", "pub", "0/10", null, null, -1, -1, -1, 7, 0, 1, List.of(), null);
                }

                @Override
                public PipelineStats stats() {
                    return null;
                }
            };
        }
    }

    private static MillraceException connection() {
        return new MillraceException(Kind.CONNECTION, "streaming from slot 's' failed: An I/O error occurred",
                new SQLException("An I/O error occurred while sending to the backend.", "08006"));
    }

    @Test
    void transientFailuresAreRetriedThenTheEngineRunsUntilStopped() throws Exception {
        Script script = new Script(connection(), connection(),
                new MillraceException(Kind.SINK, "destination 'replica': lost", new SQLException("terminating connection", "57P01")));
        Supervisor s = new Supervisor(config("{initial_ms: 10, max_ms: 40, attempts: 5}"), script, System::nanoTime, 60_000);
        Thread t = runAsync(s, new AtomicReference<>());
        assertThat(script.lastRunning.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(script.started.get()).isEqualTo(4);
        assertThat(s.restarts()).isEqualTo(3);
        assertThat(s.status().state()).isEqualTo("streaming");
        s.stop();
        t.join(5_000);
        assertThat(t.isAlive()).isFalse();
    }

    /** A stop while waiting to retry ends the run as asked: state stopped (it said failed), the error kept as the last. */
    @Test
    void aStopWhileWaitingToRetryEndsStopped() throws Exception {
        Script script = new Script(connection(), connection());
        Supervisor s = new Supervisor(config("{initial_ms: 60000, max_ms: 60000, attempts: 5}"), script, System::nanoTime, 60_000);
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread t = runAsync(s, failed);
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!s.status().state().equals("retrying")) {
            assertThat(System.nanoTime()).as("retrying").isLessThan(deadline);
            Thread.sleep(10);
        }
        s.stop();
        t.join(5_000);
        assertThat(t.isAlive()).isFalse();
        assertThat(failed.get()).isNull();
        assertThat(s.status().state()).isEqualTo("stopped");
        assertThat(s.status().lastError()).isNotNull();
    }

    @Test
    void permanentFailuresStopAtOnce() {
        for (RuntimeException e : List.of(new MillraceException(Kind.CONFIG, "config: x"),
                new MillraceException(Kind.SOURCE_SETUP, "replication slot 's' does not exist"),
                new MillraceException(Kind.PERMISSION, "permission denied"), new MillraceException(Kind.IDENTITY, "other pipeline"),
                new MillraceException(Kind.SINK, "duplicate key", new SQLException("duplicate key", "23505")),
                new IllegalStateException("a bug"))) {
            Script script = new Script(e);
            Supervisor s = new Supervisor(config("{initial_ms: 10}"), script, System::nanoTime, 60_000);
            Throwable thrown = catchThrowableOfType(RuntimeException.class, s::run);
            assertThat(thrown).as("%s", e).isSameAs(e);
            assertThat(script.started.get()).as("%s", e).isEqualTo(1);
        }
    }

    @Test
    void aSlotInUseIsRetriedAFewTimesOnly() {
        RuntimeException[] busy = new RuntimeException[20];
        for (int i = 0; i < busy.length; i++) {
            busy[i] = new MillraceException(Kind.SLOT_IN_USE, "replication slot 's' is in use by another process");
        }
        Script script = new Script(busy);
        Supervisor s = new Supervisor(config("{initial_ms: 10, max_ms: 20, attempts: 0}"), script, System::nanoTime, 60_000);
        MillraceException e = catchThrowableOfType(MillraceException.class, s::run);
        assertThat(e.kind()).isEqualTo(Kind.SLOT_IN_USE);
        assertThat(script.started.get()).isEqualTo(Supervisor.SLOT_IN_USE_ATTEMPTS + 1);
    }

    @Test
    void retriesInARowAreBoundedByAttempts() {
        Script script = new Script(connection(), connection(), connection(), connection(), connection());
        Supervisor s = new Supervisor(config("{initial_ms: 10, max_ms: 10, attempts: 2}"), script, System::nanoTime, 60_000);
        MillraceException e = catchThrowableOfType(MillraceException.class, s::run);
        assertThat(e.kind()).isEqualTo(Kind.CONNECTION);
        assertThat(script.started.get()).isEqualTo(3);
    }

    /**
     * A pipeline that ran waits out an outage (a destination down for ten minutes: 10 attempts at the default waits ran out
     * after about four, and the pipeline stopped while its slot kept WAL — found by a user); {@code attempts} still bounds a
     * start that never worked, and {@code attempts_once_running} an outage if set.
     */
    @Test
    void onceAnAttemptRanAnOutageIsWaitedOutUnlessAttemptsOnceRunningIsSet() throws Exception {
        Script script = new Script(connection(), connection(), connection(), connection(), connection(), connection(), connection(),
                connection(), connection());
        long[] now = {0};
        // the first attempt "runs" 100 s on this clock, the others fail at once
        Supervisor s = new Supervisor(config("{initial_ms: 10, max_ms: 10, attempts: 2}"), script,
                () -> script.started.get() == 1 ? (now[0] += 100_000_000_000L) : now[0], 60_000);
        Thread t = runAsync(s, new AtomicReference<>());
        try {
            assertThat(script.lastRunning.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(script.started.get()).isEqualTo(10); // 8 failures in a row after it, where attempts is 2
        } finally {
            s.stop();
            t.join(5_000);
        }

        Script bounded = new Script(connection(), connection(), connection(), connection(), connection(), connection());
        long[] then = {0};
        Supervisor b = new Supervisor(config("{initial_ms: 10, max_ms: 10, attempts: 2, attempts_once_running: 3}"), bounded,
                () -> bounded.started.get() == 1 ? (then[0] += 100_000_000_000L) : then[0], 60_000);
        MillraceException e = catchThrowableOfType(MillraceException.class, b::run);
        assertThat(e.kind()).isEqualTo(Kind.CONNECTION);
        assertThat(bounded.started.get()).isEqualTo(4); // the one that ran, then 3 restarts in a row
    }

    @Test
    void aHealthyRunResetsTheCount() {
        Script script = new Script(connection(), connection(), connection(), connection(), connection());
        long[] now = {0};
        // every attempt "runs" 100 s on this clock: each failure is the first in a row
        Supervisor s = new Supervisor(config("{initial_ms: 10, max_ms: 10, attempts: 1}"), script, () -> now[0] += 100_000_000_000L, 60_000);
        Thread t = runAsync(s, new AtomicReference<>());
        try {
            assertThat(script.lastRunning.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(script.started.get()).isEqualTo(6);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        } finally {
            s.stop();
        }
    }

    /**
     * Through a destination's outage the attempts fail before they read anything, so they know no positions: the status
     * keeps those of the last engine that read the source, with the lag in time growing by the wait (nothing becomes
     * durable meanwhile). Before, it said -1 (no lag, no retained WAL) exactly while the source's WAL piled up.
     */
    @Test
    void whileRetryingTheStatusKeepsTheLastKnownPositionsAndItsLagGrows() throws Exception {
        CountDownLatch fail = new CountDownLatch(1);
        AtomicInteger attempts = new AtomicInteger();
        Supervisor s = new Supervisor(config("{initial_ms: 200, max_ms: 200, attempts: 50}"), outage(fail, attempts), System::nanoTime, 60_000);
        s.walReader = () -> null; // the source not read while waiting: the figures the last engine read
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread t = runAsync(s, failed);
        try {
            long deadline = System.currentTimeMillis() + 10_000;
            while (!"streaming".equals(s.status().state())) { // the monitor samples the first engine
                assertThat(System.currentTimeMillis()).isLessThan(deadline);
                Thread.sleep(5);
            }
            fail.countDown();
            while (attempts.get() < 4) { // a few attempts that never read anything
                assertThat(System.currentTimeMillis()).isLessThan(deadline);
                s.status();
                Thread.sleep(5);
            }
            EngineStatus st = s.status(); // retrying, or an attempt starting: the same figures either way
            assertThat(st.state()).isIn("retrying", "starting");
            assertThat(st.retainedWalBytes()).isEqualTo(5000);
            assertThat(st.lagBytes()).isEqualTo(4000);
            assertThat(st.durableLsn()).isEqualTo("0/10");
            // three waits of 100-200 ms (200 ms scaled by the 0.5-1 jitter) before the fourth attempt
            assertThat(st.lagMillis()).as("the last known lag plus the wait").isGreaterThanOrEqualTo(1200 + 300);
        } finally {
            s.stop();
            t.join(5_000);
        }
    }

    /**
     * While waiting to retry, the source's WAL is read: the lag in bytes and the retained WAL grow through a destination's
     * outage. Before, the status kept the last engine's figures, and a soak saw lag_bytes 0 while the slot fell 138 MB behind.
     */
    @Test
    void whileRetryingTheSourcesWalIsReadForTheLagInBytes() throws Exception {
        CountDownLatch fail = new CountDownLatch(1);
        AtomicInteger attempts = new AtomicInteger();
        Supervisor s = new Supervisor(config("{initial_ms: 5000, max_ms: 5000, attempts: 50}"), outage(fail, attempts), System::nanoTime, 60_000);
        s.walReader = () -> new Supervisor.Wal(io.millrace.core.Lsn.parse("0/2000"), 9000);
        Thread t = runAsync(s, new AtomicReference<>());
        try {
            long deadline = System.currentTimeMillis() + 10_000;
            while (!"streaming".equals(s.status().state())) {
                assertThat(System.currentTimeMillis()).isLessThan(deadline);
                Thread.sleep(5);
            }
            fail.countDown();
            EngineStatus st = s.status();
            while (!("retrying".equals(st.state()) && st.lagBytes() == 0x2000 - 0x10)) {
                assertThat(System.currentTimeMillis()).as("the WAL read while retrying: %s", st).isLessThan(deadline);
                Thread.sleep(5);
                st = s.status();
            }
            assertThat(st.serverLsn()).isEqualTo("0/2000");
            assertThat(st.retainedWalBytes()).isEqualTo(9000);
            assertThat(st.durableLsn()).isEqualTo("0/10");
        } finally {
            s.stop();
            t.join(5_000);
        }
    }

    /**
     * The same when no engine had told a durable position yet (a pipeline that failed soon after its start: CI's run of
     * RestartFaultsIT): the lag is behind what the slot confirmed. Before, the WAL read was not shown at all then.
     */
    @Test
    void whileRetryingWithoutADurablePositionTheLagIsBehindTheSlotsConfirmed() throws Exception {
        CountDownLatch fail = new CountDownLatch(1);
        AtomicInteger attempts = new AtomicInteger();
        EngineStatus noDurable = new EngineStatus("p", "streaming", "h:1/app", "s", "pub", null, "0/20", null, 5000, 4000, 1200, 7, 0, 1,
                List.of(), null);
        Supervisor s = new Supervisor(config("{initial_ms: 5000, max_ms: 5000, attempts: 50}"), outage(fail, attempts, noDurable),
                System::nanoTime, 60_000);
        s.walReader = () -> new Supervisor.Wal(io.millrace.core.Lsn.parse("0/2000"), 9000, io.millrace.core.Lsn.parse("0/1000"));
        Thread t = runAsync(s, new AtomicReference<>());
        try {
            long deadline = System.currentTimeMillis() + 10_000;
            while (!"streaming".equals(s.status().state())) {
                assertThat(System.currentTimeMillis()).isLessThan(deadline);
                Thread.sleep(5);
            }
            fail.countDown();
            EngineStatus st = s.status();
            while (!("retrying".equals(st.state()) && "0/2000".equals(st.serverLsn()))) {
                assertThat(System.currentTimeMillis()).as("the WAL read while retrying: %s", st).isLessThan(deadline);
                Thread.sleep(5);
                st = s.status();
            }
            assertThat(st.lagBytes()).isEqualTo(0x2000 - 0x1000);
            assertThat(st.retainedWalBytes()).isEqualTo(9000);
        } finally {
            s.stop();
            t.join(5_000);
        }
    }

    /**
     * While retrying, a table is in the run's state, not the failed attempt's: the soak's operator read "failed" on every
     * table's phase through a destination's outage the supervisor waited out. A copy's phase stays as it was.
     */
    @Test
    void whileRetryingTheTablesAreRetryingNotFailed() throws Exception {
        CountDownLatch fail = new CountDownLatch(1);
        AtomicInteger attempts = new AtomicInteger();
        EngineStatus failedEngine = new EngineStatus("p", "failed", "h:1/app", "s", "pub", "0/10", "0/20", "0/10", 5000, 4000, 1200, 7, 0, 1,
                List.of(new EngineStatus.Table("public.a", "failed", 10, 10, 3), new EngineStatus.Table("public.b", "snapshot", 5, 20, 0)),
                null);
        Supervisor s = new Supervisor(config("{initial_ms: 60000, max_ms: 60000, attempts: 5}"), outage(fail, attempts, failedEngine),
                System::nanoTime, 60_000);
        s.walReader = () -> null;
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread t = runAsync(s, failed);
        try {
            fail.countDown();
            long deadline = System.currentTimeMillis() + 10_000;
            while (!"retrying".equals(s.status().state())) {
                assertThat(System.currentTimeMillis()).isLessThan(deadline);
                Thread.sleep(5);
            }
            assertThat(s.status().tables()).extracting(EngineStatus.Table::phase).containsExactly("retrying", "snapshot");
        } finally {
            s.stop();
            t.join(5_000);
        }
    }

    /**
     * The counters of delivered changes go on across a restart: the second attempt's status shows what the first delivered
     * plus its own, in all and per table (they went back to 0 at each restart, found by a library user; the events gauge
     * with them).
     */
    @Test
    void deliveredChangesAreCountedAcrossRestarts() throws Exception {
        CountDownLatch fail = new CountDownLatch(1);
        CountDownLatch stopped = new CountDownLatch(1);
        AtomicInteger attempts = new AtomicInteger();
        java.util.function.Supplier<Supervisor.Attempt> script = () -> {
            boolean first = attempts.incrementAndGet() == 1;
            EngineStatus st = new EngineStatus("p", "streaming", "h:1/app", "s", "pub", "0/10", "0/20", "0/10", 5000, 4000, 1200,
                    first ? 7 : 5, 0, 1, List.of(new EngineStatus.Table("public.a", "streaming", 0, 0, first ? 3 : 2),
                    new EngineStatus.Table("public.b", "streaming", 0, 0, first ? 4 : 3)), null);
            return new Supervisor.Attempt() {
                @Override
                public void run() throws InterruptedException {
                    if (first) {
                        fail.await();
                        throw connection();
                    }
                    stopped.await();
                }

                @Override
                public void stop() {
                    stopped.countDown();
                }

                @Override
                public EngineStatus status() {
                    return st;
                }

                @Override
                public PipelineStats stats() {
                    return null;
                }
            };
        };
        Supervisor s = new Supervisor(config("{initial_ms: 10, max_ms: 10, attempts: 5}"), script, System::nanoTime, 60_000);
        s.walReader = () -> null;
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread t = runAsync(s, failed);
        try {
            long deadline = System.currentTimeMillis() + 10_000;
            while (!"streaming".equals(s.status().state())) { // the first attempt runs
                assertThat(System.currentTimeMillis()).isLessThan(deadline);
                Thread.sleep(5);
            }
            assertThat(s.status().eventsWritten()).isEqualTo(7);
            fail.countDown();
            while (attempts.get() < 2 || !"streaming".equals(s.status().state())) {
                assertThat(System.currentTimeMillis()).isLessThan(deadline);
                Thread.sleep(5);
            }
            EngineStatus st = s.status();
            assertThat(st.eventsWritten()).isEqualTo(12);
            assertThat(st.tables()).extracting(EngineStatus.Table::events).containsExactly(5L, 7L);
        } finally {
            s.stop();
            t.join(5_000);
        }
    }

    /** A table renamed in the source keeps its count under its new name in the attempts after (from the review). */
    @Test
    void aRenamedTablesCountFollowsItsNewName() {
        Supervisor.Delivered d = Supervisor.Delivered.NONE.plus(streaming(7, 3, 4))
                .renamed(Map.of(TableRef.parse("public.a"), TableRef.parse("public.a2")));
        EngineStatus next = new EngineStatus("p", "streaming", "h:1/app", "s", "pub", "0/10", "0/20", "0/10", 5000, 4000, 1200, 2, 0, 1,
                List.of(new EngineStatus.Table("public.a2", "streaming", 0, 0, 1), new EngineStatus.Table("public.b", "streaming", 0, 0, 1)), null);
        EngineStatus shown = d.addedTo(next);
        assertThat(shown.eventsWritten()).isEqualTo(9);
        assertThat(shown.tables()).extracting(EngineStatus.Table::events).containsExactly(4L, 5L);
    }

    private static EngineStatus streaming(long events, long a, long b) {
        return new EngineStatus("p", "streaming", "h:1/app", "s", "pub", "0/10", "0/20", "0/10", 5000, 4000, 1200, events, 0, 1,
                List.of(new EngineStatus.Table("public.a", "streaming", 0, 0, a), new EngineStatus.Table("public.b", "streaming", 0, 0, b)), null);
    }

    private static java.util.function.Supplier<Supervisor.Attempt> outage(CountDownLatch fail, AtomicInteger attempts) {
        return outage(fail, attempts, new EngineStatus("p", "streaming", "h:1/app", "s", "pub", "0/10", "0/20", "0/10", 5000, 4000, 1200, 7,
                0, 1, List.of(), null));
    }

    /** A first engine that streams until {@code fail}, then attempts that fail before they read anything (a destination down). */
    private static java.util.function.Supplier<Supervisor.Attempt> outage(CountDownLatch fail, AtomicInteger attempts, EngineStatus streaming) {
        return () -> {
            boolean first = attempts.incrementAndGet() == 1;
            return new Supervisor.Attempt() {
                @Override
                public void run() throws InterruptedException {
                    if (first) {
                        fail.await();
                    }
                    throw connection(); // then the destination is down: each attempt fails before it reads anything
                }

                @Override
                public void stop() {
                }

                @Override
                public EngineStatus status() {
                    return first ? streaming
                            : new EngineStatus("p", "starting", "h:1/app", "s", "pub", null, null, null, -1, -1, -1, 0, 0, 1, List.of(), null);
                }

                @Override
                public PipelineStats stats() {
                    return null;
                }
            };
        };
    }

    @Test
    void stopEndsABackoffWaitAtOnceAndStatusShowsTheRetry() throws Exception {
        Script script = new Script(connection());
        Supervisor s = new Supervisor(config("{initial_ms: 600000, max_ms: 600000, attempts: 3}"), script, System::nanoTime, 60_000);
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread t = runAsync(s, failed);
        long deadline = System.currentTimeMillis() + 10_000;
        while (!"retrying".equals(s.status().state()) && System.currentTimeMillis() < deadline) {
            Thread.sleep(5);
        }
        EngineStatus st = s.status();
        assertThat(st.state()).isEqualTo("retrying");
        assertThat(st.lastError()).matches("retrying \\(attempt 1, next in \\d+\\.\\ds\\): streaming from slot 's' failed: An I/O error occurred");
        assertThat(st.eventsWritten()).as("the last engine's figures stay visible").isEqualTo(7);
        long t0 = System.nanoTime();
        s.stop();
        t.join(5_000);
        assertThat(t.isAlive()).isFalse();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isLessThan(2_000);
        assertThat(failed.get()).isNull();
        assertThat(script.started.get()).isEqualTo(1);
    }

    /**
     * A stop asked while an attempt starts, which then fails to reach a server (a Kafka admin call that returns only after
     * its timeout): the run ends as stopped (exit 0, as README's exit codes say for a SIGTERM while it starts), not with the
     * transient error (a user's exited 3). A permanent error is still the run's.
     */
    @Test
    void aStopWhileAnAttemptStartsEndsStoppedThoughTheAttemptThenFails() throws Exception {
        for (RuntimeException failure : List.of(connection(), new MillraceException(Kind.CONFIG, "config: bad"))) {
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch stop = new CountDownLatch(1);
            Supervisor s = new Supervisor(config("{initial_ms: 10, max_ms: 40, attempts: 5}"), () -> new Supervisor.Attempt() {
                @Override
                public void run() throws InterruptedException {
                    started.countDown();
                    stop.await();
                    throw failure;
                }

                @Override
                public void stop() {
                    stop.countDown();
                }

                @Override
                public EngineStatus status() {
                    return new EngineStatus("p", "starting", "h:1/app", "s", "pub", null, null, null, -1, -1, -1, 0, 0, 1, List.of(), null);
                }

                @Override
                public PipelineStats stats() {
                    return null;
                }
            }, System::nanoTime, 60_000);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            Thread t = runAsync(s, failed);
            assertThat(started.await(5, TimeUnit.SECONDS)).isTrue();
            s.stop();
            t.join(5_000);
            assertThat(t.isAlive()).isFalse();
            if (failure.getMessage().startsWith("config")) {
                assertThat(failed.get()).as("a permanent error is the run's").isSameAs(failure);
            } else {
                assertThat(failed.get()).as("stopped as asked").isNull();
            }
        }
    }

    @Test
    void backoffDoublesUpToTheMaximumWithJitter() {
        assertThat(Supervisor.backoff(1, 1000, 60_000, 0.999999)).isEqualTo(1000);
        assertThat(Supervisor.backoff(1, 1000, 60_000, 0)).isEqualTo(500);
        assertThat(Supervisor.backoff(3, 1000, 60_000, 0.999999)).isEqualTo(4000);
        assertThat(Supervisor.backoff(7, 1000, 60_000, 0.999999)).isEqualTo(60_000);
        assertThat(Supervisor.backoff(40, 1000, 60_000, 0)).isEqualTo(30_000);
    }

    @Test
    void classification() {
        assertThat(Supervisor.classify(connection())).isEqualTo(Supervisor.Verdict.RETRY);
        assertThat(Supervisor.classify(new MillraceException(Kind.SINK, "x", new java.net.ConnectException("refused"))))
                .isEqualTo(Supervisor.Verdict.RETRY);
        assertThat(Supervisor.classify(new MillraceException(Kind.SINK, "x", new SQLException("deadlock", "40P01"))))
                .isEqualTo(Supervisor.Verdict.RETRY);
        assertThat(Supervisor.classify(new MillraceException(Kind.SINK, "disk full", new java.io.IOException("No space left on device"))))
                .isEqualTo(Supervisor.Verdict.STOP);
        assertThat(Supervisor.classify(new MillraceException(Kind.AUTHENTICATION, "password"))).isEqualTo(Supervisor.Verdict.STOP);
        assertThat(Supervisor.classify(new MillraceException(Kind.DECODE, "bad"))).isEqualTo(Supervisor.Verdict.STOP);
        assertThat(Supervisor.classify(new MillraceException(Kind.SLOT_IN_USE, "busy"))).isEqualTo(Supervisor.Verdict.RETRY_FEW);
        // a table renamed while the pipeline starts: the next start's survey sees it (a user: "creating publication ... failed:
        // relation public.zz_a2 does not exist", for good)
        assertThat(Supervisor.classify(new MillraceException(Kind.SOURCE_SETUP, "creating publication 'p' failed",
                new SQLException("relation \"public.zz_a2\" does not exist", "42P01")))).isEqualTo(Supervisor.Verdict.RETRY_FEW);
        assertThat(Supervisor.classify(new MillraceException(Kind.SOURCE_SETUP, "x", new SQLException("permission", "42501"))))
                .isEqualTo(Supervisor.Verdict.STOP);
    }

    @Test
    void retryKeysAreValidated() {
        EngineConfig.Retry r = config("{initial_ms: 50, max_ms: 5000, attempts: 0}").operations().retry();
        assertThat(r).isEqualTo(new EngineConfig.Retry(50, 5000, 0, 0));
        assertThat(config("{attempts_once_running: 20}").operations().retry().attemptsOnceRunning()).isEqualTo(20);
        assertThat(config(null).operations().retry()).isEqualTo(EngineConfig.Retry.defaults());
        MillraceException e = catchThrowableOfType(MillraceException.class, () -> config("{initial_ms: 500, max_ms: 100}"));
        assertThat(e).hasMessage("config: operations.retry.max_ms (100) must be at least operations.retry.initial_ms (500)");
        e = catchThrowableOfType(MillraceException.class, () -> config("{intial_ms: 500}"));
        assertThat(e.getMessage()).startsWith("config: operations.retry.intial_ms is not a known setting; did you mean 'initial_ms'?");
    }

    private static Thread runAsync(Supervisor s, AtomicReference<Throwable> failed) {
        Thread t = new Thread(() -> {
            try {
                s.run();
            } catch (Throwable e) {
                failed.set(e);
            }
        });
        t.setDaemon(true);
        t.start();
        return t;
    }
}
