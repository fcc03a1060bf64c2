package io.millrace.api;

import io.millrace.core.Secret;
import io.millrace.core.schema.TableRef;
import io.millrace.engine.config.Limit;
import io.millrace.engine.config.Secrets;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

/**
 * Where and how to read the source database: connection, replication slot, publication and the tables to capture.
 * Immutable; made by {@link #builder()}, which checks each value where it is given and the combination in
 * {@link Builder#build()}, with the messages the YAML configuration's {@code source:} section gives.
 */
public final class SourceSettings {
    /** How {@code pgoutput} sends values: binary where possible, always, or never (text). */
    public enum BinaryMode {
        /** Binary when the server supports it (PostgreSQL 14+) and every captured column's type has a binary codec. */
        AUTO,
        /** Always binary; a type without a binary codec is an error at start. */
        ON,
        /** Always text. */
        OFF
    }

    /** What a start does when the slot was lost ({@code wal_status = lost}) or dropped while the destinations hold checkpoints. */
    public enum OnSlotLost {
        /** Stop with the error and its fix; nothing is written (the default). */
        STOP,
        /**
         * Create a new slot, re-bind the checkpoints to it, and copy every captured table again online while streaming,
         * deleting in the destinations the rows the source no longer has (see docs/EVENTS.md for what each destination gets).
         */
        RESNAPSHOT
    }

    /** Which server the slot is on and the changes and the initial snapshot are read from ({@code capture_from}). */
    public enum CaptureFrom {
        /** The primary among {@code hosts} (the default). */
        PRIMARY,
        /**
         * A standby among {@code hosts} (PostgreSQL 16+ logical decoding on a standby): the slot, the decoding and the initial
         * snapshot are on the standby, sparing the primary; what must write (the publication, online-snapshot watermarks,
         * the pipeline lock) goes to the primary, and online-snapshot chunks are read there.
         */
        STANDBY
    }

    private final String host;
    private final int port;
    private final String database;
    private final String user;
    private final Secret password;
    private final String slot;
    private final String publication;
    private final List<TableRef> tables;
    private final List<TableRef> excludeTables;
    private final boolean createPublication;
    private final BinaryMode binary;
    private final OnSlotLost onSlotLost;
    private final int statusIntervalMs;
    private final String sslMode;
    private final Path sslRootCert;
    private final int socketTimeoutS;
    private final int newTablesPollS;
    private final List<String> hosts;
    private final boolean failover;
    private final CaptureFrom captureFrom;

    private SourceSettings(Builder b, Secret password) {
        this.host = b.host;
        this.port = b.port;
        this.database = b.database;
        this.user = b.user;
        this.password = password;
        this.slot = b.slot;
        this.publication = b.publication;
        this.tables = b.tables;
        this.excludeTables = b.excludeTables;
        this.createPublication = b.createPublication;
        this.binary = b.binary;
        this.onSlotLost = b.onSlotLost;
        this.statusIntervalMs = b.statusIntervalMs;
        this.sslMode = b.sslMode;
        this.sslRootCert = b.sslRootCert;
        this.socketTimeoutS = b.socketTimeoutS;
        this.newTablesPollS = b.newTablesPollS;
        this.hosts = b.hosts != null ? b.hosts : List.of(hostPort(b.host, b.port));
        this.failover = b.failover;
        this.captureFrom = b.captureFrom;
    }

    private static String hostPort(String host, int port) {
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }

    /** A builder with the defaults of the YAML configuration; {@code database} and {@code user} must be set. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The servers that may be the primary, as {@code host:port}, in the order they are tried ({@code hosts}); the one of
     * {@link #host()} and {@link #port()} when {@code hosts} is not given. Every connection goes to the one that is the
     * primary (not in recovery), looked up again after a lost connection: after a failover, the promoted standby.
     */
    public List<String> hosts() {
        return hosts;
    }

    /** Whether the slot is a failover slot synchronised to standbys ({@code failover}, PostgreSQL 17+; default false). */
    public boolean failover() {
        return failover;
    }

    /** Which server the slot is on and the stream and the initial snapshot are read from ({@code capture_from}, default primary). */
    public CaptureFrom captureFrom() {
        return captureFrom;
    }

