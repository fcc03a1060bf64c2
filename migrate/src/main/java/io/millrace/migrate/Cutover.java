package io.millrace.migrate;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.fault.Faults;
import io.millrace.core.schema.Ident;
import io.millrace.migrate.SourceCatalog.Sequence;
import io.millrace.migrate.SourceCatalog.Table;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;

/**
 * The cutover: wait for a small lag, fence the source, wait for the fence marker on the target, move the sequences.
 *
 * <p><b>The fence (INV: FENCE)</b> is {@link Fence}'s: the source's read-only default, its client sessions ended, then a
 * marker; once the target's durable checkpoint is past the marker, the target holds every transaction committed before
 * the fence (and the exactly-once sink applied none twice).
 *
 * <p><b>Steps.</b> FENCING is recorded on the target before the source is touched, FENCED once the marker is durable
 * there, CUT_OVER once the sequences are set; a cutover interrupted at any point is finished by running it again (each
 * step is idempotent) or undone by {@code migrate abort}.
 */
final class Cutover {
    private static final Logger LOG = LoggerFactory.getLogger(Cutover.class);

    /** FENCING recorded, the source not touched yet: a crash leaves FENCING with the source writable. */
    static final FaultPoint FENCING_RECORDED = new FaultPoint("migrate.cutover.fencing-recorded");
    /** The source fenced and its sessions ended, no marker yet: a crash leaves FENCING with the source fenced. */
    static final FaultPoint SOURCE_FENCED = new FaultPoint("migrate.cutover.source-fenced");
    /** The marker committed on the source, not yet seen on the target. */
    static final FaultPoint MARKER_WRITTEN = new FaultPoint("migrate.cutover.marker-written");
    /** FENCED recorded, the sequences not set yet. */
    static final FaultPoint FENCED_RECORDED = new FaultPoint("migrate.cutover.fenced-recorded");
    /** Sequences set and identity columns restored, CUT_OVER not recorded yet: running the cutover again sets them again. */
    static final FaultPoint SEQUENCES_SET = new FaultPoint("migrate.cutover.sequences-set");

    private final Endpoints ends;
    private final StateStore store;

    Cutover(Endpoints ends, StateStore store) {
        this.ends = ends;
        this.store = store;
    }

    /**
     * @param reverse with {@code --reverse}: the reverse stream's slot and publication are made on the target at the fence
     *                (checked before anything is fenced); false: none
     */
    /**
     * The tables no verify pass compared (a keyless one never is online): a cutover without {@code --verify} said nothing
     * of them (found by a user's walk: a cutover with no pass at all went ahead without a word). After the window: the
     * report names them.
     */
    private List<String> neverCompared(Connection tgt, List<Table> tables) throws SQLException {
        PassStore passes = new PassStore(ends.target.stateSchema());
        List<String> out = new java.util.ArrayList<>();
        for (Table t : tables) {
            if (passes.load(tgt, t.ref().toString()) == null) {
                out.add(t.ref().toString());
            }
        }
        return out;
    }

    /**
     * A cutover without {@code --verify} after a verify pass, or a cutover's own comparison, that found chunks divergent
     * and left them so: refused, before anything is fenced or, resumed, with the source still fenced (found by a user: a
     * plain cutover made the target the primary with 99 keys that verify had reported wrong, without a word).
     */
    private void unrepaired(Connection tgt, List<Table> tables, MigrationState state) throws SQLException {
        PassStore passes = new PassStore(ends.target.stateSchema());
        List<String> found = new java.util.ArrayList<>();
        for (Table t : tables) {
            PassStore.Pass p = passes.load(tgt, t.ref().toString());
            if (p != null && p.divergent() > 0) {
                found.add(t.ref() + " (" + p.divergent() + " chunk(s))");
            }
        }
        if (!found.isEmpty()) {
            throw new MillraceException(Kind.DIVERGED, "migrate cutover: the last comparison ('millrace migrate verify', or a"
                    + " cutover's --verify) found rows that differ"
                    + " between the source and the target in " + String.join(", ", found) + ", not copied again since; "
                    + (state == MigrationState.FOLLOWING ? "nothing was fenced" : "the source stays fenced") + ". Fix: 'millrace"
                    + " migrate verify --repair' (copies them again), or 'millrace migrate cutover --verify' (compares them with"
                    + " the source fenced, and stops if they still differ)" + (state == MigrationState.FOLLOWING ? ""
                    : "; or 'millrace migrate abort' to unfence the source"));
        }
    }

