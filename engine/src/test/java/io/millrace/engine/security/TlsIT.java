package io.millrace.engine.security;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.Supervisor;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * TLS to the source with {@code source.ssl: {mode: verify-full, root_cert: ca.crt}} against an embedded PostgreSQL
 * with {@code ssl = on} and a server certificate signed by a self-signed test CA (made with the {@code openssl} CLI;
 * skipped without it). With the right CA the pipeline streams, and the server reports its replication connection
 * as TLS; with another CA, or a certificate for another host name, the start fails at once with a configuration
 * error that names {@code source.ssl.root_cert} / the host, and the {@link Supervisor} does not retry it.
 */
class TlsIT {
    private static Path certs;
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() throws Exception {
        E2e.init();
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/openssl")) || which("openssl"), "openssl CLI not found");
        certs = Files.createTempDirectory("millrace-tls");
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Millrace Test CA",
                "-keyout", "ca.key", "-out", "ca.crt");
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Other CA",
                "-keyout", "other-ca.key", "-out", "other-ca.crt");
        serverCert("server", "subjectAltName=IP:127.0.0.1");
        serverCert("wrongname", "subjectAltName=DNS:db.example.test");
        for (String k : List.of("server.key", "wrongname.key")) {
            Files.setPosixFilePermissions(certs.resolve(k), PosixFilePermissions.fromString("rw-------"));
        }
        pg = EmbeddedPg.builder().major(17).setting("ssl", "on").setting("ssl_cert_file", certs.resolve("server.crt").toString())
                .setting("ssl_key_file", certs.resolve("server.key").toString()).start();
        pg.createDatabase("tls_src");
        pg.execute("tls_src", "CREATE TABLE items (id int PRIMARY KEY, v text)", "INSERT INTO items VALUES (1, 'one')");
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    private static void serverCert(String name, String san) throws Exception {
        Files.writeString(certs.resolve(name + ".ext"), san + "\n");
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + name, "-keyout", name + ".key", "-out", name + ".csr");
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
                "-extfile", name + ".ext", "-out", name + ".crt");
    }

    private static void openssl(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("openssl"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).directory(certs.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("openssl %s: %s", cmd, out).isZero();
    }

    private static boolean which(String tool) {
        try {
            return new ProcessBuilder("which", tool).start().waitFor() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    private static String yaml(String slot, String mode, String rootCert, Path out) {
        return String.join("\n",
                "name: tls",
                "source:",
                "  host: 127.0.0.1",
                "  port: " + pg.port(),
                "  database: tls_src",
                "  user: postgres",
                "  slot: " + slot,
                "  publication: " + slot,
                "  tables: [public.items]",
                "  ssl:",
                "    mode: " + mode,
                "    root_cert: " + rootCert,
                "destinations:",
                "  - name: files",
                "    type: jsonl",
                "    directory: " + out,
                "operations:",
                "  retry: {initial_ms: 10, max_ms: 20, attempts: 3}",
                "");
    }

    @Test
    void verifyFullWithTheRightCaStreamsOverTls() throws Exception {
        Path out = Files.createTempDirectory("millrace-tls-out");
        try (RunningEngine run = RunningEngine.start(yaml("tls_ok", "verify-full", certs.resolve("ca.crt").toString(), out), out)) {
            run.awaitStreaming(Duration.ofSeconds(60));
            pg.execute("tls_src", "INSERT INTO items VALUES (2, 'over tls')");
            E2e.awaitEvent(out, e -> "over tls".equals(E2e.row(e).path("v").asText()), "the streamed row", Duration.ofSeconds(30));
            try (Connection c = pg.connect("postgres")) {
                assertThat(E2e.queryString(c, "SELECT string_agg(s.ssl::text || '/' || s.version, ',') FROM pg_stat_replication r"
                        + " JOIN pg_stat_ssl s USING (pid) WHERE r.application_name = 'millrace'"))
                        .as("the replication connection as the server sees it").startsWith("true/TLS");
            }
        }
    }

    @Test
    void anotherCaFailsClearlyAndIsNotRetried() throws Exception {
        Path out = Files.createTempDirectory("millrace-tls-out");
        MillraceException e = failure(yaml("tls_ca", "verify-full", certs.resolve("other-ca.crt").toString(), out), out);
        assertThat(e.kind()).isEqualTo(Kind.CONFIG);
        assertThat(e.getMessage()).contains("127.0.0.1:" + pg.port() + "/tls_src").contains("TLS")
                .contains("certificate").contains("source.ssl.root_cert");
    }

    @Test
    void aCertificateForAnotherHostFailsClearlyUnderVerifyFullButPassesVerifyCa() throws Exception {
        Path out = Files.createTempDirectory("millrace-tls-out");
        // the server's certificate files are replaced and reloaded (SIGHUP reloads TLS files); they come from the
        // command line, so ALTER SYSTEM cannot point elsewhere
        byte[] crt = Files.readAllBytes(certs.resolve("server.crt"));
        byte[] key = Files.readAllBytes(certs.resolve("server.key"));
        Files.copy(certs.resolve("wrongname.crt"), certs.resolve("server.crt"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        Files.copy(certs.resolve("wrongname.key"), certs.resolve("server.key"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        pg.execute("postgres", "SELECT pg_reload_conf()");
        try {
            Thread.sleep(500);
            MillraceException e = failure(yaml("tls_host", "verify-full", certs.resolve("ca.crt").toString(), out), out);
            assertThat(e.kind()).isEqualTo(Kind.CONFIG);
            assertThat(e.getMessage()).contains("TLS").contains("127.0.0.1").contains("source.host");
            // verify-ca checks the chain only: the same certificate passes
            try (RunningEngine run = RunningEngine.start(yaml("tls_ca_only", "verify-ca", certs.resolve("ca.crt").toString(), out), out)) {
                run.awaitStreaming(Duration.ofSeconds(60));
            }
        } finally {
            Files.write(certs.resolve("server.crt"), crt);
            Files.write(certs.resolve("server.key"), key);
            pg.execute("postgres", "SELECT pg_reload_conf()");
            Thread.sleep(500);
        }
    }

    /** Runs the pipeline under a Supervisor and returns the error it stopped with; a CONFIG error is not retried. */
    private static MillraceException failure(String yaml, Path base) throws Exception {
        Supervisor s = new Supervisor(new io.millrace.engine.config.ConfigLoader(java.util.Map.<String, String>of()::get).parse(yaml, base));
        java.util.concurrent.atomic.AtomicReference<Throwable> error = new java.util.concurrent.atomic.AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                s.run();
            } catch (Throwable e) {
                error.set(e);
            }
        });
        t.start();
        t.join(60_000);
        if (t.isAlive()) {
            s.stop();
            t.join(30_000);
            throw new AssertionError("the pipeline started (or still runs) where TLS must fail: " + s.status());
        }
        if (error.get() instanceof MillraceException e) {
            assertThat(s.restarts()).as("restarts after %s", e.getMessage()).isZero();
            return e;
        }
        throw new AssertionError("the pipeline ended without a MillraceException: " + error.get(), error.get());
    }
}