    /** The server's host name or address ({@code host}, default 127.0.0.1; with {@code hosts}, the first of them). */
    public String host() {
        return host;
    }

    /** The server's port ({@code port}, default 5432). */
    public int port() {
        return port;
    }

    /** The database to capture ({@code database}). */
    public String database() {
        return database;
    }

    /** The user to connect as ({@code user}); it needs the REPLICATION attribute. */
    public String user() {
        return user;
    }

    /** The password, or {@link Secret#NONE}. */
    public Secret password() {
        return password;
    }

    /** The logical replication slot ({@code slot}, default {@code millrace}). */
    public String slot() {
        return slot;
    }

    /** The publication ({@code publication}, default {@code millrace}). */
    public String publication() {
        return publication;
    }

    /** The tables or patterns to capture; empty: the tables of the existing publication. */
    public List<TableRef> tables() {
        return tables;
    }

    /** Tables or patterns left out of {@link #tables()}. */
    public List<TableRef> excludeTables() {
        return excludeTables;
    }

    /** Whether Millrace creates the publication (and adds tables to it) when it is missing ({@code create_publication}). */
    public boolean createPublication() {
        return createPublication;
    }

    /** How values are sent ({@code binary}). */
    public BinaryMode binary() {
        return binary;
    }

    /** What a start does with a lost or dropped slot ({@code on_slot_lost}, default {@code stop}). */
    public OnSlotLost onSlotLost() {
        return onSlotLost;
    }

    /** How often the slot's position is reported to the server ({@code status_interval_ms}). */
    public int statusIntervalMs() {
        return statusIntervalMs;
    }

    /**
     * How often, in seconds, the catalog is looked at for tables created (or renamed) that {@code tables} selects and the
     * pipeline does not capture yet ({@code new_tables_poll_s}, default 10; 0: never — with the DDL event trigger installed
     * a new table is found in the stream all the same).
     */
    public int newTablesPollS() {
        return newTablesPollS;
    }

    /** The TLS mode ({@code ssl.mode}, as libpq spells it), or null for the driver's default. */
    public String sslMode() {
        return sslMode;
    }

    /** The certificate of the authority the server's certificate is checked against ({@code ssl.root_cert}), or null. */
    public Path sslRootCert() {
        return sslRootCert;
    }

    /** Seconds a regular source connection may receive nothing before it is given up as lost ({@code socket_timeout_s}; 0: never). */
    public int socketTimeoutS() {
        return socketTimeoutS;
    }

    /**
     * Builds {@link SourceSettings}. Each setter checks its value and throws a {@link io.millrace.core.MillraceException}
     * of kind {@code CONFIG} naming the setting (e.g. {@code config: source.port must be from 1 to 65535, got 0}).
     * Not thread-safe.
     */
    public static final class Builder {
        private String host = "127.0.0.1";
        private int port = 5432;
        private String database;
        private String user;
        private Secret password = Secret.NONE;
        private String passwordEnv;
        private Path passwordFile;
        private Function<String, String> env = System::getenv;
        private String slot = "millrace";
        private String publication = "millrace";
        private List<TableRef> tables = List.of();
        private List<TableRef> excludeTables = List.of();
        private boolean createPublication = true;
        private BinaryMode binary = BinaryMode.AUTO;
        private OnSlotLost onSlotLost = OnSlotLost.STOP;
        private int statusIntervalMs = 10_000;
        private String sslMode;
        private Path sslRootCert;
        private int socketTimeoutS = 600;
        private int newTablesPollS = 10;
        private List<String> hosts;
        private boolean hostOrPortSet;
        private boolean failover;
        private CaptureFrom captureFrom = CaptureFrom.PRIMARY;

        private Builder() {
        }

        public Builder host(String host) {
            this.host = Check.text("source.host", host);
            hostOrPortSet = true;
            return this;
        }

        public Builder port(int port) {
            this.port = Check.range(Limit.SOURCE_PORT, "source.port", port);
            hostOrPortSet = true;
            return this;
        }

