package io.millrace.migrate;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.Ident;
import io.millrace.migrate.SourceCatalog.Table;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The way back ({@code migrate cutover --reverse}, then {@code migrate reverse}): a publication and a logical slot on the
 * target, created inside the cutover once the fence marker is durable there and before the target takes the
 * applications' writes, so the slot's first change is the first write made on the new primary; a pipeline then streams
 * from it into the old primary (the fenced source), whose sessions write past the fence.
 *
 * <p><b>Why at the fence.</b> With the source fenced and the target past the marker, the target holds every source
 * transaction and the forward stream brings no more row changes: a slot created then decodes only the new primary's own
 * writes (the sink's checkpoint rows are in Millrace's schema, which the publication does not hold). A slot created later
 * would miss the writes made in between; one created earlier would send the forward stream's own changes back.
 */
final class Reverse {
    private static final Logger LOG = LoggerFactory.getLogger(Reverse.class);

    private Reverse() {
    }

    /** The reverse slot on the target: the source's slot name with {@code _reverse}. */
    static String slot(String sourceSlot) {
        String s = sourceSlot + "_reverse";
        return s.length() <= 63 ? s : s.substring(0, 55) + "_reverse";
    }

    /** The reverse publication on the target. */
    static String publication(String sourceSlot) {
        return slot(sourceSlot);
    }

