package io.millrace.source;

import io.millrace.core.ByteBudget;
import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.fault.Faults;
import io.millrace.core.schema.Ident;
import org.postgresql.PGConnection;
import org.postgresql.replication.LogSequenceNumber;
import org.postgresql.replication.PGReplicationStream;
import org.postgresql.replication.fluent.logical.ChainedLogicalStreamBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * The replication reader: the one thread that talks to the walsender. It reads CopyData messages
 * and hands each to a {@link Handler}; answers keepalives and sends status updates on time, also
 * while paused by back-pressure; reports as flushed only the durable position (INV: DURABLE).
 *
 * <p>Thread rules: {@link #run()} runs on the reader thread, which owns the replication stream.
 * {@link #stop()} and {@link #durable()} may be called from any thread.
 */
public final class ReplicationReader implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicationReader.class);

    /** Receives every pgoutput message, on the reader thread, in stream order. */
    @FunctionalInterface
    public interface Handler {
        /**
         * @param walStart WAL position of the message (XLogData dataStart)
         * @param data     the message bytes (owned by the handler from now on)
         */
        void onMessage(Lsn walStart, byte[] data, int offset, int length) throws InterruptedException;

        /**
         * Called when nothing more is pending to read, before the reader waits: a handler that
         * collects messages into batches (to cross threads in batches, not one by one) hands them on here.
         */
        default void flush() throws InterruptedException {
        }
    }

    /** Stream options. */
    public record Options(Lsn startLsn, int protoVersion, boolean binary, boolean messages, boolean streaming, long statusIntervalMillis) {
    }

    private final PgConnections connections;
    private final Options options;
    private final ByteBudget budget;
    private final Handler handler;
    private final Consumer<Throwable> onFailure;
    /** Set by the checkpointer after a durable commit; read by the reader thread. */
    private final AtomicReference<Lsn> durable;
    private volatile boolean stopping;
    private volatile Lsn lastReceived = Lsn.ZERO;
    /** The server's decoding position from its last keepalive, published only when no message is pending. */
    private volatile Lsn serverCaughtUp = Lsn.ZERO;

    public ReplicationReader(PgConnections connections, Options options, ByteBudget budget, Lsn initialDurable, Handler handler,
                             Consumer<Throwable> onFailure) {
        this.connections = connections;
        this.options = options;
        this.budget = budget;
        this.handler = handler;
        this.onFailure = onFailure;
        this.durable = new AtomicReference<>(initialDurable);
    }

    /** Publishes a new durable position; the reader reports it to the server on its next turn. */
    public void durable(Lsn lsn) {
        durable.accumulateAndGet(lsn, Lsn::max);
    }

    public Lsn lastReceived() {
        return lastReceived;
    }

    /**
     * Where the server's decoding stood when the reader last found nothing more to read: every
     * transaction committed before it has been handed to the handler already. A consumer that has
     * applied all of those may confirm this position (an idle slot then advances while other
     * databases write; INV: DURABLE holds because nothing before it is pending). Any thread.
     */
    public Lsn serverCaughtUp() {
        return serverCaughtUp;
    }

    /** Counts the keepalives that asked for a reply at once, each published after the {@link #serverCaughtUp} it moved. */
    private volatile long serverAsked;

    /**
     * How many keepalives so far asked for a reply at once (PostgreSQL asks so while it shuts down, until the client has
     * confirmed the WAL up to its shutdown checkpoint). Read before {@link #serverCaughtUp}: a new count means the server
     * waits for a confirmation of at least the position read after it. Any thread.
     */
    public long serverAsked() {
        return serverAsked;
    }

    public void stop() {
        stopping = true;
    }

    private volatile boolean started;

    /** True once the server accepted START_REPLICATION: the slot is held by this reader's connection. */
    public boolean started() {
        return started;
    }

    /** Longest the reader sleeps on the socket before it looks at its durable position and stop flag again. */
    static final int MAX_WAIT_MILLIS = 20;
    /** Silence after which the connection counts as stalled ({@code -Dmillrace.receive_timeout_ms}): twice PostgreSQL's wal_receiver_timeout default, as a walsender decoding a long transaction may answer late. */
    static final long DEFAULT_RECEIVE_TIMEOUT_MILLIS = 120_000;

    /** The open stream and what was last reported on it: the reader thread's only. */
    private PGReplicationStream stream;
    private Lsn reported = Lsn.ZERO;
    private long lastStatus;
    private long statusNanos;
    /** Whether {@link #keepAlive} ran since it was last cleared: the reader waited for the destinations, not the server. */
    private boolean waited;

    /** Reports a new durable position to the server (reader thread). */
    private void reportDurable() throws SQLException {
        Lsn d = durable.get();
        if (d.isAfter(reported)) {
            // INV: DURABLE — only what every sink made durable is reported as flushed.
            LogSequenceNumber l = LogSequenceNumber.valueOf(d.value());
            Faults.hit(FaultPoint.SOURCE_BEFORE_FEEDBACK);
            stream.setFlushedLSN(l);
            stream.setAppliedLSN(l);
            stream.forceUpdateStatus();
            lastStatus = System.nanoTime();
            reported = d;
        }
    }

    /**
     * While the handler waits for room downstream (reader thread only, from inside {@link Handler#onMessage} or {@link
     * Handler#flush}): reports a new durable position, and a status once one is due, so that the walsender does not end
     * the connection ({@code wal_sender_timeout}, 60 s by default) while a destination is blocked. Before, a destination
     * blocked for longer (a lock held on one of its tables) cost a reconnect, reported as the source's failure (found by a
     * user). A failure here is left for the next read to meet.
     */
    public void keepAlive() {
        if (stream == null) {
            return;
        }
        waited = true;
        try {
            reportDurable();
            statusIfDue();
        } catch (SQLException e) {
            LOG.debug("a status update while waiting failed: {}", e.toString());
        }
    }

    /** Sends a status update once one is due (every status interval) while the reader reads nothing (reader thread). */
    private void statusIfDue() throws SQLException {
        long now = System.nanoTime();
        if (now - lastStatus >= statusNanos) {
            stream.forceUpdateStatus();
            lastStatus = now;
        }
    }

    @Override
    public void run() {
        String slot = connections.config().slot();
        try (Connection c = connections.openReplication()) {
            PGReplicationStream stream = open(c);
            started = true; // the walsender holds the slot for this connection now
            // millrace.reader.poll=true: the old poll-and-sleep loop, kept for side-by-side measurements (bench ReaderBench).
            SocketWait socket = Boolean.getBoolean("millrace.reader.poll") ? null : SocketWait.of(c);
            LOG.info("streaming from slot '{}' at {} (pgoutput proto_version {}, {} values{})", slot, options.startLsn(),
                    options.protoVersion(), options.binary() ? "binary" : "text", options.streaming() ? ", large transactions streamed" : "");
            this.stream = stream;
            reported = Lsn.ZERO;
            lastStatus = System.nanoTime();
            statusNanos = TimeUnit.MILLISECONDS.toNanos(options.statusIntervalMillis());
            int waitMillis = (int) Math.max(1, Math.min(MAX_WAIT_MILLIS, options.statusIntervalMillis()));
            int idleSpins = 0;
            // A connection that stalls without closing (a middlebox that lost its state) would leave the reader waiting
            // forever: after half the receive timeout without a byte the reader asks the server for a reply (a status
            // update with "reply requested"), and after the whole timeout it gives up on the connection (CONNECTION:
            // the Supervisor reconnects), as PostgreSQL's wal_receiver_timeout does.
            long receiveTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(Long.getLong("millrace.receive_timeout_ms", DEFAULT_RECEIVE_TIMEOUT_MILLIS));
            long lastByte = System.nanoTime();
            boolean probed = false;
            // The probe was just sent: the next look is the wait on the socket, not readPending. Its answer (a keepalive)
            // must be seen arriving; readPending would read it itself and return null, as for nothing, and on an idle
            // source (where the walsender sends nothing else) the connection would be called stalled at every receive
            // timeout, found by a user on a quiet database.
            boolean awaitAnswer = false;
            boolean asked = false; // a keepalive asking for a reply is buffered, or was read by the last readPending
            while (!stopping) {
                reportDurable();
                if (budget.exhausted()) {
                    handler.flush();
                    // INV: BOUNDED — stop reading, but keep the walsender from timing us out.
                    statusIfDue();
                    budget.awaitRoom(50);
                    lastByte = System.nanoTime(); // not reading: silence is ours, not the server's
                    continue;
                }
                // readPending answers keepalives and sends the periodic status itself (with the flushed
                // position set above), and returns null once nothing complete is buffered or on the socket.
                ByteBuffer buf = awaitAnswer ? null : stream.readPending();
                awaitAnswer = false;
                if (buf == null) {
                    waited = false;
                    handler.flush();
                    if (waited) {
                        lastByte = System.nanoTime(); // it waited for a destination (keepAlive): that silence was ours
                    }
                    // All messages read so far were handed over; keepalives moved lastReceiveLSN to the
                    // server's decoding position (what pg_recvlogical confirms when idle).
                    serverCaughtUp = Lsn.of(stream.getLastReceiveLSN().asLong());
                    if (asked) {
                        serverAsked++; // single writer: this thread
                        asked = false;
                    }
                    if (socket != null) {
                        // Sleep in the kernel until the walsender sends something (a message or a keepalive),
                        // at most waitMillis: then readPending sends a status if one is due, and the loop sees
                        // a new durable position or a stop.
                        int next;
                        try {
                            next = socket.await(waitMillis);
                        } catch (java.io.IOException e) {
                            throw new SQLException("the replication connection failed while waiting for data: " + e, "08006", e);
                        }
                        if (next == 'C') {
                            // CommandComplete: the walsender ended the stream (a clean shutdown or restart of the server,
                            // or pg_terminate_backend). pgjdbc's readPending leaves it unread until the client ends the
                            // copy itself, so it returned null and the wait sees the same byte at once, every time:
                            // without this the reader spun on a CPU, unaware, until a status update failed to be written,
                            // up to two status intervals later (found by the soak; RestartFaultsIT).
                            throw new SQLException("the server ended the replication stream (it was shut down or restarted,"
                                    + " or its walsender was terminated)", "08006");
                        }
                        if (next == 'd' && socket.keepaliveAsksReply(waitMillis)) {
                            // The server waits for our position (a shutdown waits for it): the idle confirmation is
                            // not held back by its once-per-status-interval throttle (Pipeline.serverAsked).
                            asked = true;
                        }
                        boolean arrived = next >= 0;
                        long now = System.nanoTime();
                        if (arrived) {
                            lastByte = now;
                            probed = false;
                        } else if (now - lastByte >= receiveTimeoutNanos) {
                            throw new SQLException("nothing came from the server for " + TimeUnit.NANOSECONDS.toSeconds(now - lastByte)
                                    + " s, not even an answer to a status update that asked for one: the connection is stalled"
                                    + " (a firewall or load balancer dropped it?)", "08006");
                        } else if (!probed && now - lastByte >= receiveTimeoutNanos / 2) {
                            stream.forceUpdateStatus(); // asks the walsender to reply at once
                            lastStatus = now;
                            probed = true;
                            awaitAnswer = true;
                        }
                    } else {
                        idleSpins++;
                        Thread.sleep(idleSpins < 10 ? 1 : 5);
                    }
                    continue;
                }
                idleSpins = 0;
                lastByte = System.nanoTime();
                probed = false;
                Lsn at = Lsn.of(stream.getLastReceiveLSN().asLong());
                lastReceived = at;
                int len = buf.remaining();
                handler.onMessage(at, buf.array(), buf.arrayOffset() + buf.position(), len); // takes its cost from the budget
                lastByte = System.nanoTime(); // it may have waited for a destination (keepAlive): not the server's silence
            }
            stream.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (SQLException e) {
            if (!stopping) {
                // pgjdbc ends the copy when a read of it fails (the network lost the rest of a message, and the wait for it
                // timed out), and the next status update finds it "inactive" (55000): the connection is gone, and a new
                // one goes on from the checkpoints. Not a setup error, which the supervisor does not retry (INV:
                // NO-SILENT-ERROR: the error reaches the owner as what it is, and the pipeline retries).
                SQLException lost = "55000".equals(e.getSQLState()) && String.valueOf(e.getMessage()).contains("inactive copy")
                        ? new SQLException("the replication connection was lost (" + e.getMessage() + ")", "08006", e) : e;
                onFailure.accept(PgErrors.translate("streaming from slot '" + slot + "' on " + connections.where(), lost));
            }
        } catch (Throwable t) {
            if (!stopping) {
                onFailure.accept(t);
            }
        }
    }

    private PGReplicationStream open(Connection c) throws SQLException {
        ChainedLogicalStreamBuilder b = c.unwrap(PGConnection.class).getReplicationAPI().replicationStream().logical()
                .withSlotName(connections.config().slot())
                .withStartPosition(LogSequenceNumber.valueOf(options.startLsn().value()))
                .withSlotOption("proto_version", Integer.toString(options.protoVersion()))
                .withSlotOption("publication_names", Ident.quote(connections.config().publication()))
                .withStatusInterval((int) options.statusIntervalMillis(), TimeUnit.MILLISECONDS)
                // INV: DURABLE — the flushed position the server hears is only ever the durable one set above. With pgjdbc's
                // automatic flush (its default), a keepalive moves the flushed position to the server's WAL position once
                // the durable one has reached the start of the last message: while the walsender decodes a large
                // transaction, that confirmed the slot past every destination's checkpoint, and the restart had to refuse.
                .withAutomaticFlush(false);
        if (options.binary()) {
            b = b.withSlotOption("binary", "true");
        }
        if (options.messages()) {
            b = b.withSlotOption("messages", "true");
        }
        if (options.streaming()) {
            b = b.withSlotOption("streaming", "on"); // large transactions arrive while in progress (protocol v2)
        }
        try {
            return b.start();
        } catch (SQLException e) {
            if ("55006".equals(e.getSQLState())) {
                // The preflight found the slot free, but another client claimed it before START_REPLICATION.
                throw SlotInUse.error(connections.config().slot(), SlotInUse.pidIn(e.getMessage()), e);
            }
            if ("42704".equals(e.getSQLState())) {
                throw new MillraceException(Kind.SOURCE_SETUP, "replication slot '" + connections.config().slot() + "' does not exist ("
                        + e.getMessage() + "). It was dropped while Millrace was stopped: start again with a fresh destination", e);
            }
            throw e;
        }
    }
}
