package io.millrace.api;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.DestinationContext;
import io.millrace.core.sink.Sink;
import io.millrace.engine.EngineStatus;
import io.millrace.engine.Supervisor;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.engine.config.EngineConfigs;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * Millrace embedded in an application: a change-data-capture pipeline from one PostgreSQL database to one or more
 * destinations, made by {@link #builder()}.
 *
 * <pre>{@code
 * Millrace millrace = Millrace.builder()
 *         .source(SourceSettings.builder().host("db").database("shop").user("millrace").passwordEnv("PGPASSWORD")
 *                 .tables("public.orders").build())
 *         .changeConsumer("orders", Path.of("orders-checkpoint.json"), batch -> batch.forEach(c -> System.out.println(c.json())))
 *         .build();
 * millrace.start();
 * ...
 * millrace.close(); // stops after the last durable checkpoint
 * }</pre>
 *
 * <p>Lifecycle: {@link #start()} once; the pipeline then runs on a thread of its own (copying the tables first, as
 * {@link SnapshotSettings#mode()} says, then streaming) until {@link #stop()} or a failure it cannot recover from. A
 * transient failure (a lost connection) restarts it after a backoff ({@link OperationsSettings}), from the
 * destinations' durable checkpoints. {@link #await()} waits for the end and throws the error that ended it.
 *
 * <p>Threads: every method may be called from any thread. From one of the pipeline's own threads — a consumer's
 * {@code accept}, your {@link Sink}'s {@code open}, {@code write} or {@code close} — {@link #stop()} and {@link #close()}
 * ask the pipeline to stop and return at once (it ends once that call returns), and {@link #await()} refuses: it would
 * wait for the thread that calls it.
 */
public final class Millrace implements AutoCloseable {
    private enum Phase { CREATED, RUNNING, ENDED }

    private final EngineConfig config;
    /** The token this pipeline's consumers carry ({@link ConsumerSink#inCallback}). */
    private final Object owner;
    private final Supervisor supervisor;
    /**
     * The group of the pipeline's threads: the one {@link #start()} makes and those it and theirs start (a thread is made
     * in its maker's group), among them every destination's writer. A {@link #close()} there must not wait for the end.
     */
    private final ThreadGroup threads;
    private final AtomicReference<Phase> phase = new AtomicReference<>(Phase.CREATED);
    private final CountDownLatch ended = new CountDownLatch(1);
    private final AtomicReference<Throwable> error = new AtomicReference<>();
    /** Whether {@link #await} has thrown the error to the caller. */
    private volatile boolean reported;
    /** Whether {@link #stop()} ended the pipeline before {@link #start()}. */
    private volatile boolean stoppedBeforeStart;

    private Millrace(EngineConfig config, Object owner) {
        this.owner = owner;
        this.config = config;
        this.selected = config;
        this.supervisor = new Supervisor(config);
        this.threads = new ThreadGroup("millrace-" + config.name());
        this.threads.setDaemon(true); // gone with its last thread
    }

    /** A builder; {@link Builder#source} and at least one destination are required. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Starts the pipeline on a new thread and returns at once; watch {@link #status()} or wait with {@link #await()}.
     *
     * @throws IllegalStateException when it was started, or stopped, before: a handle runs once
     */
    public void start() {
        if (!phase.compareAndSet(Phase.CREATED, Phase.RUNNING)) {
            // a handle runs once: before, stop() and then start() did nothing, without a word (found by a user)
            throw new IllegalStateException("pipeline '" + config.name() + "' " + (stoppedBeforeStart ? "was stopped before it"
                    + " started" : "was started before") + ": a Millrace handle runs once; build a new one with the same settings"
                    + " to run again (it goes on from the destinations' checkpoints)");
        }
        if (config.operations().httpPort() > 0) {
            // the status server is millrace run's (module ops); an embedder took the setting for served (found by a user)
            org.slf4j.LoggerFactory.getLogger(Millrace.class).warn("operations.http_port {} is not served by an embedded pipeline:"
                    + " the HTTP status, metrics and control endpoints run with 'millrace run'; read status() here instead",
                    config.operations().httpPort());
        }
        Thread t = new Thread(threads, this::run, "millrace-" + config.name());
        t.start();
    }

    private void run() {
        try {
            supervisor.run();
        } catch (InterruptedException e) {
            error.set(e);
            Thread.currentThread().interrupt();
        } catch (RuntimeException | Error e) {
            error.set(e);
            // said where an embedder looks first (millrace run prints it on standard error): before, only await() and
            // status() told it, and the log had a DEBUG line (found by a user whose destination failed for good)
            org.slf4j.LoggerFactory.getLogger(Millrace.class).error("pipeline '{}' stopped: {}", config.name(),
                    e.getMessage() == null ? e.toString() : e.getMessage(), e instanceof MillraceException ? null : e);
        } finally {
            phase.set(Phase.ENDED);
            ended.countDown();
        }
    }

    /**
     * Asks the pipeline to stop and returns at once: a running engine stops after its last durable checkpoint (what the
     * destinations acknowledged stays acknowledged; nothing is cut in half), a wait before a restart ends. Before {@link
     * #start()}, it ends the pipeline there: {@link #await()} returns and {@code start()} throws.
     *
     * <p>It does not drain: changes read from the slot and not yet written are not written now (a batch under way
     * completes first). The slot keeps them, and the next start of the pipeline writes them, in order, once (INV:
     * RESUME). To stop with every change made so far written, read the source's {@code pg_current_wal_lsn()} once the
     * writes that matter have committed and wait until {@link #status()}'s {@code durable} reaches it first.
     */
    public void stop() {
        if (phase.compareAndSet(Phase.CREATED, Phase.ENDED)) {
            stoppedBeforeStart = true;
            ended.countDown();
        }
        supervisor.stop();
    }

    /**
     * Waits until the pipeline has ended (after {@link #stop()}, or by itself).
     *
     * @throws MillraceException the error that ended it, if any: its {@link MillraceException#kind()} says what failed
     */
    public void await() throws InterruptedException {
        refuseInCallback("await()");
        ended.await();
        rethrow();
    }

    /**
     * Waits at most {@code timeout} for the pipeline to end.
     *
     * @return whether it ended
     * @throws MillraceException the error that ended it, if any
     */
    public boolean await(Duration timeout) throws InterruptedException {
        Objects.requireNonNull(timeout, "await(timeout): timeout is null; give a Duration, or call await() to wait without one");
        refuseInCallback("await(timeout)");
        if (!ended.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            return false;
        }
        rethrow();
        return true;
    }

    private void rethrow() {
        Throwable t = error.get();
        if (t != null) {
            reported = true;
        }
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        if (t != null) {
            throw new IllegalStateException("the pipeline was interrupted", t);
        }
    }

    /**
     * Stops the pipeline and waits for it to end (see {@link #stop()}); throws the error that ended it, if any, unless
     * {@link #await} threw it already (in try-with-resources, the same exception thrown again by {@code close} would be
     * added to itself as suppressed, which Java refuses with an IllegalArgumentException that hides it). Called from a
     * consumer's {@code accept}, it asks the pipeline to stop and returns without waiting (see the class comment).
     */
    @Override
    public void close() throws InterruptedException {
        stop();
        if (onOwnThread()) {
            // from a consumer's accept or a sink's write, on the writer thread: the pipeline stops once it returns (found by
            // users: it hung, from a consumer and then from a destination of their own)
            return;
        }
        if (phase.get() != Phase.CREATED) {
            ended.await();
            if (!reported) {
                rethrow();
            }
        }
    }

    /** From a consumer's {@code accept} (the engine's writer thread), waiting for the end would wait for itself. */
    private void refuseInCallback(String call) {
        if (onOwnThread()) {
            throw new IllegalStateException(call + " called from a consumer's accept or a destination's write (a thread of the"
                    + " pipeline), which must return for the pipeline to end, would wait for ever; call stop() or close() there (they"
                    + " return at once), and await() from another thread");
        }
    }

    /** Whether the caller runs on one of this pipeline's threads ({@link #threads}), or in one of its consumers' callbacks. */
    private boolean onOwnThread() {
        // not a worker of a fork-join pool: the common pool's workers are made in the group of the thread that first needs one,
        // maybe a destination's, and then run the application's tasks too
        Thread t = Thread.currentThread();
        return ConsumerSink.inCallback(owner) || !(t instanceof java.util.concurrent.ForkJoinWorkerThread) && threads.parentOf(t.getThreadGroup());
    }

    /** The pipeline's state and progress now. */
    public Status status() {
        EngineStatus s = supervisor.status();
        List<Status.Table> tables = new ArrayList<>();
        for (EngineStatus.Table t : s.tables()) {
            tables.add(new Status.Table(t.table(), t.phase(), t.rowsCopied(), t.events()));
        }
        String state = phase.get() == Phase.ENDED && !s.state().equals("failed") ? (error.get() == null ? "stopped" : "failed") : s.state();
        return new Status(s.name(), state, s.durableLsn() == null ? null : Lsn.parse(s.durableLsn()), s.lagBytes(), s.lagMillis(),
                s.eventsWritten(), tables, s.lastError() != null ? s.lastError() : error.get() == null ? null : error.get().getMessage(),
                s.notCaptured().stream().map(n -> new Status.NotCaptured(n.table(), n.reason(), n.fix())).toList());
    }

    /**
     * Copies {@code tables} again while streaming (an online snapshot, interleaved with the stream so that no change is
     * lost or reordered), limited to rows matching {@code filter}, an SQL condition (or null: every row).
     *
     * @param tables captured tables, {@code schema.table}
     * @throws MillraceException when the pipeline is not streaming, or a table is not captured
     */
    public void snapshot(List<String> tables, String filter) {
        List<TableRef> refs = new ArrayList<>();
        for (String t : tables) {
            refs.add(TableRef.parse(t));
        }
        supervisor.snapshot(refs, filter);
    }

    /**
     * Checks {@code source} as {@code millrace preflight} does, without starting anything or changing the source: the
     * server's version and {@code wal_level}, the role's privileges, the slot, the publication, and each table (that it
     * exists, can be read, and has a replica identity). For a tool that validates a configuration before it creates a
     * pipeline (Kafka Connect's validate, a deployment check).
     *
     * @return every finding, failures first; a start refuses when one {@link SourceCheck#failed()}
     * @throws MillraceException when the source cannot be reached or logged into: its {@link MillraceException#kind()}
     *                           says which ({@code CONNECTION}, {@code AUTHENTICATION}, {@code CONFIG} for a database that
     *                           does not exist), its message what to fix
     */
    public static List<SourceCheck> checkSource(SourceSettings source) {
        io.millrace.source.PgConnections conns = new io.millrace.source.PgConnections(EngineConfigs.source(Objects.requireNonNull(source, "source")));
        try (java.sql.Connection c = conns.open()) {
            List<SourceCheck> out = new ArrayList<>();
            for (io.millrace.source.Preflight.Check ch : io.millrace.source.Preflight.run(conns, c).checks()) {
                out.add(new SourceCheck(ch.name(), SourceCheck.Outcome.valueOf(ch.status().name()), ch.detail(), ch.fix(),
                        ch.status() == io.millrace.source.Preflight.Status.FAIL ? ch.kind() : null));
            }
            out.sort(java.util.Comparator.comparing(ch -> !ch.failed()));
            return out;
        } catch (java.sql.SQLException e) {
            throw new MillraceException(MillraceException.Kind.CONNECTION, "closing the connection to the source failed: " + e.getMessage(), e);
        }
    }

    /**
     * Installs the optional DDL event trigger on the source, as {@code millrace setup} does (PostgreSQL lets only a superuser
     * create an event trigger; {@link #ddlTriggerSql()} gives the SQL to hand to one): schema changes then reach the
     * destinations exactly and in order with the data (a column renamed keeps its values, a table dropped is followed). An
     * embedder had no way to install it but an internal class (found by a user).
     *
     * @throws MillraceException when the source cannot be reached, or the role may not create an event trigger
     *                           ({@code PERMISSION}, with the fix)
     */
    public static void installDdlTrigger(SourceSettings source) {
        io.millrace.source.PgConnections conns = new io.millrace.source.PgConnections(EngineConfigs.source(Objects.requireNonNull(source, "source")));
        try (java.sql.Connection c = conns.open()) {
            io.millrace.source.DdlTrigger.install(c);
        } catch (java.sql.SQLException e) {
            throw new MillraceException(MillraceException.Kind.CONNECTION, "closing the connection to the source failed: " + e.getMessage(), e);
        }
    }

    /** The SQL that installs the DDL event trigger ({@link #installDdlTrigger}), for a superuser to run. */
    public static String ddlTriggerSql() {
        return io.millrace.source.DdlTrigger.sql();
    }

    /**
     * Changes the tables this pipeline captures while it streams, as {@code SIGHUP} (or {@code POST /reload}) does for
     * {@code millrace run}: tables newly selected join (added to the publication, copied online, then streamed); tables
     * no longer selected stop being captured (the destinations keep their rows). Later restarts of this handle (after a
     * transient failure) keep the new selection. Nothing changes when it is refused.
     *
     * @param tables        names or patterns, as {@link SourceSettings.Builder#tables}
     * @param excludeTables names or patterns left out, as {@link SourceSettings.Builder#excludeTables}
     * @return what changed, as the log says it
     * @throws MillraceException (CONFIG) when a table named does not exist, or the pipeline does not stream
     */
    public synchronized String reloadTables(List<String> tables, List<String> excludeTables) {
        EngineConfig next = selected.withSource(selected.source().withTables(Check.tables("source.tables", tables),
                Check.tables("source.exclude_tables", excludeTables)));
        supervisor.reloadFrom(() -> next);
        String done = supervisor.reload();
        selected = next;
        return done;
    }

    /** The configuration with the table selection of the last {@link #reloadTables}. Guarded by this. */
    private EngineConfig selected;

    /** Pauses the online snapshots under way (streaming goes on); {@link #resumeSnapshots()} continues them. */
    public void pauseSnapshots() {
        supervisor.pauseSnapshots(true);
    }

    /** Continues paused online snapshots. */
    public void resumeSnapshots() {
        supervisor.pauseSnapshots(false);
    }

    /**
     * Builds a {@link Millrace}: settings are checked where they are given, and their combination by {@link #build()},
     * with the messages the YAML configuration gives ({@code config: <setting> ...}). Not thread-safe.
     */
    public static final class Builder {
        private String name = "millrace";
        private SourceSettings source;
        private SnapshotSettings snapshot = SnapshotSettings.defaults();
        private PipelineSettings pipeline = PipelineSettings.defaults();
        private OperationsSettings operations = OperationsSettings.defaults();
        /** Each destination, made once the pipeline's name and source are known. */
        private final List<Function<DestinationContext, DestinationConfig>> destinations = new ArrayList<>();
        /** The change consumers' checkpoint files, each with its consumer's name: one consumer per file. */
        private final java.util.Map<Path, String> checkpointFiles = new java.util.HashMap<>();
        /** The token of the pipeline this builder makes, given to its consumers ({@link ConsumerSink#inCallback}). */
        private final Object owner = new Object();
        private Function<String, String> env = System::getenv;
        private Path baseDir = Path.of("").toAbsolutePath();

        private Builder() {
        }

        /** The pipeline's logical name ({@code name}, default {@code millrace}): {@code source.name} in the events' JSON. */
        public Builder name(String name) {
            this.name = Check.text("name", name);
            return this;
        }

        /** Where and what to capture (required). */
        public Builder source(SourceSettings source) {
            this.source = Check.given("source", source);
            return this;
        }

        /** Whether and how the tables are copied; an initial snapshot by default. */
        public Builder snapshot(SnapshotSettings snapshot) {
            this.snapshot = Check.given("snapshot", snapshot);
            return this;
        }

        /** Batching and memory; the defaults by default. */
        public Builder pipeline(PipelineSettings pipeline) {
            this.pipeline = Check.given("pipeline", pipeline);
            return this;
        }

        /** Monitoring, health bounds and restarts; the defaults by default. */
        public Builder operations(OperationsSettings operations) {
            this.operations = Check.given("operations", operations);
            return this;
        }

        /**
         * A configured destination: a built-in one (e.g. {@code io.millrace.sink.postgres.PostgresSinkConfig}, from its
         * module) or any {@link DestinationConfig}.
         */
        public Builder destination(DestinationConfig destination) {
            Check.given(key(), destination);
            destinations.add(context -> destination);
            return this;
        }

        /**
         * A configured destination made from what the pipeline tells it (its name, slot, the source fields of its
         * events, the base folder), e.g. {@code destination(context -> new JsonlSinkConfig("files", dir, null, rotate,
         * context.meta()))}; called by {@link #build()}.
         */
        public Builder destination(Function<DestinationContext, ? extends DestinationConfig> destination) {
            String key = key();
            Objects.requireNonNull(destination, "destination");
            destinations.add(context -> Check.given(key, destination.apply(context)));
            return this;
        }

        /**
         * A destination of any type on the class path (a built-in one with its module, or a third party's
         * {@link io.millrace.core.sink.DestinationProvider}), given as the settings its YAML mapping would hold, e.g.
         * {@code destination("jsonl", Map.of("name", "files", "directory", "events"))}. Read by {@link #build()}, with the
         * YAML's messages ({@code config: destinations[0].directory is required ...}).
         */
        public Builder destination(String type, Map<String, ?> settings) {
            String key = key();
            int index = destinations.size();
            Check.text(key + ".type", type);
            if (settings.containsKey("type")) {
                throw Check.error(key + ".type", "is the first argument of destination(type, settings); leave it out of the settings");
            }
            Map<String, Object> all = new LinkedHashMap<>();
            all.put("type", type);
            all.putAll(settings);
            destinations.add(context -> new ConfigLoader(env).destination(index, all, context));
            return this;
        }

        /**
         * Per-table transforms (columns, masks, row filters), given as the settings the YAML {@code transforms:} mapping
         * holds (README "Transforms"), e.g. {@code transforms(Map.of("hash_salt_env", "SALT", "tables", List.of(Map.of("match",
         * "public.customers", "mask", Map.of("email", "hash")))))}. Read by {@link #build()}, with the YAML's messages.
         */
        public Builder transforms(Map<String, ?> settings) {
            Map<String, Object> copy = new LinkedHashMap<>(settings);
            this.transforms = () -> new ConfigLoader(env).transforms(copy, baseDir);
            return this;
        }

        private java.util.function.Supplier<io.millrace.engine.transform.Transforms> transforms = () -> io.millrace.engine.transform.Transforms.NONE;

        /** Where the secrets of destinations given as settings ({@code password_env}) are looked up; {@code System::getenv} by default. */
        public Builder environment(Function<String, String> env) {
            this.env = Check.given("environment", env);
            return this;
        }

        /** The folder relative paths of destinations given as settings resolve against; the working directory by default. */
        public Builder baseDir(Path dir) {
            this.baseDir = Check.given("base_dir", dir).toAbsolutePath();
            return this;
        }

        /** The checkpoint, the log and the status go by the sink's own name: a name given beside it was ignored (found by a user). */
        private static void sameName(String key, String name, Sink sink) {
            if (!name.equals(sink.name())) {
                throw new io.millrace.core.MillraceException(io.millrace.core.MillraceException.Kind.CONFIG, key + ".name: '" + name
                        + "' is not the sink's own name() '" + sink.name() + "', which its checkpoint, the log and the status go by;"
                        + " give the same name");
            }
        }

        /**
         * Your own {@link Sink}, under {@code name} (its own {@link Sink#name()}); it keeps the {@link Sink} contract (its
         * checkpoint durable with its data). A new sink from {@code newSink} at each start of the pipeline, also when the
         * engine starts again by itself after a transient failure (a connection lost, the server restarted): each is opened
         * once and closed, as the {@link Sink} lifecycle says. The way to give a sink of your own. Each sink's
         * {@link Sink#name()} must be {@code name}: checked as the pipeline starts (the supplier is not called before).
         */
        public Builder destination(String name, java.util.function.Supplier<? extends Sink> newSink) {
            String n = Check.text(key() + ".name", name);
            Objects.requireNonNull(newSink, "newSink");
            String key = key();
            destinations.add(context -> new Given(n, "sink", () -> {
                Sink sink = Objects.requireNonNull(newSink.get(), key + ": the supplier gave null");
                sameName(key, n, sink);
                return sink;
            }));
            return this;
        }

        /**
         * Your own {@link Sink} as one instance, under {@code name} (its own {@link Sink#name()}). The engine opens this same
         * instance again after closing it when it starts again by itself after a transient failure, so the sink must allow
         * {@code open()} after {@code close()}: one that is opened once (as {@link io.millrace.core.sink.SinkLifecycle}
         * and the custom-sink example are) ends the pipeline at the first lost connection. Prefer
         * {@link #destination(String, java.util.function.Supplier)}, which makes a new one for each start.
         */
        public Builder destination(String name, Sink sink) {
            String n = Check.text(key() + ".name", name);
            Objects.requireNonNull(sink, "sink");
            sameName(key(), n, sink);
            destinations.add(context -> new Given(n, "sink", () -> sink));
            return this;
        }

        /**
         * A callback that receives the changes batch by batch, at least once (see {@link ChangeConsumer}); the position
         * it has acknowledged is kept in {@code checkpointFile}, from which a restart resumes.
         */
        public Builder changeConsumer(String name, Path checkpointFile, ChangeConsumer consumer) {
            String n = Check.text(key() + ".name", name);
            Check.given(key() + ".checkpoint_file", checkpointFile);
            Objects.requireNonNull(consumer, "consumer");
            String other = checkpointFiles.putIfAbsent(checkpointFile.toAbsolutePath().normalize(), n); // as the sink opens it
            if (other != null) {
                // each would overwrite the other's checkpoint, and the next start refused them as another pipeline's (found by a user)
                throw new io.millrace.core.MillraceException(io.millrace.core.MillraceException.Kind.CONFIG, key() + ".checkpoint_file:"
                        + " consumer '" + n + "' is given the checkpoint file of consumer '" + other + "' (" + checkpointFile + "): give each"
                        + " consumer a file of its own");
            }
            destinations.add(context -> new Given(n, "consumer", () -> new ConsumerSink.AtLeastOnce(n, context.meta(), consumer, checkpointFile)
                    .ownedBy(owner)));
            return this;
        }

        /** A consumer that stores the checkpoint with its own data, exactly once (see {@link TransactionalConsumer}). */
        public Builder transactionalConsumer(String name, TransactionalConsumer consumer) {
            String n = Check.text(key() + ".name", name);
            Objects.requireNonNull(consumer, "consumer");
            destinations.add(context -> new Given(n, "transactional-consumer", () -> new ConsumerSink.Transactional(n, context.meta(),
                    consumer).ownedBy(owner)));
            return this;
        }

        private String key() {
            return "destinations[" + destinations.size() + "]";
        }

        /**
         * Checks the whole (a source, at least one destination, unique destination names) and returns the pipeline,
         * not yet started.
         */
        public Millrace build() {
            return new Millrace(config(), owner);
        }

        /** The engine's configuration these settings make. */
        EngineConfig config() {
            if (source == null) {
                throw Check.required("source.database", "database", "app");
            }
            DestinationContext context = new DestinationContext(name, source.slot(), new SourceMeta(name, source.database()), baseDir);
            List<DestinationConfig> made = new ArrayList<>();
            for (Function<DestinationContext, DestinationConfig> d : destinations) {
                made.add(d.apply(context));
            }
            return EngineConfigs.of(name, source, snapshot, pipeline, operations, made).withTransforms(transforms.get());
        }
    }

    /** A destination given as a sink (or a consumer made into one). */
    private record Given(String name, String type, java.util.function.Supplier<Sink> sink) implements DestinationConfig {
        @Override
        public Sink newSink() {
            return sink.get();
        }
    }
}