        /**
         * Several servers, each {@code host:port} ({@code [::1]:5432} for an IPv6 address), the primary and its standbys: the
         * engine connects to whichever is the primary. Instead of {@link #host} and {@link #port}.
         */
        public Builder hosts(List<String> hosts) {
            Check.given("source.hosts", hosts);
            if (hosts.isEmpty()) {
                throw Check.error("source.hosts", "is an empty list: give the servers as host:port, e.g. hosts: [db1:5432, db2:5432]");
            }
            List<String> out = new java.util.ArrayList<>();
            String firstHost = null;
            int firstPort = 0;
            for (String h : hosts) {
                int colon = h == null ? -1 : h.lastIndexOf(':');
                String name = colon <= 0 ? null : h.substring(0, colon);
                if (name != null && name.startsWith("[") && name.endsWith("]")) {
                    name = name.substring(1, name.length() - 1);
                }
                int p = -1;
                try {
                    p = colon <= 0 ? -1 : Integer.parseInt(h.substring(colon + 1));
                } catch (NumberFormatException ignored) {
                    // said below
                }
                if (name == null || name.isBlank() || p < 1 || p > 65535) {
                    throw Check.error("source.hosts", "must be a list of host:port (port 1 to 65535), e.g. [db1:5432, db2:5432]; got '"
                            + h + "'");
                }
                String norm = hostPort(name, p);
                if (out.contains(norm)) {
                    throw Check.error("source.hosts", "lists " + norm + " twice");
                }
                out.add(norm);
                if (firstHost == null) {
                    firstHost = name;
                    firstPort = p;
                }
            }
            this.hosts = List.copyOf(out);
            this.host = firstHost;
            this.port = firstPort;
            return this;
        }

        /** A failover slot (PostgreSQL 17+): created with {@code FAILOVER}, so that standbys synchronise it. */
        public Builder failover(boolean failover) {
            this.failover = failover;
            return this;
        }

        /**
         * {@link CaptureFrom#STANDBY}: the slot and the snapshot on a standby listed in {@link #hosts} (PostgreSQL 16+), the
         * writes on the primary listed beside it.
         */
        public Builder captureFrom(CaptureFrom from) {
            this.captureFrom = Check.given("source.capture_from", from);
            return this;
        }

        public Builder database(String database) {
            this.database = Check.text("source.database", database);
            return this;
        }

        public Builder user(String user) {
            this.user = Check.text("source.user", user);
            return this;
        }

        /** The password itself (from a vault, say); at most one of this, {@link #passwordEnv} and {@link #passwordFile}. */
        public Builder password(Secret password) {
            this.password = Check.given("source.password", password);
            return this;
        }

        /** The environment variable that holds the password ({@code password_env}); read by {@link #build()}. */
        public Builder passwordEnv(String variable) {
            this.passwordEnv = Check.text("source.password_env", variable);
            return this;
        }

        /** The file that holds the password ({@code password_file}); read by {@link #build()}. */
        public Builder passwordFile(Path file) {
            this.passwordFile = Check.given("source.password_file", file);
            return this;
        }

        /** Where {@link #passwordEnv} is looked up; {@code System::getenv} by default. */
        public Builder environment(Function<String, String> env) {
            this.env = Check.given("environment", env);
            return this;
        }

        public Builder slot(String slot) {
            Check.text("source.slot", slot);
            if (!slot.matches("[a-z0-9_]{1,63}")) {
                throw Check.error("source.slot", "must be 1 to 63 lower-case letters, digits or underscores (a PostgreSQL slot name), got '"
                        + slot + "'");
            }
            this.slot = slot;
            return this;
        }

        public Builder publication(String publication) {
            this.publication = Check.text("source.publication", publication);
            return this;
        }

        /** The tables to capture, by name or pattern ({@code public.orders}, {@code public.*}); at least one. */
        public Builder tables(String... tables) {
            return tables(Arrays.asList(tables));
        }

        /** As {@link #tables(String...)}. */
        public Builder tables(List<String> tables) {
            List<TableRef> t = Check.tables("source.tables", tables);
            if (t.isEmpty()) {
                // Absent, the setting means "every table of the existing publication"; an empty list is never that.
                throw Check.error("source.tables", "is an empty list: name the tables to capture (e.g. tables: [public.orders] or"
                        + " tables: ['public.*']), or remove source.tables to capture the tables of the existing publication");
            }
            this.tables = t;
            return this;
        }

