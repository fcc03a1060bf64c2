package io.millrace.engine;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.TableRef;
import io.millrace.engine.config.EngineConfig;
import io.millrace.pipeline.PipelineStats;
import io.millrace.snapshot.SnapshotRunner;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.EOFException;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.sql.SQLException;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Runs a pipeline as a sequence of {@link Engine} attempts: after a <em>transient</em> failure it waits (exponential
 * backoff with jitter, {@code operations.retry}) and starts a fresh engine, which resumes from the durable
 * checkpoints of the destinations (INV: RESUME — restart from the checkpoints is always correct, so a retry never
 * needs to know where the failed attempt was). A <em>permanent</em> failure stops at once with its error.
 *
 * <p>What is transient ({@link #classify}):
 * <ul>
 *   <li>{@link Kind#CONNECTION}: the source or a destination unreachable, a connection lost, PostgreSQL shutting
 *       down or starting up (SQLSTATE 08xxx, 57P01–57P03), the source turning a session away for a while (a lock not
 *       granted within lock_timeout 55P03, no connection left 53300, a statement cancelled 57014, a deadlock 40P01:
 *       {@code PgErrors}) — retried up to {@code operations.retry.attempts}
 *       times in a row (0 = no limit) until an attempt of this run has run for {@link #healthyMillis}, then up to
 *       {@code attempts_once_running} (default 0: no limit) — a start that never worked fails, a pipeline that ran
 *       waits out an outage;</li>
 *   <li>{@link Kind#SINK} when caused by a lost connection, a serialization failure or deadlock (40001, 40P01) or
 *       too many connections (53300) — as above; any other destination error (a constraint, a type) is
 *       permanent: repeating the same batch would fail the same way;</li>
 *   <li>{@link Kind#SLOT_IN_USE}: at most {@value #SLOT_IN_USE_ATTEMPTS} restarts in a row — the walsender of a
 *       crashed previous run may still be ending — then it stops: another process reads the slot;</li>
 *   <li>{@link Kind#SOURCE_SETUP} caused by a table that does not exist (42P01) in an attempt that failed before it ran
 *       for {@link #healthyMillis}: as few — a table renamed or dropped between the start's survey of the tables and a
 *       statement that names it (the publication's creation, the snapshot's lock) is seen by the next start's survey
 *       (INV: RESUME: the next start resumes from the checkpoints, or starts a snapshot that had not landed over on a new
 *       slot); before, a rename while the pipeline started ended it for good (found by a user embedding Millrace, 3 times
 *       in 3 tries).</li>
 * </ul>
 * Everything else — configuration, authentication, privileges, source set-up (a dropped slot included: no silent
 * re-snapshot), identity, decoding, internal errors — is permanent. An attempt that ran for at least
 * {@link #healthyMillis} before failing resets the count and the backoff.
 *
 * <p>Threads: {@link #run()} on one thread (the caller's); {@link #stop()}, {@link #status()}, {@link #stats()}
 * from any thread. {@code stop()} ends a running engine after its last durable checkpoint, or a backoff wait at once.
 */
public final class Supervisor implements EngineView {
    private static final Logger LOG = LoggerFactory.getLogger(Supervisor.class);
    /** Restarts in a row allowed when the slot is in use. */
    public static final int SLOT_IN_USE_ATTEMPTS = 5;
    private static final Set<String> TRANSIENT_STATES = Set.of("57P01", "57P02", "57P03", "40001", "40P01", "53300");

    /** What to do after a failure. */
    public enum Verdict { RETRY, RETRY_FEW, STOP }

    /** One engine attempt; package-private so that tests can drive the loop without a server. */
    interface Attempt {
        void run() throws InterruptedException;

        void stop();

        EngineStatus status();

        PipelineStats stats();

        /** The engine itself, for control calls; null in tests that drive the loop without one. */
        default Engine engine() {
            return null;
        }
    }

    /** The retry in progress: shown by {@link #status()}. */
    private record Retrying(int attempt, long atNanos, String error) {
    }

    /** The configuration the next attempt starts with: a reload replaces it (its table selection). */
    private volatile EngineConfig config;
    private java.util.function.Supplier<Attempt> attempts;
    /** Reads the configuration file again, for {@link #reload}; null when there is none. */
    private volatile java.util.function.Supplier<EngineConfig> reloadSource;
    private volatile EngineStatus.Reload lastReload;
    private final LongSupplier nanoClock;
    private final long healthyMillis;
    private final CountDownLatch stopRequested = new CountDownLatch(1);
    /** The running attempt with what the attempts before it delivered (one field: a reader sees the two together). */
    private volatile Current current;
    /** What the attempts that ended delivered: the base of the next attempt (the supervisor's thread only). */
    private Delivered nextBase = Delivered.NONE;
    private volatile Retrying retrying;
    private volatile EngineStatus lastStatus;
    /**
     * The last status with known positions and lag (an engine that read the source), and when it was taken: while the
     * supervisor waits to retry, a new attempt that failed before it read anything knows none, and the status showed -1
     * (no lag) through a destination's outage, exactly when the source's WAL piled up (found by a user).
     */
    private volatile Known lastKnown;
    private volatile int restarts;

    /** A status with known figures and when it was read. */
    private record Known(EngineStatus status, long atNanos) {
    }

    public Supervisor(EngineConfig config) {
        this(config, new SnapshotRunner.Listener() {
        });
    }

    public Supervisor(EngineConfig config, SnapshotRunner.Listener snapshotListener) {
        this(config, null, System::nanoTime, Math.max(30_000, config.operations().retry().maxMillis()));
        this.attempts = () -> engineAttempt(new Engine(this.config, snapshotListener)); // the configuration as last reloaded
        this.walReader = () -> readWal(this.config);
    }

    Supervisor(EngineConfig config, java.util.function.Supplier<Attempt> attempts, LongSupplier nanoClock, long healthyMillis) {
        this.config = config;
        this.attempts = attempts;
        this.nanoClock = nanoClock;
        this.healthyMillis = healthyMillis;
        this.walReader = () -> null; // tests drive the loop without a server; the public constructors read the source
    }

    /**
     * The source's WAL as read while waiting to retry: the server's position and how much WAL the slot retains. Through a
     * destination's outage the status kept the figures an engine last read, and said lag_bytes 0 while the slot fell 138 MB
     * behind (found by a soak). Null before the first read of a wait, or when the source could not be read.
     */
    record Wal(io.millrace.core.Lsn server, long retainedBytes, io.millrace.core.Lsn confirmed) {
        Wal(io.millrace.core.Lsn server, long retainedBytes) {
            this(server, retainedBytes, null);
        }
    }

    /** Reads the source's WAL for the status while waiting to retry; replaced in tests. */
    java.util.function.Supplier<Wal> walReader;
    private volatile Wal wal;
    /** Which wait a reading belongs to: a reading that ends after its wait is not shown with the next one's. */
    private final java.util.concurrent.atomic.AtomicLong walWait = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicBoolean walReading = new java.util.concurrent.atomic.AtomicBoolean();
    /** How often the source's WAL is read while waiting to retry. */
    static final long WAL_READ_MS = 5_000;

    /**
     * Waits {@code waitMs} before the next attempt, or until a stop (returns true); meanwhile reads the source's WAL every
     * {@link #WAL_READ_MS} on a thread of its own, so that a stop never waits for a connection to a source that is down too.
     */
    private boolean waitToRetry(long waitMs) throws InterruptedException {
        long thisWait = walWait.incrementAndGet();
        wal = null;
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs); // real time: nanoClock is a test's in SupervisorTest
        while (true) {
            if (walReading.compareAndSet(false, true)) {
                Thread t = new Thread(() -> {
                    try {
                        Wal w = walReader.get();
                        if (w != null && walWait.get() == thisWait) {
                            wal = w;
                        }
                    } finally {
                        walReading.set(false);
                    }
                }, "millrace-retry-wal");
                t.setDaemon(true);
                t.start();
            }
            long left = TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime());
            if (left <= 0) {
                return false;
            }
            if (stopRequested.await(Math.min(left, WAL_READ_MS), TimeUnit.MILLISECONDS)) {
                return true;
            }
        }
    }

    /** The source's WAL position and what the slot retains, or null when it cannot be read (the source down too). */
    private static Wal readWal(EngineConfig config) {
        try (java.sql.Connection c = new io.millrace.source.PgConnections(config.source()).openCapture(); // where the slot is
             java.sql.PreparedStatement ps = c.prepareStatement("SELECT w::text, (w - restart_lsn)::bigint, confirmed_flush_lsn::text FROM"
                     + " (SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END AS w) n,"
                     + " pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, config.source().slot());
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                if (!rs.next() || rs.getString(1) == null) {
                    return null;
                }
                return new Wal(io.millrace.core.Lsn.parse(rs.getString(1)), rs.getLong(2),
                        rs.getString(3) == null ? null : io.millrace.core.Lsn.parse(rs.getString(3)));
            }
        } catch (SQLException | RuntimeException e) {
            LOG.debug("reading the source's WAL position while waiting to retry: {}", e.toString());
            return null;
        }
    }

    private static Attempt engineAttempt(Engine e) {
        return new Attempt() {
            @Override
            public void run() throws InterruptedException {
                e.run();
            }

            @Override
            public void stop() {
                e.stop();
            }

            @Override
            public EngineStatus status() {
                return e.status();
            }

            @Override
            public PipelineStats stats() {
                return e.stats();
            }

            @Override
            public Engine engine() {
                return e;
            }
        };
    }

    private Engine running() {
        Attempt a = attempt();
        Engine e = a == null || retrying != null ? null : a.engine();
        if (e == null) {
            throw new io.millrace.core.MillraceException(Kind.CONFIG, "no engine is running now (" + status().state()
                    + "); try again once it streams");
        }
        return e;
    }

    @Override
    public void snapshot(java.util.List<io.millrace.core.schema.TableRef> tables, String filter) {
        running().snapshot(tables, filter);
    }

    @Override
    public void pauseSnapshots(boolean pause) {
        running().pauseSnapshots(pause);
    }

    @Override
    public String copyDuckDb(String destination, java.nio.file.Path file) {
        return running().copyDuckDb(destination, file);
    }

    @Override
    public EngineConfig config() {
        return config;
    }

    /** Where {@link #reload} reads the configuration again (the file {@code millrace run} was given). Call before {@link #run}. */
    public void reloadFrom(java.util.function.Supplier<EngineConfig> source) {
        this.reloadSource = source;
    }

    /**
     * Reads the configuration again and applies its table selection to the running engine (see {@link Engine#reload});
     * the next engine after a restart starts with it too. A file that does not load, or a change the engine refuses,
     * changes nothing: the error (naming the setting) is thrown, logged, and shown in the status ({@code last_reload}).
     * Any thread.
     */
    @Override
    public synchronized String reload() {
        java.util.function.Supplier<EngineConfig> source = reloadSource;
        if (source == null) {
            return EngineView.super.reload();
        }
        try {
            EngineConfig next;
            try {
                next = source.get();
            } catch (MillraceException e) {
                throw new MillraceException(e.kind(), "reload: the configuration file is not valid, nothing was changed: " + e.getMessage(), e);
            }
            String done = running().reload(next);
            config = next;
            lastReload = new EngineStatus.Reload(java.time.Instant.now().toString(), true, done);
            return done;
        } catch (MillraceException e) {
            lastReload = new EngineStatus.Reload(java.time.Instant.now().toString(), false, e.getMessage());
            LOG.error("reload failed, nothing was changed: {}", e.getMessage());
            throw e;
        }
    }

    /** Engine restarts so far (0 while the first attempt runs). */
    public int restarts() {
        return restarts;
    }

    /**
     * The current engine's status; while waiting to retry, the last engine's status with state {@code retrying}
     * and {@code last_error} "retrying (attempt n, next in Xs): error". Any thread.
     */
    @Override
    public EngineStatus status() {
        EngineStatus s = status0();
        EngineStatus.Reload r = lastReload;
        return r == null ? s : s.withLastReload(r);
    }

    private EngineStatus status0() {
        Retrying r = retrying;
        Current c = current;
        if (r == null && c != null) {
            EngineStatus s = c.base().addedTo(c.attempt().status());
            lastStatus = s;
            remember(s);
            if (lastKnown != null && s.durableLsn() == null) {
                return known(s, s.state(), s.lastError()); // a restart that has read nothing yet: the last known figures
            }
            return s;
        }
        EngineStatus s = lastStatus;
        if (r == null) {
            return s != null ? s : new EngineStatus(config.name(), "created", config.source().where(), config.source().slot(),
                    config.source().publication(), null, null, null, -1, -1, -1, 0, 0, config.pipeline().budgetBytes(),
                    java.util.List.of(), null);
        }
        String text = retryingText(r);
        if (s == null) {
            return new EngineStatus(config.name(), "retrying", config.source().where(), config.source().slot(),
                    config.source().publication(), null, null, null, -1, -1, -1, 0, 0, config.pipeline().budgetBytes(),
                    java.util.List.of(), text);
        }
        return known(s, "retrying", text);
    }

    /**
     * The failed engine's status, read at its failure, with its figures when it has them; and the tables {@code source.tables}
     * names that it saw renamed in the source, which the next attempt captures under their new names (the file still names
     * the old: a restart of the process stops with the fix, as README says).
     */
    private void keepStatusOf(Current failed) {
        walWait.incrementAndGet(); // the last wait's reading is not this failure's
        wal = null;
        EngineStatus raw = failed.attempt().status();
        lastStatus = failed.base().addedTo(raw);
        remember(lastStatus);
        Engine e = failed.attempt().engine();
        java.util.Map<TableRef, TableRef> renamed = e == null ? java.util.Map.of() : e.namedTablesRenamed();
        nextBase = failed.base().plus(raw).renamed(renamed); // a table's count follows it to its new name
        if (!renamed.isEmpty()) {
            EngineConfig c = config;
            List<TableRef> tables = c.source().tables().stream().map(t -> renamed.getOrDefault(t, t)).toList();
            config = c.withSource(c.source().withTables(tables, c.source().excludeTables()));
            LOG.warn("the next attempt captures {} under the names they were renamed to in the source; write those in source.tables"
                    + " before the next start of the process, which stops otherwise", renamed);
        }
    }

    /** Keeps {@code s} as the last known figures when it has them. */
    private void remember(EngineStatus s) {
        if (s != null && (s.lagMillis() >= 0 || s.lagBytes() >= 0 || s.retainedWalBytes() >= 0)) {
            lastKnown = new Known(s, nanoClock.getAsLong());
        }
    }

    /**
     * {@code s} with the positions and lag of {@link #lastKnown}: nothing becomes durable while no engine reads, so the
     * destinations fall further behind in time by the wait since (the WAL figures stay as last read).
     */
    private EngineStatus known(EngineStatus s, String state, String error) {
        Known known = lastKnown;
        EngineStatus k = known != null ? known.status() : s;
        long lagMillis = k.lagMillis() < 0 || known == null ? k.lagMillis()
                : k.lagMillis() + TimeUnit.NANOSECONDS.toMillis(nanoClock.getAsLong() - known.atNanos());
        Wal w = wal;
        String serverLsn = k.serverLsn();
        long retained = k.retainedWalBytes();
        long lagBytes = k.lagBytes();
        if (w != null) {
            // read while waiting: the WAL written since the last engine read, which no destination has (behind what is durable,
            // or when no engine has told that yet, behind what the slot confirmed, which is never ahead of it)
            serverLsn = w.server().toString();
            retained = w.retainedBytes();
            io.millrace.core.Lsn behind = k.durableLsn() != null ? io.millrace.core.Lsn.parse(k.durableLsn()) : w.confirmed();
            if (behind != null) {
                lagBytes = Math.max(0, w.server().value() - behind.value());
            }
        }
        return new EngineStatus(s.name(), state, s.source(), s.slot(), s.publication(), k.durableLsn(), serverLsn,
                k.confirmedLsn(), retained, lagBytes, lagMillis, s.eventsWritten(), 0, s.budgetLimit(),
                tables(s.tables(), state), error, null, null, s.values(), s.slotLost(), s.notCaptured(), s.lastReload());
    }

    /**
     * The failed engine's tables as the run stands: a table whose phase was the engine's state ({@code failed}) is in the
     * run's ({@code retrying}); a copy's phase stays. An operator read "failed" on every table through a destination's
     * outage, which the supervisor waited out.
     */
    private static java.util.List<EngineStatus.Table> tables(java.util.List<EngineStatus.Table> tables, String state) {
        if (state.equals("failed") || tables.stream().noneMatch(t -> t.phase().equals("failed"))) {
            return tables;
        }
        return tables.stream().map(t -> t.phase().equals("failed") ? new EngineStatus.Table(t.table(), state, t.rowsCopied(),
                t.rowsEstimated(), t.events()) : t).toList();
    }

    /**
     * The status of a run stopped while it waited to retry: stopped as asked, not the failed attempt's state, with its
     * error as the last one (a user's await() returned normally while the status said failed).
     */
    private static EngineStatus stoppedWhileWaiting(EngineStatus l, Retrying r) {
        String last = l.lastError() != null ? l.lastError() : r.error();
        return new EngineStatus(l.name(), "stopped", l.source(), l.slot(), l.publication(), l.durableLsn(), l.serverLsn(), l.confirmedLsn(),
                l.retainedWalBytes(), l.lagBytes(), l.lagMillis(), l.eventsWritten(), 0, l.budgetLimit(), l.tables(), last, null, null,
                l.values(), l.slotLost(), l.notCaptured(), l.lastReload());
    }

    private String retryingText(Retrying r) {
        long inMillis = Math.max(0, TimeUnit.NANOSECONDS.toMillis(r.atNanos() - nanoClock.getAsLong()));
        return String.format(java.util.Locale.ROOT, "retrying (attempt %d, next in %.1fs): %s", r.attempt(), inMillis / 1000.0, r.error());
    }

    @Override
    public PipelineStats stats() {
        Attempt a = attempt();
        return a == null ? null : a.stats();
    }

    /** Asks the pipeline to stop: a running engine stops after its last durable checkpoint; a backoff wait ends. Any thread. */
    public void stop() {
        stopRequested.countDown();
        Attempt a = attempt();
        if (a != null) {
            a.stop();
        }
    }

    /** Whether {@code inRow} failures in a row ({@code slotInRow} of them a slot in use) use up a budget (0: none). */
    private static boolean exhausted(Verdict v, int inRow, int slotInRow, int budget) {
        if (v == Verdict.RETRY_FEW) {
            return slotInRow > Math.min(SLOT_IN_USE_ATTEMPTS, budget == 0 ? Integer.MAX_VALUE : budget);
        }
        return budget != 0 && inRow > budget;
    }

    private boolean stopping() {
        return stopRequested.getCount() == 0;
    }

    /**
     * Whether a stop was asked while the attempt that failed with {@code e} ran: a transient failure is then the end of a
     * run stopped as asked (exit 0, README's exit codes: a SIGTERM while it starts; a user's, during a start against a
     * port that is not Kafka's, exited 3 after the admin call's timeout). A permanent error is thrown: it is the run's.
     */
    private boolean stoppedMeanwhile(RuntimeException e, Verdict v) {
        if (!stopping()) {
            return false;
        }
        if (v == Verdict.STOP) {
            throw e;
        }
        LOG.warn("stopped on request; the attempt under way had failed: {}", e.getMessage());
        return true;
    }

    /**
     * Runs engine attempts until {@link #stop()}, a permanent failure, or too many transient failures in a row.
     *
     * @throws MillraceException the error that stopped the pipeline
     */
    public void run() throws InterruptedException {
        EngineConfig.Retry policy = config.operations().retry();
        int inRow = 0;
        int slotInRow = 0;
        boolean ranOnce = false;
        while (!stopping()) {
            Attempt a = attempts.get();
            Current running = new Current(a, nextBase);
            current = running;
            if (stopping()) {
                return;
            }
            long began = nanoClock.getAsLong();
            try {
                a.run();
                return; // stopped on request (or snapshot mode initial_only finished)
            } catch (RuntimeException e) {
                Verdict v = classify(e);
                if (stoppedMeanwhile(e, v)) {
                    return;
                }
                long ranMillis = TimeUnit.NANOSECONDS.toMillis(nanoClock.getAsLong() - began);
                v = startsRaceOnly(v, e, ranMillis);
                if (ranMillis >= healthyMillis) {
                    inRow = 0;
                    slotInRow = 0;
                    ranOnce = true;
                }
                int budget = ranOnce ? policy.attemptsOnceRunning() : policy.attempts();
                inRow++;
                slotInRow = v == Verdict.RETRY_FEW ? slotInRow + 1 : 0;
                String error = e.getMessage() == null ? e.toString() : e.getMessage();
                if (v == Verdict.STOP) {
                    throw e;
                }
                if (exhausted(v, inRow, slotInRow, budget)) {
                    LOG.error("giving up after {} failures in a row ({} restarts, {}): {}", inRow, inRow - 1, v == Verdict.RETRY_FEW
                            ? "the most for a slot in use or a table gone" : "operations.retry." + (ranOnce ? "attempts_once_running: " : "attempts: ") + budget, error);
                    throw e;
                }
                keepStatusOf(running);
                long wait = backoff(inRow, policy.initialMillis(), policy.maxMillis(), ThreadLocalRandom.current().nextDouble());
                retrying = new Retrying(inRow, nanoClock.getAsLong() + TimeUnit.MILLISECONDS.toNanos(wait), error);
                current = null;
                LOG.warn("{} (attempt {}{}, next in {} ms; the next engine resumes from the durable checkpoints)",
                        retryingText(retrying).replaceFirst("^retrying \\([^)]*\\): ", "transient failure: "), inRow,
                        budget == 0 ? "" : " of " + budget, wait);
                try {
                    if (waitToRetry(wait)) {
                        LOG.info("stopped while waiting to retry");
                        lastStatus = stoppedWhileWaiting(lastStatus, retrying);
                        return;
                    }
                } finally {
                    retrying = null;
                }
                restarts++;
            }
        }
    }

    /**
     * The wait before the {@code n}-th restart in a row: {@code min(max, initial * 2^(n-1))}, scaled by
     * {@code 0.5 + jitter/2} (jitter in [0, 1)), so that many pipelines do not return in step.
     */
    static long backoff(int n, long initialMillis, long maxMillis, double jitter) {
        double base = Math.min((double) maxMillis, initialMillis * Math.pow(2, Math.max(0, n - 1)));
        return Math.max(1, Math.round(base * (0.5 + jitter / 2)));
    }

    /** Whether a failure is worth a restart; see the class comment. */
    public static Verdict classify(Throwable t) {
        if (!(t instanceof MillraceException m)) {
            return Verdict.STOP; // a bug: restarting would hide it
        }
        return switch (m.kind()) {
            case CONNECTION -> Verdict.RETRY;
            case SLOT_IN_USE -> Verdict.RETRY_FEW;
            case SINK -> transientCause(m) ? Verdict.RETRY : Verdict.STOP;
            case SOURCE_SETUP -> tableGone(m) ? Verdict.RETRY_FEW : Verdict.STOP;
            default -> Verdict.STOP;
        };
    }

    /** A table gone is retried as a start's race only, not one that keeps coming in an attempt that ran healthily. */
    private Verdict startsRaceOnly(Verdict v, RuntimeException e, long ranMillis) {
        return v == Verdict.RETRY_FEW && tableGone(e) && ranMillis >= healthyMillis ? Verdict.STOP : v;
    }

    /** Whether {@code t} is caused by a statement naming a table that does not exist (42P01, undefined_table). */
    private static boolean tableGone(Throwable t) {
        for (Throwable c = t.getCause(); c != null; c = c.getCause()) {
            if (c instanceof SQLException s && "42P01".equals(s.getSQLState())) {
                return true;
            }
        }
        return false;
    }

    private static boolean transientCause(Throwable t) {
        for (Throwable c = t.getCause(); c != null; c = c.getCause()) {
            if (c instanceof SQLException s && s.getSQLState() != null
                    && (s.getSQLState().startsWith("08") || TRANSIENT_STATES.contains(s.getSQLState()))) {
                return true;
            }
            if (c instanceof ConnectException || c instanceof SocketTimeoutException || c instanceof EOFException
                    || c instanceof SocketException) {
                return true;
            }
            if (c instanceof MillraceException mc && mc.kind() == Kind.CONNECTION) {
                return true;
            }
        }
        return false;
    }

    private Attempt attempt() {
        Current c = current;
        return c == null ? null : c.attempt();
    }

    /** An attempt and what the attempts before it delivered. */
    private record Current(Attempt attempt, Delivered base) {
    }

    /** Events delivered by attempts that ended, in all and per table. */
    record Delivered(long events, java.util.Map<String, Long> tables) {
        static final Delivered NONE = new Delivered(0, java.util.Map.of());

        /** {@code s}'s counters with these added. */
        EngineStatus addedTo(EngineStatus s) {
            if (events == 0 && tables.isEmpty()) {
                return s;
            }
            List<EngineStatus.Table> t = s.tables().stream().map(x -> new EngineStatus.Table(x.table(), x.phase(), x.rowsCopied(),
                    x.rowsEstimated(), x.events() + tables.getOrDefault(x.table(), 0L))).toList();
            return s.withCounts(s.eventsWritten() + events, t);
        }

        /** These and what the attempt whose status is {@code s} delivered. */
        Delivered plus(EngineStatus s) {
            java.util.Map<String, Long> t = new java.util.HashMap<>(tables);
            for (EngineStatus.Table x : s.tables()) {
                t.merge(x.table(), x.events(), Long::sum);
            }
            return new Delivered(events + s.eventsWritten(), java.util.Map.copyOf(t));
        }

        /** These with the counts of tables renamed under their new names. */
        Delivered renamed(java.util.Map<TableRef, TableRef> renamed) {
            if (renamed.isEmpty()) {
                return this;
            }
            java.util.Map<String, Long> t = new java.util.HashMap<>(tables);
            renamed.forEach((from, to) -> {
                Long n = t.remove(from.toString());
                if (n != null) {
                    t.merge(to.toString(), n, Long::sum);
                }
            });
            return new Delivered(events, java.util.Map.copyOf(t));
        }
    }
}
