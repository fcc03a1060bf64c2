package io.millrace.engine.transform;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The row filters of {@link Transforms} as PostgreSQL applies them: the publication's row filter per table
 * (PostgreSQL 15+; with it, an update that makes a row stop meeting the filter reaches the destinations as a delete,
 * one that makes it meet the filter as an insert), and the snapshot's WHERE. Checked at start, writing nothing:
 * <ul>
 *   <li>PostgreSQL 14 has no publication row filters and Millrace does not evaluate them itself: refused;</li>
 *   <li>a filter on a column outside the replica identity would make PostgreSQL refuse UPDATE and DELETE on the table
 *       (its rule for published row filters): refused, never at the cost of the source's writes;</li>
 *   <li>the filter is tried in a publication made and rolled back in one transaction, so PostgreSQL's own limits
 *       (simple expressions, immutable built-in functions) are reported at start, naming the setting;</li>
 *   <li>an existing publication must pass each table's changes with the filter configured (the form PostgreSQL
 *       stores): otherwise the destinations hold rows of another filter, and the start is refused with the fix — unless
 *       the start copies the table again, reconciling, in a publication Millrace manages (its rules changed while
 *       Millrace was stopped): then the start changes the filter, as a reload does.</li>
 * </ul>
 */
public final class RowFilters {
    private static final String PROBE = "millrace_filter_probe";
    public static final int MIN_VERSION = 150000;

    private RowFilters() {
    }

    /**
     * Checks the filters of {@code transforms} for {@code tables} on the source ({@code c}, autocommit); returns them by
     * table (empty when none). {@code publicationExists}: compares with the publication's.
     */
    public static Map<TableRef, String> check(Connection c, Transforms transforms, List<RelationInfo> tables, int serverVersion,
                                              String publication, boolean publicationExists) throws SQLException {
        return check(c, transforms, tables, serverVersion, publication, publicationExists, java.util.Set.of(), new LinkedHashMap<>());
    }

    /**
     * As above; a table of {@code mayRefilter} whose filter in the publication is not the configured one is not refused
     * but put in {@code refilter} with the filter it needs (null: none), for the caller to change the publication — a start
     * that copies the table again, reconciling, since its rules changed while Millrace was stopped.
     */
    public static Map<TableRef, String> check(Connection c, Transforms transforms, List<RelationInfo> tables, int serverVersion,
                                              String publication, boolean publicationExists, java.util.Set<TableRef> mayRefilter,
                                              Map<TableRef, String> refilter) throws SQLException {
        Map<TableRef, String> filters = transforms.filters(tables.stream().map(RelationInfo::table).toList());
        if (serverVersion < MIN_VERSION) {
            if (!filters.isEmpty()) {
                TableRef t = filters.keySet().iterator().next();
                throw Transforms.error(transforms.forTable(t).setting() + ".filter", "needs PostgreSQL 15 or later (publication row"
                        + " filters), and this source is " + serverVersion / 10000 + ": remove the filter, or upgrade the source");
            }
            return filters;
        }
        Map<TableRef, String> stored = new LinkedHashMap<>();
        for (RelationInfo r : tables) {
            String f = filters.get(r.table());
            if (f != null) {
                identity(transforms.forTable(r.table()).setting() + ".filter", r, f);
                stored.put(r.table(), probe(c, transforms.forTable(r.table()).setting() + ".filter", r.table(), f));
            }
        }
        if (publicationExists) {
            compare(c, transforms, tables, publication, filters, stored, mayRefilter, refilter);
        }
        return filters;
    }

    /** Refuses a filter naming a column outside the replica identity (PostgreSQL would then refuse UPDATE and DELETE). */
    static void identity(String setting, RelationInfo r, String filter) {
        if (r.replicaIdentity() == 'f') {
            return;
        }
        List<String> names = r.columns().stream().map(ColumnInfo::name).toList();
        for (String used : columnsNamed(filter, names)) {
            if (r.columns().stream().noneMatch(col -> col.name().equals(used) && col.key())) {
                throw Transforms.error(setting, "uses column '" + used + "' of table " + r.table() + ", which is not in its replica identity:"
                        + " PostgreSQL would then refuse every UPDATE and DELETE on the table. Fix: ALTER TABLE " + r.table().sql()
                        + " REPLICA IDENTITY FULL (as its owner), or filter on the key columns only");
            }
        }
    }

    /**
     * The table's columns {@code filter} names, read conservatively: every word outside string literals that is a
     * column name (unquoted words folded to lower case, as PostgreSQL does), and every double-quoted identifier.
     */
    static Set<String> columnsNamed(String filter, List<String> columns) {
        Set<String> out = new LinkedHashSet<>();
        int i = 0;
        int n = filter.length();
        while (i < n) {
            char ch = filter.charAt(i);
            if (ch == '\'') {
                i++;
                while (i < n && !(filter.charAt(i) == '\'' && (i + 1 >= n || filter.charAt(i + 1) != '\''))) {
                    i += filter.charAt(i) == '\'' ? 2 : 1;
                }
                i++;
            } else if (ch == '"') {
                int end = filter.indexOf('"', i + 1);
                String id = filter.substring(i + 1, end < 0 ? n : end);
                if (columns.contains(id)) {
                    out.add(id);
                }
                i = end < 0 ? n : end + 1;
            } else if (Character.isLetter(ch) || ch == '_') {
                int start = i;
                while (i < n && (Character.isLetterOrDigit(filter.charAt(i)) || filter.charAt(i) == '_' || filter.charAt(i) == '$')) {
                    i++;
                }
                String w = filter.substring(start, i).toLowerCase(java.util.Locale.ROOT);
                if (columns.contains(w)) {
                    out.add(w);
                }
            } else {
                i++;
            }
        }
        return out;
    }

