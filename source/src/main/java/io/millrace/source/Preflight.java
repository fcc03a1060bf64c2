package io.millrace.source;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TableRef;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Checks that the source is ready for Millrace, and says for each problem what fixes it: wal_level,
 * privileges, replication limits, tables, publication, slot. Runs at every start and as
 * {@code millrace preflight}. Reads only; changes nothing.
 */
public final class Preflight {

    public enum Status { OK, WARN, FAIL }

    /** One finding. {@code kind} is set for failures: it decides the exit code. */
    public record Check(String name, Status status, String detail, String fix, Kind kind) {
        @Override
        public String toString() {
            return String.format("%-5s %-22s %s%s", status, name, detail, fix == null ? "" : "\n      fix: " + fix);
        }
    }

    /** What the source looks like; failures first. */
    public record Report(List<Check> checks, int serverVersion, List<TableRef> tables, boolean slotExists,
                         boolean publicationExists, List<TableRef> unpublished) {
        public Report(List<Check> checks, int serverVersion, List<TableRef> tables, boolean slotExists, boolean publicationExists) {
            this(checks, serverVersion, tables, slotExists, publicationExists, List.of());
        }

        public boolean ok() {
            return checks.stream().noneMatch(c -> c.status() == Status.FAIL);
        }

        public List<Check> failures() {
            return checks.stream().filter(c -> c.status() == Status.FAIL).toList();
        }

        /** Throws the first failure as a {@link MillraceException} naming its fix. */
        public void throwIfFailed() {
            for (Check c : checks) {
                if (c.status() == Status.FAIL) {
                    throw new MillraceException(c.kind(), c.detail() + (c.fix() == null ? "" : ". Fix: " + c.fix()));
                }
            }
        }

        public String render() {
            return checks.stream().map(Check::toString).collect(Collectors.joining("\n"));
        }
    }

    private final SourceConfig config;
    private final List<Check> checks = new ArrayList<>();

    private Preflight(SourceConfig config) {
        this.config = config;
    }

    /** Runs every check on {@code c}, a regular connection to the source. */
    public static Report run(SourceConfig config, Connection c) {
        try {
            return new Preflight(config).check(c);
        } catch (SQLException e) {
            throw PgErrors.translate("checking the source " + config.where(), e);
        }
    }

    private void ok(String name, String detail) {
        checks.add(new Check(name, Status.OK, detail, null, null));
    }

    private void warn(String name, String detail, String fix) {
        checks.add(new Check(name, Status.WARN, detail, fix, null));
    }

    private void fail(String name, Kind kind, String detail, String fix) {
        checks.add(new Check(name, Status.FAIL, detail, fix, kind));
    }

    private Report check(Connection c) throws SQLException {
        int version = Catalog.serverVersion(c);
        if (version < 100000) {
            fail("server version", Kind.SOURCE_SETUP, "PostgreSQL " + version + " is too old", "use PostgreSQL 10 or newer (14+ recommended)");
        } else {
            ok("server version", "PostgreSQL " + Catalog.setting(c, "server_version") + (version < 140000 ? " (binary values and streamed transactions need 14+)" : ""));
        }

        String walLevel = Catalog.setting(c, "wal_level");
        if (!"logical".equals(walLevel)) {
            fail("wal_level", Kind.SOURCE_SETUP, "wal_level is '" + walLevel + "', logical replication needs 'logical'",
                    "run ALTER SYSTEM SET wal_level = logical; then restart PostgreSQL");
        } else {
            ok("wal_level", "logical");
        }

        try (PreparedStatement ps = c.prepareStatement("SELECT rolsuper, rolreplication FROM pg_roles WHERE rolname = current_user");
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            if (rs.getBoolean(1) || rs.getBoolean(2)) {
                ok("replication privilege", "role '" + config.user() + "' may replicate" + (rs.getBoolean(1) ? " (superuser)" : ""));
            } else {
                fail("replication privilege", Kind.PERMISSION, "role '" + config.user() + "' lacks the REPLICATION attribute",
                        "run ALTER ROLE " + Ident.quote(config.user()) + " REPLICATION; (as a superuser)");
            }
        }

        boolean slotExists = checkSlot(c);
        boolean pubExists = publicationExists(c);
        List<TableRef> tables = expand(c, config.tables());
        if (config.tables().isEmpty()) {
            if (!pubExists) {
                fail("tables", Kind.CONFIG, "no tables are configured and publication '" + config.publication() + "' does not exist",
                        "list the tables under source.tables, or create the publication: CREATE PUBLICATION "
                                + Ident.quote(config.publication()) + " FOR TABLE ...;");
            } else {
                tables = Catalog.publicationTables(c, config.publication());
                tables = tables.stream().filter(t -> config.excludeTables().stream().noneMatch(x -> TableRef.matches(x, t))).toList();
                if (tables.isEmpty()) {
                    fail("tables", Kind.SOURCE_SETUP, "publication '" + config.publication() + "' publishes no table",
                            "ALTER PUBLICATION " + Ident.quote(config.publication()) + " ADD TABLE ...; or list tables under source.tables");
                }
            }
        }
        checkTables(c, tables, pubExists);
        List<TableRef> unpublished = checkPublication(c, pubExists, slotExists, tables);
        return new Report(List.copyOf(checks), version, tables, slotExists, pubExists, unpublished);
    }

