package io.millrace.engine;

import io.millrace.core.Position;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.fault.Faults;
import io.millrace.core.sink.Sink;
import io.millrace.source.PgErrors;
import io.millrace.source.SlotManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Carries out {@link StartPlan.ReplaceSlot}: a slot lost (invalidated or dropped) under the destinations' checkpoints is
 * replaced by a new one, and the checkpoints are re-bound to it. Run thread, before the pipeline's writer starts: it owns
 * the destinations.
 *
 * <p>The steps, each written before the next begins, so that a crash anywhere leaves a state the next start finishes:
 * <ol>
 *   <li>every destination's checkpoint is marked REPLACING ({@link Checkpoint.SlotLost}), with a reconciling online task
 *       for every captured table, its position unchanged;</li>
 *   <li>the lost slot (or, after a crash, the new slot the interrupted replacement made) is dropped;</li>
 *   <li>a new slot is created (no exported snapshot: the tables are copied online, with watermarks);</li>
 *   <li>every checkpoint is re-bound to the new slot's consistent point and marked REPLACED.</li>
 * </ol>
 * INV: IDENTITY — the re-binding is the one place a checkpoint's position moves to another slot's: it is done only here,
 * deliberately, and recorded in the checkpoint ({@code slot_lost}), so that a later restart finds a slot confirmed where
 * the checkpoints are and resumes as from any checkpoint, never taking the new slot for another pipeline's. A crash after
 * step 3 leaves the new slot confirmed past checkpoints marked REPLACING: the next start replaces it again (step 2).
 * INV: RESUME — the changes the lost slot never delivered are not replayed: the reconciling copy brings every table to
 * the source's state instead, deleting what the source no longer has (OnlineSnapshotter, Watermarks.Window#gone).
 * INV: HANDOVER — for each table, from the new slot's consistent point on, a key's changes come from the new slot's
 * stream, and its state before from the reconciling copy (a row, or a delete) at its chunk's high watermark, unless the
 * stream changed the key inside the chunk's window; nothing comes from the lost slot any more.
 */
final class SlotReplacement {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class); // the engine's log

    private SlotReplacement() {
    }

    /** Whether the slot is there and invalidated ({@code wal_status = 'lost'}; PostgreSQL 13+ reports it). */
    static boolean lost(Connection c, String slot, int serverVersion) {
        if (serverVersion < 130000) {
            return false;
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT wal_status FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && "lost".equals(rs.getString(1));
            }
        } catch (SQLException e) {
            throw PgErrors.translate("reading slot '" + slot + "'", e);
        }
    }

    /** Does the replacement; returns the re-bound checkpoints, also stored in {@code found}. */
    static List<Checkpoint> run(EngineContext ctx, Connection repl, StartPlan.ReplaceSlot plan, List<Sink> sinks,
                                List<Optional<Checkpoint>> found) {
        String slot = ctx.config.source().slot();
        LOG.warn("{}. source.on_slot_lost is resnapshot: {} slot '{}' and copying every captured table again online while"
                        + " streaming; rows the source no longer has are deleted in the destinations that can list their keys",
                plan.reason(), plan.again() ? "finishing an interrupted replacement of" : "replacing", slot);
        write(sinks, plan.replacing(), found); // 1. REPLACING, before the slot changes
        SlotManager slots = new SlotManager(ctx.config.source());
        if (plan.dropSlot()) {
            try (Connection c = ctx.conns.openCapture()) {
                slots.dropSlot(c); // 2. the lost slot, or the one an interrupted replacement made (its mark says so)
            } catch (SQLException e) {
                throw PgErrors.translate("dropping slot '" + slot + "'", e);
            }
        }
        SlotManager.CreatedSlot created;
        try (var nudge = ctx.conns.standbySnapshots()) { // on a standby the creation waits for the primary's running xacts
            created = slots.createSlot(repl, false); // 3.
        }
        Faults.hit(FaultPoint.ENGINE_SLOT_REPLACED);
        List<Checkpoint> next = new ArrayList<>();
        for (Checkpoint cp : plan.replacing()) {
            Checkpoint.SlotLost l = cp.slotLost();
            // INV: IDENTITY — re-bound deliberately, and recorded: the new slot starts at its consistent point.
            next.add(cp.advance(created.consistentPoint(), new Position(created.consistentPoint(), 0))
                    .withSlotLost(new Checkpoint.SlotLost(Checkpoint.SlotLost.State.REPLACED, l.lostAt(), created.consistentPoint(),
                            l.reason(), l.count())));
        }
        write(sinks, next, found); // 4.
        ctx.slotLost = next.get(0).slotLost();
        LOG.warn("slot '{}' replaced: created at {} (the checkpoints were at {}; changes in between were never read). {} table(s)"
                + " are copied again online and reconciled", slot, created.consistentPoint(), next.get(0).slotLost().lostAt(),
                next.get(0).online().size());
        return next;
    }

    private static void write(List<Sink> sinks, List<Checkpoint> cps, List<Optional<Checkpoint>> found) {
        for (int i = 0; i < sinks.size(); i++) {
            sinks.get(i).write(List.of(), cps.get(i)); // the writer has not started: this thread owns the sinks
            found.set(i, Optional.of(cps.get(i)));
        }
    }
}
