package io.millrace.engine;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.Checkpoint;
import io.millrace.source.PgErrors;
import io.millrace.source.SlotManager;
import io.millrace.source.SourceConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;

/**
 * With {@code source.failover}, a resume checks that the slot on the server it reached — after a failover, the promoted
 * standby — is this pipeline's failover slot and that the server has every change the destinations hold, before
 * anything is read or written (INV: IDENTITY, RESUME):
 * <ul>
 *   <li>the system identifier is the checkpoints' one (the planner's identity check: a promoted physical standby keeps
 *       the primary's identifier, so a slot of an unrelated server is refused there);</li>
 *   <li>the slot exists: a promoted standby to which it had not been synchronised (slot sync off, or the slot not yet
 *       persistent there) stops with an error naming that, never a silent new snapshot;</li>
 *   <li>the destinations' checkpoints are not past the server's WAL: a destination ahead of the new primary holds
 *       transactions the new primary never had (a standby promoted that lacked them: {@code synchronized_standby_slots}
 *       not set on the old primary), and going on would mix two histories;</li>
 *   <li>the slot is not confirmed past the checkpoints (the planner's check: that would skip). A slot confirmed
 *       <em>behind</em> them is normal after a failover — the standby copies the position from time to time — and safe:
 *       the server decodes from the slot's restart position and leaves out what commits before the requested start.</li>
 * </ul>
 */
final class FailoverSlot {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class);

    private FailoverSlot() {
    }

    /** The slot as {@code pg_replication_slots} shows it on this server. */
    record State(boolean exists, boolean failover, boolean synced, Lsn confirmed) {
    }

    static State read(Connection c, String slot) {
        try (PreparedStatement ps = c.prepareStatement("SELECT failover, synced, confirmed_flush_lsn::text FROM pg_replication_slots"
                + " WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return new State(false, false, false, null);
                }
                String confirmed = rs.getString(3);
                return new State(true, rs.getBoolean(1), rs.getBoolean(2), confirmed == null ? null : Lsn.parse(confirmed));
            }
        } catch (SQLException e) {
            throw PgErrors.translate("reading slot '" + slot + "'", e);
        }
    }

    /**
     * Throws when the destinations hold checkpoints and this server's slot cannot continue them; logs where a synchronised
     * slot resumes. Reads only. {@code where}: the server, for messages.
     */
    static void check(SourceConfig src, String where, SlotManager.SystemInfo sys, State slot, List<Optional<Checkpoint>> found) {
        List<Checkpoint> cps = found.stream().flatMap(Optional::stream).toList();
        if (!src.failover() || cps.isEmpty() || cps.stream().anyMatch(c -> !c.identity().systemId().equals(sys.systemId()))) {
            return; // another system's checkpoint: the planner refuses it (INV: IDENTITY) with its own message
        }
        Lsn high = cps.stream().map(Checkpoint::flushLsn).reduce(Lsn::max).orElseThrow();
        Lsn low = cps.stream().map(Checkpoint::flushLsn).reduce(Lsn::min).orElseThrow();
        if (!slot.exists()) {
            throw new MillraceException(Kind.SOURCE_SETUP, "replication slot '" + src.slot() + "' does not exist on " + where
                    + " (timeline " + sys.timeline() + "), but the destinations hold checkpoints up to " + high + ". With source.failover"
                    + " this is a promoted standby to which the failover slot had not been synchronised: sync_replication_slots was off"
                    + " there, or the slot was not yet synchronised (persistent) when the primary failed. The changes since are not"
                    + " in any slot here, and Millrace does not skip them. Fix: check the standbys with 'millrace preflight'; to go on,"
                    + " start again with empty destinations (millrace reset removes their checkpoints and empties their tables) to take a new snapshot");
        }
        // INV: IDENTITY — nothing of another history: every change the destinations hold must be in this server's WAL
        if (high.isAfter(sys.walPosition())) {
            throw new MillraceException(Kind.IDENTITY, "the destinations hold changes up to " + high + ", but the WAL of " + where
                    + " (timeline " + sys.timeline() + ") ends at " + sys.walPosition() + ": this server (a promoted standby?) never had"
                    + " the transactions the pipeline delivered after that, so the destinations are ahead of it. Millrace does not mix"
                    + " the two. Set synchronized_standby_slots on the primary to the standbys' physical slots, so that the pipeline"
                    + " never gets a change a standby lacks; then start again with empty destinations to take a new snapshot");
        }
        if (slot.synced()) {
            LOG.warn("slot '{}' on {} (timeline {}) is a failover slot synchronised from the former primary, confirmed up to {}; the"
                    + " destinations resume at {} (INV: RESUME — what commits before it is not sent again)", src.slot(), where,
                    sys.timeline(), slot.confirmed(), low);
        } else if (!slot.failover()) {
            LOG.info("slot '{}' is not yet a failover slot: it is made one (source.failover)", src.slot());
        }
    }
}