    /** The filter as PostgreSQL stores it, from a publication made and rolled back; its errors name {@code setting}. */
    private static String probe(Connection c, String setting, TableRef t, String filter) throws SQLException {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            s.execute("CREATE PUBLICATION " + Ident.quote(PROBE) + " FOR TABLE " + t.sql() + " WHERE (" + filter + ")"
                    + " WITH (publish_via_partition_root = true)"); // as Millrace's own publication: a partitioned table's filter is its own
            try (ResultSet rs = s.executeQuery("SELECT rowfilter FROM pg_publication_tables WHERE pubname = " + Ident.literal(PROBE))) {
                return rs.next() ? rs.getString(1) : null;
            }
        } catch (SQLException e) {
            if ("42501".equals(e.getSQLState())) {
                return null; // no right to create a publication: compared by its presence only (below)
            }
            throw new MillraceException(Kind.CONFIG, "config: " + setting + " is not a row filter PostgreSQL accepts for " + t + ": "
                    + e.getMessage() + ". Fix: a condition on the table's own columns with built-in immutable functions and operators"
                    + " only, e.g. \"region = 'eu'\"", e);
        } finally {
            c.rollback(); // INV: nothing of the probe stays
            c.setAutoCommit(true);
        }
    }

    private static void compare(Connection c, Transforms transforms, List<RelationInfo> tables, String publication,
                                Map<TableRef, String> filters, Map<TableRef, String> stored, java.util.Set<TableRef> mayRefilter,
                                Map<TableRef, String> refilter) throws SQLException {
        Map<TableRef, String> now = new LinkedHashMap<>();
        Set<TableRef> published = new LinkedHashSet<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT schemaname, tablename, rowfilter FROM pg_publication_tables WHERE pubname = ?")) {
            ps.setString(1, publication);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    TableRef t = new TableRef(rs.getString(1), rs.getString(2));
                    published.add(t);
                    now.put(t, rs.getString(3));
                }
            }
        }
        for (RelationInfo r : tables) {
            TableRef t = r.table();
            if (!published.contains(t)) {
                continue; // added with its filter at this start
            }
            String want = filters.get(t);
            String has = now.get(t);
            boolean same = want == null ? has == null : has != null && (stored.get(t) == null || Objects.equals(stored.get(t), has));
            if (!same && mayRefilter.contains(t)) {
                refilter.put(t, want);
            } else if (!same) {
                TableRule rule = transforms.forTable(t);
                String setting = rule == null ? "transforms" : rule.setting() + ".filter";
                throw Transforms.error(setting, (want == null ? "sets no row filter for " + t : "sets row filter (" + want + ") for " + t)
                        + ", but publication '" + publication + "' passes its changes " + (has == null ? "unfiltered" : "with row filter " + has)
                        + ": the destinations hold the rows of the publication's filter. Fix: as the table's owner run BEGIN; ALTER PUBLICATION "
                        + Ident.quote(publication) + " DROP TABLE " + t.sql() + "; ALTER PUBLICATION " + Ident.quote(publication) + " ADD TABLE "
                        + t.sql() + (want == null ? "" : " WHERE (" + want + ")") + "; COMMIT; then copy the table again (millrace snapshot,"
                        + " POST /snapshot) — or set the filter back");
            }
        }
    }

    /**
     * The row filter of a table joining while streaming ({@code r}), checked as {@link #check} checks them at start; null
     * when it has none. INV: the source's writes first — a filter PostgreSQL would apply at the cost of the table's
     * UPDATEs and DELETEs (a column outside the replica identity) is refused before the table is published, and so is a
     * table whose filter the publication cannot carry (PostgreSQL 14, a FOR ALL TABLES publication, a publication Millrace
     * does not manage holding the table with another filter): published without it, the destinations would get the rows
     * the filter leaves out.
     *
     * @throws MillraceException of kind CONFIG naming the setting, the table and the fix
     */
    public static String forJoiningTable(Connection c, Transforms transforms, RelationInfo r, int serverVersion, String publication,
                                         boolean member, boolean allTables) throws SQLException {
        Map<TableRef, String> filters = transforms.filters(List.of(r.table()));
        String f = filters.get(r.table());
        if (f == null) {
            return null;
        }
        String setting = transforms.forTable(r.table()).setting() + ".filter";
        if (serverVersion < MIN_VERSION) {
            throw Transforms.error(setting, "needs PostgreSQL 15 or later (publication row filters) for table " + r.table() + ", and this"
                    + " source is " + serverVersion / 10000 + ": remove the filter, or upgrade the source");
        }
        identity(setting, r, f);
        if (allTables) {
            throw Transforms.error(setting, "cannot apply to table " + r.table() + ": publication '" + publication + "' is FOR ALL TABLES,"
                    + " which PostgreSQL gives no row filters, so it passes every row of the table. Fix: a publication FOR TABLE ... WHERE"
                    + " (let Millrace create it: source.create_publication), or no filter for the table");
        }
        String stored = probe(c, setting, r.table(), f);
        if (member) {
            compare(c, transforms, List.of(r), publication, filters, stored == null ? Map.of() : Map.of(r.table(), stored),
                    java.util.Set.of(), new LinkedHashMap<>());
        }
        return f;
    }
}
