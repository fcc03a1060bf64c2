package io.millrace.core.sink;

import io.millrace.core.MillraceException;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.CheckpointJson;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Optional;
import java.util.function.Function;

/**
 * A relational destination's checkpoint storage: one row per destination name in its own checkpoints table, holding
 * the checkpoint JSON ({@link CheckpointJson}), written by the batch's own transaction (INV: DURABLE, RESUME). The SQL
 * is the database's (column types, extra columns); the reading, writing and the unreadable case are here.
 */
public final class JdbcCheckpoints {
    private JdbcCheckpoints() {
    }

    /**
     * The checkpoint of {@code destination}: {@code select} takes the name as its one parameter and returns the JSON
     * in its first column. A checkpoint that cannot be read throws what {@code unreadable} makes of the parser's error.
     */
    public static Optional<Checkpoint> read(Connection conn, String select, String destination,
                                            Function<IllegalArgumentException, MillraceException> unreadable) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(select)) {
            ps.setString(1, destination);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                String json = rs.getString(1);
                try {
                    return Optional.of(CheckpointJson.read(json));
                } catch (IllegalArgumentException e) {
                    throw unreadable.apply(e);
                }
            }
        }
    }

    /** Upserts {@code checkpoint} of {@code destination}: {@code upsert} takes the name, then the JSON. */
    public static void write(Connection conn, String upsert, String destination, Checkpoint checkpoint) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(upsert)) {
            ps.setString(1, destination);
            ps.setString(2, CheckpointJson.write(checkpoint));
            ps.executeUpdate();
        }
    }
}
