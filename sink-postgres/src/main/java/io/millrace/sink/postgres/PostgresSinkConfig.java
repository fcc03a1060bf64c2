package io.millrace.sink.postgres;

import io.millrace.core.MillraceException;
import io.millrace.core.Secret;
import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.Sink;

/**
 * Settings of one {@code postgres} destination. Checked when built: a bad value fails with a
 * message naming the setting (Kind.CONFIG), never silently replaced by a default. The YAML's {@code type: postgres}
 * reads into one ({@link PostgresDestinationProvider}); an application may build one with this constructor.
 *
 * @param name         the destination's name in the configuration; the key of its checkpoint row
 * @param jdbcUrl      {@code jdbc:postgresql://host:port/database}; put no password in it, use {@code password}
 * @param user         the role to connect as
 * @param password     the role's password ({@link Secret#NONE} for trust or peer authentication)
 * @param targetSchema schema that receives every replicated table; {@code null} keeps each table's source schema
 * @param stateSchema  schema of Millrace's own {@code checkpoints} table; {@code null} means {@value #DEFAULT_STATE_SCHEMA}
 * @param replicaRole  whether the sink's sessions run with {@code session_replication_role = replica}
 *                     ({@code session_replication_role: replica}): the target's triggers and foreign keys do not fire
 *                     for replicated changes, as for a logical-replication subscriber (used by {@code millrace migrate});
 *                     the role needs superuser, or on PostgreSQL 15+ {@code GRANT SET ON PARAMETER session_replication_role}
 * @param dropTables   {@code drop_tables}: a table dropped in the source (told by the DDL event trigger) is dropped here
 *                     too, in order with the data; false (the default) keeps the copy
 * @param readWrite    whether the sink's sessions set {@code default_transaction_read_only = off}, so that they write
 *                     into a database whose default is read-only: the old primary a migration's cutover fenced, which
 *                     {@code millrace migrate reverse} streams the new primary's changes back into. False (the default,
 *                     and the only value the YAML gives) leaves the database's own default in force
 */
public record PostgresSinkConfig(String name, String jdbcUrl, String user, Secret password, String targetSchema,
                                 String stateSchema, boolean replicaRole, boolean dropTables, boolean readWrite)
        implements DestinationConfig {
    public static final String DEFAULT_STATE_SCHEMA = "millrace";

    /** Sessions with the default {@code session_replication_role} (origin): triggers and foreign keys fire. */
    public PostgresSinkConfig(String name, String jdbcUrl, String user, Secret password, String targetSchema, String stateSchema) {
        this(name, jdbcUrl, user, password, targetSchema, stateSchema, false, false, false);
    }

    /** As the canonical constructor, with the database's own {@code default_transaction_read_only} in force. */
    public PostgresSinkConfig(String name, String jdbcUrl, String user, Secret password, String targetSchema, String stateSchema,
                              boolean replicaRole, boolean dropTables) {
        this(name, jdbcUrl, user, password, targetSchema, stateSchema, replicaRole, dropTables, false);
    }

    public PostgresSinkConfig {
        if (name == null || name.isBlank()) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "postgres destination: 'name' must not be empty");
        }
        if (jdbcUrl == null || !jdbcUrl.startsWith("jdbc:postgresql:")) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name
                    + "': 'jdbcUrl' must look like jdbc:postgresql://host:5432/database");
        }
        if (user == null || user.isBlank()) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name + "': 'user' must not be empty");
        }
        if (password == null) {
            password = Secret.NONE;
        }
        if (targetSchema != null && targetSchema.isEmpty()) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name
                    + "': 'targetSchema' must not be empty (leave it unset to keep each table's source schema)");
        }
        if (stateSchema == null) {
            stateSchema = DEFAULT_STATE_SCHEMA;
        } else if (stateSchema.isEmpty()) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name
                    + "': 'stateSchema' must not be empty (leave it unset for '" + DEFAULT_STATE_SCHEMA + "')");
        }
    }

    /** Each table under its source schema, Millrace's bookkeeping in {@value #DEFAULT_STATE_SCHEMA}. */
    public static PostgresSinkConfig of(String name, String jdbcUrl, String user, Secret password) {
        return new PostgresSinkConfig(name, jdbcUrl, user, password, null, null);
    }

    /** The same destination, its sessions with {@code session_replication_role = replica} or not. */
    public PostgresSinkConfig withReplicaRole(boolean replica) {
        return new PostgresSinkConfig(name, jdbcUrl, user, password, targetSchema, stateSchema, replica, dropTables, readWrite);
    }

    /** The same destination, its sessions setting {@code default_transaction_read_only = off} or not. */
    public PostgresSinkConfig withReadWrite(boolean readWrite) {
        return new PostgresSinkConfig(name, jdbcUrl, user, password, targetSchema, stateSchema, replicaRole, dropTables, readWrite);
    }

    @Override
    public String type() {
        return PostgresDestinationProvider.TYPE;
    }

    @Override
    public Sink newSink() {
        return new PostgresSink(this);
    }

    /** Connects as the sink does and checks that it could write (see {@link PostgresSink#preflight()}). */
    @Override
    public void preflight() {
        new PostgresSink(this).preflight();
    }

    /** Without the URL's query string, which could hold connection secrets. */
    @Override
    public String toString() {
        int q = jdbcUrl.indexOf('?');
        return "PostgresSinkConfig[name=" + name + ", jdbcUrl=" + (q < 0 ? jdbcUrl : jdbcUrl.substring(0, q) + "?…")
                + ", user=" + user + ", password=" + password + ", targetSchema=" + targetSchema
                + ", stateSchema=" + stateSchema + ", replicaRole=" + replicaRole + ", dropTables=" + dropTables
                + ", readWrite=" + readWrite + "]";
    }
}