    /**
     * What the reverse stream needs of the target, checked before anything is fenced: {@code wal_level = logical}, a role
     * that may replicate, and a replica identity for every table (PostgreSQL rejects UPDATE and DELETE of a published table
     * without one: publishing it would break the applications' writes on the new primary). And what it needs of the source
     * it writes into ({@code src}): a role that may set session_replication_role (the reverse apply keeps the old
     * primary's triggers and foreign keys from firing twice) and write every table — found by a migrate user: the reverse
     * stream retried "permission denied to set parameter" ten times, as if the server were down, after a cutover that had
     * checked neither. Throws naming each problem.
     */
    static void check(Connection tgt, Connection src, List<Table> tables) throws SQLException {
        List<String> problems = new ArrayList<>();
        if (!Planner.bool(src, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")) {
            String role = Ident.quote(Planner.one(src, "SELECT current_user"));
            if (src.getMetaData().getDatabaseMajorVersion() < 15
                    || !Planner.bool(src, "SELECT has_parameter_privilege('session_replication_role', 'SET')")) {
                problems.add("the source role may not set session_replication_role, which the reverse stream sets to write into it"
                        + " (fix: GRANT SET ON PARAMETER session_replication_role TO " + role + " on the source, PostgreSQL 15+, or"
                        + " a superuser)");
            }
            for (Table t : tables) {
                String lit = Ident.literal(t.ref().sql());
                if (!Planner.bool(src, "SELECT has_table_privilege(" + lit + ", 'INSERT') AND has_table_privilege(" + lit + ", 'UPDATE')"
                        + " AND has_table_privilege(" + lit + ", 'DELETE')")) {
                    problems.add("the source role may not write table " + t.ref() + " (fix: GRANT INSERT, UPDATE, DELETE ON "
                            + t.ref().sql() + " TO " + role + " on the source)");
                }
            }
        }
        String wal = Planner.one(tgt, "SHOW wal_level");
        if (!wal.equals("logical")) {
            problems.add("the target's wal_level is '" + wal + "' (fix: ALTER SYSTEM SET wal_level = logical on the target, then"
                    + " restart it)");
        }
        if (!Planner.bool(tgt, "SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user")) {
            problems.add("the target role may not replicate (fix: ALTER ROLE " + Ident.quote(Planner.one(tgt, "SELECT current_user"))
                    + " REPLICATION on the target)");
        }
        for (Table t : tables) {
            boolean identity = Planner.bool(tgt, "SELECT c.relreplident IN ('f', 'i') OR (c.relreplident = 'd' AND EXISTS (SELECT 1"
                    + " FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)) FROM pg_class c WHERE c.oid = "
                    + Ident.literal(t.ref().sql()) + "::regclass");
            if (!identity) {
                problems.add("table " + t.ref() + " has no primary key and no replica identity on the target (fix: ALTER TABLE "
                        + t.ref().sql() + " REPLICA IDENTITY FULL on the target)");
            }
        }
        if (!problems.isEmpty()) {
            throw new MillraceException(Kind.SOURCE_SETUP, "migrate cutover --reverse: the target cannot stream changes back to the"
                    + " source: " + String.join("; ", problems) + ". Nothing was fenced");
        }
    }

    /**
     * Removes a reverse stream's checkpoint from the source ({@code src}, fenced: in a transaction of its own that writes),
     * left by an earlier migration under the same slot that was rolled back: this cutover's reverse slot is new, and the
     * engine refused the old checkpoint against it, so the second migration's way back failed at once (found by a migrate
     * user; the error's advice was to empty the destination, the old primary). INV: IDENTITY — only a checkpoint of this
     * migration's reverse slot ({@code slot}) is removed: no other pipeline reads that slot, since a migration's slot names
     * it and two migrations cannot share a slot, and none of this migration has run yet (called before the cutover records
     * CUT_OVER; {@link Migration#reverse} starts after it). A checkpoint of another slot under the same destination name
     * is refused, named, and kept.
     */
    static void forgetEarlierStream(Connection src, String stateSchema, String slot) throws SQLException {
        String table = Ident.qualified(stateSchema, "checkpoints");
        String held = earlierStream(src, stateSchema);
        if (held == null || !held.equals(slot)) {
            return; // another slot's: refused before the fence (checkEarlierStream)
        }
        String where = " FROM " + table + " WHERE destination = " + Ident.literal(Endpoints.REVERSE_DESTINATION);
        boolean auto = src.getAutoCommit();
        src.setAutoCommit(false);
        try (Statement s = src.createStatement()) {
            s.execute("SET TRANSACTION READ WRITE");
            int n = s.executeUpdate("DELETE" + where);
            src.commit();
            if (n > 0) {
                LOG.info("migrate cutover: an earlier migration's reverse checkpoint (slot '{}') on the source is removed", slot);
            }
        } catch (SQLException e) {
            try {
                src.rollback();
            } catch (SQLException r) {
                e.addSuppressed(r);
            }
            throw e;
        } finally {
            src.setAutoCommit(auto);
        }
    }

    /**
     * Refuses, before anything is fenced, a reverse checkpoint on the source of another slot than this migration's
     * ({@code slot}): another way back's, which this one's would replace (INV: IDENTITY).
     */
    static void checkEarlierStream(Connection src, String stateSchema, String slot) throws SQLException {
        String held = earlierStream(src, stateSchema);
        if (held != null && !held.equals(slot)) {
            String table = Ident.qualified(stateSchema, "checkpoints");
            throw new MillraceException(Kind.SOURCE_SETUP, "migrate cutover --reverse: the source's " + table + " holds the"
                    + " checkpoint of another way back (destination '" + Endpoints.REVERSE_DESTINATION + "', slot '" + held
                    + "'), which this one's would replace. Nothing was fenced. Fix: when that migration is over, DELETE FROM "
                    + table + " WHERE destination = '" + Endpoints.REVERSE_DESTINATION + "' on the source; or give this migration"
                    + " another state schema");
        }
    }

    /** The slot of the reverse checkpoint on the source, or null when there is none. */
    private static String earlierStream(Connection src, String stateSchema) throws SQLException {
        String table = Ident.qualified(stateSchema, "checkpoints");
        if (Planner.oneOrNull(src, "SELECT to_regclass(" + Ident.literal(table) + ")") == null) {
            return null;
        }
        return Planner.oneOrNull(src, "SELECT checkpoint->'identity'->>'slot' FROM " + table + " WHERE destination = "
                + Ident.literal(Endpoints.REVERSE_DESTINATION));
    }

    /**
     * Creates the reverse publication (of {@code tables}) and slot on the target where they are missing; returns the slot's
     * position. Idempotent, so a resumed cutover keeps the slot the first attempt made (its position is still before any
     * write of the new primary: the cutover had not finished, so the applications had not switched).
     */
    static String prepare(Connection tgt, String slot, String publication, List<Table> tables) throws SQLException {
        // Through each partitioned table's root, as the reverse stream captures it (and as the forward publication does):
        // without it, a partition's changes would arrive under the partition's name and the stream would refuse them.
        String viaRoot = Planner.oneOrNull(tgt, "SELECT pubviaroot::text FROM pg_publication WHERE pubname = " + Ident.literal(publication));
        try (Statement s = tgt.createStatement()) {
            if (viaRoot == null) {
                s.execute("CREATE PUBLICATION " + Ident.quote(publication) + " FOR TABLE "
                        + tables.stream().map(t -> t.ref().sql()).collect(Collectors.joining(", "))
                        + " WITH (publish_via_partition_root = true)");
                s.execute(io.millrace.source.Publisher.markSql(publication)); // Millrace's: the reverse engine may add tables to it
            } else if (!viaRoot.equals("true")) {
                s.execute("ALTER PUBLICATION " + Ident.quote(publication) + " SET (publish_via_partition_root = true)");
            }
        }
        String at = Planner.oneOrNull(tgt, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = "
                + Ident.literal(slot));
        if (at == null) {
            at = Planner.one(tgt, "SELECT lsn::text FROM pg_create_logical_replication_slot(" + Ident.literal(slot) + ", 'pgoutput')");
            LOG.info("migrate cutover: reverse slot '{}' created on the target at {}", slot, at);
        }
        return at;
    }
}
