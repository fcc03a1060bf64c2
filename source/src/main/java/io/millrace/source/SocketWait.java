package io.millrace.source;

import org.postgresql.core.BaseConnection;
import org.postgresql.core.PGStream;
import org.postgresql.core.VisibleBufferedInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.SocketTimeoutException;
import java.sql.Connection;

/**
 * Waits in the kernel until the replication connection has a byte to read, without consuming it:
 * the byte lands in pgjdbc's own input buffer, where the next {@code readPending()} finds it.
 *
 * <p>Why: pgjdbc's replication API offers either {@code read()}, which blocks until a data message
 * arrives and never returns for a timeout (so the reader could not send feedback, notice a stop or
 * publish its caught-up position), or {@code readPending()}, which never waits. Polling
 * {@code readPending()} with short sleeps costs an {@code available()} system call per poll and a
 * wake-up per sleep, and on a busy machine it takes CPU from the walsender it waits for
 * (docs/BENCHMARKS.md, finding 1). This class lets the reader sleep until data arrives or its own
 * deadline passes, like {@code pg_recvlogical}'s {@code select()}.
 *
 * <p>pgjdbc has no public call for it, so the connection's {@code PGStream} is taken by reflection
 * ({@code QueryExecutorBase.pgStream}); when that is not possible (another pgjdbc layout, a module
 * path that does not open it) {@link #of} returns {@code null} and the caller falls back to polling.
 *
 * <p>Thread rules: reader thread only (the thread that owns the replication stream).
 */
final class SocketWait {
    private static final Logger LOG = LoggerFactory.getLogger(SocketWait.class);

    private final PGStream stream;
    /** pgjdbc's buffered input of {@link #stream}, to look past the first byte of a message; null when not reachable. */
    private final VisibleBufferedInputStream input;

    private SocketWait(PGStream stream, VisibleBufferedInputStream input) {
        this.stream = stream;
        this.input = input;
    }

    private static VisibleBufferedInputStream inputOf(PGStream ps) {
        try {
            Field f = PGStream.class.getDeclaredField("pgInput");
            f.setAccessible(true);
            return f.get(ps) instanceof VisibleBufferedInputStream in ? in : null;
        } catch (Exception | LinkageError e) {
            LOG.info("cannot look into pgjdbc's input buffer ({}); a shutting-down server waits for the next idle confirmation", e.toString());
            return null;
        }
    }

    /** A waiter on {@code c}'s socket, or {@code null} when this pgjdbc does not allow it (logged once). */
    static SocketWait of(Connection c) {
        try {
            Object executor = c.unwrap(BaseConnection.class).getQueryExecutor();
            for (Class<?> k = executor.getClass(); k != null; k = k.getSuperclass()) {
                try {
                    Field f = k.getDeclaredField("pgStream");
                    f.setAccessible(true);
                    Object s = f.get(executor);
                    if (s instanceof PGStream ps) {
                        return new SocketWait(ps, inputOf(ps));
                    }
                } catch (NoSuchFieldException e) {
                    // look in the superclass
                }
            }
            LOG.info("pgjdbc's connection has no pgStream field; the replication reader polls instead of waiting on the socket");
        } catch (Exception | LinkageError e) {
            LOG.info("cannot wait on the replication socket ({}); the replication reader polls instead", e.toString());
        }
        return null;
    }

    /**
     * Blocks until at least one byte can be read or {@code millis} passed.
     *
     * @return the next byte, left in the buffer (the type of the message the next {@code readPending()} reads), or -1 on
     *         timeout
     * @throws IOException when the connection failed or was closed by the server
     */
    int await(int millis) throws IOException {
        int before = stream.getNetworkTimeout();
        stream.setNetworkTimeout(Math.max(1, millis)); // 0 would mean "forever"
        try {
            return stream.peekChar(); // EOFException when the server closed the connection
        } catch (SocketTimeoutException e) {
            return -1; // nothing was consumed: a timed-out read leaves pgjdbc's buffer as it was
        } finally {
            stream.setNetworkTimeout(before);
        }
    }

    /** CopyData ('d'), its length (4), the keepalive tag ('k'), walEnd (8), the server's clock (8), reply requested (1). */
    private static final int KEEPALIVE_BYTES = 1 + 4 + 1 + 8 + 8 + 1;

    /**
     * After {@link #await} returned {@code 'd'}: whether the message it starts is a primary keepalive that asks for a reply
     * at once. PostgreSQL asks so when it cannot go on without the client's position: a walsender whose server is shutting
     * down keeps asking until the client has confirmed the WAL up to the shutdown checkpoint (the shutdown waits for it),
     * and one that heard nothing for half of {@code wal_sender_timeout} asks once. Nothing is consumed; waits at most the
     * {@code millis} given (the rest of a keepalive comes in the same packet as its first byte).
     */
    boolean keepaliveAsksReply(int millis) throws IOException {
        if (input == null) {
            return false;
        }
        int before = stream.getNetworkTimeout();
        stream.setNetworkTimeout(Math.max(1, millis));
        try {
            if (!input.ensureBytes(KEEPALIVE_BYTES, false)) {
                return false;
            }
        } catch (SocketTimeoutException e) {
            return false;
        } finally {
            stream.setNetworkTimeout(before);
        }
        byte[] b = input.getBuffer();
        int i = input.getIndex();
        return b[i] == 'd' && b[i + 5] == 'k' && b[i + KEEPALIVE_BYTES - 1] == 1;
    }
}
