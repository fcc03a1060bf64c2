package io.millrace.sink.postgres;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.PgSessions;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
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
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Optional;
import java.util.Properties;

/**
 * The {@code postgres} destination, exactly once.
 *
 * <p><b>Exactly once (INV: DURABLE, INV: RESUME).</b> Each {@link #write} is one destination
 * transaction: it applies the events set-wise ({@link BatchApplier}) and upserts this destination's
 * row in {@code <stateSchema>.checkpoints}, then commits, and only then returns. When anything
 * fails the transaction is rolled back, so the data and the checkpoint advance together or not at
 * all; {@link #open()} returns the checkpoint of the last committed batch, and the engine resumes
 * right after it.
 *
 * <p><b>A commit whose outcome is unknown.</b> If the connection drops during COMMIT, the batch may
 * or may not have landed. The sink then throws (Kind.CONNECTION) and remembers the checkpoint it
 * tried to commit; the next {@code write} reconnects and reads the stored checkpoint: when the retry
 * is that very batch and its checkpoint is already stored, the batch is not applied a second time.
 *
 * <p><b>Lifecycle.</b> {@code NEW → OPEN → CLOSED}, changed only by compare-and-set. Not thread-safe:
 * one writer thread owns the sink (see {@link Sink}).
 */
public final class PostgresSink implements io.millrace.core.sink.KeyedSink {
    private static final Logger LOG = LoggerFactory.getLogger(PostgresSink.class);
    /** Session settings that make text forms unambiguous: UTC, exact floats, ISO intervals. */
    static final String SESSION_OPTIONS = "-c TimeZone=UTC -c extra_float_digits=3 -c IntervalStyle=postgres" + PgSessions.STARTUP_OPTIONS;

    private final PostgresSinkConfig config;
    private final String where;
    private final String checkpointTable;
    private final SinkLifecycle state;

    /** The connection of {@link #keysIn} (online snapshot readers), apart from the writer's. @GuardedBy("this") */
    private Connection keysConn;

    // Owned by the writer thread.
    private Connection conn;
    private BatchApplier applier;
    /** The checkpoint of a batch whose COMMIT had an unknown outcome; null otherwise. */
    private Checkpoint inDoubt;
    /** What the last durable checkpoint says the next batch needs (held tables, tables being copied). */
    private final DurableTables durable = new DurableTables();
    private FaultPoints faults = FaultPoints.NONE;

