package io.millrace.core.sink;

import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;

import java.util.List;
import java.util.Optional;

/**
 * A destination. One writer thread owns a sink: no method is called concurrently.
 *
 * <p>Lifecycle: {@link #open()} once, then {@link #write} any number of times, then {@link #close()}. The engine makes a
 * new sink for each start of the pipeline (from a {@link DestinationConfig}, or the supplier an embedding application
 * gives), also when it starts again by itself after a transient failure; only a sink an application gives as one
 * instance is opened again after {@code close()}.
 * A sink never acknowledges before durable (INV: DURABLE): when {@code write} returns, the events
 * and the checkpoint are both durable — or, for a sink that {@link #storesLater() stores later}, the events are safe
 * and the engine takes as durable only what {@link #storedFlushLsn()} says; when it throws, the checkpoint has not
 * advanced.
 */
public interface Sink extends AutoCloseable {

    /** The destination's name in the configuration; part of the checkpoint identity. */
    String name();

    /** Whether each source transaction is applied exactly once (true) or at least once (false). */
    boolean transactional();

    /**
     * Connects and prepares the sink's own bookkeeping (checkpoint table, directory), writing no
     * change data. Returns the checkpoint this destination last made durable, if any.
     */
    Optional<Checkpoint> open();

    /**
     * Applies {@code events} in list order (INV: ORDER) and stores {@code checkpoint} with them: in the
     * same transaction where the destination has transactions (INV: RESUME, exactly once), otherwise
     * after the data is flushed and fsynced (at least once). The list may be empty (the checkpoint
     * alone advances). Truncate events carry no row images.
     *
     * <p>What a sink meets in {@code events} (found by a user writing one from this page):
     * <ul>
     *   <li>Relations change shape between events (columns added, dropped, renamed, retyped): compare an event's
     *       {@link io.millrace.core.change.ChangeEvent#relation()} with the last one applied to its table by
     *       {@link io.millrace.core.schema.ShapeChange#between}, which reads renames exactly from the DDL event trigger's
     *       account ({@code relation().ddl()}, when {@code millrace setup} installed it) and otherwise from names and
     *       positions (a rename and a retype at once then reads as a drop and an add). Following by name alone loses a
     *       renamed column's values. After a restart the first event of a table has no "last one applied" in memory:
     *       the destination's own table is the shape before, and {@code relation().ddl()}'s {@code droppedColumns()} and
     *       {@code renamedColumns()} say how the trigger's account reached the new one (what the postgres and DuckDB
     *       destinations follow).</li>
     *   <li>A value may be {@link io.millrace.core.types.UnchangedToast#INSTANCE}: an update that left a TOASTed column
     *       unchanged, whose value PostgreSQL did not send; keep the value the destination holds.</li>
     *   <li>A truncate with {@code snapshot()} true opens a copy of the table again (rows follow as reads): drop what the
     *       destination holds of it.</li>
     *   <li>An update whose key changed ({@link io.millrace.core.change.ChangeEvent#keyChanged()}) carries the old key in
     *       {@code before}.</li>
     *   <li>Snapshot rows (op r) of the initial copy carry {@link io.millrace.core.Position#START}; streamed events arrive
     *       in increasing position.</li>
     * </ul>
     *
     * @throws io.millrace.core.MillraceException of kind SINK (or CONNECTION) when the destination fails. What the engine
     *         does then: CONNECTION is transient, and the engine starts again after a backoff ({@code operations.retry}),
     *         opens the destinations again and resumes from their checkpoints; SINK is too when its cause is a lost
     *         connection (a {@code ConnectException}, {@code SocketException}, {@code SocketTimeoutException},
     *         {@code EOFException}, an {@code SQLException} of SQLSTATE class 08, or 57P01-57P03, 40001, 40P01, 53300)
     *         and stops the pipeline otherwise (exit code 10). Any other exception is taken for a bug and stops it
     *         (exit code 1).
     */
    void write(List<ChangeEvent> events, Checkpoint checkpoint);

    /**
     * Whether {@link #write} may return before its checkpoint is stored: the events are safe from loss when it returns
     * (their room in memory goes back, the next batch may come), the checkpoint is stored later, and
     * {@link #storedFlushLsn()} tells how far. A restart resumes from what {@link #open()} returns, the checkpoint stored
     * last, so what was written after it comes again: at least once. Kafka Connect without exactly-once support stores a
     * source task's offsets only at the worker's next offset flush (every 60 s by default): waiting for it before the next
     * batch delivered one batch a minute (found by a user). False by default: write stores the checkpoint itself.
     */
    default boolean storesLater() {
        return false;
    }

    /**
     * Where {@link #storesLater()}: the flush LSN of the checkpoint stored last, or null while none has been stored since
     * {@link #open()}. The engine confirms the source only up to it (INV: DURABLE). Called on the writer thread after each
     * write and about every 100 ms while no batch comes; it may read the destination's store, so keep it cheap when nothing
     * was stored since it was last called.
     */
    default io.millrace.core.Lsn storedFlushLsn() {
        return null;
    }

    /**
     * Whether this destination gives the rows it holds of a table the value of a column added to it with a constant default
     * itself, as PostgreSQL gives its rows without writing them: the event's {@code relation().ddl()} (when the DDL event
     * trigger is installed, {@code millrace setup}) tells such a column by {@code column(name).missing()} and its
     * {@code value()}. When every destination of a pipeline does, the engine does not copy the table again for such a
     * column. When one does not (the default), the table is copied again online, and its rows arrive as reads (op r)
     * with the value (found by a user writing a destination: with the trigger installed, its rows never got the value).
     * The postgres and DuckDB destinations do.
     */
    default boolean fillsAddedColumnDefaults() {
        return false;
    }

    /**
     * For {@code millrace reset}, instead of {@link #open()}: connects, reads this destination's checkpoint and
     * returns what removing it (and, as {@code data} says, the rows of {@code tables}, the source tables) would do,
     * writing nothing. The default suits a destination that keeps no state.
     */
    default SinkReset reset(List<io.millrace.core.schema.TableRef> tables, SinkReset.Data data) {
        return SinkReset.none();
    }

    @Override
    void close();
}
