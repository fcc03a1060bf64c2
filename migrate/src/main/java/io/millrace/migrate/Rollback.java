package io.millrace.migrate;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.fault.Faults;
import io.millrace.core.schema.Ident;
import io.millrace.migrate.SourceCatalog.Sequence;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;

/**
 * The rollback: after {@code migrate cutover --reverse} and with {@code migrate reverse} streaming the new primary's writes
 * into the old one, makes the old primary (the source) the primary again — the cutover the other way round.
 *
 * <p><b>Steps.</b> ROLLING_BACK is recorded on the target; the target is fenced as the cutover fenced the source (INV:
 * FENCE: its read-only default, its client sessions ended — not the reverse stream's walsender, not Millrace's own), a
 * marker is written there, and the rollback waits until the reverse stream's checkpoint on the source is past it: the
 * source then holds every transaction the new primary committed (exactly once: the reverse sink is the postgres
 * destination). Then the source's sequences are set past the target's, the source's fence is lifted, and ROLLED_BACK is
 * recorded; {@code migrate reverse} stops by itself when it sees it. Every step is idempotent: a rollback interrupted at any
 * point is finished by running it again. The target stays fenced (its read-only default), so an application left on it
 * cannot write where nothing reads any more.
 */
final class Rollback {
    private static final Logger LOG = LoggerFactory.getLogger(Rollback.class);

    /** ROLLING_BACK recorded, the target not touched yet: a crash leaves ROLLING_BACK with the target writable. */
    static final FaultPoint ROLLING_BACK_RECORDED = new FaultPoint("migrate.rollback.rolling-back-recorded");
    /** The target fenced and its sessions ended, no marker yet: both databases are fenced. */
    static final FaultPoint TARGET_FENCED = new FaultPoint("migrate.rollback.target-fenced");
    /** The marker committed on the target, the source's sequences not set yet. */
    static final FaultPoint MARKER_WRITTEN = new FaultPoint("migrate.rollback.marker-written");
    /** The source's fence lifted, ROLLED_BACK not recorded yet: the source may take writes before the rollback runs again. */
    static final FaultPoint SOURCE_OPENED = new FaultPoint("migrate.rollback.source-opened");

    private final Endpoints ends;
    private final StateStore store;

    Rollback(Endpoints ends, StateStore store) {
        this.ends = ends;
        this.store = store;
    }

