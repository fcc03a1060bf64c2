package io.millrace.migrate;

import io.millrace.api.Millrace;
import io.millrace.api.SourceSettings;
import io.millrace.api.Status;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.sink.postgres.PostgresSinkConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A zero-downtime PostgreSQL-to-PostgreSQL migration ({@code millrace migrate}): {@link #plan()} checks both servers,
 * {@link #follow} creates the schema from the source catalog, copies the tables and follows every change (Millrace's
 * snapshot and stream into the postgres destination, applied with {@code session_replication_role = replica}),
 * {@link #verify} compares keyset chunks by checksum while it follows, {@link #cutover} fences the source and makes the
 * target the primary. Each step is recorded on the target ({@link MigrationState}); {@link #status()} names it and
 * {@link #abort()} unfences the source.
 *
 * <pre>{@code
 * Migration m = Migration.of(SourceSettings.builder().host("old").database("shop").user("millrace").tables("public.*").build(),
 *         PostgresSinkConfig.of("new", "jdbc:postgresql://new:5432/shop", "millrace", Secret.NONE));
 * m.plan().requireReady();
 * try (Millrace following = m.follow(Duration.ofHours(2))) {
 *     m.verify(false);
 *     System.out.println(m.cutover(16 << 20, Duration.ofMinutes(1)).render());
 * }
 * }</pre>
 *
 * <p>Threads: each method may be called from any thread; {@link #verify} and {@link #cutover} run while the handle
 * {@link #follow} returned runs (in this process or another one).
 */
public final class Migration {
    private static final Logger LOG = LoggerFactory.getLogger(Migration.class);

    private final Endpoints ends;
    private final StateStore store;

    private Migration(SourceSettings source, PostgresSinkConfig target) {
        if (target.targetSchema() != null) {
            throw new MillraceException(Kind.CONFIG, "migrate: destination '" + target.name() + "' has schema '"
                    + target.targetSchema() + "'; a migration keeps each table in its source schema: remove the schema setting");
        }
        this.ends = new Endpoints(source, target);
        this.store = new StateStore(target.stateSchema());
    }

    /**
     * A migration of {@code source}'s tables ({@link SourceSettings#tables()}; every user table when none is named) into the
     * database of {@code target}, which must keep each table's schema ({@code targetSchema} unset).
     *
     * @throws MillraceException of kind CONFIG when {@code target} moves tables to another schema
     */
    public static Migration of(SourceSettings source, PostgresSinkConfig target) {
        return new Migration(Objects.requireNonNull(source, "source"), Objects.requireNonNull(target, "target"));
    }

    /**
     * Checks both servers and says what will be copied, what cannot be, and what to fix first. Writes nothing.
     *
     * @throws MillraceException when a server cannot be reached (CONNECTION, AUTHENTICATION)
     */
    public Plan plan() {
        return planned().plan();
    }

    private Planner.Result planned() {
        try (Connection src = ends.source(); Connection tgt = ends.target(false)) {
            return Planner.run(src, tgt, ends, store.current(tgt));
        } catch (SQLException e) {
            throw Endpoints.failed("migrate plan", e);
        }
    }

    /**
     * Runs the plan (refusing with its first problem, nothing written), creates the schema on the target, starts the
     * copy and the stream, waits up to {@code copyTimeout} for the copy to finish, creates the secondary indexes and
     * constraints, and returns the running pipeline, which follows the source until it is closed. Started again after a
     * stop or a crash, it goes on from where the target's state and checkpoint say.
     *
     * @throws MillraceException a problem of the plan, a failure of the pipeline, or a copy that took too long (CONFIG)
     */
    public Millrace follow(Duration copyTimeout) throws InterruptedException {
        Planner.Result p = planned();
        MigrationState state;
        try (Connection tgt = ends.target(false)) {
            state = store.current(tgt);
            if (state == MigrationState.NONE || state == MigrationState.ABORTED) {
                p.plan().requireReady();
                SchemaWriter.apply(tgt, store, SchemaWriter.beforeCopy(p.tables(), p.sequences()), MigrationState.SCHEMA_CREATED,
                        p.tables().size() + " table(s), " + p.sequences().size() + " sequence(s)");
                state = MigrationState.SCHEMA_CREATED;
                LOG.info("migrate: schema created on the target: {} table(s), {} sequence(s)", p.tables().size(), p.sequences().size());
            } else if (state == MigrationState.CUT_OVER) {
                throw new MillraceException(Kind.CONFIG, "migrate: this migration is cut over already; the target is the primary");
            } else {
                // Resuming: only problems that do not concern the tables this migration made count.
                List<Plan.Problem> rest = new ArrayList<>(p.plan().problems());
                if (!rest.isEmpty()) {
                    new Plan(List.of(), List.of(), List.of(), rest).requireReady();
                }
            }
        } catch (SQLException e) {
            throw Endpoints.failed("migrate: creating the schema on the target", e);
        }
        Millrace engine = Millrace.builder().name("migrate").source(engineSource(p)).destination(ends.target.withReplicaRole(true)).build();
        engine.start();
        if (state == MigrationState.SCHEMA_CREATED) {
            awaitCopy(engine, copyTimeout);
            try (Connection tgt = ends.target(true)) {
                List<String> ddl = SchemaWriter.afterCopy(p.tables());
                SchemaWriter.apply(tgt, store, ddl, MigrationState.FOLLOWING, ddl.size() + " index and constraint statement(s)");
                LOG.info("migrate: copy done; {} index and constraint statement(s) applied on the target; following", ddl.size());
            } catch (SQLException e) {
                engine.stop();
                throw Endpoints.failed("migrate: creating the indexes and constraints on the target", e);
            }
        }
        return engine;
    }

    private static void awaitCopy(Millrace engine, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            if (engine.await(Duration.ofMillis(100))) {
                throw new MillraceException(Kind.INTERNAL, "migrate: the pipeline ended during the copy");
            }
            Status s = engine.status();
            if (s.state().equals("streaming") && !s.tables().isEmpty() && s.tables().stream().allMatch(t -> t.phase().equals("streaming"))) {
                return;
            }
            if (System.nanoTime() > deadline) {
                engine.stop();
                throw new MillraceException(Kind.CONFIG, "migrate: the copy did not finish within " + timeout.toSeconds()
                        + " s (state " + s.state() + "); run it again with a longer --copy-timeout-s: it goes on from its checkpoint");
            }
        }
    }

    /** The user's source settings, limited to the tables the plan copies, with a status interval short enough for verify. */
    private SourceSettings engineSource(Planner.Result p) {
        SourceSettings s = ends.source;
        SourceSettings.Builder b = SourceSettings.builder().host(s.host()).port(s.port()).database(s.database()).user(s.user())
                .password(s.password()).slot(s.slot()).publication(s.publication()).createPublication(s.createPublication())
                .binary(s.binary()).statusIntervalMs(Math.min(1000, s.statusIntervalMs())).socketTimeoutS(s.socketTimeoutS())
                .tables(p.tables().stream().map(t -> t.ref().toString()).toList());
        if (s.sslMode() != null) {
            b.sslMode(s.sslMode());
        }
        if (s.sslRootCert() != null) {
            b.sslRootCert(s.sslRootCert());
        }
        return b.build();
    }

    /**
     * Compares every keyed table chunk by chunk (see the class comment of the verifier in this package): source snapshot,
     * target once caught up past it, differing chunks re-checked row by row; with {@code repair} a divergent chunk is
     * copied again. Needs the target to be following.
     *
     * @param chunkRows rows per chunk
     */
    public VerifyReport verify(boolean repair, int chunkRows) throws InterruptedException {
        if (chunkRows < 1) {
            throw new MillraceException(Kind.CONFIG, "migrate verify: chunk rows must be at least 1, got " + chunkRows);
        }
        Planner.Result p = planned();
        try {
            return new Verifier(ends, chunkRows, 5, Duration.ofSeconds(30)).run(p.tables(), repair);
        } catch (SQLException e) {
            throw Endpoints.failed("migrate verify", e);
        }
    }

    /**
     * Makes the target the primary: waits until the target is less than {@code maxLagBytes} behind, fences the source,
     * waits until the fence marker is durable on the target, sets every target sequence past the source's value, restores
     * GENERATED ALWAYS identity columns. The source stays fenced. Run again after an interruption, it finishes.
     *
     * @throws MillraceException when the migration is not following, or a wait exceeds {@code timeout}
     */
    public CutoverReport cutover(long maxLagBytes, Duration timeout) throws InterruptedException {
        Planner.Result p = planned();
        try {
            return new Cutover(ends, store).run(p.tables(), p.sequences(), maxLagBytes, timeout);
        } catch (SQLException e) {
            throw Endpoints.failed("migrate cutover", e);
        }
    }

    /**
     * The recorded step and whether the source is fenced now.
     *
     * @param state    the last step recorded on the target
     * @param steps    each recorded step with its time and detail, oldest first
     * @param fenced   whether the source database has the fence's read-only default now
     * @param lagBytes WAL between the source's position and the target's durable checkpoint; -1 before the first
     */
    public record MigrationStatus(MigrationState state, List<String> steps, boolean fenced, long lagBytes) {
        public MigrationStatus {
            steps = List.copyOf(steps);
        }

        /** For the terminal. */
        public String render() {
            StringBuilder b = new StringBuilder("migration: " + state + "; source " + (fenced ? "FENCED (read-only by default)"
                    : "not fenced (takes writes)") + (lagBytes >= 0 ? "; target " + lagBytes + " bytes behind" : "") + "\n");
            steps.forEach(s -> b.append("  ").append(s).append('\n'));
            if (fenced && !state.sourceMayBeFenced()) {
                b.append("the source is fenced but the migration is not cutting over: 'millrace migrate abort' unfences it\n");
            } else if (state == MigrationState.FENCING || state == MigrationState.FENCED) {
                b.append("a cutover was interrupted: 'millrace migrate cutover' finishes it, 'millrace migrate abort' unfences the source\n");
            }
            return b.toString();
        }
    }

    /** The migration's recorded step and the source's fence state. */
    public MigrationStatus status() {
        try (Connection src = ends.source(); Connection tgt = ends.target(false)) {
            List<String> steps = new ArrayList<>();
            for (StateStore.Step s : store.steps(tgt)) {
                steps.add(s.at() + " " + s.state() + (s.detail() == null ? "" : ": " + s.detail()));
            }
            long lag = new Cutover(ends, store).lag(src, tgt);
            return new MigrationStatus(store.current(tgt), steps, Cutover.fenced(src), lag == Long.MAX_VALUE ? -1 : lag);
        } catch (SQLException e) {
            throw Endpoints.failed("migrate status", e);
        }
    }

    /**
     * Abandons the migration: lifts the source's fence and records ABORTED. The target's tables stay as they are (drop
     * them to start again). Refused once cut over, since the target is then the primary and writes may have gone there.
     *
     * @throws MillraceException of kind CONFIG after a cutover
     */
    public MigrationStatus abort() {
        try (Connection src = ends.source(); Connection tgt = ends.target(false)) {
            MigrationState state = store.current(tgt);
            if (state == MigrationState.CUT_OVER) {
                throw new MillraceException(Kind.CONFIG, "migrate abort: the migration is cut over, the target is the primary;"
                        + " the source stays fenced. To write to the source again, lift the fence yourself: ALTER DATABASE ..."
                        + " RESET default_transaction_read_only");
            }
            Cutover.unfence(src);
            store.record(tgt, MigrationState.ABORTED, "was " + state + "; source unfenced");
        } catch (SQLException e) {
            throw Endpoints.failed("migrate abort", e);
        }
        return status();
    }
}