    /**
     * Replaces each pattern ({@code public.*}, {@code sales.order_?}) by the tables it matches (not
     * partitions: those are published through their root), then removes the excluded ones. Plain
     * names stay as they are, so a missing table is reported by name.
     */
    private List<TableRef> expand(Connection c, List<TableRef> configured) throws SQLException {
        List<TableRef> all = null;
        java.util.LinkedHashSet<TableRef> out = new java.util.LinkedHashSet<>();
        for (TableRef t : configured) {
            if (!t.isPattern()) {
                out.add(t);
                continue;
            }
            if (all == null) {
                all = Catalog.userTables(c);
            }
            List<TableRef> hits = all.stream().filter(x -> TableRef.matches(t, x)).toList();
            if (hits.isEmpty()) {
                warn("tables", "pattern '" + t + "' in source.tables matches no table", "check the pattern (* matches any characters, ? one)");
            }
            out.addAll(hits);
        }
        out.removeIf(t -> config.excludeTables().stream().anyMatch(x -> TableRef.matches(x, t)));
        return List.copyOf(out);
    }

    private boolean checkSlot(Connection c) throws SQLException {
        boolean pg13 = Catalog.serverVersion(c) >= 130000;
        String sql = "SELECT plugin, slot_type, database, active, active_pid, confirmed_flush_lsn::text, "
                + (pg13 ? "wal_status, " : "NULL, ")
                + "pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint FROM pg_replication_slots WHERE slot_name = ?";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, config.slot());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    checkCapacity(c);
                    ok("slot", "'" + config.slot() + "' will be created");
                    return false;
                }
                String name = "slot";
                if (!"logical".equals(rs.getString(2)) || !"pgoutput".equals(rs.getString(1))) {
                    fail(name, Kind.SOURCE_SETUP, "slot '" + config.slot() + "' exists but is a " + rs.getString(2) + " slot of plugin "
                            + rs.getString(1) + ", Millrace needs a logical slot of plugin pgoutput",
                            "choose another source.slot, or drop it: SELECT pg_drop_replication_slot(" + Ident.literal(config.slot()) + ");");
                } else if (!config.database().equals(rs.getString(3))) {
                    fail(name, Kind.SOURCE_SETUP, "slot '" + config.slot() + "' belongs to database '" + rs.getString(3)
                            + "', not '" + config.database() + "' (slot names are shared by all databases of a server)",
                            "check source.database (this slot was created for '" + rs.getString(3) + "'), or choose another source.slot");
                } else if (rs.getBoolean(4)) {
                    fail(name, Kind.SLOT_IN_USE, SlotInUse.detail(config.slot(), rs.getInt(5)), SlotInUse.fix(rs.getInt(5)));
                } else if ("lost".equals(rs.getString(7))) {
                    fail(name, Kind.SOURCE_SETUP, "slot '" + config.slot() + "' was invalidated: the server removed WAL it still needed"
                                    + " (max_slot_wal_keep_size); changes were lost for this slot",
                            "drop it (SELECT pg_drop_replication_slot(" + Ident.literal(config.slot())
                                    + ");) and start again with a fresh destination so the tables are copied anew");
                } else {
                    long retained = rs.getLong(8);
                    ok(name, "'" + config.slot() + "' exists, confirmed up to " + rs.getString(6) + ", retaining "
                            + (retained / (1024 * 1024)) + " MiB of WAL");
                }
                return true;
            }
        }
    }

    private void checkCapacity(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT current_setting('max_replication_slots')::int,"
                + " (SELECT count(*) FROM pg_replication_slots), current_setting('max_wal_senders')::int,"
                + " (SELECT count(*) FROM pg_stat_replication)");
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            int maxSlots = rs.getInt(1);
            int slots = rs.getInt(2);
            int maxSenders = rs.getInt(3);
            int senders = rs.getInt(4);
            if (slots >= maxSlots) {
                fail("max_replication_slots", Kind.SOURCE_SETUP, "all " + maxSlots + " replication slots are taken (max_replication_slots = "
                        + maxSlots + ")", "raise it: ALTER SYSTEM SET max_replication_slots = " + (maxSlots + 4)
                        + "; then restart PostgreSQL (or drop an unused slot)");
            } else {
                ok("max_replication_slots", slots + " of " + maxSlots + " used");
            }
            if (senders >= maxSenders) {
                fail("max_wal_senders", Kind.SOURCE_SETUP, "all " + maxSenders + " WAL senders are busy (max_wal_senders = " + maxSenders + ")",
                        "raise it: ALTER SYSTEM SET max_wal_senders = " + (maxSenders + 4) + "; then restart PostgreSQL");
            } else {
                ok("max_wal_senders", senders + " of " + maxSenders + " used");
            }
        }
    }

    private boolean publicationExists(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, config.publication());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    private void checkTables(Connection c, List<TableRef> tables, boolean pubExists) throws SQLException {
        List<TableRef> unnamed = null;
        for (TableRef t : tables) {
            Catalog.TableInfo info = Catalog.table(c, t);
            String name = "table " + t;
            if (info == null) {
                if (unnamed == null) {
                    unnamed = pubExists ? unnamed(c, tables) : List.of();
                }
                fail(name, Kind.CONFIG, "table " + t.sql() + " does not exist in database '" + config.database() + "'"
                        + (unnamed.isEmpty() ? "" : "; publication '" + config.publication() + "' still publishes "
                        + unnamed.stream().map(TableRef::toString).collect(Collectors.joining(", ")) + ", which source.tables does not name"),
                        unnamed.size() == 1 ? "if " + t + " was renamed to " + unnamed.get(0) + " (a rename keeps the table captured, and the"
                                + " destinations follow it), write " + unnamed.get(0) + " in source.tables instead; if it was dropped, remove it"
                                + " from source.tables"
                                : "check the name under source.tables (names are case-sensitive: write schema.table as the catalog spells them);"
                                + " a table renamed or dropped in the source: write its new name, or remove it");
                continue;
            }
            if (!info.canSelect()) {
                fail(name, Kind.PERMISSION, "role '" + config.user() + "' cannot SELECT from " + t.sql(),
                        "GRANT SELECT ON " + t.sql() + " TO " + Ident.quote(config.user()) + ";");
                continue;
            }
            if (info.replicaIdentity() == 'n') {
                warn(name, "REPLICA IDENTITY NOTHING: updates and deletes of this table cannot be captured (the server rejects them)",
                        "ALTER TABLE " + t.sql() + " REPLICA IDENTITY FULL;");
            } else if (info.replicaIdentity() == 'd' && !info.hasPrimaryKey()) {
                warn(name, "no primary key and REPLICA IDENTITY DEFAULT: the server rejects updates and deletes of this table once it is published",
                        "add a primary key, or ALTER TABLE " + t.sql() + " REPLICA IDENTITY FULL;");
            } else {
                ok(name, "replica identity " + switch (info.replicaIdentity()) {
                    case 'f' -> "FULL";
                    case 'i' -> "USING INDEX";
                    default -> "DEFAULT (primary key)";
                } + (info.partitioned() ? ", partitioned" : ""));
            }
        }
    }

    /** Tables the publication publishes that {@code tables} (the configured ones) do not include. */
    private List<TableRef> unnamed(Connection c, List<TableRef> tables) throws SQLException {
        return Catalog.publicationTables(c, config.publication()).stream().filter(p -> !tables.contains(p)).toList();
    }

    /**
     * What the current role lacks to run CREATE PUBLICATION for {@code tables} (the CREATE privilege on
     * the database, ownership of each table; a superuser lacks nothing), or null.
     */
    private static String publicationPrivilegesMissing(Connection c, List<TableRef> tables) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT rolsuper, has_database_privilege(current_database(), 'CREATE'),"
                + " current_database() FROM pg_roles WHERE rolname = current_user");
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            if (rs.getBoolean(1)) {
                return null;
            }
            List<String> missing = new ArrayList<>();
            if (!rs.getBoolean(2)) {
                missing.add("the CREATE privilege on database " + Ident.quote(rs.getString(3)));
            }
            List<String> notOwned = new ArrayList<>();
            try (PreparedStatement own = c.prepareStatement("SELECT pg_has_role(c.relowner, 'USAGE') FROM pg_class c"
                    + " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relname = ?")) {
                for (TableRef t : tables) {
                    own.setString(1, t.schema());
                    own.setString(2, t.table());
                    try (ResultSet o = own.executeQuery()) {
                        if (o.next() && !o.getBoolean(1)) {
                            notOwned.add(t.sql());
                        }
                    }
                }
            }
            if (!notOwned.isEmpty()) {
                missing.add("ownership of " + String.join(", ", notOwned));
            }
            return missing.isEmpty() ? null : String.join(" and ", missing);
        }
    }

    /** Returns the configured tables the existing publication lacks, when Millrace may add them (they are then copied online). */
    private List<TableRef> checkPublication(Connection c, boolean exists, boolean slotExists, List<TableRef> tables) throws SQLException {
        String pub = config.publication();
        if (!exists) {
            if (config.createPublication() && !tables.isEmpty()) {
                String missing = publicationPrivilegesMissing(c, tables);
                if (missing != null) {
                    fail("publication", Kind.PERMISSION, "publication '" + pub + "' does not exist, and role '" + config.user()
                                    + "' cannot create it: that needs " + missing,
                            "as a superuser or the tables' owner, run CREATE PUBLICATION " + Ident.quote(pub) + " FOR TABLE "
                                    + tables.stream().map(TableRef::sql).collect(Collectors.joining(", ")) + ";");
                } else {
                    ok("publication", "'" + pub + "' will be created for " + tables.size() + " table(s)");
                }
            } else if (!tables.isEmpty()) {
                fail("publication", Kind.SOURCE_SETUP, "publication '" + pub + "' does not exist",
                        "CREATE PUBLICATION " + Ident.quote(pub) + " FOR TABLE "
                                + tables.stream().map(TableRef::sql).collect(Collectors.joining(", "))
                                + "; or set source.create_publication: true");
            }
            return List.of();
        }
        List<TableRef> published = Catalog.publicationTables(c, pub);
        List<TableRef> missing = tables.stream().filter(t -> !published.contains(t)).toList();
        if (!missing.isEmpty() && config.createPublication() && slotExists && publicationPrivilegesMissing(c, missing) == null) {
            // Tables added to the configuration of a pipeline that already streams: added to the publication, then
            // copied online while the stream runs (the engine decides; a fresh start copies them in the initial snapshot).
            warn("publication", "'" + pub + "' does not publish " + missing.stream().map(TableRef::toString).collect(Collectors.joining(", "))
                    + " yet: Millrace adds them and copies them while streaming", null);
            return missing;
        }
        if (!missing.isEmpty()) {
            fail("publication", Kind.SOURCE_SETUP, "publication '" + pub + "' does not publish " + missing.stream().map(TableRef::toString)
                            .collect(Collectors.joining(", ")),
                    "ALTER PUBLICATION " + Ident.quote(pub) + " ADD TABLE " + missing.stream().map(TableRef::sql).collect(Collectors.joining(", ")) + ";"
                            + (slotExists ? " (as the tables' owner or a superuser: Millrace adds tables itself only where it may), then,"
                            + " once Millrace streams, copy each: millrace snapshot CONFIG --table " + missing.get(0)
                            + " (a table added to the publication by hand is streamed from then on, not copied)" : ""));
        } else {
            ok("publication", "'" + pub + "' publishes " + published.size() + " table(s)");
        }
        return List.of();
    }
}
