package io.millrace.sink.duckdb;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.CheckpointJson;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.fault.Faults;
import io.millrace.core.schema.Ident;
import io.millrace.core.sink.DurableTables;
import io.millrace.core.sink.JdbcCheckpoints;
import io.millrace.core.sink.Sink;
import io.millrace.core.sink.SinkLifecycle;
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
public final class DuckDbSink implements io.millrace.core.sink.CopyableSink, io.millrace.core.sink.KeyedSink {
    private static final Logger LOG = LoggerFactory.getLogger(DuckDbSink.class);
    /** Schema of Millrace's own tables in the destination file (checkpoints, staging). */
    static final String STATE_SCHEMA = "millrace";
    /** Its checkpoint table, with the file's catalog ({@link DuckNames}); set by {@link #open} and {@link #reset}. */
    private volatile String checkpoints = Ident.qualified(STATE_SCHEMA, "checkpoints");

    private final DuckDbSinkConfig config;
    private final SinkLifecycle state;

    // Owned by the writer thread.
    private Connection conn;
    private BatchApplier applier;
    /** What the last durable checkpoint says the next batch needs (held tables, tables being copied). */
    private final DurableTables durable = new DurableTables();

    public DuckDbSink(DuckDbSinkConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        this.state = new SinkLifecycle(config.name());
    }

    @Override
    public String name() {
        return config.name();
    }

    @Override
    public boolean transactional() {
        return true;
    }

    /** Its tables take a constant default added in the source as their own column default, for the rows they hold. */
    @Override
    public boolean fillsAddedColumnDefaults() {
        return true;
    }

    /**
     * The file is a file in an existing directory this process can write: bad input, not a lost connection, that a retry
     * cannot help (exit 2).
     */
    private void checkFile(java.nio.file.Path file) {
        String bad = java.nio.file.Files.isDirectory(file) ? file + " is a directory; name a database file in it (e.g. "
                + file.resolve("mirror.duckdb") + ")"
                : file.getParent() != null && !java.nio.file.Files.isDirectory(file.getParent()) ? "the directory " + file.getParent()
                + " does not exist; create it (mkdir -p " + file.getParent() + ") or name a file in an existing directory" : null;
        if (bad != null) {
            throw new MillraceException(Kind.CONFIG, "config: destination '" + config.name() + "': file: " + bad);
        }
        // DuckDB writes the file and its .wal there: a directory it cannot write fails every attempt the same way (exit 2,
        // not retried as a lost connection).
        java.nio.file.Path dir = file.getParent();
        try {
            if (dir != null) {
                io.millrace.core.sink.WriteProbe.probe(dir);
            }
        } catch (java.io.IOException e) {
            throw new MillraceException(Kind.CONFIG, "config: destination '" + config.name() + "': file: the directory " + dir
                    + " cannot be written by the user running Millrace (" + e + "): give it write permission, or name a file elsewhere");
        }
    }

    /**
     * A connection to DuckDB; the first also removes the copy of DuckDB's native library that the driver left in the
     * temporary directory ({@link NativeCopy}).
     */
    private static Connection connect(String url) throws SQLException {
        return connect(url, new java.util.Properties());
    }

    private static Connection connect(String url, java.util.Properties props) throws SQLException {
        Connection c = DriverManager.getConnection(url, props);
        NativeCopy.forgetOnce();
        return c;
    }

    /**
     * For {@code millrace preflight}: the file is a file in an existing directory that can be written, and, when it exists,
     * no other process holds it (DuckDB lets one process open a file to write; it is opened read-only here and closed).
     * Writes nothing.
     */
    void preflight() {
        java.nio.file.Path file = config.file().toAbsolutePath();
        checkFile(file);
        if (java.nio.file.Files.exists(file)) {
            java.util.Properties ro = new java.util.Properties();
            ro.setProperty("duckdb.read_only", "true");
            try (java.sql.Connection c = connect("jdbc:duckdb:" + file, ro)) {
                c.isValid(1);
            } catch (SQLException e) {
                boolean locked = String.valueOf(e.getMessage()).toLowerCase(java.util.Locale.ROOT).contains("lock");
                throw new MillraceException(Kind.CONNECTION, "destination '" + config.name() + "': cannot open DuckDB file "
                        + config.file() + ": " + e.getMessage() + (locked ? " (is another process holding it open? Stop it, or"
                        + " read the file through 'millrace duckdb-copy' while Millrace runs)" : ""), e);
            }
        }
    }

