package io.millrace.source;

import io.millrace.core.Secret;
import io.millrace.core.schema.TableRef;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * How to reach and read the source database. Immutable; validated where it is built (engine config).
 *
 * @param host              server host
 * @param port              server port
 * @param database          database to capture
 * @param user              role; needs REPLICATION (or superuser) and SELECT on the tables
 * @param password          the role's password (never printed)
 * @param slot              logical replication slot name
 * @param publication       publication name
 * @param tables            tables to capture (names or patterns with * and ?); empty = every table of an existing publication
 * @param excludeTables     tables (names or patterns) left out of {@code tables}
 * @param createPublication create the publication for {@code tables} when it is missing
 * @param binary            ask pgoutput for binary values (PG14+)
 * @param statusInterval    how often the reader reports its flushed position to the server
 * @param jdbcProperties    extra pgjdbc properties (sslmode, sslrootcert, ...)
 * @param onSlotLost        what a start does when the slot was invalidated ({@code wal_status = lost}) or dropped while the
 *                          destinations hold checkpoints of it
 * @param newTablesPoll     how often the catalog is looked at for new tables {@code tables} selects; zero: never
 * @param hosts             the servers that may be the primary, in the order they are tried ({@code source.hosts}); one
 *                          ({@code host:port}) when a single server is configured. {@code host} and {@code port} are the first.
 * @param failover          the slot is a failover slot (PostgreSQL 17+), synchronised to standbys ({@code source.failover})
 * @param fromStandby       the slot, the stream and the initial snapshot are on a standby among {@code hosts}, the writes on
 *                          the primary among them ({@code source.capture_from: standby}, PostgreSQL 16+)
 */
public record SourceConfig(String host, int port, String database, String user, Secret password, String slot,
                           String publication, List<TableRef> tables, List<TableRef> excludeTables, boolean createPublication, BinaryMode binary,
                           Duration statusInterval, Map<String, String> jdbcProperties, OnSlotLost onSlotLost, Duration newTablesPoll,
                           List<HostPort> hosts, boolean failover, boolean fromStandby) {

    /** {@code source.on_slot_lost}. */
    public enum OnSlotLost {
        /** Stop with the error and its fix (the default): nothing is written. */
        STOP,
        /** Create a new slot, re-bind the checkpoints to it and re-copy every captured table online, reconciling the destinations. */
        RESNAPSHOT
    }

    /** A server address of {@code source.hosts}. */
    public record HostPort(String host, int port) {
        @Override
        public String toString() {
            return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
        }
    }

    /** A single server, no failover slot. */
    public SourceConfig(String host, int port, String database, String user, Secret password, String slot, String publication,
                        List<TableRef> tables, List<TableRef> excludeTables, boolean createPublication, BinaryMode binary,
                        Duration statusInterval, Map<String, String> jdbcProperties) {
        this(host, port, database, user, password, slot, publication, tables, excludeTables, createPublication, binary, statusInterval,
                jdbcProperties, OnSlotLost.STOP, null, null, false, false);
    }

    public SourceConfig(String host, int port, String database, String user, Secret password, String slot, String publication,
                        List<TableRef> tables, List<TableRef> excludeTables, boolean createPublication, BinaryMode binary,
                        Duration statusInterval, Map<String, String> jdbcProperties, OnSlotLost onSlotLost) {
        this(host, port, database, user, password, slot, publication, tables, excludeTables, createPublication, binary, statusInterval,
                jdbcProperties, onSlotLost, null, null, false, false);
    }

    public SourceConfig(String host, int port, String database, String user, Secret password, String slot, String publication,
                        List<TableRef> tables, List<TableRef> excludeTables, boolean createPublication, BinaryMode binary,
                        Duration statusInterval, Map<String, String> jdbcProperties, List<HostPort> hosts, boolean failover) {
        this(host, port, database, user, password, slot, publication, tables, excludeTables, createPublication, binary, statusInterval,
                jdbcProperties, OnSlotLost.STOP, null, hosts, failover, false);
    }

    public enum BinaryMode {
        /** Binary when the server supports it (PG14+) and every captured column's type has a binary codec. */
        AUTO,
        ON,
        OFF
    }

    public SourceConfig {
        tables = List.copyOf(tables);
        excludeTables = List.copyOf(excludeTables);
        jdbcProperties = Map.copyOf(jdbcProperties);
        onSlotLost = onSlotLost == null ? OnSlotLost.STOP : onSlotLost;
        newTablesPoll = newTablesPoll == null ? Duration.ofSeconds(10) : newTablesPoll;
        hosts = hosts == null || hosts.isEmpty() ? List.of(new HostPort(host, port)) : List.copyOf(hosts);
    }

    /** This configuration selecting {@code tables} less {@code excludeTables} (a reload of the table selection). */
    public SourceConfig withTables(List<TableRef> tables, List<TableRef> excludeTables) {
        return new SourceConfig(host, port, database, user, password, slot, publication, tables, excludeTables, createPublication,
                binary, statusInterval, jdbcProperties, onSlotLost, newTablesPoll, hosts, failover, fromStandby);
    }

    /** {@code host:port/database} ({@code h1:p1,h2:p2/database} with several hosts), for messages (never the password). */
    public String where() {
        return hosts.stream().map(HostPort::toString).collect(java.util.stream.Collectors.joining(",")) + "/" + database;
    }

}
