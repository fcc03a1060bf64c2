package io.millrace.migrate;

import io.millrace.api.Millrace;
import io.millrace.api.SourceSettings;
import io.millrace.api.Status;
import io.millrace.core.Lsn;
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
    private final PassStore passes;

    private Migration(SourceSettings source, PostgresSinkConfig target) {
        if (target.targetSchema() != null) {
            throw new MillraceException(Kind.CONFIG, "migrate: destination '" + target.name() + "' has schema '"
                    + target.targetSchema() + "'; a migration keeps each table in its source schema: remove the schema setting");
        }
        this.ends = new Endpoints(source, target);
        this.store = new StateStore(target.stateSchema());
        this.passes = new PassStore(target.stateSchema());
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
                if (state == MigrationState.ABORTED) {
                    forgetCheckpoint(tgt);
                    if (passes.forgetAll(tgt) > 0) {
                        LOG.info("migrate: starting over after an abort: the aborted attempt's verify passes are forgotten");
                    }
                }
                long collations = p.types().stream().filter(t -> t.kind().equals(SourceCatalog.COLLATION)).count();
                String made = p.tables().size() + " table(s), " + p.sequences().size() + " sequence(s), "
                        + (p.types().size() - collations) + " type(s)" + (collations == 0 ? "" : ", " + collations + " collation(s)");
                SchemaWriter.apply(tgt, store, SchemaWriter.beforeCopy(p.tables(), p.sequences(), p.types()), MigrationState.SCHEMA_CREATED,
                        made);
                state = MigrationState.SCHEMA_CREATED;
                LOG.info("migrate: schema created on the target: {}", made);
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
            awaitCopy(engine, p.tables(), copyTimeout);
            try (Connection tgt = ends.target(true)) {
                List<String> ddl = SchemaWriter.afterCopy(p.tables());
                SchemaWriter.applyWhileFollowing(tgt, store, ddl, p.tables().stream().map(SourceCatalog.Table::ref).toList(),
                        MigrationState.FOLLOWING,
                        ddl.size() + " index and constraint statement(s)");
                LOG.info("migrate: copy done; {} index and constraint statement(s) applied on the target; following", ddl.size());
            } catch (SQLException e) {
                engine.stop();
                throw Endpoints.failed("migrate: creating the indexes and constraints on the target", e);
            } catch (InterruptedException e) {
                engine.stop();
                throw e;
            }
        }
        return engine;
    }

    /**
     * Waits until the copy has landed in full on the target: the engine streams and the sink's checkpoint says no table
     * is being copied (neither by the initial snapshot nor by the online snapshots an interrupted one goes on as).
     */
    private void awaitCopy(Millrace engine, List<SourceCatalog.Table> tables, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<String> names = tables.stream().map(t -> t.ref().toString()).toList();
        while (true) {
            if (engine.await(Duration.ofMillis(100))) {
                throw new MillraceException(Kind.INTERNAL, "migrate: the pipeline ended during the copy");
            }
            Status s = engine.status();
            if (s.state().equals("streaming")) {
                try (Connection tgt = ends.target(false)) {
                    if (ends.copying(tgt, names).isEmpty()) {
                        return;
                    }
                } catch (SQLException e) {
                    throw Endpoints.failed("migrate: reading the copy's progress on the target", e);
                }
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
     * copied again. Needs the target to be following. A table without a key cannot be compared in chunks while rows are in
     * flux: it is left out, except in state FENCED (a cutover stopped on a difference), where it is compared as a whole and
     * with {@code repair} copied again whole.
     *
     * @param chunkRows rows per chunk
     */
    public VerifyReport verify(boolean repair, int chunkRows) throws InterruptedException {
        if (chunkRows < 1) {
            throw new MillraceException(Kind.CONFIG, "migrate verify: chunk rows must be at least 1, got " + chunkRows);
        }
        Planner.Result p = planned();
        try {
            boolean fenced;
            try (Connection src = ends.source(); Connection tgt = ends.target(false)) {
                // a cutover stopped on a difference: nothing in flux — as recorded, and the source fenced now (not unfenced by
                // hand since: a whole-table copy of a live source would duplicate the changes the follower applies after it)
                MigrationState state = store.current(tgt);
                refuseVerify(state);
                fenced = state == MigrationState.FENCED && Fence.fenced(src);
            }
            return new Verifier(ends, chunkRows, 5, Duration.ofSeconds(30)).run(p.tables(), repair, fenced);
        } catch (SQLException e) {
            throw Endpoints.failed("migrate verify", e);
        }
    }

    /**
     * Verify compares a target that follows the source (or one fenced at a cutover stopped on a difference): in a step
     * where none does it is refused at once (found by a user: after a cutover and after a rollback it waited 35 s for a
     * follower, then advised 'migrate run', which refuses there).
     */
    private static void refuseVerify(MigrationState state) {
        String why = switch (state) {
            case NONE -> "no migration is recorded on the target: 'millrace migrate run' starts one";
            case ABORTED -> "the migration was aborted: nothing follows the source; 'millrace migrate plan' names what to drop on"
                    + " the target to start again";
            case CUT_OVER, ROLLING_BACK, ROLLED_BACK -> "the migration is " + state + ": the stream into the target ended at the"
                    + " cutover, and the two databases take writes apart from then on";
            default -> null;
        };
        if (why != null) {
            throw new MillraceException(Kind.CONFIG, "migrate verify: " + why);
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
        return cutover(maxLagBytes, timeout, 0);
    }

    /**
     * As {@link #cutover(long, Duration)}; with {@code verifyChunkRows} above 0, once the fence marker is on the target
     * and before the sequences are set, every keyed table is compared in chunks of that many rows — exactly, since the
     * source is fenced — and every table without a key as a whole (its row count and the hash of its rows as a multiset:
     * a full read of it on both sides); a difference stops the cutover in state FENCED (kind DIVERGED, exit 12). The
     * comparison's time is part of the write-unavailable window.
     */
    public CutoverReport cutover(long maxLagBytes, Duration timeout, int verifyChunkRows) throws InterruptedException {
        return cutover(maxLagBytes, timeout, verifyChunkRows, false);
    }

    /**
     * As {@link #cutover(long, Duration, int)}; with {@code reverse}, the way back is prepared at the fence: a publication of
     * the migrated tables and a logical slot on the target, created once the target holds every source write and before
     * the cutover ends, so that {@link #reverse} can stream every write made on the new primary back into the source.
     * The target's {@code wal_level}, role and replica identities are checked before anything is fenced.
     *
     * @throws MillraceException of kind SOURCE_SETUP when the target cannot stream back (nothing is fenced then)
     */
    public CutoverReport cutover(long maxLagBytes, Duration timeout, int verifyChunkRows, boolean reverse) throws InterruptedException {
        Planner.Result p = planned();
        try {
            Verifier v = verifyChunkRows > 0 ? new Verifier(ends, verifyChunkRows, 5, timeout) : null;
            return new Cutover(ends, store).run(p.tables(), p.sequences(), maxLagBytes, timeout, v, reverse);
        } catch (SQLException e) {
            throw Endpoints.failed("migrate cutover", e);
        }
    }

    /**
     * The way back: streams every change made on the new primary (the target) since the fence into the old one (the
     * source, fenced: its sessions here write past the fence), from the slot {@link #cutover(long, Duration, int, boolean)}
     * made with {@code reverse}. The source's replication slot is dropped first (waiting up to {@code releaseWait} for
     * {@code migrate run} to stop), since a change written back into the source must not flow forward again. Applied as
     * the forward stream is: exactly once, with {@code session_replication_role = replica}; the checkpoint is on the
     * source, in the target's state schema. The returned pipeline runs until closed; started again, it goes on from its
     * checkpoint.
     *
     * <p>To roll back with it: stop the applications' writes on the target, wait until {@link Millrace#status()} shows
     * the reverse stream caught up, lift the source's fence ({@code ALTER DATABASE ... RESET default_transaction_read_only}),
     * set the source's sequences past the target's, and switch the applications back.
     *
     * @throws MillraceException of kind CONFIG before a cutover with {@code reverse}, or while {@code migrate run} still
     *                           reads the source's slot
     */
    public Millrace reverse(Duration releaseWait) {
        String slot = Reverse.slot(ends.source.slot());
        Planner.Result p = planned();
        try (Connection tgt = ends.target(false)) {
            MigrationState state = store.current(tgt);
            if (state != MigrationState.CUT_OVER && state != MigrationState.ROLLING_BACK) { // a rollback waits for this stream
                throw new MillraceException(Kind.CONFIG, "migrate reverse: the migration is " + state + "; the way back starts"
                        + " after 'millrace migrate cutover --reverse'");
            }
            if (Planner.oneOrNull(tgt, "SELECT 1 FROM pg_replication_slots WHERE slot_name = " + io.millrace.core.schema.Ident.literal(slot)) == null) {
                throw new MillraceException(Kind.CONFIG, "migrate reverse: the target has no slot '" + slot + "': the cutover ran"
                        + " without --reverse (or the slot was dropped), so no slot holds the new primary's writes since the fence and"
                        + " streaming back now would miss some. To go back, migrate again the other way (source and target swapped)");
            }
        } catch (SQLException e) {
            throw Endpoints.failed("migrate reverse", e);
        }
        // A change the reverse stream writes into the source must not be read by the forward slot and applied again.
        if (!releaseSource(releaseWait)) {
            throw new MillraceException(Kind.CONFIG, "migrate reverse: the source's slot '" + ends.source.slot() + "' is still"
                    + " read, by 'millrace migrate run' (it stops by itself once it sees the cutover): stop it, then run reverse again");
        }
        java.util.Properties url = org.postgresql.Driver.parseURL(ends.target.jdbcUrl(), null);
        if (url == null || url.getProperty("PGHOST", "").contains(",")) {
            throw new MillraceException(Kind.CONFIG, "migrate reverse: the target's url '" + ends.target + "' names no single host;"
                    + " give the destination the new primary's host and port");
        }
        SourceSettings back = SourceSettings.builder().host(url.getProperty("PGHOST")).port(Integer.parseInt(url.getProperty("PGPORT", "5432")))
                .database(url.getProperty("PGDBNAME")).user(ends.target.user()).password(ends.target.password()).slot(slot)
                .publication(Reverse.publication(ends.source.slot())).createPublication(false)
                .statusIntervalMs(1000).tables(p.tables().stream().map(t -> t.ref().toString()).toList()).build();
        PostgresSinkConfig into = new PostgresSinkConfig(Endpoints.REVERSE_DESTINATION, ends.sourceUrl() + ssl(), ends.source.user(), ends.source.password(),
                null, ends.target.stateSchema()).withReplicaRole(true).withReadWrite(true);
        Millrace engine = Millrace.builder().name("migrate-reverse").source(back)
                .snapshot(io.millrace.api.SnapshotSettings.builder().mode(io.millrace.api.SnapshotSettings.Mode.NEVER).build())
                .destination(into).build();
        engine.start();
        LOG.info("migrate reverse: streaming from the target's slot '{}' into the source", slot);
        return engine;
    }

    /**
     * Makes the source the primary again after a cutover with {@code reverse}, while {@link #reverse} streams: fences the
     * target, waits up to {@code timeout} until the reverse stream has brought every write of the target to the source, sets
     * the source's sequences past the target's and lifts the source's fence ({@link Rollback}). Run again, it finishes an
     * interrupted rollback.
     *
     * @throws MillraceException of kind CONFIG unless the migration is cut over (or rolling back) with a reverse slot; of kind
     *                           SINK when the reverse stream does not reach the target's marker in time (both databases are
     *                           then fenced: the message says how to finish)
     */
    public RollbackReport rollback(Duration timeout) throws InterruptedException {
        Planner.Result p = planned();
        try {
            return new Rollback(ends, store).run(p.tables(), p.sequences(), timeout);
        } catch (SQLException e) {
            throw Endpoints.failed("migrate rollback", e);
        }
    }

    /**
     * Drops the reverse stream's slot and publication on the target once nothing reads the slot (waiting up to {@code wait}
     * for {@code migrate reverse} to stop), after a rollback: the target would otherwise retain WAL for it.
     *
     * @return whether the slot is gone (false: still read after {@code wait})
     * @throws MillraceException of kind CONFIG before the migration is rolled back
     */
    public boolean releaseReverse(Duration wait) {
        String slot = Reverse.slot(ends.source.slot());
        try (Connection tgt = ends.target(false)) {
            MigrationState state = store.current(tgt);
            if (state != MigrationState.ROLLED_BACK) {
                throw new MillraceException(Kind.CONFIG, "migrate: the migration is " + state + "; the reverse slot '" + slot
                        + "' is dropped only once it is rolled back");
            }
            long deadline = System.nanoTime() + wait.toNanos();
            while (true) {
                String active = Planner.oneOrNull(tgt, "SELECT active::text FROM pg_replication_slots WHERE slot_name = "
                        + io.millrace.core.schema.Ident.literal(slot));
                if (active == null || active.equals("false")) {
                    if (active != null) {
                        Planner.oneOrNull(tgt, "SELECT pg_drop_replication_slot(" + io.millrace.core.schema.Ident.literal(slot) + ")");
                    }
                    try (java.sql.Statement s = tgt.createStatement()) {
                        s.execute("DROP PUBLICATION IF EXISTS " + io.millrace.core.schema.Ident.quote(Reverse.publication(ends.source.slot())));
                    }
                    LOG.info("migrate: reverse slot '{}' dropped on the target", slot);
                    return true;
                }
                if (System.nanoTime() > deadline) {
                    LOG.warn("migrate: reverse slot '{}' is still read (is 'millrace migrate reverse' still running?)", slot);
                    return false;
                }
                Thread.sleep(200);
            }
        } catch (SQLException e) {
            throw Endpoints.failed("migrate: dropping the reverse slot", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The source's TLS settings as URL parameters, for the reverse stream's sink (its sessions open from the URL). */
    private String ssl() {
        StringBuilder b = new StringBuilder();
        if (ends.source.sslMode() != null) {
            b.append(b.isEmpty() ? '?' : '&').append("sslmode=").append(java.net.URLEncoder.encode(ends.source.sslMode(),
                    java.nio.charset.StandardCharsets.UTF_8));
        }
        if (ends.source.sslRootCert() != null) {
            b.append(b.isEmpty() ? '?' : '&').append("sslrootcert=").append(java.net.URLEncoder.encode(ends.source.sslRootCert().toString(),
                    java.nio.charset.StandardCharsets.UTF_8));
        }
        return b.toString();
    }

    /**
     * The recorded step and whether the source is fenced now.
     *
     * @param state    the last step recorded on the target
     * @param steps    each recorded step with its time and detail, oldest first
     * @param fenced   whether the source database has the fence's read-only default now
     * @param targetFenced whether the target database has it (from a rollback on: the target is then the one fenced)
     * @param lagBytes WAL between the source's position and the target's durable checkpoint; -1 before the first, and
     *                 from the cutover on (the source is no longer followed: its position moves on with nothing to follow)
     * @param slot     the migration's replication slot on the source
     * @param read     whether a process reads that slot now ({@code migrate run} or {@code follow}): without one the target
     *                 falls behind and {@code lagBytes} grows
     * @param tables   each table's copy phase on the target
     * @param reverseLagBytes WAL between the target's position and the reverse stream's durable checkpoint on the source,
     *                 while there is a way back (from a {@code cutover --reverse} until the rollback ends); -1 otherwise
     * @param reverseRead whether a process ({@code migrate reverse}) reads the target's reverse slot now
     * @param running  the target session of a cutover, rollback or abort running now (it holds the migration's lock), or 0
     * @param leftSlotBytes from the cutover on, the WAL the migration's slot still keeps on the source when nothing reads it
     *                 (its {@code run} ended before it saw the cutover, and so did not drop it); -1 when there is none
     */
    public record MigrationStatus(MigrationState state, List<String> steps, boolean fenced, boolean targetFenced, long lagBytes,
                                  String slot, boolean read, List<TableStatus> tables, long reverseLagBytes, boolean reverseRead,
                                  int running, long leftSlotBytes) {
        public MigrationStatus {
            steps = List.copyOf(steps);
            tables = List.copyOf(tables);
        }

        /** As before {@code leftSlotBytes}. */
        public MigrationStatus(MigrationState state, List<String> steps, boolean fenced, boolean targetFenced, long lagBytes,
                               String slot, boolean read, List<TableStatus> tables, long reverseLagBytes, boolean reverseRead,
                               int running) {
            this(state, steps, fenced, targetFenced, lagBytes, slot, read, tables, reverseLagBytes, reverseRead, running, -1);
        }

        /** For the terminal. */
        public String render() {
            StringBuilder b = new StringBuilder("migration: " + state + "; source " + (fenced ? "FENCED (read-only by default)"
                    : "not fenced (takes writes)") + (targetFenced ? "; target FENCED (read-only by default)" : "")
                    + (lagBytes >= 0 ? "; target " + lagBytes + " bytes behind" : "") + "\n");
            steps.forEach(s -> b.append("  ").append(s).append('\n'));
            tables.forEach(t -> b.append("  ").append(t.table()).append(": ").append(t.phase()).append(t.rowsEstimate() < 0
                            ? ", rows on the target not estimated yet (not analyzed there)" : ", ~" + t.rowsEstimate() + " row(s) on the target").append(t.lagBytes() < 0 ? "" : read ? ", following " + t.lagBytes() + " bytes behind"
                    : ", " + t.lagBytes() + " bytes behind, not following")
                    .append(t.verifiedAt() == null ? ", not verified yet" : ", last verify pass "
                    + t.verifiedAt() + ": " + t.verifiedChunks() + " chunk(s), " + (t.differedChunks() == 0 ? "all equal"
                    : t.differedChunks() + " differing when read, " + (t.divergentChunks() == 0 ? "equal when re-checked or copied again"
                    : t.divergentChunks() + " still divergent ('millrace migrate verify --repair' copies them again)"))).append('\n'));
            if (state == MigrationState.CUT_OVER || state == MigrationState.ROLLING_BACK) {
                b.append(reverseLagBytes < 0 ? "no way back was prepared (the cutover ran without --reverse)\n"
                        : "the way back: the source is " + reverseLagBytes + " bytes behind the target" + (reverseRead
                        ? ", 'millrace migrate reverse' streams to it\n"
                        : "; nothing streams the target's writes to it now ('millrace migrate reverse' does; the target's reverse"
                        + " slot holds them meanwhile)\n"));
            }
            if (leftSlotBytes >= 0) {
                // found by a migrate user: run killed in the cutover's moment left it, keeping WAL on the old primary for good
                b.append("the source still holds slot '" + slot + "' (" + leftSlotBytes + " bytes of WAL kept), which nothing follows"
                        + " since the cutover: " + (reverseLagBytes >= 0 ? "'millrace migrate reverse' drops it; without a way back, " : "")
                        + "drop it on the source: SELECT pg_drop_replication_slot('" + slot + "')\n");
            }
            if (running != 0) {
                // before, a cutover waiting for its fence marker read as interrupted here, and the abort it invited lifted
                // the fence under it
                b.append("a " + (state == MigrationState.ROLLING_BACK || state == MigrationState.CUT_OVER ? "rollback" : "cutover")
                        + " (or an abort) runs now (the target's session " + running + " holds the migration's lock): wait for it"
                        + " to end\n");
            } else if (fenced && !state.sourceMayBeFenced()) {
                b.append("the source database is read-only (default_transaction_read_only), but this migration did not fence it (an"
                        + " earlier migration's cutover or a DBA did): it takes no writes, and 'millrace migrate abort' leaves it so;"
                        + " lift it (ALTER DATABASE ... RESET default_transaction_read_only) only if nothing else is the primary now\n");
            } else if (state == MigrationState.FENCED && tables.stream().anyMatch(t -> t.divergentChunks() > 0)) {
                // found by a user: a cutover --verify that stopped on a difference read as interrupted
                b.append("a cutover stopped on chunks that differ (above): 'millrace migrate verify --repair' copies them again, then"
                        + " 'millrace migrate cutover --verify' finishes it; 'millrace migrate abort' unfences the source\n");
            } else if (state == MigrationState.FENCING || state == MigrationState.FENCED) {
                b.append("a cutover was interrupted: 'millrace migrate cutover' finishes it, 'millrace migrate abort' unfences the source\n");
            } else if (!read && (state == MigrationState.SCHEMA_CREATED || state == MigrationState.FOLLOWING)) {
                b.append("no process follows the source now (slot '" + slot + "' is not read): 'millrace migrate run' goes on from"
                        + " where it stopped\n");
            } else if (state == MigrationState.ROLLING_BACK) {
                b.append("a rollback was interrupted" + (targetFenced ? "" : " before the target was fenced") + ": with 'millrace"
                        + " migrate reverse' running, 'millrace migrate rollback' finishes it\n");
            }
            return b.toString();
        }
    }

    /**
     * One table of the migration.
     *
     * @param table        {@code schema.table}
     * @param phase        {@code waiting} (no checkpoint on the target yet), {@code copying} or {@code copied} (its copy
     *                     landed in full; it follows the stream)
     * @param rowsEstimate the target's estimate of its rows ({@code pg_class.reltuples}); -1 when the target has not
     *                     estimated them yet (never vacuumed or analyzed: PostgreSQL 14+ says so, older ones say 0)
     * @param lagBytes     WAL between the source's position and the target's durable checkpoint for a copied table; -1
     *                     while it is not copied yet. One stream carries every table and the target applies it in commit
     *                     order, so a following table is exactly as far behind as the stream: no table can be behind it
     *                     or ahead of it
     * @param verifiedAt   when the last full {@link #verify} pass compared it; null before one (or for a table without a key)
     * @param verifiedChunks chunks that pass compared
     * @param differedChunks chunks that differed when that pass first read them (each was then re-checked row by row)
     * @param divergentChunks of those, the chunks still divergent at the end of the pass and not copied again since
     */
    public record TableStatus(String table, String phase, long rowsEstimate, long lagBytes, java.time.Instant verifiedAt,
                              long verifiedChunks, long differedChunks, long divergentChunks) {
        /** A table none of whose chunks is known divergent. */
        public TableStatus(String table, String phase, long rowsEstimate, long lagBytes, java.time.Instant verifiedAt,
                           long verifiedChunks, long differedChunks) {
            this(table, phase, rowsEstimate, lagBytes, verifiedAt, verifiedChunks, differedChunks, 0);
        }
    }

    /**
     * The migration's recorded step and the source's fence state. A cutover's fence ends every other session of the source
     * ({@code pg_terminate_backend}, SQLSTATE 57P01), a status's too when it connects in that moment: read again then,
     * rather than failing with "the server is shutting down" (seen in MigrateCutoverIT on a loaded machine).
     */
    public MigrationStatus status() {
        for (int attempt = 1; ; attempt++) {
            try {
                return statusOnce();
            } catch (MillraceException e) {
                if (attempt >= 5 || !endedByTheFence(e)) {
                    throw e;
                }
                try {
                    Thread.sleep(100L * attempt);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    /** Whether {@code e} comes of a session ended by {@code pg_terminate_backend} (SQLSTATE 57P01). */
    private static boolean endedByTheFence(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException q && "57P01".equals(q.getSQLState())) {
                return true;
            }
        }
        return false;
    }

    private MigrationStatus statusOnce() {
        try (Connection src = ends.source(); Connection tgt = ends.target(false)) {
            List<String> steps = new ArrayList<>();
            for (StateStore.Step s : store.steps(tgt)) {
                steps.add(s.at() + " " + s.state() + (s.detail() == null ? "" : ": " + s.detail()));
            }
            MigrationState state = store.current(tgt);
            // the forward stream ends at the cutover: the source's position moves on (its other databases, checkpoints) with
            // nothing to follow, so a lag from then on would only grow (a user saw it do so after the cutover)
            boolean forward = !(state == MigrationState.CUT_OVER || state == MigrationState.ROLLING_BACK || state == MigrationState.ROLLED_BACK);
            long lag = forward ? new Cutover(ends, store).lag(src, tgt) : Long.MAX_VALUE;
            String reverseSlot = io.millrace.core.schema.Ident.literal(Reverse.slot(ends.source.slot()));
            String active = forward || state == MigrationState.ROLLED_BACK ? null
                    : Planner.oneOrNull(tgt, "SELECT active::text FROM pg_replication_slots WHERE slot_name = " + reverseSlot);
            long reverseLag = -1;
            if (active != null) {
                String at = ends.reverseFlushLsn(src);
                if (at == null) { // nothing stored yet: from where the slot starts
                    at = Planner.one(tgt, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = " + reverseSlot);
                }
                reverseLag = Math.max(0, Lsn.parse(Planner.one(tgt, "SELECT pg_current_wal_lsn()::text")).value() - Lsn.parse(at).value());
            }
            // read, or held by a run still copying (the slot is read once the copy is done): before, status said "no process
            // follows the source now" during the copy, which invited a second run (found by a user)
            boolean read = Planner.bool(src, "SELECT active FROM pg_replication_slots WHERE slot_name = "
                    + io.millrace.core.schema.Ident.literal(ends.source.slot())) || io.millrace.source.PipelineLock.held(src, ends.source.slot());
            long leftSlot = -1;
            if (!forward && !read) {
                String kept = Planner.oneOrNull(src, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint::text FROM"
                        + " pg_replication_slots WHERE slot_name = " + io.millrace.core.schema.Ident.literal(ends.source.slot()));
                leftSlot = kept == null ? -1 : Math.max(0, Long.parseLong(kept));
            }
            return new MigrationStatus(state, steps, Fence.fenced(src), Fence.fenced(tgt), lag == Long.MAX_VALUE ? -1 : lag,
                    ends.source.slot(), read, tables(src, tgt, lag == Long.MAX_VALUE ? -1 : lag), reverseLag, "true".equals(active),
                    StateStore.holder(tgt, ends.source.slot()), leftSlot);
        } catch (SQLException e) {
            throw Endpoints.failed("migrate status", e);
        }
    }

    /** Each table's phase, from the sink's checkpoint on the target (its snapshot progress). */
    private List<TableStatus> tables(Connection src, Connection tgt, long lag) throws SQLException {
        List<SourceCatalog.Table> tables = new ArrayList<>();
        for (SourceCatalog.Table t : SourceCatalog.tables(src, ends.source.tables(), ends.source.excludeTables(), new ArrayList<>())) {
            if (!t.unlogged()) {
                tables.add(t);
            }
        }
        List<String> names = tables.stream().map(t -> t.ref().toString()).toList();
        boolean started = ends.targetFlushLsn(tgt) != null;
        java.util.Set<String> copying = ends.copying(tgt, names);
        List<TableStatus> out = new ArrayList<>();
        for (SourceCatalog.Table t : tables) {
            String name = t.ref().toString();
            String phase = !started ? "waiting" : copying.contains(name) ? "copying" : "copied";
            // -1 while any part was never analyzed: a copy under way read "~0 row(s) on the target" (issue 19 review)
            String est = Planner.oneOrNull(tgt, "SELECT CASE WHEN bool_or(c.reltuples < 0) THEN -1 ELSE sum(c.reltuples)::bigint END"
                    + " FROM pg_class c WHERE c.relkind = 'r'"
                    + " AND c.oid IN (SELECT x.relid FROM pg_partition_tree(to_regclass(" + io.millrace.core.schema.Ident.literal(t.ref().sql())
                    + ")) x UNION SELECT to_regclass(" + io.millrace.core.schema.Ident.literal(t.ref().sql()) + "))"); // a partitioned table's: its partitions'
            PassStore.Pass pass = passes.load(tgt, name);
            out.add(new TableStatus(name, phase, est == null ? 0 : Long.parseLong(est), phase.equals("copied") ? lag : -1,
                    pass == null ? null : pass.at(),
                    pass == null ? 0 : pass.chunks().size(), pass == null ? 0 : pass.differed(), pass == null ? 0 : pass.divergent()));
        }
        return out;
    }

    /**
     * A run after an abort starts over (the plan found the target's tables empty or gone, and the abort dropped the slot):
     * the checkpoint the aborted attempt left on the target is removed, else the start refuses a checkpoint of a slot
     * that no longer exists (a migrate user needed 'millrace reset', which docs/MIGRATE.md never named).
     */
    private void forgetCheckpoint(Connection tgt) throws SQLException {
        String table = io.millrace.core.schema.Ident.qualified(ends.target.stateSchema() == null ? PostgresSinkConfig.DEFAULT_STATE_SCHEMA
                : ends.target.stateSchema(), "checkpoints");
        if (Planner.bool(tgt, "SELECT to_regclass(" + io.millrace.core.schema.Ident.literal(table) + ") IS NOT NULL")) {
            try (java.sql.PreparedStatement ps = tgt.prepareStatement("DELETE FROM " + table + " WHERE destination = ?")) {
                ps.setString(1, ends.target.name());
                if (ps.executeUpdate() > 0) {
                    LOG.info("migrate: starting over after an abort: the aborted attempt's checkpoint on the target is removed");
                }
            }
        }
    }

    /**
     * Abandons the migration: lifts the source's fence, if this migration fenced it, and records ABORTED. A source made
     * read-only by something else (an earlier migration's cutover, a DBA) stays read-only. The target's tables stay as they
     * are (drop them to start again). Refused once cut over, since the target is then the primary and writes may have gone
     * there.
     *
     * @throws MillraceException of kind CONFIG after a cutover
     */
    public MigrationStatus abort() {
        try (Connection src = ends.source(); Connection tgt = ends.target(false)) {
            StateStore.exclusive(tgt, ends.source.slot(), "migrate abort");
            MigrationState state = store.current(tgt);
            if (state == MigrationState.ROLLING_BACK || state == MigrationState.ROLLED_BACK) {
                throw new MillraceException(Kind.CONFIG, "migrate abort: the migration is " + state + "; "
                        + (state == MigrationState.ROLLED_BACK ? "the source is the primary again" : "'millrace migrate rollback'"
                        + " finishes it"));
            }
            if (state == MigrationState.CUT_OVER) {
                // found by a user: after 'cutover --reverse' it advised lifting the fence by hand, which would leave two
                // writable databases and the writes made on the target since the cutover on the target only
                throw new MillraceException(Kind.CONFIG, "migrate abort: the migration is cut over, the target is the primary;"
                        + " the source stays fenced. To make the source the primary again with the writes made on the target since"
                        + " the cutover: 'millrace migrate reverse' (after 'cutover --reverse') and then 'millrace migrate rollback'."
                        + " Lifting the fence by hand (ALTER DATABASE ... RESET default_transaction_read_only) makes both databases"
                        + " writable and carries no write back: only once the applications write to one of them alone");
            }
            boolean fenced = Fence.fenced(src);
            String detail;
            if (fenced && state.sourceMayBeFenced()) {
                Fence.open(src); // only then: lifting a fence needs the database's owner, and a migration never fenced needs none
                detail = "; source unfenced";
            } else if (fenced) {
                // Read-only, but not by this migration (it never fenced: it is at SCHEMA_CREATED or FOLLOWING): an earlier
                // migration's cutover or a DBA made it so, and lifting it could make two primaries (found by a user: abort
                // of a new migration from an old primary made that old primary writable again).
                detail = "; the source is read-only, but this migration did not fence it: left read-only";
                LOG.warn("migrate abort: source database {} is read-only (default_transaction_read_only), but this migration never"
                        + " fenced it (it was {}): left as it is; lift it yourself only if nothing else is the primary now:"
                        + " ALTER DATABASE ... RESET default_transaction_read_only", ends.source.database(), state);
            } else {
                detail = "; source was not fenced";
            }
            store.record(tgt, MigrationState.ABORTED, "was " + state + detail);
        } catch (SQLException e) {
            throw Endpoints.failed("migrate abort", e);
        }
        releaseSource(Duration.ofSeconds(15));
        return status();
    }

    /**
     * Drops the migration's replication slot on the source once nothing reads it (waiting up to {@code wait} for the
     * follower to stop), so that the old server retains no WAL for a migration that is cut over or aborted. Refused
     * before that, since the slot is what the follower resumes from.
     *
     * @return whether the slot is gone (false: still read by a follower after {@code wait})
     * @throws MillraceException of kind CONFIG when the migration is neither CUT_OVER nor ABORTED
     */
    public boolean releaseSource(Duration wait) {
        try (Connection src = ends.source(); Connection tgt = ends.target(false)) {
            MigrationState state = store.current(tgt);
            if (state != MigrationState.CUT_OVER && state != MigrationState.ABORTED && state != MigrationState.ROLLING_BACK
                    && state != MigrationState.ROLLED_BACK) {
                throw new MillraceException(Kind.CONFIG, "migrate: the migration is " + state + "; its slot '" + ends.source.slot()
                        + "' is dropped only once it is cut over or aborted");
            }
            long deadline = System.nanoTime() + wait.toNanos();
            while (true) {
                String active = Planner.oneOrNull(src, "SELECT active::text FROM pg_replication_slots WHERE slot_name = "
                        + io.millrace.core.schema.Ident.literal(ends.source.slot()));
                if (active == null) {
                    return true;
                }
                if (active.equals("false")) {
                    Planner.oneOrNull(src, "SELECT pg_drop_replication_slot(" + io.millrace.core.schema.Ident.literal(ends.source.slot()) + ")");
                    LOG.info("migrate: replication slot '{}' dropped on the source", ends.source.slot());
                    return true;
                }
                if (System.nanoTime() > deadline) {
                    LOG.warn("migrate: replication slot '{}' is still read (is 'millrace migrate run' still running?); stop it, then"
                            + " run 'millrace migrate abort' again to drop the slot", ends.source.slot());
                    return false;
                }
                Thread.sleep(200);
            }
        } catch (SQLException e) {
            throw Endpoints.failed("migrate: dropping the replication slot", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
