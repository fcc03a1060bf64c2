package io.millrace.sink.duckdb;

import io.millrace.core.MillraceException;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The destination tables: creates each on first sight from its {@link RelationInfo} (primary key =
 * the relation's key columns), adds columns an existing table lacks, and follows shape changes with
 * {@code ALTER TABLE ADD/DROP COLUMN} inside the caller's transaction. What it knows is the current
 * transaction's view: call {@link #forget()} after a rollback. Owned by the sink's writer thread.
 */
final class DuckTables {
    private static final Logger LOG = LoggerFactory.getLogger(DuckTables.class);

    private final Connection conn;
    private final String destination;
    private final String targetSchema;
    /** Target table → the shape it follows now. Cleared by {@link #forget()}. */
    private final Map<TableRef, RelationInfo> shapes = new HashMap<>();
    /** Target table → its column names. Cleared by {@link #forget()}. */
    private final Map<TableRef, Set<String>> columns = new HashMap<>();
    /** Target table → the source table it receives. Configuration-level: survives rollbacks. */
    private final Map<TableRef, TableRef> owners = new HashMap<>();

    DuckTables(Connection conn, String destination, String targetSchema) {
        this.conn = conn;
        this.destination = destination;
        this.targetSchema = targetSchema;
    }

    /** Keyed: the relation has a primary key or replica identity index (not every column under FULL). */
    static boolean keyed(RelationInfo rel) {
        if (!rel.hasKey() || rel.replicaIdentity() == 'n') {
            return false;
        }
        return rel.replicaIdentity() != 'f' || rel.keyIndexes().length < rel.columnCount();
    }

    TableRef targetOf(TableRef source) {
        TableRef target = targetSchema == null ? source : new TableRef(targetSchema, source.table());
        TableRef owner = owners.putIfAbsent(target, source);
        if (owner != null && !owner.equals(source)) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + destination + "': source tables "
                    + owner + " and " + source + " would both be written to table " + target + " (schema = '"
                    + targetSchema + "'). Leave schema unset to keep each table's schema, or replicate only one.");
        }
        if (DuckDbSink.STATE_SCHEMA.equals(target.schema())) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + destination + "': source table "
                    + source + " would be written into schema '" + DuckDbSink.STATE_SCHEMA
                    + "', which holds Millrace's bookkeeping; set the destination's schema to another one");
        }
        return target;
    }

    void forget() {
        shapes.clear();
        columns.clear();
    }

    /** Makes the destination table match {@code rel}. */
    void ensure(TableRef target, RelationInfo rel) throws SQLException {
        RelationInfo known = shapes.get(target);
        if (known == null) {
            load(target, rel);
        } else if (known != rel && !known.sameShape(rel)) {
            follow(target, known, rel);
        }
        shapes.put(target, rel);
    }

    private void load(TableRef target, RelationInfo rel) throws SQLException {
        Set<String> cols = readColumns(target);
        if (cols.isEmpty()) {
            execute("CREATE SCHEMA IF NOT EXISTS " + Ident.quote(target.schema()));
            List<String> defs = new ArrayList<>();
            for (ColumnInfo c : rel.columns()) {
                defs.add(Ident.quote(c.name()) + " " + DuckTypes.sqlType(c));
                cols.add(c.name());
            }
            if (keyed(rel)) {
                List<String> key = new ArrayList<>();
                for (int k : rel.keyIndexes()) {
                    key.add(Ident.quote(rel.column(k).name()));
                }
                defs.add("PRIMARY KEY (" + String.join(", ", key) + ")");
            }
            execute("CREATE TABLE " + target.sql() + " (" + String.join(", ", defs) + ")");
            LOG.info("destination '{}': created table {} for {}", destination, target, rel.table());
        } else {
            for (ColumnInfo c : rel.columns()) {
                if (cols.add(c.name())) {
                    addColumn(target, c);
                }
            }
        }
        columns.put(target, cols);
    }

    private void follow(TableRef target, RelationInfo old, RelationInfo rel) throws SQLException {
        Set<String> cols = columns.get(target);
        Set<String> now = new LinkedHashSet<>();
        for (ColumnInfo c : rel.columns()) {
            now.add(c.name());
            if (cols.add(c.name())) {
                addColumn(target, c);
                LOG.warn("destination '{}': column {}.{} was added in the source; rows not changed since keep NULL there",
                        destination, target, c.name());
            }
        }
        for (ColumnInfo c : old.columns()) {
            if (!now.contains(c.name()) && cols.remove(c.name())) {
                execute("ALTER TABLE " + target.sql() + " DROP COLUMN IF EXISTS " + Ident.quote(c.name()));
                LOG.info("destination '{}': dropped column {}.{} (dropped in the source)", destination, target, c.name());
            }
        }
        for (ColumnInfo c : rel.columns()) {
            for (ColumnInfo o : old.columns()) {
                if (o.name().equals(c.name()) && !DuckTypes.sqlType(o).equals(DuckTypes.sqlType(c))) {
                    execute("ALTER TABLE " + target.sql() + " ALTER COLUMN " + Ident.quote(c.name()) + " TYPE "
                            + DuckTypes.sqlType(c));
                    LOG.warn("destination '{}': column {}.{} is now {}", destination, target, c.name(), DuckTypes.sqlType(c));
                }
            }
        }
    }

    private void addColumn(TableRef target, ColumnInfo c) throws SQLException {
        execute("ALTER TABLE " + target.sql() + " ADD COLUMN IF NOT EXISTS " + Ident.quote(c.name()) + " "
                + DuckTypes.sqlType(c));
        LOG.info("destination '{}': added column {}.{}", destination, target, c.name());
    }

    private Set<String> readColumns(TableRef target) throws SQLException {
        Set<String> cols = new LinkedHashSet<>();
        try (PreparedStatement ps = conn.prepareStatement("SELECT column_name FROM duckdb_columns()"
                + " WHERE database_name = current_database() AND schema_name = ? AND table_name = ? ORDER BY column_index")) {
            ps.setString(1, target.schema());
            ps.setString(2, target.table());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    cols.add(rs.getString(1));
                }
            }
        }
        return cols;
    }

    private void execute(String sql) throws SQLException {
        try (Statement s = conn.createStatement()) {
            s.execute(sql);
        }
    }
}
