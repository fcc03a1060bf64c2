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
        return run(new PgConnections(config), c);
    }

    /** Runs every check on {@code c}, a regular connection to the primary of {@code conns} (whose standby it checks too). */
    public static Report run(PgConnections conns, Connection c) {
        SourceConfig config = conns.config();
        try {
            return new Preflight(config).check(conns, c);
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

    private Report check(PgConnections conns, Connection c) throws SQLException {
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

        boolean slotExists;
        if (config.fromStandby()) { // the slot is on the standby: its checks and the slot's there
            try (Connection standby = conns.openCapture()) {
                checks.addAll(StandbyChecks.run(conns.capture(), standby));
                slotExists = checkSlot(standby);
            }
        } else {
            slotExists = checkSlot(c);
        }
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
        checkTables(c, tables, version, pubExists, pubExists ? Catalog.publicationTables(c, config.publication()) : List.of(), slotExists);
        if (!noIdentityLeftOut.isEmpty()) {
            tables = tables.stream().filter(t -> !noIdentityLeftOut.contains(t)).toList(); // not captured: shown with the fix while running
        }
        List<TableRef> unpublished = checkPublication(c, pubExists, slotExists, tables);
        if (!keylessLeftOut.isEmpty()) {
            List<TableRef> left = keylessLeftOut;
            tables = tables.stream().filter(t -> !left.contains(t)).toList(); // not captured: the engine's look at the catalog shows them
        }
        checkDdlTrigger(c, version);
        checks.addAll(FailoverChecks.run(config, c, version)); // source.failover: version, synchronized_standby_slots, standbys
        return new Report(List.copyOf(checks), version, tables, slotExists, pubExists, unpublished);
    }

    /** The name of the check of the optional DDL event trigger. */
    public static final String DDL_TRIGGER = "ddl trigger";

    /** The optional DDL event trigger ({@link DdlTrigger}): a warning with the fix when it is not installed. */
    private void checkDdlTrigger(Connection c, int version) throws SQLException {
        if (version < 140000) {
            return; // no logical messages in the stream before 14
        }
        if (DdlTrigger.installed(c) && !DdlTrigger.upToDate(c)) {
            warn(DDL_TRIGGER, "installed by an older Millrace, whose trigger does less than this version's: its messages may not tell"
                    + " a table's key (a key changed on a table with REPLICA IDENTITY FULL is then read from the catalog, exact only"
                    + " when the stream is not behind the change), it may not give a new partition of a keyless partitioned table,"
                    + " or a captured table that loses its primary key, REPLICA IDENTITY FULL (the source's UPDATEs of it then fail),"
                    + " and it may not tell rows rewritten in place (ALTER COLUMN ... TYPE ... USING)",
                    "run 'millrace setup CONFIG' again with source.user a superuser, or the SQL of 'millrace setup --print-sql CONFIG'");
        } else if (DdlTrigger.installed(c)) {
            ok(DDL_TRIGGER, "installed: schema changes reach the destinations exactly, in order with the data");
        } else {
            warn(DDL_TRIGGER, "not installed (optional): schema changes are read from Relation messages, which cannot always tell"
                    + " a column renamed from one dropped and another added, do not show a table dropped, and do not show rows"
                    + " rewritten in place (ALTER COLUMN ... TYPE <the same type> USING ...: the destinations keep the old values);"
                    + " and a captured table that loses its primary key is not given REPLICA IDENTITY FULL (the source's UPDATEs"
                    + " of it fail until it has one)",
                    "run 'millrace setup CONFIG' with source.user a superuser (PostgreSQL lets only a superuser create an event"
                            + " trigger), or run the SQL of 'millrace setup --print-sql CONFIG' as one");
        }
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
                + "pg_wal_lsn_diff(" + Catalog.WAL_NOW + ", restart_lsn)::bigint FROM pg_replication_slots WHERE slot_name = ?";
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
                } else if (rs.getBoolean(4) && PipelineLock.held(c, config.slot())) {
                    // another engine of this very pipeline runs: the walsender's PID is its connection, and ending it would stop
                    // a healthy pipeline (the fix said so before, found by a user starting a second 'millrace run')
                    fail(name, Kind.SLOT_IN_USE, "slot '" + config.slot() + "' is read by another Millrace engine running this pipeline"
                            + " (it holds the pipeline's lock; its replication connection is process " + rs.getInt(5) + ")",
                            "this pipeline runs already; stop that engine first (SIGTERM) if this one is to replace it, or give this"
                            + " one its own source.slot");
                } else if (rs.getBoolean(4)) {
                    fail(name, Kind.SLOT_IN_USE, SlotInUse.detail(config.slot(), rs.getInt(5)), SlotInUse.fix(rs.getInt(5)));
                } else if ("lost".equals(rs.getString(7)) && config.onSlotLost() == SourceConfig.OnSlotLost.RESNAPSHOT) {
                    warn(name, "slot '" + config.slot() + "' was invalidated: the server removed WAL it still needed"
                                    + " (max_slot_wal_keep_size); changes were lost for this slot",
                            "source.on_slot_lost is resnapshot: Millrace replaces the slot and copies every table again online,"
                                    + " deleting in the destinations the rows the source no longer has");
                } else if ("lost".equals(rs.getString(7))) {
                    fail(name, Kind.SOURCE_SETUP, "slot '" + config.slot() + "' was invalidated: the server removed WAL it still needed"
                                    + " (max_slot_wal_keep_size); changes were lost for this slot",
                            "drop it (SELECT pg_drop_replication_slot(" + Ident.literal(config.slot())
                                    + ");) and start again with a fresh destination so the tables are copied anew, or set"
                                    + " source.on_slot_lost: resnapshot to have Millrace replace the slot and copy the tables again online");
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

    /** Tables without a replica identity (they are never published: the fixes this preflight prints leave them out). */
    private final List<TableRef> noIdentity = new ArrayList<>();
    /**
     * Tables without a replica identity that a pattern in {@code source.tables} matches (none named), not published, in a
     * pipeline that streams already: left out, as while running (created while streaming, they were shown as not captured),
     * instead of refusing the start — an application's scratch table would otherwise stop the pipeline at its next restart.
     */
    private final List<TableRef> noIdentityLeftOut = new ArrayList<>();

    private void checkTables(Connection c, List<TableRef> tables, int version, boolean pubExists, List<TableRef> published,
                             boolean slotExists) throws SQLException {
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
            if (info.partitioned() && version < 130000) {
                fail(name, Kind.SOURCE_SETUP, t.sql() + " is a partitioned table, which PostgreSQL publishes only from version 13 on",
                        "list its partitions under source.tables instead (or upgrade to PostgreSQL 13+)");
                continue;
            }
            Check identity = replicaIdentity(c, info, config.publication(), published);
            if (identity != null && slotExists && !published.contains(t) && !config.tables().contains(t)) {
                noIdentity.add(t);
                noIdentityLeftOut.add(t);
                warn(name, identity.detail() + "; a pattern in source.tables matches it, so it is left out (not captured; while"
                        + " running it is listed under not_captured, and it joins once it has one)", identity.fix());
            } else if (identity != null) {
                noIdentity.add(t);
                checks.add(identity);
            } else if (info.partitioned() && !info.hasPrimaryKey() && info.replicaIdentity() == 'f' && !DdlTrigger.installed(c)) {
                warn(name, "replica identity FULL, partitioned, no primary key: a partition created or attached later has no replica"
                        + " identity (it does not take its root's), and every UPDATE and DELETE of its rows fails on the source until"
                        + " it has one (\"cannot update table ... because it does not have a replica identity\")",
                        "install the DDL event trigger ('millrace setup CONFIG' with source.user a superuser), which gives each new"
                        + " partition of " + t.sql() + " REPLICA IDENTITY FULL as it is created; or run ALTER TABLE <partition>"
                        + " REPLICA IDENTITY FULL where partitions are created, in the same transaction; or give " + t.sql()
                        + " a primary key");
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
     * SQL: whether the {@code pg_class} row {@code c} has a replica identity (FULL; DEFAULT with a primary key; USING INDEX
     * of an index that exists): without one, a published table's UPDATEs and DELETEs fail on the source.
     */
    public static final String HAS_IDENTITY = "(c.relreplident = 'f'"
            + " OR (c.relreplident = 'd' AND EXISTS (SELECT 1 FROM pg_index x WHERE x.indrelid = c.oid AND x.indisprimary))"
            + " OR (c.relreplident = 'i' AND EXISTS (SELECT 1 FROM pg_index x WHERE x.indrelid = c.oid AND x.indisreplident)))";

    /**
     * Refuses a table that PostgreSQL would stop updating once it is published: when a published table (or, for a
     * partitioned table or one with inheritance children, a descendant that holds rows) has no replica identity — no
     * primary key under REPLICA IDENTITY DEFAULT, NOTHING, or USING INDEX of a dropped index — every UPDATE and DELETE
     * of it fails on the source ("cannot update table ... because it does not have a replica identity and publishes
     * updates"). Millrace never puts the source's writes at risk, so such a table is a failure with the fix, found
     * before the publication is created or altered; a partition does not take its root's replica identity, so each
     * one is named. Returns null when the table is safe to publish. Any caller about to publish a table uses it.
     *
     * @param publication the publication (to say when it publishes the table already, and the source fails now)
     * @param published   the tables that publication publishes now (empty when it does not exist)
     */
    public static Check replicaIdentity(Connection c, Catalog.TableInfo table, String publication, List<TableRef> published)
            throws SQLException {
        List<TableRef> lacking = new ArrayList<>();
        String sql = "WITH RECURSIVE tree(oid) AS (SELECT ?::oid UNION SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.oid)"
                + " SELECT n.nspname, c.relname FROM tree JOIN pg_class c ON c.oid = tree.oid JOIN pg_namespace n ON n.oid = c.relnamespace"
                + " WHERE (c.oid = ?::oid OR c.relkind = 'r') AND NOT " + HAS_IDENTITY + " ORDER BY c.oid <> ?::oid, 1, 2";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setInt(1, table.oid());
            ps.setInt(2, table.oid());
            ps.setInt(3, table.oid());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    lacking.add(new TableRef(rs.getString(1), rs.getString(2)));
                }
            }
        }
        if (lacking.isEmpty()) {
            return null;
        }
        TableRef t = table.ref();
        boolean tree = !lacking.equals(List.of(t)) || table.partitioned();
        String what = tree
                ? t.sql() + (table.partitioned() ? " is partitioned, and " : " has inheritance children, and ")
                + lacking.stream().map(TableRef::sql).collect(Collectors.joining(", ")) + " lack" + (lacking.size() == 1 ? "s" : "")
                + " a replica identity (no primary key and REPLICA IDENTITY DEFAULT or NOTHING; a partition does not take its root's)"
                : "table " + t.sql() + (table.replicaIdentity() == 'n' ? " has REPLICA IDENTITY NOTHING"
                : table.replicaIdentity() == 'i' ? " has REPLICA IDENTITY USING INDEX of an index that no longer exists"
                : " has no primary key and REPLICA IDENTITY DEFAULT");
        boolean already = published.contains(t) || lacking.stream().anyMatch(published::contains);
        String detail = what + (already
                ? ": publication '" + publication + "' already publishes it, so every UPDATE and DELETE of it fails on the source now"
                : ": once published, every UPDATE and DELETE of it would fail on the source, so Millrace does not publish it")
                + " (\"cannot update table ... because it does not have a replica identity and publishes updates\")";
        String fix;
        if (tree) {
            fix = lacking.stream().map(x -> "ALTER TABLE " + x.sql() + " REPLICA IDENTITY FULL;").collect(Collectors.joining(" "))
                    + (table.partitioned() ? " (a partition added later needs the same; a primary key on " + t.sql()
                    + " gives every partition one)" : " (or give each a primary key)");
        } else {
            String index = identityIndex(c, table.oid());
            fix = index != null
                    ? "ALTER TABLE " + t.sql() + " REPLICA IDENTITY USING INDEX " + Ident.quote(index) + "; (or REPLICA IDENTITY FULL,"
                    + " or add a primary key)"
                    : "ALTER TABLE " + t.sql() + " REPLICA IDENTITY FULL; (or add a primary key, or REPLICA IDENTITY USING INDEX of a"
                    + " unique index on NOT NULL columns)";
            if (already) {
                fix += "; or take it out: ALTER PUBLICATION " + Ident.quote(publication) + " DROP TABLE " + t.sql() + ";";
            }
        }
        return new Check("table " + t, Status.FAIL, detail, fix, Kind.SOURCE_SETUP);
    }

    /** A unique index of the table that can be its replica identity (not partial, no expression, NOT NULL columns), or null. */
    private static String identityIndex(Connection c, int relOid) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT ic.relname FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid"
                + " WHERE i.indrelid = ? AND i.indisunique AND i.indimmediate AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL"
                + " AND NOT EXISTS (SELECT 1 FROM unnest(i.indkey) k(attnum) JOIN pg_attribute a ON a.attrelid = i.indrelid"
                + " AND a.attnum = k.attnum WHERE NOT a.attnotnull) ORDER BY i.indnatts, ic.relname LIMIT 1")) {
            ps.setInt(1, relOid);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    /**
     * What the current role lacks to run CREATE PUBLICATION for {@code tables} (the CREATE privilege on
     * the database, ownership of each table; a superuser lacks nothing), or null.
     */
    public static String publicationPrivilegesMissing(Connection c, List<TableRef> tables) throws SQLException {
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

    /** The partitioned tables among {@code tables} whose partitions, not the root, {@code published} lists. */
    private static List<TableRef> publishedThroughPartitions(Connection c, List<TableRef> tables, List<TableRef> published) throws SQLException {
        List<TableRef> out = new ArrayList<>();
        if (Catalog.serverVersion(c) < 130000) {
            return out; // no publish_via_partition_root: a partitioned table fails its own check
        }
        for (TableRef t : tables) {
            Catalog.TableInfo info = Catalog.table(c, t);
            if (info == null || !info.partitioned() || published.contains(t)) {
                continue;
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT n.nspname, c.relname FROM pg_partition_tree(?::oid) p"
                    + " JOIN pg_class c ON c.oid = p.relid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE p.level > 0")) {
                ps.setInt(1, info.oid());
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        if (published.contains(new TableRef(rs.getString(1), rs.getString(2)))) {
                            out.add(t);
                            break;
                        }
                    }
                }
            }
        }
        return out;
    }

    /**
     * {@code tables} without those that have no replica identity: a publication made by the fix printed here must not
     * publish them, or every UPDATE and DELETE of theirs fails on the source at once (found by a DBA trying preflight's fix).
     */
    private List<TableRef> publishable(List<TableRef> tables) {
        return tables.stream().filter(t -> !noIdentity.contains(t)).toList();
    }

    /** Tables the publication lacks, to be added to a pipeline that streams, that have no key: not captured ({@link #checkPublication}). */
    private List<TableRef> keylessLeftOut = List.of();

    /** Returns the configured tables the existing publication lacks, when Millrace may add them (they are then copied online). */
    private List<TableRef> checkPublication(Connection c, boolean exists, boolean slotExists, List<TableRef> tables) throws SQLException {
        String pub = config.publication();
        if (!exists) {
            if (config.createPublication() && !tables.isEmpty()) {
                String missing = publicationPrivilegesMissing(c, tables);
                if (missing != null) {
                    fail("publication", Kind.PERMISSION, "publication '" + pub + "' does not exist, and role '" + config.user()
                                    + "' cannot create it: that needs " + missing,
                            "as a superuser or the tables' owner, run " + Publisher.createSql(pub, publishable(tables), Catalog.serverVersion(c))
                                    + ";");
                } else {
                    boolean failed = checks.stream().anyMatch(ch -> ch.status() == Status.FAIL);
                    ok("publication", "'" + pub + "' " + (failed ? "would be created, once the failures above are fixed," : "will be created")
                            + " for " + tables.size() + " table(s)");
                }
            } else if (!tables.isEmpty()) {
                fail("publication", Kind.SOURCE_SETUP, "publication '" + pub + "' does not exist",
                        Publisher.createSql(pub, publishable(tables), Catalog.serverVersion(c)) + "; or set source.create_publication: true");
            }
            return List.of();
        }
        List<TableRef> published = Catalog.publicationTables(c, pub);
        List<TableRef> viaPartitions = publishedThroughPartitions(c, tables, published);
        if (!viaPartitions.isEmpty()) {
            // Without publish_via_partition_root the partitions' changes arrive as theirs, not the root's: ADD TABLE of the
            // root cannot help (it is a member already), the publication's option must change.
            List<TableRef> absent = tables.stream().filter(t -> !published.contains(t) && !viaPartitions.contains(t)).toList();
            fail("publication", Kind.SOURCE_SETUP, "publication '" + pub + "' publishes the partitions of " + viaPartitions.stream()
                            .map(TableRef::toString).collect(Collectors.joining(", ")) + " as tables of their own (publish_via_partition_root"
                            + " is off), and Millrace captures a partitioned table through its root",
                    "ALTER PUBLICATION " + Ident.quote(pub) + " SET (publish_via_partition_root = true);" + (absent.isEmpty() ? ""
                            : " ALTER PUBLICATION " + Ident.quote(pub) + " ADD TABLE " + absent.stream().map(TableRef::sql)
                            .collect(Collectors.joining(", ")) + ";"));
            return List.of();
        }
        if (!columnLists(c, pub, tables) || !operations(c, pub)) {
            return List.of();
        }
        List<TableRef> missing = tables.stream().filter(t -> !published.contains(t)).toList();
        boolean manages = Publisher.manages(c, config); // never one Millrace did not create (Publisher.MARK)
        if (!missing.isEmpty() && manages && slotExists && publicationPrivilegesMissing(c, missing) == null) {
            // INV: HANDOVER — a table added to a pipeline that streams is copied online, which needs a key (chunks are cut in
            // key order): one without is left out, not published (its later changes would stream into a table missing its
            // first rows), and the engine shows it as not captured with the fix. A fresh start's snapshot copies such tables.
            List<TableRef> keyless = new ArrayList<>();
            for (TableRef t : missing) {
                Catalog.TableInfo info = Catalog.table(c, t);
                if (info != null && Catalog.keyColumns(c, info.oid()).isEmpty()) {
                    keyless.add(t);
                }
            }
            if (!keyless.isEmpty()) {
                keylessLeftOut = keyless;
                warn("tables", keyless.stream().map(TableRef::toString).collect(Collectors.joining(", ")) + " (not captured yet) "
                        + (keyless.size() == 1 ? "has" : "have") + " no primary key (or replica identity index), so "
                        + (keyless.size() == 1 ? "it" : "they") + " cannot be copied while streaming: left out",
                        "ALTER TABLE " + keyless.get(0).sql() + " ADD PRIMARY KEY (...) (it then joins while streaming); or capture it with a"
                                + " fresh initial snapshot, which copies tables without a key");
                missing = missing.stream().filter(t -> !keyless.contains(t)).toList();
            }
        }
        if (!missing.isEmpty() && manages && publicationPrivilegesMissing(c, missing) == null) {
            // Tables added to the configuration of a pipeline that already streams: added to the publication, then copied
            // online while the stream runs. With no slot yet (a first start, or one after a reset or a migration's abort)
            // they are added before the slot is made, and the initial snapshot copies them: refused before, though the
            // start adds them (a migrate user's run stopped on it after an abort, the target's schema written).
            warn("publication", "'" + pub + "' does not publish " + missing.stream().map(TableRef::toString).collect(Collectors.joining(", "))
                    + " yet: Millrace adds them" + (slotExists ? " and copies them while streaming" : " before it makes the slot, and the"
                    + " initial snapshot copies them"), null);
            return missing;
        }
        if (!missing.isEmpty()) {
            fail("publication", Kind.SOURCE_SETUP, "publication '" + pub + "' does not publish " + missing.stream().map(TableRef::toString)
                            .collect(Collectors.joining(", ")) + (config.createPublication() && !manages ? "; " + Publisher.unmanagedWhy(config)
                            + " (if an earlier Millrace release created it, give it back: " + Publisher.markSql(pub) + ")" : ""),
                    "ALTER PUBLICATION " + Ident.quote(pub) + " ADD TABLE " + missing.stream().map(TableRef::sql).collect(Collectors.joining(", ")) + ";"
                            + (slotExists ? " (as the tables' owner or a superuser: Millrace adds tables itself only where it may), then,"
                            + " once Millrace streams, copy each: millrace snapshot CONFIG --table " + missing.get(0)
                            + " (a table added to the publication by hand is streamed from then on, not copied)" : ""));
        } else {
            ok("publication", "'" + pub + "' publishes " + published.size() + " table(s)" + (config.createPublication() && !manages
                    ? "; Millrace did not create it, so it uses it as it is and never alters it (another consumer may read it);"
                    + " the changes of tables it publishes that source.tables leaves out are dropped" : ""));
        }
        return List.of();
    }

    /**
     * Refuses a captured table that publication {@code pub} publishes with a column list leaving columns out (PostgreSQL
     * 15+, {@code FOR TABLE t (id, name)}, a publication the user made): the stream carries the listed columns only, while
     * the snapshot and online copies read the table, so the columns left out would reach every destination from a copy
     * (the very values the list kept out) and never be updated there; and the transforms, which could leave them out on
     * every path, hold back a table whose excluded column the stream lacks (it may have been renamed). The fix: leave them
     * out with the transforms and publish the whole table. Generated columns, which PostgreSQL does not publish by
     * default, are not counted. Returns false when it refused.
     */
    private boolean columnLists(Connection c, String pub, List<TableRef> tables) throws SQLException {
        if (Catalog.serverVersion(c) < 150000 || tables.isEmpty()) {
            return true;
        }
        List<String> refused = new ArrayList<>();
        List<String> rules = new ArrayList<>();
        List<String> republish = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT n.nspname, r.relname,"
                + " array(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = r.oid AND a.attnum = ANY (pr.prattrs::int2[])"
                + "   ORDER BY a.attnum),"
                + " array(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped"
                + "   AND a.attgenerated = '' AND a.attnum <> ALL (pr.prattrs::int2[]) ORDER BY a.attnum)"
                + " FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid JOIN pg_class r ON r.oid = pr.prrelid"
                + " JOIN pg_namespace n ON n.oid = r.relnamespace WHERE p.pubname = ? AND pr.prattrs IS NOT NULL ORDER BY 1, 2")) {
            ps.setString(1, pub);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    TableRef t = new TableRef(rs.getString(1), rs.getString(2));
                    List<String> listed = List.of((String[]) rs.getArray(3).getArray());
                    List<String> leftOut = List.of((String[]) rs.getArray(4).getArray());
                    if (!tables.contains(t) || leftOut.isEmpty()) {
                        continue;
                    }
                    refused.add(t + " (publishes " + String.join(", ", listed) + "; leaves out " + String.join(", ", leftOut) + ")");
                    rules.add("{match: " + t + ", columns: {exclude: [" + String.join(", ", leftOut) + "]}}");
                    republish.add("ALTER PUBLICATION " + Ident.quote(pub) + " DROP TABLE " + t.sql() + "; ALTER PUBLICATION "
                            + Ident.quote(pub) + " ADD TABLE " + t.sql() + ";");
                }
            }
        }
        if (refused.isEmpty()) {
            return true;
        }
        fail("publication", Kind.SOURCE_SETUP, "publication '" + pub + "' publishes only some columns of " + String.join(", ", refused)
                        + ": the stream carries the listed columns only, while a copy reads the whole table, so the destinations would"
                        + " get the columns left out from the copy and never an update of them",
                "leave those columns out with the transforms instead, which applies to copies and the stream alike — transforms:"
                        + " {tables: [" + String.join(", ", rules) + "]} — and publish the whole table, as the table's owner: BEGIN; "
                        + String.join(" ", republish) + " COMMIT;");
        return false;
    }

    /**
     * The kinds of change ({@code insert}, {@code update}, {@code delete}, {@code truncate}) publication {@code pub} does
     * not publish (its {@code publish} option); empty when it publishes all, or does not exist.
     */
    public static List<String> unpublished(Connection c, String pub) throws SQLException {
        boolean truncates = Catalog.serverVersion(c) >= 110000; // pubtruncate: PostgreSQL 11+
        List<String> left = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT pubinsert, pubupdate, pubdelete, "
                + (truncates ? "pubtruncate" : "true") + " FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, pub);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return left;
                }
                String[] kinds = {"insert", "update", "delete", "truncate"};
                for (int i = 0; i < kinds.length; i++) {
                    if (!rs.getBoolean(i + 1)) {
                        left.add(kinds[i]);
                    }
                }
            }
        }
        return left;
    }

    /** What {@code ALTER PUBLICATION … SET (publish = …)} sets for every kind of change on this server. */
    public static String allKinds(Connection c) throws SQLException {
        return Catalog.serverVersion(c) >= 110000 ? "insert, update, delete, truncate" : "insert, update, delete";
    }

    /**
     * Refuses a publication that does not publish every kind of change ({@code WITH (publish = 'insert')}: an append-only
     * feed a user made for another consumer): the stream would carry no update, delete or truncate of its tables, and
     * the destinations would keep every row as first copied. Returns false when it refused.
     */
    private boolean operations(Connection c, String pub) throws SQLException {
        List<String> left = unpublished(c, pub);
        if (left.isEmpty()) {
            return true;
        }
        fail("publication", Kind.SOURCE_SETUP, "publication '" + pub + "' does not publish " + String.join(", ", left) + " (its"
                        + " publish option): the stream would carry none of them, and the destinations would keep rows the source"
                        + " changed or removed",
                "publish every kind of change, as the publication's owner: ALTER PUBLICATION " + Ident.quote(pub) + " SET (publish = '"
                        + allKinds(c) + "'); or let Millrace make a"
                        + " publication of its own (another source.publication, source.create_publication: true)");
        return false;
    }
}
