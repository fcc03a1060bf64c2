package io.millrace.source;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.Ident;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/** Creates and drops the replication slot, reads its state; identifies the source system. The publication: {@link Publisher}. */
public final class SlotManager {
    private final SourceConfig config;

    public SlotManager(SourceConfig config) {
        this.config = config;
    }

    /** What IDENTIFY_SYSTEM answers. */
    public record SystemInfo(String systemId, int timeline, Lsn walPosition, String database) {
    }

    /** A slot just created: streaming from it starts at {@code consistentPoint}; {@code snapshotName} is
     *  valid only while the creating replication connection stays open and idle. */
    public record CreatedSlot(String name, Lsn consistentPoint, String snapshotName) {
    }

    public static SystemInfo identify(Connection replication) {
        try (Statement s = replication.createStatement(); ResultSet rs = s.executeQuery("IDENTIFY_SYSTEM")) {
            rs.next();
            return new SystemInfo(rs.getString("systemid"), rs.getInt("timeline"), Lsn.parse(rs.getString("xlogpos")), rs.getString("dbname"));
        } catch (SQLException e) {
            throw PgErrors.translate("identifying the source system (IDENTIFY_SYSTEM)", e);
        }
    }

    /**
     * Creates the slot on a replication connection. With {@code exportSnapshot} the connection must
     * then stay open and run nothing else until every snapshot reader has imported the snapshot
     * (INV: HANDOVER: the snapshot shows exactly the transactions before the consistent point).
     */
    public CreatedSlot createSlot(Connection replication, boolean exportSnapshot) {
        // source.failover: a failover slot (PostgreSQL 17+, where the option list is the syntax), which standbys with
        // sync_replication_slots copy, so that a promoted standby has it at a position no later than this one's
        String sql = "CREATE_REPLICATION_SLOT " + Ident.quote(config.slot()) + " LOGICAL pgoutput " + (config.failover()
                ? "(SNAPSHOT '" + (exportSnapshot ? "export" : "nothing") + "', FAILOVER true)"
                : exportSnapshot ? "EXPORT_SNAPSHOT" : "NOEXPORT_SNAPSHOT");
        try (Statement s = replication.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return new CreatedSlot(rs.getString("slot_name"), Lsn.parse(rs.getString("consistent_point")), rs.getString("snapshot_name"));
        } catch (SQLException e) {
            if ("42710".equals(e.getSQLState())) {
                throw new MillraceException(Kind.SLOT_IN_USE, "replication slot '" + config.slot() + "' was created by another process at"
                        + " the same time (another Millrace with this source.slot?); stop it or choose another source.slot", e);
            }
            if ("53400".equals(e.getSQLState())) {
                throw new MillraceException(Kind.SOURCE_SETUP, "cannot create slot '" + config.slot() + "': " + e.getMessage()
                        + ". Raise max_replication_slots (ALTER SYSTEM SET max_replication_slots = ...; then restart) or drop an unused slot", e);
            }
            throw PgErrors.translate("creating replication slot '" + config.slot() + "'", e);
        }
    }

    /**
     * Makes an existing slot a failover slot ({@code ALTER_REPLICATION_SLOT ... (FAILOVER true)}, PostgreSQL 17+): a pipeline
     * that turns source.failover on keeps its slot and position. The slot must not be in use. Returns whether it changed it.
     */
    public boolean makeFailover(Connection replication, Connection regular) {
        try (PreparedStatement ps = regular.prepareStatement("SELECT failover FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, config.slot());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next() || rs.getBoolean(1)) {
                    return false;
                }
            }
        } catch (SQLException e) {
            throw PgErrors.translate("reading slot '" + config.slot() + "'", e);
        }
        try (Statement s = replication.createStatement()) {
            s.execute("ALTER_REPLICATION_SLOT " + Ident.quote(config.slot()) + " (FAILOVER true)");
            return true;
        } catch (SQLException e) {
            throw PgErrors.translate("making slot '" + config.slot() + "' a failover slot (source.failover)", e);
        }
    }

    public void dropSlot(Connection c) {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, config.slot());
            ps.execute();
        } catch (SQLException e) {
            throw PgErrors.translate("dropping replication slot '" + config.slot() + "'", e);
        }
    }

    /**
     * The slot's hold on the source's WAL.
     *
     * @param serverLsn     the server's current WAL position
     * @param confirmed     the slot's confirmed_flush_lsn, or null while the slot does not exist
     * @param retainedBytes WAL the slot keeps from being recycled, or -1 while the slot does not exist
     */
    public record Retention(Lsn serverLsn, Lsn confirmed, long retainedBytes) {
    }

    /** Reads {@code slot}'s {@link Retention} in one query. */
    public static Retention retention(Connection c, String slot) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT " + Catalog.WAL_NOW + "::text,"
                + " (SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = ?),"
                + " (SELECT pg_wal_lsn_diff(" + Catalog.WAL_NOW + ", restart_lsn)::bigint FROM pg_replication_slots WHERE slot_name = ?)")) {
            ps.setString(1, slot);
            ps.setString(2, slot);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                String confirmed = rs.getString(2);
                long retained = rs.getLong(3);
                if (rs.wasNull()) {
                    retained = -1;
                }
                return new Retention(Lsn.parse(rs.getString(1)), confirmed == null ? null : Lsn.parse(confirmed), retained);
            }
        }
    }

    /**
     * The slot as a start finds it.
     *
     * @param confirmed its confirmed_flush_lsn, or null (missing, or never confirmed)
     * @param activePid the process holding it now, or null
     */
    public record SlotState(boolean exists, Lsn confirmed, Integer activePid) {
    }

    /** Reads the slot's existence, confirmed position and holder in one look. */
    public SlotState state(Connection c) {
        try (PreparedStatement ps = c.prepareStatement("SELECT confirmed_flush_lsn::text, CASE WHEN active THEN active_pid END"
                + " FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, config.slot());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return new SlotState(false, null, null);
                }
                String confirmed = rs.getString(1);
                int pid = rs.getInt(2);
                return new SlotState(true, confirmed == null ? null : Lsn.parse(confirmed), rs.wasNull() ? null : pid);
            }
        } catch (SQLException e) {
            throw PgErrors.translate("reading slot '" + config.slot() + "'", e);
        }
    }

    /**
     * Throws {@link Kind#SLOT_IN_USE} when another process holds the slot now: a slot that moved while it is held was
     * moved by that process (a second pipeline started beside a running one), which is not a lost checkpoint.
     */
    public void requireFree(Connection c) {
        try (PreparedStatement ps = c.prepareStatement("SELECT active_pid FROM pg_replication_slots WHERE slot_name = ? AND active")) {
            ps.setString(1, config.slot());
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    throw SlotInUse.error(config.slot(), rs.getInt(1), null);
                }
            }
        } catch (SQLException e) {
            throw PgErrors.translate("reading slot '" + config.slot() + "'", e);
        }
    }
}
