package io.millrace.source;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.Ident;
import io.millrace.source.Preflight.Check;
import io.millrace.source.Preflight.Status;
import io.millrace.source.SourceConfig.HostPort;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The preflight's checks of {@code source.failover} (failover slots, PostgreSQL 17+): the server version, the primary's
 * {@code synchronized_standby_slots}, and on each standby listed in {@code source.hosts} that answers, the settings slot
 * synchronisation needs ({@code sync_replication_slots}, {@code hot_standby_feedback}, {@code primary_slot_name},
 * {@code wal_level}, a {@code dbname} in {@code primary_conninfo}) and whether the slot is synchronised there yet.
 *
 * <p>Only the version is a failure. The others are warnings, each naming the setting and its fix: right after a
 * promotion the new primary has no standby yet, and the pipeline must go on streaming from it meanwhile; what a missing
 * setting puts at risk is the <em>next</em> failover, which the warning says.
 */
final class FailoverChecks {
    static final int MIN_VERSION = 170000;

    private final SourceConfig config;
    private final List<Check> out = new ArrayList<>();

    private FailoverChecks(SourceConfig config) {
        this.config = config;
    }

    /** The checks, for {@code primary} a regular connection to the primary; none without source.failover. */
    static List<Check> run(SourceConfig config, Connection primary, int version) throws SQLException {
        if (!config.failover()) {
            return List.of();
        }
        FailoverChecks f = new FailoverChecks(config);
        if (version < MIN_VERSION) {
            f.out.add(new Check("failover", Status.FAIL, "source.failover needs PostgreSQL 17 or newer (failover slots synchronised to"
                    + " standbys); this server is PostgreSQL " + Catalog.setting(primary, "server_version"), "set source.failover: false"
                    + " (or remove it), or upgrade the source to PostgreSQL 17+", Kind.CONFIG));
            return f.out;
        }
        List<String> standbySlots = f.primary(primary);
        f.standbys(standbySlots);
        return f.out;
    }

    private void ok(String name, String detail) {
        out.add(new Check(name, Status.OK, detail, null, null));
    }

    private void warn(String name, String detail, String fix) {
        out.add(new Check(name, Status.WARN, detail, fix, null));
    }

