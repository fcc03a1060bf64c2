package io.millrace.core.sink;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.schema.TableRef;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The reset of a destination that keeps its checkpoint as a row of a table in a SQL database (postgres, DuckDB):
 * the row goes, and with {@link SinkReset.Data#TRUNCATE} or {@link SinkReset.Data#DROP} the copied tables are
 * emptied or dropped, all in one transaction. Tables are touched only where this destination holds a checkpoint:
 * without one, they may be anybody's. Never {@code CASCADE}: a view or foreign key of the user's on a copied
 * table makes the reset fail with the database's message, and nothing is removed.
 */
public final class JdbcReset implements SinkReset {
    private final Connection conn;
    private final String destination;
    private final String where;
    private final TableRef checkpointTable;
    private final Optional<Checkpoint> checkpoint;
    private final List<TableRef> tables;
    private final Data data;
    /** Put before each table's SQL name: a catalog and a dot, or nothing. */
    private final String qualifier;

    private JdbcReset(Connection conn, String destination, String where, TableRef checkpointTable, Optional<Checkpoint> checkpoint,
                      List<TableRef> tables, Data data, String qualifier) {
        this.qualifier = qualifier;
        this.conn = conn;
        this.destination = destination;
        this.where = where;
        this.checkpointTable = checkpointTable;
        this.checkpoint = checkpoint;
        this.tables = List.copyOf(tables);
        this.data = data;
    }

    /**
     * Reads what a reset of this destination would remove, changing nothing. {@code conn} is the destination's (taken
     * over: {@link #close()} closes it); {@code checkpointSchema}.{@code checkpoints} its checkpoint table,
     * {@code destination} the key of its row; {@code targets} the destination tables the pipeline's source tables go to.
     *
     * @param read reads the stored checkpoint, called only when the checkpoint table exists
     */
    public static JdbcReset plan(Connection conn, String destination, String where, String checkpointSchema, List<TableRef> targets,
                                 Data data, CheckpointReader read) {
        return plan(conn, destination, where, checkpointSchema, targets, data, read, "");
    }

    /**
     * As above, each table named in SQL after {@code qualifier} (a catalog and a dot: DuckDB refuses {@code schema.table}
     * where a catalog has the schema's name).
     */
    public static JdbcReset plan(Connection conn, String destination, String where, String checkpointSchema, List<TableRef> targets,
                                 Data data, CheckpointReader read, String qualifier) {
        try {
            conn.setAutoCommit(false);
            TableRef table = new TableRef(checkpointSchema, "checkpoints");
            Optional<Checkpoint> cp = exists(conn, table) ? read.read() : Optional.empty();
            List<TableRef> present = new ArrayList<>();
            for (TableRef t : targets) {
                if (exists(conn, t)) {
                    present.add(t);
                }
            }
            conn.rollback(); // read only
            return new JdbcReset(conn, destination, where, table, cp, present, data, qualifier);
        } catch (SQLException e) {
            close(conn);
            throw new MillraceException(Kind.SINK, "destination '" + destination + "' (" + where + "): cannot read its checkpoint and"
                    + " tables for the reset: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            close(conn);
            throw e;
        }
    }

    /** Reads a checkpoint from the destination. */
    @FunctionalInterface
    public interface CheckpointReader {
        Optional<Checkpoint> read() throws SQLException;
    }

    private static boolean exists(Connection c, TableRef t) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND table_name = ?")) {
            ps.setString(1, t.schema());
            ps.setString(2, t.table());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    @Override
    public Optional<Checkpoint> checkpoint() {
        return checkpoint;
    }

    @Override
    public List<String> actions() {
        List<String> r = new ArrayList<>();
        if (checkpoint.isEmpty()) {
            return r;
        }
        r.add("delete its checkpoint: row '" + destination + "' of " + checkpointTable + " at " + where + " (at "
                + checkpoint.get().applied() + ")");
        if (!tables.isEmpty() && data == Data.TRUNCATE) {
            r.add("truncate " + names() + " (the tables, their indexes and grants stay)");
        } else if (!tables.isEmpty() && data == Data.DROP) {
            r.add("drop the tables " + names() + " (the next run creates them again from the source)");
        }
        return r;
    }

    @Override
    public List<String> keeps() {
        if (tables.isEmpty()) {
            return List.of();
        }
        if (checkpoint.isEmpty()) {
            return data == Data.KEEP ? List.of() : List.of("the tables " + names() + ": this destination holds no checkpoint of the"
                    + " pipeline, so they may not be its copies");
        }
        return data != Data.KEEP ? List.of() : List.of("the tables " + names() + " with their rows (--data keep): the next run copies"
                + " every row again over them, so rows deleted from the source since stay, and a table without a key gets its rows twice");
    }

    private String names() {
        return tables.stream().map(TableRef::toString).collect(Collectors.joining(", "));
    }

    @Override
    public void apply() {
        if (checkpoint.isEmpty()) {
            return;
        }
        try {
            try (PreparedStatement ps = conn.prepareStatement("DELETE FROM " + qualifier + checkpointTable.sql() + " WHERE destination = ?")) {
                ps.setString(1, destination);
                ps.executeUpdate();
            }
            if (!tables.isEmpty() && data != Data.KEEP) {
                try (Statement s = conn.createStatement()) {
                    for (TableRef t : tables) { // one by one: DuckDB takes one table per statement
                        s.execute((data == Data.DROP ? "DROP TABLE " : "TRUNCATE TABLE ") + qualifier + t.sql());
                    }
                }
            }
            conn.commit();
        } catch (SQLException e) {
            try {
                conn.rollback();
            } catch (SQLException ignored) {
                // the error below says what failed; nothing was committed
            }
            throw new MillraceException(Kind.SINK, "destination '" + destination + "' (" + where + "): the reset failed and removed"
                    + " nothing there: " + String.valueOf(e.getMessage()).replaceAll("\\.$", "") + (data == Data.KEEP ? "" : ". If a view or foreign key of yours depends on a"
                    + " copied table, drop it first, or keep the tables with --data keep"), e);
        }
    }

    @Override
    public void close() {
        close(conn);
    }

    private static void close(Connection c) {
        try {
            c.close();
        } catch (SQLException ignored) {
            // nothing left to do with it
        }
    }
}