    RollbackReport run(List<SourceCatalog.Table> tables, List<Sequence> sequences, Duration timeout) throws SQLException,
            InterruptedException {
        try (Connection src = ends.source(); Connection tgt = ends.target(false)) {
            StateStore.exclusive(tgt, ends.source.slot(), "migrate rollback");
            MigrationState state = store.current(tgt);
            if (state != MigrationState.CUT_OVER && state != MigrationState.ROLLING_BACK) {
                throw new MillraceException(Kind.CONFIG, "migrate rollback: the migration is " + state + "; a rollback makes the"
                        + " source the primary again after 'millrace migrate cutover --reverse' (before the cutover, 'millrace"
                        + " migrate abort' does)" + (state == MigrationState.ROLLED_BACK ? " — it is rolled back already" : ""));
            }
            String reverseSlot = Reverse.slot(ends.source.slot());
            String active = Planner.oneOrNull(tgt, "SELECT active::text FROM pg_replication_slots WHERE slot_name = "
                    + Ident.literal(reverseSlot));
            if (active == null) {
                throw new MillraceException(Kind.CONFIG, "migrate rollback: the target has no slot '" + reverseSlot + "' (the cutover"
                        + " ran without --reverse, or the slot was dropped): the source cannot get the new primary's writes. Nothing"
                        + " was fenced. To go back, migrate again the other way (source and target swapped)");
            }
            if (state == MigrationState.CUT_OVER) {
                // The new primary is the reference now: a column it gained with a default after the cutover filled rows the
                // reverse stream never sends (ColumnDrift), and the source would keep NULL in them.
                List<ColumnDrift.Drift> drift = ColumnDrift.find(tgt, "target", src, "source", tables);
                if (!drift.isEmpty()) {
                    throw new MillraceException(Kind.DIVERGED, "migrate rollback: column definitions differ between the target"
                            + " (the primary now) and the source: " + drift + " (changed on the target since the cutover: the"
                            + " reverse stream carries no defaults or NOT NULL, and rows a default filled were never sent). Nothing"
                            + " was fenced. Fix: on the source, in a session with SET default_transaction_read_only = off, make"
                            + " those columns as they are on the target (ALTER TABLE ... ADD COLUMN or ALTER COLUMN ... SET DEFAULT,"
                            + " then UPDATE the rows the default filled, then SET NOT NULL), then run 'millrace migrate rollback'"
                            + " again");
                }
            }
            long deadline = System.nanoTime() + timeout.toNanos();
            while (!"true".equals(active)) {
                // Never fence the target with nothing to bring its last writes over: both databases would be read-only.
                if (System.nanoTime() > deadline) {
                    throw new MillraceException(Kind.CONFIG, "migrate rollback: nothing reads the target's slot '" + reverseSlot
                            + "' (is 'millrace migrate reverse' running?) within " + timeout.toSeconds() + " s, so the source could"
                            + " not get the target's last writes; nothing " + (state == MigrationState.CUT_OVER ? "was" : "more was")
                            + " fenced. Fix: start 'millrace migrate reverse', then run 'millrace migrate rollback' again");
                }
                Thread.sleep(100);
                active = Planner.oneOrNull(tgt, "SELECT active::text FROM pg_replication_slots WHERE slot_name = "
                        + Ident.literal(reverseSlot));
            }
            long start = System.nanoTime();
            if (state == MigrationState.CUT_OVER) {
                Fence.visible(tgt); // sessions of other roles the fence could not end: refused while nothing is fenced
                store.record(tgt, MigrationState.ROLLING_BACK, "reverse slot " + reverseSlot);
            }
            Faults.hit(ROLLING_BACK_RECORDED);
            int ended = Fence.close(tgt, "The target is fenced, the source too (state ROLLING_BACK): end them, then run"
                    + " 'millrace migrate rollback' again");
            Faults.hit(TARGET_FENCED);
            Lsn marker = Fence.marker(tgt, "rollback");
            Faults.hit(MARKER_WRITTEN);
            LOG.info("migrate rollback: target fenced ({} session(s) ended), marker at {}", ended, marker);
            awaitMarker(src, marker, deadline, timeout);
            int set = Sequences.advance(tgt, src, sequences);
            Fence.open(src);
            Faults.hit(SOURCE_OPENED);
            Duration window = state == MigrationState.CUT_OVER ? Duration.ofNanos(System.nanoTime() - start)
                    : store.since(tgt, MigrationState.ROLLING_BACK);
            store.record(tgt, MigrationState.ROLLED_BACK, "marker " + marker + ", write-unavailable " + window.toMillis() + " ms");
            return new RollbackReport(window, marker.toString(), ended, set, reverseSlot);
        }
    }

    /** Waits until the reverse stream's durable checkpoint on the source is past {@code marker}. */
    private void awaitMarker(Connection src, Lsn marker, long deadline, Duration timeout) throws SQLException, InterruptedException {
        while (true) {
            String at = ends.reverseFlushLsn(src);
            if (at != null && Lsn.parse(at).isAfter(marker)) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new MillraceException(Kind.SINK, "migrate rollback: the marker at " + marker + " did not reach the source in "
                        + timeout.toSeconds() + " s" + (at == null ? " (the reverse stream has stored no checkpoint there)" : " (the"
                        + " reverse stream is at " + at + ")") + ". Both databases are fenced now (state ROLLING_BACK). Fix: run"
                        + " 'millrace migrate reverse' (it streams the target's writes into the source), then 'millrace migrate"
                        + " rollback' again");
            }
            Thread.sleep(10);
        }
    }
}
