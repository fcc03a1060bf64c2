package io.millrace.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A PostgreSQL server from the machine's own installation, in a fresh data directory under {@code /var/tmp}, with the
 * installation's default settings except what logical replication and loopback need. As root, {@code initdb} and
 * {@code postgres} run as the {@code postgres} OS user through {@code runuser} (PostgreSQL refuses to run as root).
 * Stopped with {@code pg_ctl stop -m fast}, its data directory then deleted.
 */
final class SystemServer implements EmbeddedPg.Server {
    private final Path bin;
    private final Path data;
    private final int port;
    private final boolean asPostgres;

    private SystemServer(Path bin, Path data, int port, boolean asPostgres) {
        this.bin = bin;
        this.data = data;
        this.port = port;
        this.asPostgres = asPostgres;
    }

    static Optional<Path> find() {
        if ("off".equals(System.getProperty("millrace.pg.system"))) {
            return Optional.empty();
        }
        Path root = Path.of("/usr/lib/postgresql");
        if (!Files.isDirectory(root)) {
            return Optional.empty();
        }
        try (Stream<Path> majors = Files.list(root)) {
            return majors.map(m -> m.resolve("bin"))
                    .filter(b -> Files.isExecutable(b.resolve("postgres")) && Files.isExecutable(b.resolve("initdb")))
                    .max(Comparator.comparingInt(SystemServer::major));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** The major version of an installation's {@code bin} folder ({@code .../15/bin}), or 0. */
    static int major(Path bin) {
        try {
            return Integer.parseInt(bin.getParent().getFileName().toString());
        } catch (RuntimeException e) {
            return 0;
        }
    }

    static SystemServer start(Path bin, Map<String, String> settings) {
        boolean root = "root".equals(System.getProperty("user.name"));
        try {
            Path data = Files.createTempDirectory(Path.of("/var/tmp"), "millrace-pg-");
            int port = freePort();
            if (root) {
                exec(List.of("chown", "postgres", data.toString()));
            }
            SystemServer s = new SystemServer(bin, data.resolve("data"), port, root);
            s.runAsOwner(List.of(bin.resolve("initdb").toString(), "-D", s.data.toString(), "-U", "postgres", "-A", "trust",
                    "--no-sync", "-E", "UTF8"));
            StringBuilder conf = new StringBuilder("\n# millrace test server\n")
                    .append("listen_addresses = '127.0.0.1'\nport = ").append(port).append('\n')
                    .append("unix_socket_directories = '").append(s.data).append("'\n")
                    .append("wal_level = logical\nmax_replication_slots = 20\nmax_wal_senders = 20\nmax_connections = 100\n");
            settings.forEach((k, v) -> conf.append(k).append(" = '").append(v.replace("'", "''")).append("'\n"));
            s.appendAsOwner(s.data.resolve("postgresql.conf"), conf.toString());
            s.runAsOwner(List.of(bin.resolve("pg_ctl").toString(), "-D", s.data.toString(), "-l", s.data.resolve("server.log").toString(),
                    "-w", "-t", "60", "start"));
            return s;
        } catch (IOException e) {
            throw new UncheckedIOException("could not start PostgreSQL from " + bin, e);
        }
    }

    @Override
    public int port() {
        return port;
    }

    @Override
    public void close() throws IOException {
        try {
            runAsOwner(List.of(bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-m", "fast", "-w", "stop"));
        } finally {
            try (Stream<Path> files = Files.walk(data.getParent())) {
                for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(f);
                }
            }
        }
    }

    /** Appends to a file of the data directory (root may write it; its owner stays postgres). */
    private void appendAsOwner(Path file, String text) throws IOException {
        Files.writeString(file, text, StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.APPEND);
    }

    /** Runs a server program as the data directory's owner: the postgres OS user when this JVM runs as root. */
    private void runAsOwner(List<String> cmd) throws IOException {
        if (!asPostgres) {
            exec(cmd);
            return;
        }
        List<String> all = new ArrayList<>(List.of("runuser", "-u", "postgres", "--"));
        all.addAll(cmd);
        exec(all);
    }

    private static void exec(List<String> cmd) throws IOException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException(String.join(" ", cmd) + " failed: " + out);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted: " + String.join(" ", cmd), e);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