        public Builder excludeTables(String... tables) {
            return excludeTables(Arrays.asList(tables));
        }

        public Builder excludeTables(List<String> tables) {
            this.excludeTables = Check.tables("source.exclude_tables", tables);
            return this;
        }

        public Builder createPublication(boolean create) {
            this.createPublication = create;
            return this;
        }

        public Builder binary(BinaryMode binary) {
            this.binary = Check.given("source.binary", binary);
            return this;
        }

        public Builder onSlotLost(OnSlotLost action) {
            this.onSlotLost = Check.given("source.on_slot_lost", action);
            return this;
        }

        public Builder newTablesPollS(int seconds) {
            this.newTablesPollS = Check.range(Limit.SOURCE_NEW_TABLES_POLL_S, "source.new_tables_poll_s", seconds);
            return this;
        }

        public Builder statusIntervalMs(int millis) {
            this.statusIntervalMs = Check.range(Limit.SOURCE_STATUS_INTERVAL_MS, "source.status_interval_ms", millis);
            return this;
        }

        /** One of disable, allow, prefer, require, verify-ca, verify-full. */
        public Builder sslMode(String mode) {
            Check.text("source.ssl.mode", mode);
            if (!List.of("disable", "allow", "prefer", "require", "verify-ca", "verify-full").contains(mode)) {
                throw Check.error("source.ssl.mode", "must be one of disable, allow, prefer, require, verify-ca, verify-full; got '" + mode + "'");
            }
            this.sslMode = mode;
            return this;
        }

        public Builder sslRootCert(Path file) {
            this.sslRootCert = Check.given("source.ssl.root_cert", file);
            if (!java.nio.file.Files.isReadable(file)) {
                // said at once: the driver's "Could not open SSL root certificate file" was retried as a lost connection for
                // minutes, then exit 3 (found by a user)
                throw Check.error("source.ssl.root_cert", "file " + file.toAbsolutePath() + " does not exist or cannot be read (the"
                        + " certificate of the authority that signed the server's certificate, PEM)");
            }
            return this;
        }

        public Builder socketTimeoutS(int seconds) {
            this.socketTimeoutS = Check.range(Limit.SOURCE_SOCKET_TIMEOUT_S, "source.socket_timeout_s", seconds);
            return this;
        }

        /** Checks the combination, reads the password from its variable or file, and returns the settings. */
        public SourceSettings build() {
            if (database == null) {
                throw Check.required("source.database", "database", "app");
            }
            if (user == null) {
                throw Check.required("source.user", "user", "millrace");
            }
            if (hosts != null && hostOrPortSet) {
                throw Check.error("source.hosts", "and source.host / source.port are both given: list every server under source.hosts"
                        + " (host:port) and remove source.host and source.port");
            }
            if (captureFrom == CaptureFrom.STANDBY && (hosts == null || hosts.size() < 2)) {
                throw Check.error("source.capture_from", "is standby, which needs source.hosts to list the primary and the standby"
                        + " (e.g. hosts: [db1:5432, db2:5432]): the slot and the snapshot are on the standby, while the publication,"
                        + " the online-snapshot watermarks and the pipeline lock are written on the primary");
            }
            if (captureFrom == CaptureFrom.STANDBY && failover) {
                throw Check.error("source.capture_from", "is standby together with source.failover: true; PostgreSQL makes no failover"
                        + " slot on a standby. Remove one: a slot on a standby already survives that standby's promotion");
            }
            if (passwordEnv != null && passwordFile != null) {
                throw Secrets.both("source.password_env", "source.password_file");
            }
            if (!password.isEmpty() && (passwordEnv != null || passwordFile != null)) {
                throw Secrets.both("source.password", passwordEnv != null ? "source.password_env" : "source.password_file");
            }
            Secret pw = password;
            if (passwordEnv != null) {
                pw = Secrets.passwordFromEnv("source.password_env", passwordEnv, env);
            } else if (passwordFile != null) {
                pw = Secrets.fromFile("source.password_file", passwordFile);
            }
            return new SourceSettings(this, pw);
        }
    }
}