    CutoverReport run(List<Table> tables, List<Sequence> sequences, long maxLagBytes, Duration timeout, Verifier verifier,
                      boolean reverse) throws SQLException, InterruptedException {
        boolean locked = false; // refused before the lock: another cutover's fence is not this one's to explain
        try (Connection src = ends.source(); Connection tgt = ends.target(false)) {
            StateStore.exclusive(tgt, ends.source.slot(), "migrate cutover");
            MigrationState state = store.current(tgt);
            if (state != MigrationState.FOLLOWING && state != MigrationState.FENCING && state != MigrationState.FENCED) {
                // before 'locked': this cutover fenced nothing (a user saw a rolled-back migration's refusal told as a fenced
                // source, with 'cutover again' and 'abort' to finish it: both refuse there)
                throw new MillraceException(Kind.CONFIG, "migrate cutover: the migration is " + state + "; cutover needs it"
                        + " FOLLOWING (copy done, target following" + switch (state) {
                            case CUT_OVER -> ") — it is cut over already";
                            case ROLLING_BACK -> ") — a rollback is under way: 'millrace migrate rollback' finishes it";
                            case ROLLED_BACK -> ") — it was rolled back: to migrate again, 'millrace migrate plan' names what to"
                                    + " drop on the target first";
                            case ABORTED -> ") — it was aborted: to start again, 'millrace migrate plan' names what to drop on the"
                                    + " target first, then 'millrace migrate run'";
                            default -> ": 'millrace migrate run')";
                        });
            }
            locked = true;
            if (reverse) {
                Reverse.check(tgt, src, tables);
                Reverse.checkEarlierStream(src, ends.target.stateSchema(), Reverse.slot(ends.source.slot()));
            }
            if (state == MigrationState.FOLLOWING) {
                List<ColumnDrift.Drift> drift = ColumnDrift.find(src, tgt, tables);
                if (!drift.isEmpty()) {
                    throw new MillraceException(Kind.DIVERGED, "migrate cutover: column definitions differ between the source and"
                            + " the target: " + drift + " (changed on the source while following: the stream carries no defaults"
                            + " or NOT NULL, and rows a default filled were not written). Nothing was fenced. Fix: 'millrace migrate"
                            + " verify --repair' (it makes the target's definitions the source's and copies the rows that differ"
                            + " again), then 'millrace migrate cutover' again");
                }
            }
            if (verifier == null) {
                unrepaired(tgt, tables, state);
            }
            long deadline = System.nanoTime() + timeout.toNanos();
            long lag;
            while ((lag = lag(src, tgt)) > maxLagBytes) {
                if (System.nanoTime() > deadline) {
                    throw new MillraceException(Kind.SINK, "migrate cutover: the target stayed " + lag + " bytes behind the"
                            + " source (bound " + maxLagBytes + ") for " + timeout.toSeconds() + " s; nothing was fenced."
                            + " Fix: wait for the target to catch up, or raise --max-lag-mb");
                }
                Thread.sleep(100);
            }
            if (state != MigrationState.FENCED) {
                awaitFollower(src, state, deadline, timeout);
            }
            String db = Planner.one(src, "SELECT current_database()");
            if (state == MigrationState.FOLLOWING) {
                // what would stop the cutover once the source is fenced: refused while nothing is
                Fence.visible(src);
                List<String> grants = Sequences.unreadable(src, tgt, sequences);
                if (!grants.isEmpty()) {
                    throw new MillraceException(Kind.PERMISSION, "migrate cutover: the roles cannot read or set the sequences it moves"
                            + " past the source's value. Nothing was fenced. Fix: " + String.join("; ", grants)
                            + ", then 'millrace migrate cutover' again");
                }
            }
            long fenceStart = System.nanoTime();
            if (state == MigrationState.FOLLOWING) {
                store.record(tgt, MigrationState.FENCING, "lag " + lag + " bytes");
            }
            Faults.hit(FENCING_RECORDED);
            int ended = Fence.close(src, "Fix: end them (the source is fenced, state FENCING), then run 'millrace migrate cutover'"
                    + " again, or 'millrace migrate abort' to unfence it");
            Faults.hit(SOURCE_FENCED);
            Lsn marker = Fence.marker(src, "fence");
            Faults.hit(MARKER_WRITTEN);
            LOG.info("migrate cutover: source {} fenced ({} session(s) ended), marker at {}", db, ended, marker);
            while (true) {
                String at = ends.targetFlushLsn(tgt);
                if (at != null && Lsn.parse(at).isAfter(marker)) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    throw new MillraceException(Kind.SINK, "migrate cutover: the fence marker at " + marker + " did not reach"
                            + " the target in time; the source stays fenced (state FENCING). Fix: check 'millrace migrate run',"
                            + " then run 'millrace migrate cutover' again, or 'millrace migrate abort' to unfence the source");
                }
                Thread.sleep(5);
            }
            if (state != MigrationState.FENCED) {
                store.record(tgt, MigrationState.FENCED, "marker " + marker);
            }
            Faults.hit(FENCED_RECORDED);
            List<ColumnDrift.Drift> drift = ColumnDrift.find(src, tgt, tables);
            if (!drift.isEmpty()) {
                // changed before the fence, after the check above: the comparison of written rows would not see it
                throw new MillraceException(Kind.DIVERGED, "migrate cutover: with the source fenced, column definitions differ: "
                        + drift + ". The source stays fenced (state FENCED). Fix: 'millrace migrate verify --repair', then"
                        + " 'millrace migrate cutover' again; or 'millrace migrate abort'");
            }
            VerifyReport verified = null;
            if (verifier != null) {
                // The source is fenced and the target past the marker: nothing is in flux, the comparison is exact.
                verified = verifier.sinceLastPass(tables);
                if (!verified.equal()) {
                    throw new MillraceException(Kind.DIVERGED, "migrate cutover: with the source fenced, " + verified.divergent().size()
                            + " chunk(s) differ: " + verified.divergent() + ". The source stays fenced (state FENCED). Fix: 'millrace"
                            + " migrate verify --repair' (with the source fenced it copies a table without a key again whole), then"
                            + " 'millrace migrate cutover' again; or 'millrace migrate abort'");
                }
            }
            String reverseSlot = null;
            if (reverse) {
                // Before the sequences and CUT_OVER: the applications have not switched, so the slot sees no write of theirs yet.
                reverseSlot = Reverse.slot(ends.source.slot());
                Reverse.forgetEarlierStream(src, ends.target.stateSchema(), reverseSlot);
                String at = Reverse.prepare(tgt, reverseSlot, Reverse.publication(ends.source.slot()), tables);
                LOG.info("migrate cutover: reverse slot '{}' on the target at {}", reverseSlot, at);
            }
            // Past the source: the target's next value is after every value the source handed out.
            int set = Sequences.advance(src, tgt, sequences);
            try (Statement ts = tgt.createStatement()) {
                for (String ddl : SchemaWriter.restoreIdentity(tables)) {
                    ts.execute(ddl);
                }
            }
            Faults.hit(SEQUENCES_SET);
            Duration window = Duration.ofNanos(System.nanoTime() - fenceStart);
            if (state != MigrationState.FOLLOWING) {
                // Resumed: the source has been fenced since the first attempt recorded FENCING.
                window = store.since(tgt, MigrationState.FENCING);
            }
            store.record(tgt, MigrationState.CUT_OVER, "fence " + marker + ", write-unavailable " + window.toMillis() + " ms"
                    + (reverseSlot == null ? "" : ", reverse slot " + reverseSlot + " on the target"));
            return new CutoverReport(window, marker.toString(), lag, ended, set, verified, reverseSlot,
                    verified == null ? neverCompared(tgt, tables) : List.of());
        } catch (SQLException e) {
            MillraceException fenced = locked ? fencedError(e) : null;
            if (fenced != null) {
                throw fenced;
            }
            throw e;
        } catch (RuntimeException e) {
            MillraceException fenced = locked ? fencedError(e) : null;
            if (fenced != null) {
                throw fenced;
            }
            throw e;
        }
    }

    /**
     * The error saying that the source is fenced, when it is and {@code e} does not say so already, else null: a failure
     * after the fence must never leave the source read-only without telling the user how to finish or undo it.
     */
    private MillraceException fencedError(Exception e) {
        String message = e.getMessage() == null ? e.toString() : e.getMessage();
        if (message.contains("fenced")) {
            return null;
        }
        try (Connection src = ends.source()) {
            if (!Fence.fenced(src)) {
                return null;
            }
        } catch (SQLException | RuntimeException unknown) {
            // cannot tell: say what to do in either case
        }
        Kind kind = e instanceof MillraceException m ? m.kind() : Kind.SINK;
        return new MillraceException(kind, "migrate cutover: " + message + ". The source database may be fenced (read-only by"
                + " default_transaction_read_only): fix the cause, then run 'millrace migrate cutover' again to finish, or"
                + " 'millrace migrate abort' to unfence it ('millrace migrate status' says which)", e);
    }

    /** WAL between the source's current position and the target's durable checkpoint; {@code Long.MAX_VALUE} before one. */
    /**
     * Waits until a process reads the source's slot ({@code millrace migrate run}): without one, the fence marker never
     * reaches the target, and the source would stay read-only for the whole timeout, then until an abort, for nothing
     * (found by a user: {@code cutover} after {@code run} was stopped fenced production for the default 300 s). The lag
     * read before is no sign of it: it comes from the target's last checkpoint, however old.
     */
    private void awaitFollower(Connection src, MigrationState state, long deadline, Duration timeout)
            throws SQLException, InterruptedException {
        String slot = ends.source.slot();
        String sql = "SELECT active::text FROM pg_replication_slots WHERE slot_name = " + io.millrace.core.schema.Ident.literal(slot);
        while (!"true".equals(Planner.oneOrNull(src, sql))) {
            if (System.nanoTime() > deadline) {
                throw new MillraceException(Kind.CONFIG, "migrate cutover: nothing reads the source's slot '" + slot + "' (is 'millrace"
                        + " migrate run' running?) within " + timeout.toSeconds() + " s, so the fence marker could not reach the target; "
                        + (state == MigrationState.FOLLOWING ? "nothing was fenced" : "the source stays fenced (state FENCING):"
                        + " 'millrace migrate abort' unfences it") + ". Fix: start 'millrace migrate run', then run 'millrace migrate"
                        + " cutover' again");
            }
            Thread.sleep(100);
        }
    }

    long lag(Connection src, Connection tgt) throws SQLException {
        String at = ends.targetFlushLsn(tgt);
        if (at == null) {
            return Long.MAX_VALUE;
        }
        Lsn now = Lsn.parse(Planner.one(src, "SELECT pg_current_wal_lsn()"));
        return Math.max(0, now.value() - Lsn.parse(at).value());
    }
}
