package io.millrace.source;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

/** The pipeline's publication: creates it, adds tables to it, drops it. */
public final class Publisher {
    private final SourceConfig config;

    public Publisher(SourceConfig config) {
        this.config = config;
    }

    /**
     * The statement that creates {@code publication} for {@code tables} as Millrace needs it: on PostgreSQL 13+ with
     * {@code publish_via_partition_root}, so a partitioned table's changes arrive as its own (its partitions are not
     * captured apart). Preflight prints it as the fix when it may not run it itself.
     */
    public static String createSql(String publication, List<TableRef> tables, int serverVersion) {
        return createSql(publication, tables, serverVersion, t -> null);
    }

    /** The same, each table with its row filter ({@code filters}: an SQL condition, or null for none; PostgreSQL 15+). */
    public static String createSql(String publication, List<TableRef> tables, int serverVersion,
                                   java.util.function.Function<TableRef, String> filters) {
        // No table yet (source.tables a pattern that matches none so far): a publication of no table, which the tables
        // created later join (TableJoiner). "FOR TABLE" with an empty list is a syntax error.
        return "CREATE PUBLICATION " + Ident.quote(publication) + (tables.isEmpty() ? "" : " FOR TABLE " + tableList(tables, filters))
                + (serverVersion >= 130000 ? " WITH (publish_via_partition_root = true)" : "");
    }

    /** {@code t1, t2 WHERE (f), ...}: the tables of a publication's statement, with their row filters. */
    private static String tableList(List<TableRef> tables, java.util.function.Function<TableRef, String> filters) {
        return tables.stream().map(t -> {
            String f = filters.apply(t);
            return f == null ? t.sql() : t.sql() + " WHERE (" + f + ")";
        }).collect(Collectors.joining(", "));
    }

    private java.util.function.Function<TableRef, String> filters = t -> null;

    /** The row filter of each table this publisher adds (an SQL condition, or null); PostgreSQL 15+. */
    public Publisher rowFilters(java.util.function.Function<TableRef, String> filters) {
        this.filters = filters;
        return this;
    }

    /**
     * The comment Millrace gives a publication it creates, and the mark by which it knows one it may alter. A publication
     * without it is someone else's — Debezium's, a native subscription's, a DBA's — which another consumer may read:
     * Millrace never adds tables to it, takes tables out of it or changes its options (found by a user who pointed Millrace
     * at Debezium's publication beside the running connector: at its next start Millrace took out the tables its own
     * source.tables left out, and the connector stopped receiving their changes).
     */
    public static final String MARK = "managed by Millrace";

    /** {@code COMMENT ON PUBLICATION ...}: the mark ({@link #MARK}), and what it means to the DBA who reads it. */
    public static String markSql(String publication) {
        return "COMMENT ON PUBLICATION " + Ident.quote(publication) + " IS " + Ident.literal(MARK + ": created by Millrace, which"
                + " adds and takes out tables as its source.tables says. Remove this comment to keep Millrace from altering it.");
    }

    /**
     * Whether Millrace may alter the publication of {@code config}: {@code create_publication} is on, and the publication
     * is one Millrace created (it bears {@link #MARK}), or does not exist yet (Millrace creates it, marked).
     */
    public static boolean manages(Connection c, SourceConfig config) throws SQLException {
        return config.createPublication() && marked(c, config.publication());
    }

    /** Whether {@code publication} bears {@link #MARK}, or does not exist. */
    public static boolean marked(Connection c, String publication) throws SQLException {
        try (java.sql.PreparedStatement ps = c.prepareStatement(
                "SELECT coalesce(obj_description(oid, 'pg_publication'), '') FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, publication);
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                return !rs.next() || rs.getString(1).startsWith(MARK);
            }
        }
    }

    /** Why Millrace leaves the publication of {@code config} as it is: for messages that then name the statement to run. */
    public static String unmanagedWhy(SourceConfig config) {
        return "publication '" + config.publication() + "' is not managed by Millrace (" + (config.createPublication()
                ? "it was not created by Millrace: it lacks the comment '" + MARK + "', so another consumer may use it"
                : "source.create_publication: false") + ")";
    }

    /** Creates the publication with {@link #MARK}, in one transaction: a crash cannot leave it unmarked. */
    public void create(Connection c, List<TableRef> tables) {
        String sql = null;
        try {
            sql = createSql(config.publication(), tables, Catalog.serverVersion(c), filters);
            Catalog.inOneTransaction(c, sql, markSql(config.publication()));
        } catch (SQLException e) {
            if ("42501".equals(e.getSQLState())) {
                throw new MillraceException(Kind.PERMISSION, "cannot create publication '" + config.publication() + "': " + e.getMessage()
                        + ". Ask the tables' owner or a superuser to run: " + sql + ";", e);
            }
            throw PgErrors.translate("creating publication '" + config.publication() + "'", e);
        }
    }

    /** Adds tables configured after the pipeline started to its publication (they are then copied online). */
    public void add(Connection c, List<TableRef> tables) {
        String sql = "ALTER PUBLICATION " + Ident.quote(config.publication()) + " ADD TABLE " + tableList(tables, filters);
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            if ("42501".equals(e.getSQLState())) {
                throw new MillraceException(Kind.PERMISSION, "cannot add " + tables + " to publication '" + config.publication() + "': "
                        + e.getMessage() + ". Ask the tables' owner or a superuser to run: " + sql + ";", e);
            }
            throw PgErrors.translate("adding tables to publication '" + config.publication() + "'", e);
        }
    }

    /**
     * Adds tables to the publication by their current names: a table renamed since the catalog was read keeps its oid,
     * and is added under its new name (its copy, recorded with the oid, follows); one dropped meanwhile is left out.
     * Returns the names added.
     */
    public List<TableRef> addByCurrentName(Connection c, List<RelationInfo> rels) throws SQLException {
        for (int attempt = 1; ; attempt++) {
            Map<Integer, TableRef> now = Catalog.tablesByOid(c, rels.stream().map(RelationInfo::oid).toList());
            List<TableRef> names = rels.stream().map(r -> now.get(r.oid())).filter(Objects::nonNull).toList();
            try {
                if (!names.isEmpty()) {
                    add(c, names);
                }
                return names;
            } catch (MillraceException e) {
                if (attempt == 3 || !(e.getCause() instanceof SQLException q) || !"42P01".equals(q.getSQLState())) {
                    throw e;
                }
                // renamed or dropped between the look-up and ALTER PUBLICATION: look again
            }
        }
    }

    /** Drops the publication, if it exists ({@code millrace reset --drop-publication}). */
    public void drop(Connection c) {
        try (Statement s = c.createStatement()) {
            s.execute("DROP PUBLICATION IF EXISTS " + Ident.quote(config.publication()));
        } catch (SQLException e) {
            throw PgErrors.translate("dropping publication '" + config.publication() + "'", e);
        }
    }
}
