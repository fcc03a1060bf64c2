package io.millrace.migrate;

import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TableRef;
import io.millrace.migrate.Plan.Problem;
import io.millrace.migrate.SourceCatalog.Column;
import io.millrace.migrate.SourceCatalog.Table;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * The checks of {@link Migration#plan()}: reads both servers, writes nothing. A decision only (the tables, their
 * problems and notes); {@link Migration} carries it out.
 */
final class Planner {
    /** The plan, the tables it copies, their sequences, and the types of the user's the schema step creates first. */
    record Result(Plan plan, List<Table> tables, List<SourceCatalog.Sequence> sequences, List<SourceCatalog.UserType> types) {
    }

    private Planner() {
    }

    /**
     * The oid of relation {@code ref} in {@code c}'s database, or null: read from the catalog, so that a schema the role may
     * not use does not fail the lookup as {@code to_regclass} does ("permission denied for schema").
     */
    static String relation(Connection c, TableRef ref) throws SQLException {
        return oneOrNull(c, "SELECT c.oid::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = "
                + Ident.literal(ref.schema()) + " AND c.relname = " + Ident.literal(ref.table()));
    }

    /**
     * A schema of the tables that the source role may not use: the copy cannot name its tables, whatever their own grants
     * (found by a user: the plan stopped on "permission denied for schema app", with no fix and no other problem).
     */
    private static void unusableSchemas(Connection src, String srcUser, List<Table> tables, List<Problem> problems) throws SQLException {
        java.util.Set<String> schemas = new java.util.TreeSet<>();
        tables.forEach(t -> schemas.add(t.ref().schema()));
        for (String schema : schemas) {
            if (!bool(src, "SELECT has_schema_privilege(oid, 'USAGE') FROM pg_namespace WHERE nspname = " + Ident.literal(schema))) {
                problems.add(new Problem(Kind.PERMISSION, "source role " + srcUser + " may not use schema " + schema + ", so it cannot"
                        + " read its tables", "GRANT USAGE ON SCHEMA " + Ident.quote(schema) + " TO " + Ident.quote(srcUser)));
            }
        }
    }

    /**
     * A sequence the schema step creates that the target has already, where no table the plan refuses takes it along: one
     * of no table's (a {@code DROP TABLE … CASCADE} leaves it), or one whose table the target lacks (found by a user: after
     * an abort, the tables dropped as the plan said, the plan said ready and the schema step failed on {@code CREATE
     * SEQUENCE}: relation already exists). An identity column's sequence is its table's.
     */
    private static void leftoverSequences(Connection tgt, List<SourceCatalog.Sequence> sequences, List<Problem> problems)
            throws SQLException {
        for (SourceCatalog.Sequence seq : sequences) {
            if (seq.identity() || relation(tgt, seq.ref()) == null) {
                continue;
            }
            if (seq.ownerTable() != null && relation(tgt, seq.ownerTable()) != null) {
                continue; // the table's problem says DROP TABLE, which drops the sequence it owns there
            }
            problems.add(new Problem(Kind.TARGET_SETUP, "the target already has sequence " + seq.ref() + "; migrate creates each"
                    + " sequence from the source's catalog", "DROP SEQUENCE " + seq.ref().sql() + " on the target (or migrate into"
                    + " another database)"));
        }
    }

    /**
     * A migration past its cutover has nothing left to plan or run: the first problem of the plan, naming the step, with
     * the command that goes on from it (found by a user: after a cutover and after a rollback the plan said "ready", and
     * after a rollback 'migrate run' said it followed, then failed on the slot the rollback had dropped).
     */
    private static Problem ended(MigrationState state, Endpoints ends) {
        String recorded = " (recorded on the target in " + Ident.qualified(ends.target.stateSchema(), "migration") + ")";
        return switch (state) {
            case CUT_OVER -> new Problem(Kind.CONFIG, "this migration is cut over already" + recorded + ": the target is the"
                    + " primary, the source stays fenced", "nothing to run: 'millrace migrate status' shows it; after 'cutover"
                    + " --reverse', 'millrace migrate reverse' streams the target's writes back and 'millrace migrate rollback'"
                    + " makes the source the primary again");
            case ROLLING_BACK -> new Problem(Kind.CONFIG, "a rollback of this migration is under way" + recorded + ": both"
                    + " databases may be read-only", "'millrace migrate rollback' finishes it");
            case ROLLED_BACK -> new Problem(Kind.CONFIG, "this migration was rolled back" + recorded + ": the source is the"
                    + " primary again", "to migrate again, start from an empty target: drop the migrated tables, their sequences"
                    + " and the schema " + Ident.quote(ends.target.stateSchema()) + " on the target (or use a new target database)");
            default -> null;
        };
    }

