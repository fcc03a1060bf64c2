package io.millrace.source;

import io.millrace.core.MillraceException.Kind;
import io.millrace.source.Preflight.Check;
import io.millrace.source.Preflight.Status;
import io.millrace.source.SourceConfig.HostPort;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * The preflight's checks of {@code source.capture_from: standby} (logical decoding on a standby, PostgreSQL 16+), on the
 * standby the slot is on: its version, its {@code wal_level}, and what keeps the primary from removing the catalog rows
 * the slot decodes with ({@code hot_standby_feedback}, and a physical slot, {@code primary_slot_name}, that holds them
 * while the standby is disconnected). Without those PostgreSQL invalidates the slot ("rows removed") at the primary's
 * next vacuum of the catalog, and its changes are lost: a failure, not a warning.
 */
final class StandbyChecks {
    static final int MIN_VERSION = 160000;

    private StandbyChecks() {
    }

    /** The checks of {@code host}, on {@code c} a regular connection to it. */
    static List<Check> run(HostPort host, Connection c) throws SQLException {
        List<Check> out = new ArrayList<>();
        String name = "capture standby " + host;
        if (!FailoverChecks.recovering(c)) {
            out.add(new Check(name, Status.OK, "is not in recovery (a promoted standby): the slot is read there as on any primary", null,
                    null));
            return out;
        }
        int version = Catalog.serverVersion(c);
        if (version < MIN_VERSION) {
            out.add(new Check(name, Status.FAIL, "source.capture_from: standby needs PostgreSQL 16 or newer on the standby (logical"
                    + " decoding on a standby); " + host + " is PostgreSQL " + Catalog.setting(c, "server_version"),
                    "set source.capture_from: primary, or upgrade to PostgreSQL 16+", Kind.CONFIG));
            return out;
        }
        List<String> missing = new ArrayList<>();
        List<String> fixes = new ArrayList<>();
        if (!"logical".equals(Catalog.setting(c, "wal_level"))) {
            missing.add("wal_level is not logical");
            fixes.add("ALTER SYSTEM SET wal_level = logical; (on the standby, and on the primary; then restart both)");
        }
        if (!"on".equals(Catalog.setting(c, "hot_standby_feedback"))) {
            missing.add("hot_standby_feedback is off, so the primary's vacuum removes catalog rows the slot decodes with and PostgreSQL"
                    + " invalidates the slot");
            fixes.add("ALTER SYSTEM SET hot_standby_feedback = on; SELECT pg_reload_conf(); (on the standby)");
        }
        if (!missing.isEmpty()) {
            out.add(new Check(name, Status.FAIL, String.join("; ", missing), String.join(" ", fixes), Kind.SOURCE_SETUP));
            return out;
        }
        String slot = Catalog.setting(c, "primary_slot_name");
        if (slot == null || slot.isBlank()) {
            out.add(new Check(name, Status.WARN, "primary_slot_name is empty: while the standby is disconnected from the primary, nothing"
                    + " holds back the primary's removal of catalog rows the slot needs, and PostgreSQL invalidates the slot",
                    "stream the standby through a physical slot: SELECT pg_create_physical_replication_slot('<name>'); on the primary,"
                            + " then ALTER SYSTEM SET primary_slot_name = '<name>'; SELECT pg_reload_conf(); on the standby", null));
        } else {
            out.add(new Check(name, Status.OK, "PostgreSQL " + Catalog.setting(c, "server_version") + ", hot_standby_feedback on,"
                    + " primary_slot_name '" + slot + "'", null, null));
        }
        return out;
    }
}
