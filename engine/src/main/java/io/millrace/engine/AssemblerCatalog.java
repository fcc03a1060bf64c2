package io.millrace.engine;

import io.millrace.source.PgConnections;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * The catalog connection of the assembler thread's look-ups at Relation messages: the attribute numbers of a table the
 * stream describes again ({@link OnlineControls#onShapeChange}), the live columns of one whose stream lacks some
 * ({@link NarrowPublication}). Every table's first Relation message of a run is looked at, so each look opening a
 * connection of its own cost a connection per table at every start, on the thread that orders the stream (found in
 * review). Opened at the first look, again after a failure; closed by the run's teardown.
 *
 * <p>Threads: the assembler's; {@link #close} from the teardown once the pipeline has stopped.
 */
final class AssemblerCatalog implements AutoCloseable {
    private final PgConnections conns;
    private Connection c;

    AssemblerCatalog(PgConnections conns) {
        this.conns = conns;
    }

    /** What {@code f} reads on the connection; a failure closes it (the next look opens another). */
    <T> T read(Read<T> f) throws SQLException {
        if (c == null || c.isClosed()) {
            c = conns.open();
        }
        try {
            return f.apply(c);
        } catch (SQLException | RuntimeException e) {
            close();
            throw e;
        }
    }

    interface Read<T> {
        T apply(Connection c) throws SQLException;
    }

    @Override
    public void close() {
        Connection was = c;
        c = null;
        if (was != null) {
            try {
                was.close();
            } catch (SQLException ignored) {
                // closing: nothing to do about it
            }
        }
    }
}