    public PostgresSink(PostgresSinkConfig config) {
        this.config = java.util.Objects.requireNonNull(config, "config");
        this.where = describe(config.jdbcUrl());
        this.checkpointTable = Ident.qualified(config.stateSchema(), "checkpoints");
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

    @Override
    public Optional<Checkpoint> open() {
        state.requireNew();
        connect();
        try {
            prepareState();
            Optional<Checkpoint> cp = readCheckpoint();
            conn.commit();
            durable.durable(cp);
            state.move(SinkLifecycle.State.NEW, SinkLifecycle.State.OPEN);
            LOG.info("destination '{}': connected to {}, checkpoint {}", config.name(), where,
                    cp.map(c -> "at " + c.applied()).orElse("none"));
            return cp;
        } catch (SQLException e) {
            disconnect();
            throw stateError(e);
        } catch (RuntimeException e) {
            disconnect();
            throw e;
        }
    }

    @Override
    public void write(List<ChangeEvent> events, Checkpoint checkpoint) {
        state.requireOpen();
        java.util.Objects.requireNonNull(checkpoint, "checkpoint");
        if (conn == null || isClosed(conn)) {
            disconnect();
            connect();
        }
        if (inDoubt != null && alreadyCommitted(checkpoint)) {
            durable.durable(checkpoint);
            return;
        }
        long start = System.nanoTime();
        long applied;
        try {
            applier.apply(events, durable.copyingUntil(checkpoint), durable.held(), durable.shapes());
            applied = System.nanoTime();
            try {
                JdbcCheckpoints.write(conn, "INSERT INTO " + checkpointTable
                        + " (destination, checkpoint, updated_at) VALUES (?, CAST(? AS jsonb), now())"
                        + " ON CONFLICT (destination) DO UPDATE SET checkpoint = EXCLUDED.checkpoint,"
                        + " updated_at = EXCLUDED.updated_at", config.name(), checkpoint);
            } catch (SQLException e) {
                throw new MillraceException(Errors.connectionLost(e) ? Kind.CONNECTION : Kind.SINK, "destination '"
                        + config.name() + "': could not store the checkpoint in " + checkpointTable + " at " + where
                        + ": " + Errors.message(e), e);
            }
        } catch (RuntimeException e) {
            rollback();
            if (e instanceof MillraceException m) {
                throw m;
            }
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': could not apply a batch of "
                    + events.size() + " change(s): " + e, e);
        }
        try {
            faults.beforeCommit(conn);
            Faults.hit(FaultPoint.SINK_POSTGRES_BEFORE_COMMIT);
            conn.commit(); // INV: DURABLE — data and checkpoint become durable together, only now
            Faults.hit(FaultPoint.SINK_POSTGRES_AFTER_COMMIT);
            faults.afterCommit(conn);
        } catch (SQLException e) {
            if (Errors.connectionLost(e)) {
                inDoubt = checkpoint;
                rollback();
                throw new MillraceException(Kind.CONNECTION, "destination '" + config.name() + "': the connection to "
                        + where + " was lost while committing a batch of " + events.size() + " change(s): "
                        + Errors.message(e) + ". Whether it landed is unknown; the next attempt checks the stored"
                        + " checkpoint first, so it is not applied twice.", e);
            }
            rollback();
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "': commit of a batch of "
                    + events.size() + " change(s) failed: " + Errors.message(e), e);
        }
        inDoubt = null;
        durable.durable(checkpoint);
        applier.committed();
        if (LOG.isDebugEnabled()) {
            long end = System.nanoTime();
            LOG.debug("destination '{}': batch of {} change(s) durable at {}; ms: apply {}, checkpoint and commit {}",
                    config.name(), events.size(), checkpoint.applied(), (applied - start) / 1_000_000,
                    (end - applied) / 1_000_000);
        }
    }

    /**
     * The reset of this destination (see {@link io.millrace.core.sink.JdbcReset}): its row in {@code <stateSchema>.checkpoints}
     * and, as {@code data} says, the target tables of {@code tables}. Creates nothing, not even the state schema.
     */
    @Override
    public io.millrace.core.sink.SinkReset reset(List<io.millrace.core.schema.TableRef> tables, io.millrace.core.sink.SinkReset.Data data) {
        state.reset();
        connect(); // the connection is the reset's now: it closes it
        refuseDuringMigration();
        TargetTables targets = new TargetTables(conn, config.name(), config.targetSchema(), config.replicaRole());
        return io.millrace.core.sink.JdbcReset.plan(conn, config.name(), where, config.stateSchema(),
                tables.stream().map(targets::targetOf).toList(), data, this::readCheckpoint);
    }

    /**
     * {@code millrace migrate} records its steps in {@code <stateSchema>.migration} on its target, this destination. While
     * a migration is under way (copying, following, fencing) or this database is the primary it made (cut over, rolling
     * back), a reset would drop the migration's slot and empty the tables the applications may now write to: refused,
     * naming the step (found by a user: after a cutover, {@code millrace reset --yes} with the migration's configuration
     * began truncating the new primary; only a foreign key stopped it). An aborted or rolled-back migration's tables are
     * nobody's primary: those may be reset.
     */
    private void refuseDuringMigration() {
        String table = io.millrace.core.schema.Ident.qualified(config.stateSchema(), "migration");
        String step;
        try (java.sql.Statement st = conn.createStatement()) {
            try (java.sql.ResultSet rs = st.executeQuery("SELECT to_regclass(" + io.millrace.core.schema.Ident.literal(table) + ") IS NOT NULL")) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    return;
                }
            }
            try (java.sql.ResultSet rs = st.executeQuery("SELECT step FROM " + table + " ORDER BY id DESC LIMIT 1")) {
                step = rs.next() ? rs.getString(1) : null;
            }
        } catch (SQLException e) {
            disconnect();
            throw new MillraceException(Kind.SINK, "destination '" + config.name() + "' (" + where + "): cannot read " + table
                    + " to see whether a migration uses this database: " + e.getMessage(), e);
        }
        if (step == null || step.equals("ABORTED") || step.equals("ROLLED_BACK")) {
            return;
        }
        disconnect();
        boolean primary = step.equals("CUT_OVER") || step.equals("ROLLING_BACK");
        throw new MillraceException(Kind.CONFIG, "destination '" + config.name() + "' (" + where + ") is the target of a 'millrace"
                + " migrate' whose last recorded step is " + step + " (" + table + ")" + (primary ? ": it is the primary now, and"
                + " a reset would empty the tables the applications write to" : ": a reset would drop the migration's slot and"
                + " empty its copy") + "; nothing was removed. See 'millrace migrate status' with this configuration"
                + (primary ? "" : "; to give the migration up, 'millrace migrate abort' first"));
    }

    /**
     * The keys of source table {@code oid}'s target table: under the name this destination holds it by (its last durable
     * checkpoint's tables) while that target exists, else under {@code table}, its current name.
     */
    @Override
    public synchronized List<List<String>> keysIn(int oid, io.millrace.core.schema.TableRef table, List<String> keyColumns,
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
     * The keys of the target table of {@code table} in {@code range}, as text, on a connection of its own (committed rows
     * only); null when the target table does not exist. Any thread: readers take turns on the one connection.
     */
    private synchronized List<List<String>> keysOrNull(io.millrace.core.schema.TableRef table, List<String> keyColumns,
                                                       io.millrace.core.change.OnlineTask.KeyRange range, int limit) {
        io.millrace.core.schema.TableRef target = config.targetSchema() == null ? table
                : new io.millrace.core.schema.TableRef(config.targetSchema(), table.table());
        try {
            if (keysConn == null || isClosed(keysConn)) {
                keysConn = null;
                keysConn = openPlain();
            }
            try (PreparedStatement ps = keysConn.prepareStatement("SELECT to_regclass(?) IS NULL")) {
                ps.setString(1, target.sql());
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        return null;
                    }
                }
            }
            String cols = keyColumns.stream().map(k -> Ident.quote(k) + "::text").collect(java.util.stream.Collectors.joining(", "));
            List<List<String>> out = new java.util.ArrayList<>();
            try (Statement s = keysConn.createStatement();
                 ResultSet rs = s.executeQuery("SELECT " + cols + " FROM " + target.sql() + " WHERE "
                         + io.millrace.core.sink.KeyRangeSql.where(keyColumns, range) + " LIMIT " + limit)) {
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
            if ("42P01".equals(e.getSQLState())) {
                // Renamed or dropped by the writer between the look-up and the read (a rename rule moves a table at its next
                // change: RenameIT in CI at af1f042): not there, as if the look-up had said so; the caller tries the other name.
                return null;
            }
            if (keysConn != null) {
                try {
                    keysConn.close();
                } catch (SQLException ignored) {
                    // already failing
                }
                keysConn = null;
            }
            throw new MillraceException(Errors.connectionLost(e) ? Kind.CONNECTION : Kind.SINK, "destination '" + config.name()
                    + "': could not read the keys of " + target + " at " + where + " (to delete the rows the source no longer has): "
                    + Errors.message(e), e);
        }
    }

    @Override
    public void close() {
        if (state.close()) {
            disconnect();
            synchronized (this) {
                if (keysConn != null) {
                    try {
                        keysConn.close();
                    } catch (SQLException ignored) {
                        // closing
                    }
                    keysConn = null;
                }
            }
        }
    }

    /**
     * Connects to {@code url} with the properties {@code p}, whose {@code options} (Millrace's session settings) follow the
     * url's own {@code options} in the startup packet, so that ours win where both set one and the user's others (a
     * {@code search_path}, say) stay. pgjdbc lets a url parameter replace the property whole: a destination url that
     * carried {@code options} dropped Millrace's time zone, its lifted session limits and a migration's
     * {@code session_replication_role} (found trying a server set up as in production). Null when {@code url} is not a
     * PostgreSQL JDBC url. For a migration's target too.
     */
    public static Connection open(String url, Properties p) throws SQLException {
        Properties fromUrl = org.postgresql.Driver.parseURL(url, null);
        if (fromUrl == null) {
            return null;
        }
        String theirs = fromUrl.getProperty("options");
        if (theirs == null) {
            return new org.postgresql.Driver().connect(url, p);
        }
        Properties merged = new Properties(); // also for an empty options=, which would replace ours with nothing
        merged.putAll(p);
        merged.setProperty("options", (theirs.isBlank() ? "" : theirs.strip() + " ") + p.getProperty("options", ""));
        return new org.postgresql.Driver().connect(withoutOptions(url), merged);
    }

    /** {@code url} without its {@code options} parameter, the others as they are. */
    static String withoutOptions(String url) {
        int q = url.indexOf('?');
        if (q < 0) {
            return url;
        }
        String rest = java.util.Arrays.stream(url.substring(q + 1).split("&"))
                .filter(kv -> !kv.isEmpty() && !kv.substring(0, kv.indexOf('=') < 0 ? kv.length() : kv.indexOf('=')).equals("options"))
                .collect(java.util.stream.Collectors.joining("&"));
        return url.substring(0, q) + (rest.isEmpty() ? "" : "?" + rest);
    }

    /** A connection in autocommit with the session settings of the writer's, for reads beside it. */
    private Connection openPlain() throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", config.user());
        if (!config.password().isEmpty()) {
            p.setProperty("password", config.password().reveal());
        }
        p.setProperty("options", SESSION_OPTIONS);
        p.setProperty("ApplicationName", "millrace-sink-" + config.name() + "-keys");
        p.setProperty("connectTimeout", "10");
        Connection c = open(config.jdbcUrl(), p);
        if (c == null) {
            throw new MillraceException(Kind.CONFIG, "destination '" + config.name()
                    + "': url is not a PostgreSQL JDBC URL (expected jdbc:postgresql://host:5432/database)");
        }
        return PgSessions.lifted(c);
    }

    /** For crash tests. */
    void faults(FaultPoints faults) {
        this.faults = faults;
    }

    /**
     * After a commit with unknown outcome: whether {@code retry} is that batch and it already landed
     * (INV: RESUME — then it must not be applied again).
     */
    private boolean alreadyCommitted(Checkpoint retry) {
        Checkpoint pending = inDoubt;
        Optional<Checkpoint> stored;
        try {
            stored = readCheckpoint();
            conn.commit();
        } catch (SQLException e) {
            rollback();
            throw stateError(e);
        }
        inDoubt = null;
        boolean landed = stored.isPresent() && stored.get().equals(pending);
        LOG.info("destination '{}': the batch whose commit was interrupted {}", config.name(),
                landed ? "had landed" : "had not landed");
        return landed && retry.equals(pending);
    }

    private void connect() {
        Properties p = new Properties();
        p.setProperty("user", config.user());
        if (!config.password().isEmpty()) {
            p.setProperty("password", config.password().reveal());
        }
        // A migration's target applies as a subscriber does: its triggers and foreign keys do not fire twice.
        // The reverse stream of a migration writes into the old primary its cutover fenced (read-only by default).
        p.setProperty("options", SESSION_OPTIONS + (config.replicaRole() ? " -c session_replication_role=replica" : "")
                + (config.readWrite() ? " -c default_transaction_read_only=off" : ""));
        p.setProperty("ApplicationName", "millrace-sink-" + config.name());
        p.setProperty("connectTimeout", "10");
        p.setProperty("tcpKeepAlive", "true");
        Connection c;
        try {
            c = open(config.jdbcUrl(), p);
            if (c == null) {
                throw new MillraceException(Kind.CONFIG, "destination '" + config.name()
                        + "': url is not a PostgreSQL JDBC URL (expected jdbc:postgresql://host:5432/database)");
            }
        } catch (SQLException e) {
            throw connectError(e);
        }
        try {
            PgSessions.lift(c); // a DBA's limits on the destination database end no batch, however large, nor an idle session
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                // Staging tables are temporary: give them room before the session first touches one.
                s.execute("SET temp_buffers = '64MB'");
            }
            c.commit();
            this.conn = c;
            this.applier = new BatchApplier(c, config.name(), where, config.targetSchema(), config.dropTables(), config.replicaRole());
        } catch (SQLException e) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // already failing
            }
            throw stateError(e);
        }
    }

    private void prepareState() throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("SELECT 1 FROM pg_namespace WHERE nspname = ?")) {
            ps.setString(1, config.stateSchema());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    try (Statement s = conn.createStatement()) {
                        s.execute("CREATE SCHEMA IF NOT EXISTS " + Ident.quote(config.stateSchema()));
                    }
                }
            }
        }
        try (PreparedStatement ps = conn.prepareStatement("SELECT to_regclass(?) IS NULL")) {
            ps.setString(1, checkpointTable);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (rs.getBoolean(1)) {
                    try (Statement s = conn.createStatement()) {
                        s.execute("CREATE TABLE IF NOT EXISTS " + checkpointTable + " (destination text PRIMARY KEY,"
                                + " checkpoint jsonb NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())");
                    }
                }
            }
        }
    }

    private Optional<Checkpoint> readCheckpoint() throws SQLException {
        return JdbcCheckpoints.read(conn, "SELECT checkpoint::text FROM " + checkpointTable + " WHERE destination = ?",
                config.name(), e -> new MillraceException(Kind.SINK, "destination '" + config.name() + "': the checkpoint"
                        + " stored in " + checkpointTable + " for '" + config.name() + "' cannot be read (" + e.getMessage()
                        + "). Restore it from a backup, or delete that row to start over (which copies every"
                        + " table again).", e));
    }

    private void rollback() {
        if (conn != null) {
            try {
                conn.rollback();
            } catch (SQLException e) {
                LOG.debug("destination '{}': rollback failed: {}", config.name(), e.getMessage());
            }
            if (applier != null) {
                applier.rolledBack();
            }
            if (isClosed(conn)) {
                disconnect();
            } else {
                // Staging tables created before the failed transaction are forgotten: drop them all.
                try (Statement s = conn.createStatement()) {
                    s.execute("DISCARD TEMP");
                    conn.commit();
                } catch (SQLException e) {
                    disconnect();
                }
            }
        }
    }

    private void disconnect() {
        if (conn != null) {
            try {
                conn.close();
            } catch (SQLException e) {
                LOG.debug("destination '{}': close failed: {}", config.name(), e.getMessage());
            }
        }
        conn = null;
        applier = null;
    }

    private static boolean isClosed(Connection c) {
        try {
            return c.isClosed();
        } catch (SQLException e) {
            return true;
        }
    }

    private MillraceException connectError(SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        String msg = scrub(Errors.message(e));
        String head = "destination '" + config.name() + "': ";
        if (state.equals("28P01") || state.equals("28000")) {
            return new MillraceException(Kind.AUTHENTICATION, head + "PostgreSQL at " + where + " refused user '"
                    + config.user() + "': " + msg + ". Check the destination's user and password, and that"
                    + " pg_hba.conf there admits this client.", e);
        }
        if (io.millrace.core.PgMessages.noPasswordGiven(msg)) { // not a server that is down
            return new MillraceException(Kind.AUTHENTICATION, head + "PostgreSQL at " + where + " asks user '" + config.user()
                    + "' for a password and none is set. Fix: name the environment variable holding it in the destination's"
                    + " password_env (or a file in password_file)", e);
        }
        if (state.equals("3D000")) {
            return new MillraceException(Kind.CONFIG, head + "PostgreSQL at " + where + ": " + msg
                    + ". Create the database there, or fix the destination's database (or url).", e);
        }
        if (state.equals("42501") && msg.contains("set parameter")) {
            // a session setting the role may not set (session_replication_role: replica): not a server that is down, and not
            // retried as one (found by a migrate user, whose reverse stream retried it ten times with that hint)
            return new MillraceException(Kind.PERMISSION, head + "PostgreSQL at " + where + " refused user '" + config.user() + "' a"
                    + " session setting: " + msg + (config.replicaRole() ? ". Fix: GRANT SET ON PARAMETER session_replication_role TO "
                    + io.millrace.core.schema.Ident.quote(config.user()) + " (PostgreSQL 15+, as a superuser), connect as a superuser,"
                    + " or set the destination's session_replication_role to origin" : ". Grant it to the user, or connect as another")
                    + ".", e);
        }
        if (state.equals("42501")) {
            return new MillraceException(Kind.PERMISSION, head + "PostgreSQL at " + where + " refused user '" + config.user() + "': " + msg
                    + ". Fix: GRANT CONNECT ON DATABASE (the destination's database) TO " + io.millrace.core.schema.Ident.quote(config.user())
                    + ", or connect as another user.", e);
        }
        return new MillraceException(Kind.CONNECTION, head + "cannot connect to PostgreSQL at " + where + " as user '"
                + config.user() + "': " + io.millrace.core.PgMessages.withoutDriverAdvice(msg) + ". Check that the server is running and accepts TCP connections"
                + " there, and that the destination's host, port and database (or url) are right.", e);
    }

    /**
     * For {@code millrace preflight}: connects as {@link #open()} does (the same errors, named the same way) and checks,
     * writing nothing, that the database is not read-only for the user and that the user can create or use the state
     * schema and its checkpoints table. Each problem is the error {@link #open()} or the first batch would meet, with its fix.
     */
    void preflight() {
        connect();
        try (PreparedStatement ps = conn.prepareStatement("SELECT current_setting('transaction_read_only') = 'on',"
                + " has_database_privilege(current_database(), 'CREATE'),"
                + " (SELECT has_schema_privilege(n.oid, 'USAGE') AND (to_regclass(?) IS NOT NULL OR has_schema_privilege(n.oid, 'CREATE'))"
                + " FROM pg_namespace n WHERE n.nspname = ?),"
                + " CASE WHEN to_regclass(?) IS NULL THEN true ELSE has_table_privilege(to_regclass(?), 'SELECT')"
                + " AND has_table_privilege(to_regclass(?), 'INSERT') AND has_table_privilege(to_regclass(?), 'UPDATE') END,"
                + " has_database_privilege(current_database(), 'TEMP')")) {
            for (int i = 1; i <= 6; i++) {
                ps.setString(i, i == 2 ? config.stateSchema() : checkpointTable);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (rs.getBoolean(1)) {
                    throw stateError(new SQLException("transactions are read-only there", "25006"));
                }
                boolean schemaUsable = rs.getObject(3) == null ? rs.getBoolean(2) : rs.getBoolean(3);
                if (!schemaUsable) {
                    throw stateError(new SQLException("permission denied to create or use " + checkpointTable, "42501"));
                }
                String user = Ident.quote(config.user());
                if (!rs.getBoolean(4)) {
                    throw new MillraceException(Kind.PERMISSION, "destination '" + config.name() + "' (" + where + "): user '"
                            + config.user() + "' may not read and write " + checkpointTable + ", where Millrace keeps its checkpoint."
                            + " Fix: GRANT SELECT, INSERT, UPDATE ON " + checkpointTable + " TO " + user);
                }
                if (!rs.getBoolean(5)) {
                    throw new MillraceException(Kind.PERMISSION, "destination '" + config.name() + "' (" + where + "): user '"
                            + config.user() + "' may not create temporary tables, which Millrace stages each batch's changes in."
                            + " Fix: GRANT TEMPORARY ON DATABASE " + Ident.quote(where.substring(where.lastIndexOf('/') + 1))
                            + " TO " + user);
                }
            }
        } catch (SQLException e) {
            throw stateError(e);
        } finally {
            disconnect();
        }
    }

    /** An error while preparing the state table or reading the checkpoint. */
    private MillraceException stateError(SQLException e) {
        String msg = scrub(Errors.message(e));
        String head = "destination '" + config.name() + "' (" + where + "): ";
        if (Errors.connectionLost(e)) {
            return new MillraceException(Kind.CONNECTION, head + "the connection was lost: " + msg, e);
        }
        if ("42501".equals(e.getSQLState())) {
            return new MillraceException(Kind.PERMISSION, head + msg + ". User '" + config.user()
                    + "' needs to create schema " + Ident.quote(config.stateSchema()) + " and its checkpoints table,"
                    + " or use them: GRANT CREATE ON DATABASE to it, or create the schema for it (CREATE SCHEMA "
                    + Ident.quote(config.stateSchema()) + " AUTHORIZATION " + Ident.quote(config.user()) + ").", e);
        }
        if ("25006".equals(e.getSQLState())) { // read_only_sql_transaction: a database set read-only, or a standby
            String db = where.substring(where.lastIndexOf('/') + 1);
            return new MillraceException(Kind.TARGET_SETUP, head + msg + ". The destination database is read-only for user '"
                    + config.user() + "' (default_transaction_read_only, or a standby in recovery): point the destination at a primary,"
                    + " or let the user write there (ALTER ROLE " + Ident.quote(config.user()) + " IN DATABASE " + Ident.quote(db)
                    + " SET default_transaction_read_only = off).", e);
        }
        return new MillraceException(Kind.SINK, head + "could not prepare or read the checkpoint table "
                + checkpointTable + ": " + msg, e);
    }

    /** Never let the password through, even if a driver message were to echo it. */
    private String scrub(String message) {
        return config.password().scrub(message);
    }

    /** {@code host:port/database} from the URL, for messages; never its query string (could hold secrets). */
    static String describe(String jdbcUrl) {
        try {
            Properties p = org.postgresql.Driver.parseURL(jdbcUrl, null);
            if (p != null) {
                return p.getProperty("PGHOST", "localhost") + ":" + p.getProperty("PGPORT", "5432") + "/"
                        + p.getProperty("PGDBNAME", "");
            }
        } catch (RuntimeException ignored) {
            // fall through
        }
        return "the host in jdbcUrl";
    }

    /** Keyed changes applied through a COPY in binary and in text format since open (tests). Writer thread. */
    long[] copyFormats() {
        return applier == null ? new long[]{0, 0} : applier.copyFormats();
    }
}
