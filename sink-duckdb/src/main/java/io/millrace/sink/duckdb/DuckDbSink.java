package io.millrace.sink.duckdb;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.CheckpointJson;
import io.millrace.core.schema.Ident;
import io.millrace.core.sink.Sink;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The {@code duckdb} destination, exactly once, into one embedded DuckDB database file.
 *
 * <p><b>Exactly once (INV: DURABLE, INV: RESUME).</b> Each {@link #write} is one DuckDB transaction:
 * it applies the events set-wise ({@link BatchApplier}: Appender into staging, then merge), upserts
 * this destination's row in {@code millrace.checkpoints}, commits (DuckDB writes and syncs its WAL on
 * commit), and only then returns. When anything fails the transaction is rolled back, so the data and
 * the checkpoint advance together or not at all; {@link #open()} returns the checkpoint of the last
 * committed batch.
 *
 * <p><b>Readers.</b> DuckDB lets one process open a database file for writing, and no other process
 * may open it meanwhile (not even read-only). Inside the same JVM, further connections opened with
 * the same URL and no options share the sink's database instance and read the last committed state
 * (MVCC); a connection asking for {@code duckdb.read_only} is refused while the sink holds the file.
 *
 * <p><b>Lifecycle.</b> {@code NEW → OPEN → CLOSED}, changed only by compare-and-set. One writer thread
 * owns the sink (see {@link Sink}).
 */
public final class DuckDbSink implements Sink {
    private static final Logger LOG = LoggerFactory.getLogger(DuckDbSink.class);
    /** Schema of Millrace's own tables in the destination file (checkpoints, staging). */
    static final String STATE_SCHEMA = "millrace";
    private static final String CHECKPOINTS = Ident.qualified(STATE_SCHEMA, "checkpoints");

    private enum State { NEW, OPEN, CLOSED }

    private final DuckDbSinkConfig config;
    private final AtomicReference<State> state = new AtomicReference<>(State.NEW);

    // Owned by the writer thread.
    private Connection conn;
    private BatchApplier applier;
    /** Tables an online snapshot was copying as of the last durable checkpoint (see {@link Checkpoint#copying()}). */
    private java.util.Set<String> copyingBefore = java.util.Set.of();
    /** The source tables held as of the last durable checkpoint (see {@link Checkpoint#tables()}). */
    private java.util.SortedMap<Integer, io.millrace.core.schema.TableRef> heldBefore = java.util.Collections.emptySortedMap();

    public DuckDbSink(DuckDbSinkConfig config) {
        this.config = Objects.requireNonNull(config, "config");
    }

    @Override
    public String name() {
        return config.name();
    }

    @Override
    public boolean transactional() {
        return true;
    }

    @Override
    public Optional<Checkpoint> open() {
        if (!state.compareAndSet(State.NEW, State.OPEN)) {
            throw new IllegalStateException("Cannot open destination '" + config.name() + "': it is " + state.get());
        }
        try {
            conn = DriverManager.getConnection("jdbc:duckdb:" + config.file().toAbsolutePath());
        } catch (SQLException e) {
            state.set(State.CLOSED);
            throw new MillraceException(Kind.CONNECTION, "destination '" + config.name() + "': cannot open DuckDB file "
                    + config.file() + ": " + e.getMessage() + " (is another process holding it open?)", e);
        }
        try {
            try (Statement s = conn.createStatement()) {
                s.execute("SET TimeZone = 'UTC'");
            }
            conn.setAutoCommit(false);
            try (Statement s = conn.createStatement()) {
                s.execute("CREATE SCHEMA IF NOT EXISTS " + Ident.quote(STATE_SCHEMA));
                s.execute("CREATE TABLE IF NOT EXISTS " + CHECKPOINTS
                        + " (destination VARCHAR PRIMARY KEY, checkpoint VARCHAR NOT NULL)");
            }
            Optional<Checkpoint> cp = readCheckpoint();
            conn.commit();
            copyingBefore = cp.map(Checkpoint::copying).orElse(java.util.Set.of());
            heldBefore = cp.map(Checkpoint::tables).orElse(java.util.Collections.emptySortedMap());
            applier = new BatchApplier(conn, config.name(), config.schema());
            LOG.info("destination '{}': opened {}, checkpoint {}", config.name(), config.file(),
                    cp.map(c -> "at " + c.applied()).orElse("none"));
            return cp;
        } catch (SQLException | RuntimeException e) {
            rollback();
            closeConnection();
            state.set(State.CLOSED);
            if (e instanceof MillraceException m) {
                throw m;
            }
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': cannot prepare "
                    + CHECKPOINTS + " in " + config.file() + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void write(List<ChangeEvent> events, Checkpoint checkpoint) {
        State s = state.get();
        if (s != State.OPEN) {
            throw new IllegalStateException("Cannot write to destination '" + config.name() + "': it is " + s);
        }
        Objects.requireNonNull(checkpoint, "checkpoint");
        long start = System.nanoTime();
        // A table being copied online during this batch: before it, after it, or both.
        java.util.Set<String> copying = new java.util.HashSet<>(copyingBefore);
        copying.addAll(checkpoint.copying());
        try {
            applier.apply(events, copying, heldBefore);
            applier.dropStages();
            try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + CHECKPOINTS
                    + " (destination, checkpoint) VALUES (?, ?) ON CONFLICT (destination) DO UPDATE SET checkpoint = EXCLUDED.checkpoint")) {
                ps.setString(1, config.name());
                ps.setString(2, CheckpointJson.write(checkpoint));
                ps.executeUpdate();
            }
            io.millrace.core.fault.Faults.hit("sink.duckdb.before-commit");
            conn.commit(); // INV: DURABLE — data and checkpoint become durable together, only now
            io.millrace.core.fault.Faults.hit("sink.duckdb.after-commit");
            copyingBefore = checkpoint.copying();
            heldBefore = checkpoint.tables();
        } catch (SQLException | RuntimeException e) {
            rollback(); // INV: RESUME — neither data nor checkpoint of a failed batch remains
            if (e instanceof MillraceException m) {
                throw m;
            }
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': could not apply a batch of "
                    + events.size() + " change(s) to " + config.file() + ": " + e.getMessage(), e);
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("destination '{}': batch of {} change(s) durable at {} in {} ms", config.name(), events.size(),
                    checkpoint.applied(), (System.nanoTime() - start) / 1_000_000);
        }
    }

    @Override
    public void close() {
        if (state.getAndSet(State.CLOSED) != State.CLOSED) {
            closeConnection();
        }
    }

    private Optional<Checkpoint> readCheckpoint() throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("SELECT checkpoint FROM " + CHECKPOINTS + " WHERE destination = ?")) {
            ps.setString(1, config.name());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                String json = rs.getString(1);
                try {
                    return Optional.of(CheckpointJson.read(json));
                } catch (IllegalArgumentException e) {
                    throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': the checkpoint stored in "
                            + CHECKPOINTS + " of " + config.file() + " is unreadable (" + e.getMessage() + ")", e);
                }
            }
        }
    }

    private void rollback() {
        if (applier != null) {
            applier.rolledBack();
        }
        if (conn == null) {
            return;
        }
        try {
            conn.rollback();
        } catch (SQLException e) {
            LOG.warn("destination '{}': rollback failed: {}", config.name(), e.getMessage());
        }
    }

    private void closeConnection() {
        if (conn != null) {
            try {
                conn.close();
            } catch (SQLException e) {
                LOG.warn("destination '{}': closing {} failed: {}", config.name(), config.file(), e.getMessage());
            }
            conn = null;
        }
    }
}