    static Result run(Connection src, Connection tgt, Endpoints ends, MigrationState state) throws SQLException {
        List<Problem> problems = new ArrayList<>();
        List<String> copy = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        List<String> cannot = new ArrayList<>();
        String srcName = "source " + ends.source.host() + ":" + ends.source.port() + "/" + ends.source.database();

        int srcMajor = src.getMetaData().getDatabaseMajorVersion();
        int tgtMajor = tgt.getMetaData().getDatabaseMajorVersion();
        if (tgtMajor < srcMajor) {
            problems.add(new Problem(Kind.TARGET_SETUP, "the target runs PostgreSQL " + tgtMajor + ", older than the source's "
                    + srcMajor + " (a migration never goes to an older major version)",
                    "migrate to a target of PostgreSQL " + srcMajor + " or newer"));
        }
        Problem ended = ended(state, ends);
        if (ended != null) {
            problems.add(ended);
        }
        String walLevel = one(src, "SHOW wal_level");
        if (!walLevel.equals("logical")) {
            problems.add(new Problem(Kind.SOURCE_SETUP, srcName + " has wal_level = " + walLevel + ", not logical",
                    "ALTER SYSTEM SET wal_level = logical; then restart the source server"));
        }
        boolean starting = state == MigrationState.NONE || state == MigrationState.ABORTED; // nothing of this migration exists yet
        // (the session here overrides the setting: the catalog says what the application's sessions get)
        if (starting && (Fence.fenced(src) || bool(src, "SELECT EXISTS (SELECT 1"
                + " FROM pg_db_role_setting s WHERE s.setrole = (SELECT oid FROM pg_roles WHERE rolname = current_user) AND s.setdatabase"
                + " IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))"
                + " AND " + Fence.READ_ONLY_IN + ")"))) {
            // found by a user: the plan said ready, and run created the target's schema before it stopped on CREATE PUBLICATION
            problems.add(new Problem(Kind.SOURCE_SETUP, srcName + " is read-only (default_transaction_read_only = on: an earlier"
                    + " migration's fence, or a DBA's), so the migration could not create its publication, and the application"
                    + " cannot be writing to it", "if this database is still the primary: ALTER DATABASE "
                    + Ident.quote(one(src, "SELECT current_database()")) + " RESET default_transaction_read_only (or ALTER ROLE ..."
                    + " RESET, where it is set for the role); if another server took over, migrate from that one"));
        }
        String srcUser = one(src, "SELECT current_user");
        if (!bool(src, "SELECT rolsuper OR rolreplication FROM pg_roles WHERE rolname = current_user")) {
            problems.add(new Problem(Kind.PERMISSION, "source role " + srcUser + " has neither REPLICATION nor SUPERUSER",
                    "ALTER ROLE " + Ident.quote(srcUser) + " REPLICATION"));
        }
        if (!bool(src, "SELECT pg_has_role(current_user, d.datdba, 'USAGE') FROM pg_database d WHERE d.datname = current_database()")) {
            // The cutover fences the source with ALTER DATABASE … SET default_transaction_read_only, which only the database's
            // owner (or a superuser) may run, and so does lifting the fence: a role that may not would follow and then fail
            // at the cutover, with the migration half way (found by a user).
            String db = one(src, "SELECT current_database()");
            problems.add(new Problem(Kind.PERMISSION, "source role " + srcUser + " does not own database " + db + ", so it could not fence"
                    + " it at the cutover (ALTER DATABASE … SET default_transaction_read_only) nor lift the fence",
                    "run the migration as the database's owner or a superuser, or ALTER DATABASE " + Ident.quote(db) + " OWNER TO "
                            + Ident.quote(srcUser)));
        }
        if (!bool(src, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")) {
            // The fence ends the application's sessions: a role that cannot see other roles' sessions (pg_stat_activity shows
            // them without a backend type) or may not signal them would leave them writing to the source after the cutover,
            // writes the target never gets (found by a migrate user: the cutover said it ended 0 sessions).
            for (String role : List.of("pg_read_all_stats", "pg_signal_backend")) {
                if (!bool(src, "SELECT pg_has_role(current_user, '" + role + "', 'USAGE')")) { // its privileges, not a NOINHERIT grant
                    problems.add(new Problem(Kind.PERMISSION, "source role " + srcUser + " is not a member of " + role + ", so the cutover"
                            + (role.equals("pg_read_all_stats") ? " could not see" : " could not end") + " the sessions of other roles"
                            + " (the application's): they would go on writing to the source after it",
                            "GRANT " + role + " TO " + Ident.quote(srcUser) + " (as a superuser on the source)"));
                }
            }
        }
        String tgtUser = one(tgt, "SELECT current_user");
        boolean tgtSuper = bool(tgt, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user");
        if (!bool(tgt, "SELECT has_database_privilege(current_database(), 'CREATE')")) {
            problems.add(new Problem(Kind.PERMISSION, "target role " + tgtUser + " cannot create schemas in database "
                    + one(tgt, "SELECT current_database()"), "GRANT CREATE ON DATABASE " + Ident.quote(one(tgt, "SELECT current_database()"))
                    + " TO " + Ident.quote(tgtUser) + " (and let it create the tables' schemas)"));
        }
        boolean replicaRole = tgtSuper || (tgtMajor >= 15
                && bool(tgt, "SELECT has_parameter_privilege('session_replication_role', 'SET')"));
        if (!replicaRole) {
            problems.add(new Problem(Kind.PERMISSION, "target role " + tgtUser + " may not set session_replication_role, which"
                    + " keeps the target's triggers and foreign keys from firing a second time while following",
                    tgtMajor >= 15 ? "GRANT SET ON PARAMETER session_replication_role TO " + Ident.quote(tgtUser)
                            : "connect to the target as a superuser (PostgreSQL " + tgtMajor + " has no GRANT SET ON PARAMETER)"));
        }

        List<String> skipped = new ArrayList<>();
        List<Table> found = SourceCatalog.tables(src, ends.source.tables(), ends.source.excludeTables(), skipped);
        cannot.addAll(skipped);
        List<Table> tables = new ArrayList<>();
        for (Table t : found) {
            if (t.unlogged()) {
                cannot.add(t.ref() + ": an unlogged table writes no WAL, so its changes cannot be followed. Fix: ALTER TABLE "
                        + t.ref().sql() + " SET LOGGED (or copy it by hand after the cutover)");
                continue;
            }
            tables.add(t);
        }
        long largeObjects = Long.parseLong(one(src, "SELECT count(*) FROM pg_largeobject_metadata"));
        if (largeObjects > 0) {
            cannot.add(largeObjects + " large object(s) (pg_largeobject): logical replication does not carry them. Fix: keep"
                    + " such data in bytea columns, or copy the large objects after the cutover (lo_export / lo_import)");
        }
        // A schema the target has already (public) needs CREATE on it, which PostgreSQL 15 no longer gives every role: run
        // stopped on "permission denied for schema public" with a plan that had said ready (found by a migrate user).
        for (String schema : tables.stream().map(t -> t.ref().schema()).distinct().toList()) {
            boolean there = bool(tgt, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = " + Ident.literal(schema) + ")");
            if (there && !bool(tgt, "SELECT has_schema_privilege(" + Ident.literal(schema) + ", 'USAGE')")) {
                problems.add(new Problem(Kind.PERMISSION, "target role " + tgtUser + " may not use schema " + schema + " of the target",
                        "GRANT USAGE ON SCHEMA " + Ident.quote(schema) + " TO " + Ident.quote(tgtUser)));
            }
            if (there && !bool(tgt, "SELECT has_schema_privilege(" + Ident.literal(schema) + ", 'CREATE')")) {
                problems.add(new Problem(Kind.PERMISSION, "target role " + tgtUser + " cannot create tables in schema " + schema
                        + " of the target", "GRANT CREATE ON SCHEMA " + Ident.quote(schema) + " TO " + Ident.quote(tgtUser)));
            }
        }
        // Views are not copied (a user found one missing after the cutover, the plan had said "cannot copy: none").
        List<String> views = new ArrayList<>();
        try (java.sql.Statement st = src.createStatement(); java.sql.ResultSet rs = st.executeQuery("SELECT c.relkind, n.nspname, c.relname"
                + " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('v', 'm')"
                + " AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'"
                + " AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e') ORDER BY 2, 3")) {
            while (rs.next()) {
                views.add((rs.getString(1).equals("m") ? "materialized view " : "view ") + new TableRef(rs.getString(2), rs.getString(3)));
            }
        }
        if (!views.isEmpty()) {
            cannot.add(views.size() + " view(s): " + String.join(", ", views) + ": the migration creates tables, sequences,"
                    + " indexes and constraints, not views. Fix: create them on the target from the source's definitions"
                    + " (pg_get_viewdef) before the applications switch; a materialized view then needs REFRESH MATERIALIZED VIEW");
        }
        for (TableRef named : ends.source.tables()) {
            // A name, not a pattern, that matches no table of the source (a typo, a table not created yet): never left out
            // silently, which would leave its rows behind on the old server (the engine's preflight refuses it the same way).
            if (!named.isPattern() && found.stream().noneMatch(t -> t.ref().equals(named))
                    && oneOrNull(src, "SELECT to_regclass(" + Ident.literal(named.sql()) + ")") == null) {
                problems.add(new Problem(Kind.CONFIG, "table " + named + " in source.tables does not exist in the " + srcName,
                        "check its name (schema.table) in source.tables, or remove it from the list"));
            }
        }
        if (tables.isEmpty()) {
            problems.add(new Problem(Kind.CONFIG, "no table to migrate on the " + srcName + " for source.tables "
                    + ends.source.tables(), "name the tables in source.tables (e.g. public.*)"));
        }
        sourceSlotAndPublication(src, srcName, srcUser, srcMajor, tables, problems, ends);
        if (state == MigrationState.NONE || state == MigrationState.ABORTED) {
            leftoverSlot(src, tgt, srcName, problems, ends);
        }
        unusableSchemas(src, srcUser, tables, problems);
        for (Table t : tables) {
            if (!bool(src, "SELECT has_table_privilege(" + t.oid() + ", 'SELECT')")) {
                problems.add(new Problem(Kind.PERMISSION, "source role " + srcUser + " cannot read " + t.ref(),
                        "GRANT SELECT ON " + t.ref().sql() + " TO " + Ident.quote(srcUser)));
            }
            List<SourceCatalog.Partition> lacking = t.partitions().stream().filter(p -> p.partitionKey() == null && !p.hasIdentity())
                    .toList();
            if (!lacking.isEmpty()) {
                problems.add(new Problem(Kind.SOURCE_SETUP, "table " + t.ref() + " is partitioned, and its partition(s) "
                        + lacking.stream().map(p -> p.ref().toString()).collect(java.util.stream.Collectors.joining(", "))
                        + " have no replica identity (a partition does not take its root's): once published, their UPDATEs and"
                        + " DELETEs would fail on the source", lacking.stream().map(p -> "ALTER TABLE " + p.ref().sql()
                        + " REPLICA IDENTITY FULL;").collect(java.util.stream.Collectors.joining(" "))));
            } else if (!t.hasKey() && (t.replicaIdentity() == 'd' || t.replicaIdentity() == 'n')) {
                problems.add(new Problem(Kind.SOURCE_SETUP, "table " + t.ref() + " has no primary key and no replica identity:"
                        + " once published, its UPDATEs and DELETEs would fail on the source", "ALTER TABLE " + t.ref().sql()
                        + " ADD PRIMARY KEY (...), or ALTER TABLE " + t.ref().sql() + " REPLICA IDENTITY FULL"));
            } else if (!t.hasKey()) {
                // (it told users to compare it themselves, while 'cutover --verify' does: found by a user's walk)
                notes.add(t.ref() + " has no primary key: followed by its replica identity; 'migrate verify' does not compare it"
                        + " online (no key to cut chunks by: it says 'not compared'), 'migrate cutover --verify' compares it whole"
                        + " with the source fenced (its row count and the hash of its rows: a full read on both servers, inside the"
                        + " write-unavailable window)");
            }
            copy.add(t.ref() + " (" + t.columns().size() + " columns, " + (t.partitionKey() == null ? ""
                    : "partitioned by " + t.partitionKey() + " into " + t.partitions().size() + " partitions, ") + mb(t.bytes()) + ")");
        }

        if (!tables.isEmpty()) {
            // PostgreSQL reports no free disk space through SQL (and Millrace runs no program on the server): say how much
            // is needed and where to look.
            long bytes = tables.stream().mapToLong(Table::bytes).sum();
            String dir = oneOrNull(tgt, "SELECT CASE WHEN pg_has_role('pg_read_all_settings', 'MEMBER')"
                    + " OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN current_setting('data_directory') END");
            notes.add("space: the tables, their indexes and TOAST take " + mb(bytes) + " on the source; the target needs about"
                    + " as much free, plus WAL while the copy runs (PostgreSQL reports no free disk space through SQL: check"
                    + " with df -h " + (dir == null ? "on the target's data directory" : dir) + " on the target server, and any"
                    + " tablespace the tables use)");
        }

        List<String> needed = tables.isEmpty() ? List.of() : SourceCatalog.extensions(src, tables);
        for (String ext : needed) {
            if (!bool(tgt, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = " + Ident.literal(ext) + ")")) {
                boolean available = bool(tgt, "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = " + Ident.literal(ext) + ")");
                problems.add(new Problem(Kind.TARGET_SETUP, "the tables use types of extension " + ext + ", which the target"
                        + " database does not have", (available ? "" : "install the package of extension " + ext
                        + " on the target server, then ") + "CREATE EXTENSION " + Ident.quote(ext) + " in the target database"));
            }
        }

        // The types of the user's the tables use: the schema step creates those the target lacks, before the tables (the
        // plan used to refuse them, leaving the CREATE to the user). One the target has already must hold every value the
        // source's may: an enum short of a label would stop the copy at the first row with it.
        List<SourceCatalog.UserType> types = new ArrayList<>();
        for (SourceCatalog.UserType type : tables.isEmpty() ? List.<SourceCatalog.UserType>of() : SourceCatalog.userTypes(src, tables)) {
            String regtype = oneOrNull(tgt, "SELECT to_regtype(" + Ident.literal(type.sql()) + ")::oid::text");
            if (regtype == null) {
                types.add(type);
                rangeFunctions(src, tgt, type, problems);
                continue;
            }
            // The target's type is kept as it is: it must be the source's, or rows change on the way (a composite type's
            // attributes are matched by position: found by a user, city and street swapped with verify passing) or stop
            // the follow (a narrower domain), and an enum whose labels sort otherwise orders keys otherwise.
            SourceCatalog.UserType there = SourceCatalog.definition(tgt, Long.parseLong(regtype));
            if (!type.labels().isEmpty() && there.labels().size() > 0) {
                List<String> missing = new ArrayList<>(type.labels());
                missing.removeAll(there.labels());
                List<String> common = new ArrayList<>(there.labels());
                common.retainAll(type.labels());
                List<String> sourceOrder = new ArrayList<>(type.labels());
                sourceOrder.retainAll(there.labels());
                if (!missing.isEmpty()) {
                    problems.add(new Problem(Kind.TARGET_SETUP, "enum " + type.sql() + " on the target lacks label(s) the source's has: "
                            + String.join(", ", missing.stream().map(Ident::literal).toList()), addValues(type.sql(), type.labels(),
                            there.labels()) + " in the target database"));
                } else if (!common.equals(sourceOrder)) {
                    differs(problems, notes, starting, "enum " + type.sql() + " on the target orders its labels otherwise ("
                            + String.join(", ", there.labels()) + ") than the source's (" + String.join(", ", type.labels()) + "): values"
                            + " compare and sort otherwise there, and verify cannot compare keys of it", type);
                }
            } else if (!there.create().equals(type.create())) {
                differs(problems, notes, starting, "type " + type.sql() + " on the target is not the source's: the target has "
                        + there.create() + " where the source has " + type.create(), type);
            }
        }
        if (!types.isEmpty()) {
            notes.add(types.size() + " type(s) created on the target before the tables, as on the source: " + String.join(", ",
                    types.stream().map(t -> t.sql() + " (" + t.kind() + ")").toList()));
        }
        types.addAll(0, collations(src, tgt, tables, starting, problems, notes)); // before the types: a domain may use one
        defaultCollation(src, tgt, tables, notes);

        for (Table t : tables) {
            String oid = starting ? relation(tgt, t.ref()) : null;
            if (oid != null) {
                // counted only where the target role may read it: a schema it may not use failed the plan (found by a user)
                long n = bool(tgt, "SELECT has_schema_privilege(" + Ident.literal(t.ref().schema()) + ", 'USAGE') AND"
                        + " has_table_privilege(" + oid + ", 'SELECT')") ? Long.parseLong(one(tgt, "SELECT count(*) FROM " + t.ref().sql())) : -1;
                problems.add(new Problem(Kind.TARGET_SETUP, "the target already has table " + t.ref()
                        + (n > 0 ? " and it is not empty (" + n + " rows)" : n == 0 ? " (empty)" : "")
                        + "; migrate creates each table from the source's catalog",
                        "DROP TABLE " + t.ref().sql() + " on the target (or migrate into another database)"));
            }
        }

        List<SourceCatalog.Sequence> sequences = tables.isEmpty() ? List.of() : SourceCatalog.sequences(src, tables);
        if (!sequences.isEmpty()) {
            notes.add(sequences.size() + " sequence(s) created on the target and, at cutover, set past the source's value: "
                    + String.join(", ", sequences.stream().map(s -> s.ref().toString()).toList()));
            if (starting) {
                leftoverSequences(tgt, sequences, problems);
            }
            List<String> grants = Sequences.unreadable(src, tgt, sequences);
            if (!grants.isEmpty()) {
                problems.add(new Problem(Kind.PERMISSION, "the cutover could not read or set " + grants.size() + " sequence(s) it"
                        + " moves past the source's value", String.join("; ", grants)));
            }
        }
        for (Table t : tables) {
            for (Column c : t.columns()) {
                if (!c.identity().isEmpty()) {
                    notes.add(t.ref() + "." + c.name() + ": identity column"
                            + (c.identity().equals("a") ? ", GENERATED BY DEFAULT on the target while following (the stream"
                            + " writes its values), GENERATED ALWAYS again at cutover" : ""));
                }
                if (!c.generated().isEmpty()) {
                    notes.add(t.ref() + "." + c.name() + ": generated column, computed by the target (not copied)");
                }
            }
            int later = t.indexes().size() + t.of('u').size() + t.of('f').size() + t.of('x').size();
            if (later > 0) {
                notes.add(t.ref() + ": " + later + " secondary index(es) and unique, exclusion or foreign-key constraint(s)"
                        + " created after the copy");
            }
        }
        if (!bool(src, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")) {
            notes.add("cutover fences writes with ALTER DATABASE ... SET default_transaction_read_only and pg_terminate_backend:"
                    + " source role " + srcUser + " must own the database and be a member of pg_signal_backend");
        }
        return new Result(new Plan(copy, notes, cannot, problems), List.copyOf(tables), sequences, List.copyOf(types));
    }

    /**
     * The collations the tables use (SourceCatalog#collations): the user's that the target lacks, to create before the types
     * and tables (after a plan that said ready, the schema step stopped on 'schema "words" does not exist (in: CREATE
     * DOMAIN public.tag AS text COLLATE words.nocase;)', found by trying it); one the target has that is not the
     * source's, or a built-in one the target lacks, is a problem: text would compare, sort and be unique otherwise there,
     * or the schema step would stop.
     */
    private static List<SourceCatalog.UserType> collations(Connection src, Connection tgt, List<Table> tables, boolean starting,
                                                           List<Problem> problems, List<String> notes) throws SQLException {
        List<SourceCatalog.UserType> create = new ArrayList<>();
        if (tables.isEmpty()) {
            return create;
        }
        SourceCatalog.Collations used = SourceCatalog.collations(src, tables);
        for (SourceCatalog.UserType coll : used.own()) {
            String oid = collationOid(tgt, coll.sql());
            if (oid == null) {
                create.add(coll);
                continue;
            }
            SourceCatalog.UserType there = SourceCatalog.collation(tgt, Long.parseLong(oid));
            if (!there.create().equals(coll.create())) {
                String what = "collation " + coll.sql() + " on the target is not the source's: the target has " + there.create()
                        + " where the source has " + coll.create();
                if (starting) {
                    problems.add(new Problem(Kind.TARGET_SETUP, what, "DROP COLLATION " + coll.sql() + " on the target, if nothing"
                            + " there uses it (the schema step then creates it as on the source)"));
                } else {
                    notes.add(what + " (changed while following: make it the source's on the target)");
                }
            }
        }
        for (String name : used.builtIn()) {
            if (collationOid(tgt, name) == null) {
                problems.add(new Problem(Kind.TARGET_SETUP, "the tables use collation " + name + ", which the target server does not"
                        + " have", name.endsWith("-x-icu\"") ? "migrate to a PostgreSQL server built with ICU (its ICU collations"
                        + " are made by initdb)" : "install the locale on the target's machine (e.g. locale-gen), then SELECT"
                        + " pg_import_system_collations('pg_catalog') as a superuser in the target database"));
            }
        }
        if (create.stream().anyMatch(c -> c.create().contains("provider = icu"))
                && !bool(tgt, "SELECT EXISTS (SELECT 1 FROM pg_collation WHERE collprovider = 'i')")) {
            problems.add(new Problem(Kind.TARGET_SETUP, "the tables use ICU collation(s) of the user's, and the target server has"
                    + " no ICU collations (built without ICU)", "migrate to a PostgreSQL server built with ICU"));
        }
        if (!create.isEmpty()) {
            notes.add(create.size() + " collation(s) created on the target before the tables, as on the source: "
                    + String.join(", ", create.stream().map(SourceCatalog.UserType::sql).toList()));
        }
        return create;
    }

    /**
     * A note when the target database's default collation is not the source's and the tables have columns that take it
     * (text without a collation of its own): a migration into another locale or provider (a target database created under
     * ICU, or under the new server's default locale) sorts their values otherwise there, in ORDER BY and in their indexes,
     * which an application may notice after the switch; verify compares such keys in byte order, so it is not misled
     * (KeyOrder). A note, not a problem: moving to another collation may be the point.
     */
    private static void defaultCollation(Connection src, Connection tgt, List<Table> tables, List<String> notes) throws SQLException {
        String sql = "SELECT CASE coalesce(j ->> 'datlocprovider', 'c') WHEN 'i' THEN 'icu ' || coalesce(j ->> 'datlocale',"
                + " j ->> 'daticulocale') WHEN 'b' THEN 'builtin ' || (j ->> 'datlocale') ELSE 'libc' END || ', LC_COLLATE '"
                + " || d.datcollate || ', LC_CTYPE ' || d.datctype FROM pg_database d, to_jsonb(d) j WHERE d.datname = current_database()";
        String source = one(src, sql);
        String target = one(tgt, sql);
        Long[] oids = tables.stream().map(Table::oid).toArray(Long[]::new);
        if (source.equals(target) || oids.length == 0) {
            return;
        }
        boolean takesIt;
        try (java.sql.PreparedStatement ps = src.prepareStatement("SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = ANY (?)"
                + " AND attnum > 0 AND NOT attisdropped AND attcollation = 100)")) { // 100: the database's default collation
            ps.setArray(1, src.createArrayOf("oid", oids));
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                takesIt = rs.next() && rs.getBoolean(1);
            }
        }
        if (takesIt) {
            notes.add("the target database's default collation (" + target + ") is not the source's (" + source + "): text"
                    + " columns without a collation of their own sort otherwise there, in ORDER BY and in their indexes (verify"
                    + " compares text keys in byte order, so it is not misled); for the source's order, create the target"
                    + " database as the source's: CREATE DATABASE ... TEMPLATE template0 " + createOptions(source,
                    tgt.getMetaData().getDatabaseMajorVersion() >= 15));
        }
    }

    /**
     * The CREATE DATABASE options that give a database the default collation {@link #defaultCollation} describes as {@code d}
     * ("provider, LC_COLLATE x, LC_CTYPE y"); {@code providers}: the server has LOCALE_PROVIDER (PostgreSQL 15+).
     */
    static String createOptions(String d, boolean providers) {
        int a = d.indexOf(", LC_COLLATE ");
        int b = d.lastIndexOf(", LC_CTYPE ");
        String provider = d.substring(0, a);
        String lc = "LC_COLLATE " + Ident.literal(d.substring(a + ", LC_COLLATE ".length(), b)) + " LC_CTYPE "
                + Ident.literal(d.substring(b + ", LC_CTYPE ".length()));
        if (provider.startsWith("icu ")) {
            return "LOCALE_PROVIDER icu ICU_LOCALE " + Ident.literal(provider.substring(4)) + " " + lc;
        }
        if (provider.startsWith("builtin ")) {
            return "LOCALE_PROVIDER builtin BUILTIN_LOCALE " + Ident.literal(provider.substring(8)) + " " + lc;
        }
        return (providers ? "LOCALE_PROVIDER libc " : "") + lc;
    }

    /** The oid of collation {@code name} (schema.name, quoted where needed) usable in {@code c}'s database, or null. */
    private static String collationOid(Connection c, String name) throws SQLException {
        return oneOrNull(c, "SELECT co.oid::text FROM pg_collation co JOIN pg_namespace n ON n.oid = co.collnamespace"
                + " WHERE format('%I.%I', n.nspname, co.collname) = " + Ident.literal(name) + " AND co.collencoding IN (-1,"
                + " (SELECT encoding FROM pg_database WHERE datname = current_database())) LIMIT 1");
    }

    /**
     * A type the target has that is not the source's: before the migration starts, a problem (the target's type is
     * dropped and the schema step makes it); once the target's tables use it (the source's type changed while following),
     * a note, since dropping it is no longer the fix and the stream names what it cannot apply.
     */
    private static void differs(List<Problem> problems, List<String> notes, boolean starting, String what, SourceCatalog.UserType type) {
        if (starting) {
            problems.add(new Problem(Kind.TARGET_SETUP, what, "DROP TYPE " + type.sql() + " on the target, if no table there uses it"
                    + " (the schema step then creates it as on the source), or ALTER it there to be the source's"));
        } else {
            notes.add(what + " (changed while following: make it the source's on the target)");
        }
    }

    /**
     * The ALTER TYPE statements that give the target's enum the source's labels it lacks, each in its place among the
     * others (BEFORE the next of the source's labels the target has, else AFTER the one before), so that the values sort
     * as on the source.
     */
    static String addValues(String type, List<String> source, List<String> target) {
        List<String> now = new ArrayList<>(target);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < source.size(); i++) {
            String l = source.get(i);
            if (now.contains(l)) {
                continue;
            }
            String where = "";
            for (int j = i + 1; j < source.size() && where.isEmpty(); j++) {
                if (now.contains(source.get(j))) {
                    where = " BEFORE " + Ident.literal(source.get(j));
                    now.add(now.indexOf(source.get(j)), l);
                }
            }
            for (int j = i - 1; j >= 0 && where.isEmpty(); j--) {
                if (now.contains(source.get(j))) {
                    where = " AFTER " + Ident.literal(source.get(j));
                    now.add(now.indexOf(source.get(j)) + 1, l);
                }
            }
            if (where.isEmpty()) {
                now.add(l);
            }
            out.add("ALTER TYPE " + type + " ADD VALUE " + Ident.literal(l) + where);
        }
        return String.join("; ", out);
    }

    /** {@code 12 kB}, {@code 3.4 MB}, {@code 2.1 GB}. */
    static String mb(long bytes) {
        if (bytes < 1L << 20) {
            return (bytes + 1023) / 1024 + " kB";
        }
        return bytes < 1L << 30 ? String.format(java.util.Locale.ROOT, "%.1f MB", bytes / 1048576.0)
                : String.format(java.util.Locale.ROOT, "%.1f GB", bytes / 1073741824.0);
    }

    static String one(Connection c, String sql) throws SQLException {
        String v = oneOrNull(c, sql);
        if (v == null) {
            throw new SQLException("no value from: " + sql);
        }
        return v;
    }

    /**
     * A range type made with a function of the user's — {@code SUBTYPE_DIFF = my_diff}, {@code CANONICAL = my_canon} —
     * cannot be created on a target that lacks the function, and the schema step copies no function: a problem naming
     * it, with its definition to run (found in issue 19's review: the plan said ready and the run stopped in CREATE TYPE).
     * A canonical function takes the range type itself, so that type is made with it, as on the source.
     */
    private static void rangeFunctions(Connection src, Connection tgt, SourceCatalog.UserType type, List<Problem> problems)
            throws SQLException {
        if (!type.kind().equals("a range type")) {
            return;
        }
        try (Statement s = src.createStatement(); ResultSet rs = s.executeQuery("SELECT p.oid::regprocedure::text,"
                + " pg_get_functiondef(p.oid), p.oid = r.rngcanonical FROM pg_range r JOIN pg_proc p ON p.oid IN (r.rngcanonical,"
                + " r.rngsubdiff) JOIN pg_namespace n ON n.oid = p.pronamespace WHERE r.rngtypid = to_regtype("
                + Ident.literal(type.sql()) + ") AND n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 3, 1")) {
            while (rs.next()) {
                if (oneOrNull(tgt, "SELECT to_regprocedure(" + Ident.literal(rs.getString(1)) + ")::text") != null) {
                    continue;
                }
                String def = rs.getString(2).strip();
                problems.add(new Problem(Kind.TARGET_SETUP, "range type " + type.sql() + " uses function " + rs.getString(1) + " ("
                        + (rs.getBoolean(3) ? "CANONICAL" : "SUBTYPE_DIFF") + "), which the target lacks; migrate copies no function",
                        rs.getBoolean(3) ? "create the type and its function on the target as on the source: CREATE TYPE " + type.sql()
                                + "; " + def + "; " + type.create() + " (in the target database)"
                                : "create it in the target database: " + def + (def.endsWith(";") ? "" : ";")));
            }
        }
    }

    static String oneOrNull(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        }
    }