    @Override
    public Optional<Checkpoint> open() {
        state.open();
        java.nio.file.Path file = config.file().toAbsolutePath();
        try {
            checkFile(file);
        } catch (MillraceException e) {
            state.openFailed();
            throw e;
        }
        try {
            conn = connect("jdbc:duckdb:" + file);
        } catch (SQLException e) {
            state.openFailed();
            // DuckDB lets one process hold the file: another one holding it is the case a retry may outlive.
            boolean locked = String.valueOf(e.getMessage()).toLowerCase(java.util.Locale.ROOT).contains("lock");
            throw new MillraceException(Kind.CONNECTION, "destination '" + config.name() + "': cannot open DuckDB file "
                    + config.file() + ": " + e.getMessage() + (locked ? " (is another process holding it open?)" : ""), e);
        }
        try {
            try (Statement s = conn.createStatement()) {
                s.execute("SET TimeZone = 'UTC'");
                // INV: BOUNDED — DuckDB's own memory beside the heap; what does not fit spills to <file>.tmp
                s.execute("SET memory_limit = '" + config.memoryLimitMb() + "MB'");
            }
            checkpoints = DuckNames.of(conn).state("checkpoints");
            conn.setAutoCommit(false);
            try (Statement s = conn.createStatement()) {
                s.execute("CREATE SCHEMA IF NOT EXISTS " + Ident.quote(STATE_SCHEMA));
                s.execute("CREATE TABLE IF NOT EXISTS " + checkpoints
                        + " (destination VARCHAR PRIMARY KEY, checkpoint VARCHAR NOT NULL)");
            }
            Optional<Checkpoint> cp = readCheckpoint();
            conn.commit();
            durable.durable(cp);
            applier = new BatchApplier(conn, config.name(), config.schema(), config.dropTables());
            LOG.info("destination '{}': opened {}, checkpoint {}", config.name(), config.file(),
                    cp.map(c -> "at " + c.applied()).orElse("none"));
            return cp;
        } catch (SQLException | RuntimeException e) {
            rollback();
            closeConnection();
            state.openFailed();
            if (e instanceof MillraceException m) {
                throw m;
            }
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': cannot prepare "
                    + checkpoints + " in " + config.file() + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void write(List<ChangeEvent> events, Checkpoint checkpoint) {
        state.requireOpen();
        Objects.requireNonNull(checkpoint, "checkpoint");
        long start = System.nanoTime();
        try {
            applier.apply(events, durable.copyingUntil(checkpoint), durable.held());
            applier.dropStages();
            applier.ended();
            JdbcCheckpoints.write(conn, "INSERT INTO " + checkpoints + " (destination, checkpoint) VALUES (?, ?)"
                    + " ON CONFLICT (destination) DO UPDATE SET checkpoint = EXCLUDED.checkpoint", config.name(), checkpoint);
            Faults.hit(FaultPoint.SINK_DUCKDB_BEFORE_COMMIT);
            conn.commit(); // INV: DURABLE — data and checkpoint become durable together, only now
            Faults.hit(FaultPoint.SINK_DUCKDB_AFTER_COMMIT);
            durable.durable(checkpoint);
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

    /**
     * The reset of this destination (see {@link io.millrace.core.sink.JdbcReset}): its row in {@code millrace.checkpoints}
     * and, as {@code data} says, the tables of {@code tables}. A file that does not exist is left so.
     */
    @Override
    public io.millrace.core.sink.SinkReset reset(List<io.millrace.core.schema.TableRef> tables, io.millrace.core.sink.SinkReset.Data data) {
        state.reset();
        if (!java.nio.file.Files.isRegularFile(config.file())) {
            return io.millrace.core.sink.SinkReset.none();
        }
        try {
            conn = connect("jdbc:duckdb:" + config.file().toAbsolutePath()); // the reset's now: it closes it
        } catch (SQLException e) {
            throw new MillraceException(Kind.CONNECTION, "destination '" + config.name() + "': cannot open DuckDB file "
                    + config.file() + ": " + e.getMessage() + " (is another process holding it open?)", e);
        }
        DuckNames names;
        try {
            names = DuckNames.of(conn);
        } catch (SQLException e) {
            closeConnection();
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': cannot read " + config.file() + ": " + e.getMessage(), e);
        }
        checkpoints = names.state("checkpoints");
        DuckTables targets = new DuckTables(conn, names, config.name(), config.schema());
        return io.millrace.core.sink.JdbcReset.plan(conn, config.name(), config.file().toString(), STATE_SCHEMA,
                tables.stream().map(targets::targetOf).toList(), data, this::readCheckpoint, names.prefix());
    }

    /**
     * Writes a consistent copy of the database — every table and the checkpoint, as of the last committed batch — to
     * {@code target}, a new file that any process may then open (e.g. {@code duckdb -readonly}) while this sink keeps
     * the original. The copy is one statement on a second connection to the same in-process database (MVCC: it reads
     * one committed state and never blocks the writer), made under a temporary name and moved into place; an existing
     * {@code target} is never replaced. Any thread; the sink must be open.
     *
     * @return the checkpoint the copy holds (what it is up to), or empty before the first batch
     */
    /**
     * The keys of source table {@code oid}'s target table: under the name this destination holds it by (its last durable
     * checkpoint's tables) while that target exists, else under {@code table}, its current name.
     */
    @Override
    public List<List<String>> keysIn(int oid, io.millrace.core.schema.TableRef table, List<String> keyColumns,
                                     io.millrace.core.change.OnlineTask.KeyRange range, int limit) {
        return io.millrace.core.sink.KeyedSink.underHeldName(durable.held().get(oid), table,
                t -> keysOrNull(t, keyColumns, range, limit));
    }

    @Override
    public List<List<String>> keysIn(io.millrace.core.schema.TableRef table, List<String> keyColumns,
                                     io.millrace.core.change.OnlineTask.KeyRange range, int limit) {
        List<List<String>> keys = keysOrNull(table, keyColumns, range, limit);
        return keys == null ? List.of() : keys;
    }

    /**
     * The keys of the target table of {@code table} in {@code range}, as text, on a connection of its own to the file
     * (committed rows only); null when the table does not exist. Any thread, while the sink is open.
     */
    private List<List<String>> keysOrNull(io.millrace.core.schema.TableRef table, List<String> keyColumns,
                                          io.millrace.core.change.OnlineTask.KeyRange range, int limit) {
        io.millrace.core.schema.TableRef target = config.schema() == null ? table : new io.millrace.core.schema.TableRef(config.schema(), table.table());
        try (Connection c = connect("jdbc:duckdb:" + config.file().toAbsolutePath()); Statement s = c.createStatement()) {
            s.execute("SET TimeZone = 'UTC'");
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?")) {
                ps.setString(1, target.schema());
                ps.setString(2, target.table());
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getLong(1) == 0) {
                        return null;
                    }
                }
            }
            // A BLOB (bytea) key is printed and bounded in PostgreSQL's hex text, not DuckDB's escapes ('\x0A' per byte,
            // printable bytes as themselves): the engine decodes these keys with the source's codecs.
            java.util.Set<String> blobs = new java.util.HashSet<>();
            try (PreparedStatement ps = c.prepareStatement("SELECT column_name FROM information_schema.columns WHERE table_schema = ?"
                    + " AND table_name = ? AND data_type = 'BLOB'")) {
                ps.setString(1, target.schema());
                ps.setString(2, target.table());
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        blobs.add(rs.getString(1));
                    }
                }
            }
            String cols = keyColumns.stream().map(k -> blobs.contains(k) ? "'\\x' || lower(hex(" + Ident.quote(k) + "))"
                    : "CAST(" + Ident.quote(k) + " AS VARCHAR)").collect(java.util.stream.Collectors.joining(", "));
            java.util.function.BiFunction<Integer, String, String> literal = (i, text) -> blobs.contains(keyColumns.get(i))
                    ? "from_hex(substr(" + Ident.literal(text) + ", 3))" : Ident.literal(text);
            List<List<String>> out = new java.util.ArrayList<>();
            try (ResultSet rs = s.executeQuery("SELECT " + cols + " FROM " + DuckNames.of(c).of(target) + " WHERE "
                    + io.millrace.core.sink.KeyRangeSql.where(keyColumns, range, literal) + " LIMIT " + limit)) {
                while (rs.next()) {
                    List<String> key = new java.util.ArrayList<>(keyColumns.size());
                    for (int i = 1; i <= keyColumns.size(); i++) {
                        key.add(rs.getString(i));
                    }
                    out.add(key);
                }
            }
            return out;
        } catch (SQLException e) {
            if (e.getMessage() != null && e.getMessage().contains("Catalog Error") && e.getMessage().contains("does not exist")) {
                return null; // renamed or dropped by the writer between the look-up and the read: not there (see PostgresSink)
            }
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': could not read the keys of " + target + " in "
                    + config.file() + " (to delete the rows the source no longer has): " + e.getMessage(), e);
        }
    }

    @Override
    public Optional<Checkpoint> copyTo(java.nio.file.Path target) {
        if (!state.is(SinkLifecycle.State.OPEN)) {
            throw new MillraceException(Kind.CONFIG, "destination '" + config.name() + "' is not open: a copy can be made while it runs");
        }
        java.nio.file.Path to = target.toAbsolutePath();
        if (java.nio.file.Files.exists(to)) {
            throw new MillraceException(Kind.CONFIG, "destination '" + config.name() + "': " + to + " exists; name a new file for the copy");
        }
        if (to.getParent() == null || !java.nio.file.Files.isDirectory(to.getParent())) {
            throw new MillraceException(Kind.CONFIG, "destination '" + config.name() + "': the directory of " + to + " does not exist");
        }
        java.nio.file.Path tmp = to.resolveSibling("." + to.getFileName() + ".millrace-" + java.util.UUID.randomUUID() + ".tmp");
        try (Connection c = connect("jdbc:duckdb:" + config.file().toAbsolutePath()); Statement s = c.createStatement()) {
            String db;
            try (ResultSet rs = s.executeQuery("SELECT current_database()")) {
                rs.next();
                db = rs.getString(1);
            }
            String alias = "millrace_copy_" + Long.toHexString(System.nanoTime());
            s.execute("ATTACH " + Ident.literal(tmp.toString()) + " AS " + Ident.quote(alias));
            Optional<Checkpoint> at;
            try {
                c.setAutoCommit(false); // the copy and the checkpoint it reports: one snapshot of the database
                s.execute("COPY FROM DATABASE " + Ident.quote(db) + " TO " + Ident.quote(alias));
                try (PreparedStatement ps = c.prepareStatement("SELECT checkpoint FROM " + checkpoints + " WHERE destination = ?")) {
                    ps.setString(1, config.name());
                    try (ResultSet rs = ps.executeQuery()) {
                        at = rs.next() ? Optional.of(CheckpointJson.read(rs.getString(1))) : Optional.empty();
                    }
                }
                c.commit();
                c.setAutoCommit(true);
                s.execute("CHECKPOINT " + Ident.quote(alias));
            } finally {
                if (!c.getAutoCommit()) {
                    c.rollback();
                    c.setAutoCommit(true);
                }
                s.execute("DETACH " + Ident.quote(alias));
            }
            java.nio.file.Files.move(tmp, to); // a rename in the same directory; refuses a target made meanwhile
            LOG.info("destination '{}': copied to {}{}", config.name(), to, at.map(cp -> " at " + cp.applied()).orElse(""));
            return at;
        } catch (SQLException | java.io.IOException e) {
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': cannot copy " + config.file() + " to " + to + ": "
                    + e.getMessage(), e);
        } finally {
            try {
                java.nio.file.Files.deleteIfExists(tmp);
                java.nio.file.Files.deleteIfExists(tmp.resolveSibling(tmp.getFileName() + ".wal"));
            } catch (java.io.IOException e) {
                LOG.warn("destination '{}': cannot remove {}: {}", config.name(), tmp, e.getMessage());
            }
        }
    }

    @Override
    public void close() {
        if (state.close()) {
            closeConnection();
        }
    }

    private Optional<Checkpoint> readCheckpoint() throws SQLException {
        return JdbcCheckpoints.read(conn, "SELECT checkpoint FROM " + checkpoints + " WHERE destination = ?", config.name(),
                e -> new MillraceException(Kind.SINK, "destination '" + config.name() + "': the checkpoint stored in "
                        + checkpoints + " of " + config.file() + " is unreadable (" + e.getMessage() + ")", e));
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