    /** The primary's synchronized_standby_slots; returns the slots it names. */
    private List<String> primary(Connection c) throws SQLException {
        String value = Catalog.setting(c, "synchronized_standby_slots").strip();
        List<String> slots = value.isEmpty() ? List.of()
                : Arrays.stream(value.split(",")).map(String::strip).map(s -> s.replace("\"", "")).filter(s -> !s.isEmpty()).toList();
        if (slots.isEmpty()) {
            warn("synchronized_standby_slots", "is empty on the primary: the pipeline may receive (and the destinations hold)"
                    + " transactions a standby has not received yet, so after that standby's promotion the destinations would be ahead"
                    + " of the new primary", "ALTER SYSTEM SET synchronized_standby_slots = '<the standby's physical slot>';"
                    + " SELECT pg_reload_conf();");
            return slots;
        }
        List<String> problems = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT slot_type, active FROM pg_replication_slots WHERE slot_name = ?")) {
            for (String s : slots) {
                ps.setString(1, s);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        problems.add("'" + s + "' does not exist on this server");
                    } else if (!"physical".equals(rs.getString(1))) {
                        problems.add("'" + s + "' is not a physical slot");
                    } else if (!rs.getBoolean(2)) {
                        problems.add("'" + s + "' is not in use (its standby is not connected)");
                    }
                }
            }
        }
        if (problems.isEmpty()) {
            ok("synchronized_standby_slots", String.join(", ", slots));
        } else {
            warn("synchronized_standby_slots", "names " + String.join("; ", problems) + ": logical replication (this pipeline) waits"
                    + " until each listed slot's standby has the WAL, so it stalls while one is missing or disconnected",
                    "create the standby's physical slot (SELECT pg_create_physical_replication_slot('<name>');) and start the standby,"
                            + " or list only live standbys: ALTER SYSTEM SET synchronized_standby_slots = '...'; SELECT pg_reload_conf();");
        }
        return slots;
    }

    /** Each other host of source.hosts that answers and is in recovery: its slot-synchronisation settings. */
    private void standbys(List<String> standbySlots) {
        if (config.hosts().size() < 2) {
            ok("standbys", "none listed in source.hosts, so their settings are not checked (sync_replication_slots, hot_standby_feedback,"
                    + " primary_slot_name)");
            return;
        }
        PgConnections conns = new PgConnections(config);
        for (HostPort h : config.hosts()) {
            String name = "standby " + h;
            try (Connection c = conns.openTo(h)) {
                if (!recovering(c)) {
                    continue; // the primary
                }
                standby(name, c, standbySlots);
            } catch (MillraceException | SQLException e) {
                warn(name, "could not be checked: " + e.getMessage(), "if it is a standby, make it reachable so that its settings can be"
                        + " checked; remove a host that is gone from source.hosts");
            }
        }
    }

    /** Whether {@code c}'s server is a standby ({@code pg_is_in_recovery()}). */
    static boolean recovering(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_is_in_recovery()"); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    private void standby(String name, Connection c, List<String> standbySlots) throws SQLException {
        List<String> missing = new ArrayList<>();
        List<String> fixes = new ArrayList<>();
        if (!"on".equals(Catalog.setting(c, "sync_replication_slots"))) {
            missing.add("sync_replication_slots is off");
            fixes.add("ALTER SYSTEM SET sync_replication_slots = on;");
        }
        if (!"on".equals(Catalog.setting(c, "hot_standby_feedback"))) {
            missing.add("hot_standby_feedback is off");
            fixes.add("ALTER SYSTEM SET hot_standby_feedback = on;");
        }
        if (!"logical".equals(Catalog.setting(c, "wal_level"))) {
            missing.add("wal_level is not logical");
            fixes.add("ALTER SYSTEM SET wal_level = logical; (then restart the standby)");
        }
        String slot = Catalog.setting(c, "primary_slot_name");
        if (slot == null || slot.isBlank()) {
            missing.add("primary_slot_name is empty");
            fixes.add("ALTER SYSTEM SET primary_slot_name = '<a physical slot on the primary>';");
        } else if (!standbySlots.contains(slot)) {
            missing.add("its primary_slot_name '" + slot + "' is not in the primary's synchronized_standby_slots");
            fixes.add("on the primary: ALTER SYSTEM SET synchronized_standby_slots = '" + slot + "'; SELECT pg_reload_conf();");
        }
        String conninfo = conninfo(c);
        if (conninfo != null && !conninfo.matches("(?s).*\\bdbname\\s*=.*")) {
            missing.add("primary_conninfo names no dbname (slot synchronisation needs one)");
            fixes.add("add dbname=<a database> to primary_conninfo;");
        }
        if (!missing.isEmpty()) {
            fixes.add("SELECT pg_reload_conf(); on the standby");
            warn(name, String.join("; ", missing) + ": the pipeline's slot is not kept in step there, so after that standby's promotion"
                    + " the pipeline could not go on", String.join(" ", fixes));
            return;
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT synced, temporary FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, config.slot());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next() || !rs.getBoolean(1) || rs.getBoolean(2)) {
                    warn(name, "slot " + Ident.literal(config.slot()) + " is not synchronised there yet" + (rs.getRow() > 0 ? " (temporary until"
                            + " the standby catches up with it)" : "") + ": a promotion now would leave the pipeline without its slot",
                            "wait: the standby's slot sync worker copies it once the primary has it; see pg_replication_slots on the standby");
                } else {
                    ok(name, "synchronises slot " + Ident.literal(config.slot()) + " (sync_replication_slots, hot_standby_feedback on;"
                            + " primary_slot_name '" + slot + "')");
                }
            }
        }
    }

    /** The standby's primary_conninfo, or null where this role may not read it. */
    private static String conninfo(Connection c) {
        try {
            return Catalog.setting(c, "primary_conninfo");
        } catch (SQLException e) {
            return null;
        }
    }
}