    static boolean bool(Connection c, String sql) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            return rs.next() && rs.getBoolean(1);
        }
    }


    /**
     * A migration not started yet (or started over after an abort, which drops its slot) whose slot exists on the source
     * while the target holds no checkpoint of it: left by an earlier attempt (its {@code run} killed, or a target made
     * anew), or read by another pipeline. {@code run} refused it only after creating the target's schema (found by a
     * migrate user: the plan said ready).
     */
    private static void leftoverSlot(Connection src, Connection tgt, String srcName, List<Problem> problems, Endpoints ends)
            throws SQLException {
        String slot = ends.source.slot();
        String active = oneOrNull(src, "SELECT coalesce(active_pid::text, '') FROM pg_replication_slots WHERE slot_name = " + Ident.literal(slot));
        if (active == null || ends.targetFlushLsn(tgt) != null) {
            return;
        }
        problems.add(new Problem(Kind.SOURCE_SETUP, "replication slot '" + slot + "' exists on the " + srcName + (active.isEmpty()
                ? ", read by nobody," : ", read now by process " + active + ",") + " but the target holds no checkpoint of it: an"
                + " earlier attempt's, or another pipeline's", "if nothing else uses it, drop it on the source: SELECT"
                + " pg_drop_replication_slot(" + Ident.literal(slot) + ") (it keeps WAL on the source until then); or give this"
                + " migration another slot (source.slot)"));
    }

    /**
     * What {@code run} needs on the source before it writes anything, checked here as the engine's preflight checks it
     * at its start (found by a user: the plan said ready, then {@code run} created the target's schema and stopped on
     * these): a free replication slot when the migration's does not exist yet, and the privileges to create its
     * publication when that does not exist yet (the CREATE privilege on the database and ownership of the tables).
     */
    private static void sourceSlotAndPublication(Connection src, String srcName, String srcUser, int srcMajor, List<Table> tables,
                                                 List<Problem> problems, Endpoints ends) throws SQLException {
        String slot = ends.source.slot();
        if (!bool(src, "SELECT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = " + Ident.literal(slot) + ")")
                && bool(src, "SELECT count(*) >= current_setting('max_replication_slots')::int FROM pg_replication_slots")) {
            int max = Integer.parseInt(one(src, "SHOW max_replication_slots"));
            problems.add(new Problem(Kind.SOURCE_SETUP, "all " + max + " replication slots of the " + srcName + " are taken"
                    + " (max_replication_slots = " + max + "), and the migration needs one", "raise it: ALTER SYSTEM SET"
                    + " max_replication_slots = " + (max + 4) + " and restart the source server; or drop a slot no longer used:"
                    + " SELECT pg_drop_replication_slot('<name>') (see pg_replication_slots)"));
        }
        String pub = ends.source.publication();
        if (tables.isEmpty() || bool(src, "SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = " + Ident.literal(pub) + ")")) {
            return;
        }
        List<TableRef> refs = tables.stream().map(Table::ref).toList();
        String missing = io.millrace.source.Preflight.publicationPrivilegesMissing(src, refs);
        if (missing != null) {
            problems.add(new Problem(Kind.PERMISSION, "source role " + srcUser + " cannot create the migration's publication '" + pub
                    + "': that needs " + missing, "as a superuser or the tables' owner, run "
                    + io.millrace.source.Publisher.createSql(pub, refs, srcMajor * 10_000) + ";"));
        }
    }
}
