package io.millrace.ops;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Masked and left-out columns, through the initial snapshot, the stream and an online re-copy, into a postgres and a
 * jsonl destination: every clear value of the source holds the marker {@value #CLEAR}, and afterwards no output holds
 * it — the destination database (every table, the checkpoints too), the jsonl files, the log, {@code /status}, the
 * status page and {@code /metrics}. The destination holds the masked values (HMAC-SHA256 hex under the salt, the
 * redaction mark, the truncated prefix), and a key column masked by hash keys its rows consistently: updates and
 * deletes by key reach the same destination row.
 */
class MaskedValuesIT {
    private static final String CLEAR = "CLEARVAL";
    private static final String SALT = "salt-not-in-any-output-0123";
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().major(17).setting("synchronous_commit", "on").start();
        pg.createDatabase("msk");
        pg.createDatabase("msk_dst");
        pg.execute("msk",
                "CREATE TABLE public.customers (id int PRIMARY KEY, email text, ssn text, phone text, notes text, born date)",
                "ALTER TABLE public.customers REPLICA IDENTITY FULL", // the before image carries every column: masked too
                "INSERT INTO public.customers SELECT g, 'user' || g || '-" + CLEAR + "@example.com', '" + CLEAR + "-ssn-' || g,"
                        + " '555" + CLEAR + "' || g, 'note " + CLEAR + " ' || g, date '1990-01-01' + g FROM generate_series(1, 200) g",
                "CREATE TABLE public.tokens (token text PRIMARY KEY, v int)",
                "INSERT INTO public.tokens SELECT 'tok-" + CLEAR + "-' || g, g FROM generate_series(1, 50) g");
    }

    @AfterAll
    static void stop() {
        pg.close();
    }

    private static String hmac(String s) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(SALT.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        return HexFormat.of().formatHex(mac.doFinal(s.getBytes(StandardCharsets.UTF_8)));
    }

    private static String query(String db, String sql) throws Exception {
        try (Connection c = pg.connect(db); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        }
    }

    private static void await(String db, String sql, String expected) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        String got;
        while (!String.valueOf(got = query(db, sql)).equals(expected)) {
            assertThat(System.currentTimeMillis()).as("%s = %s (got %s)", sql, expected, got).isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    /** Every row of every table of the destination database, as text. */
    private static String destinationDump() throws Exception {
        StringBuilder out = new StringBuilder();
        List<String> tables = new ArrayList<>();
        try (Connection c = pg.connect("msk_dst"); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT format('%I.%I', table_schema, table_name) FROM information_schema.tables"
                    + " WHERE table_schema NOT IN ('pg_catalog', 'information_schema')")) {
                while (rs.next()) {
                    tables.add(rs.getString(1));
                }
            }
            for (String t : tables) {
                try (ResultSet rs = s.executeQuery("SELECT t::text FROM " + t + " t")) {
                    while (rs.next()) {
                        out.append(t).append(' ').append(rs.getString(1)).append('\n');
                    }
                }
            }
        }
        assertThat(tables).contains("public.customers", "public.tokens");
        return out.toString();
    }

    private static String files(Path dir) throws Exception {
        StringBuilder out = new StringBuilder();
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path f : s.filter(Files::isRegularFile).toList()) {
                out.append(Files.readString(f, StandardCharsets.ISO_8859_1));
            }
        }
        return out.toString();
    }

    private static String get(int port, String path) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }

    @Test
    void noOutputHoldsAClearValue(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("events");
        String yaml = String.join("\n",
                "name: msk",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: msk, user: postgres, slot: msk, publication: msk,",
                "         tables: [public.customers, public.tokens]}",
                "snapshot: {online: {readers: 2, chunk_rows: 50, min_chunk_rows: 20}}",
                "destinations:",
                "  - {name: replica, type: postgres, host: 127.0.0.1, port: " + pg.port() + ", database: msk_dst, user: postgres}",
                "  - {name: files, type: jsonl, directory: " + out.toAbsolutePath() + "}",
                "pipeline: {linger_ms: 20}",
                "transforms:",
                "  hash_salt_env: MSK_SALT",
                "  tables:",
                "    - match: public.customers",
                "      columns: {exclude: [notes]}",
                "      mask: {email: hash, ssn: redact, phone: truncate(3), born: hash}",
                "    - match: public.tok*",
                "      mask: {token: hash}",
                "");
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        ListAppender<ILoggingEvent> log = new ListAppender<>();
        log.start();
        root.addAppender(log);
        Engine engine = new Engine(new ConfigLoader(Map.of("MSK_SALT", SALT)::get).parse(yaml, dir));
        AtomicReference<Throwable> error = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                engine.run();
            } catch (Throwable e) {
                error.set(e);
            }
        });
        t.start();
        try (StatusServer server = StatusServer.start(engine, "127.0.0.1", 0)) {
            long deadline = System.currentTimeMillis() + 60_000;
            while (engine.state() != Engine.State.STREAMING && System.currentTimeMillis() < deadline && error.get() == null) {
                Thread.sleep(50);
            }
            assertThat(error.get()).isNull();
            // the initial snapshot
            await("msk_dst", "SELECT count(*) FROM public.customers", "200");
            await("msk_dst", "SELECT count(*) FROM public.tokens", "50");
            assertThat(query("msk_dst", "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns"
                    + " WHERE table_name = 'customers'")).as("notes is left out").isEqualTo("id,email,ssn,phone,born");
            assertThat(query("msk_dst", "SELECT email || ' ' || ssn || ' ' || phone || ' ' || born FROM public.customers WHERE id = 7"))
                    .isEqualTo(hmac("user7-" + CLEAR + "@example.com") + " [redacted] 555 " + hmac("1990-01-08"));

            // the stream: an insert, updates (the before image is full: masked as well), deletes by a hashed key
            pg.execute("msk", "INSERT INTO public.customers VALUES (1001, 'new-" + CLEAR + "@example.com', '" + CLEAR + "-9', '999"
                            + CLEAR + "', '" + CLEAR + " n', '2000-01-01')",
                    "UPDATE public.customers SET email = 'changed-" + CLEAR + "@example.com', notes = '" + CLEAR + "x' WHERE id = 1",
                    "UPDATE public.tokens SET v = v * 100 WHERE token = 'tok-" + CLEAR + "-3'",
                    "UPDATE public.tokens SET token = 'tok-" + CLEAR + "-moved' WHERE token = 'tok-" + CLEAR + "-4'",
                    "DELETE FROM public.tokens WHERE token = 'tok-" + CLEAR + "-5'");
            await("msk_dst", "SELECT email FROM public.customers WHERE id = 1", hmac("changed-" + CLEAR + "@example.com"));
            await("msk_dst", "SELECT count(*) FROM public.customers", "201");
            await("msk_dst", "SELECT count(*) FROM public.tokens", "49");
            assertThat(query("msk_dst", "SELECT v FROM public.tokens WHERE token = '" + hmac("tok-" + CLEAR + "-3") + "'")).isEqualTo("300");
            assertThat(query("msk_dst", "SELECT count(*) FROM public.tokens WHERE token IN ('" + hmac("tok-" + CLEAR + "-4") + "', '"
                    + hmac("tok-" + CLEAR + "-5") + "')")).as("the moved and the deleted key are gone").isEqualTo("0");
            assertThat(query("msk_dst", "SELECT v FROM public.tokens WHERE token = '" + hmac("tok-" + CLEAR + "-moved") + "'")).isEqualTo("4");

            // an online re-copy repairs a broken destination with masked values
            pg.execute("msk_dst", "UPDATE public.customers SET ssn = 'broken', phone = 'broken'");
            engine.snapshot(List.of(TableRef.parse("public.customers")), null);
            await("msk_dst", "SELECT count(*) FROM public.customers WHERE ssn = '[redacted]' AND length(phone) = 3", "201");

            List<String> outputs = List.of(destinationDump(), files(out), get(server.port(), "/status"), get(server.port(), "/"),
                    get(server.port(), "/metrics"));
            String jsonl = outputs.get(1);
            assertThat(jsonl).contains(hmac("new-" + CLEAR + "@example.com")).contains("\"op\":\"r\"").contains("\"op\":\"u\"");
            assertThat(outputs.get(4)).contains("millrace_");
            for (String o : outputs) {
                assertThat(o).doesNotContain(CLEAR).doesNotContain(SALT);
            }
        } finally {
            engine.stop();
            t.join(30_000);
            root.detachAppender(log);
        }
        List<String> lines;
        synchronized (log) {
            lines = log.list.stream().map(e -> e.getFormattedMessage() + (e.getThrowableProxy() == null ? "" : e.getThrowableProxy().getMessage()))
                    .toList();
        }
        assertThat(lines).as("the log").isNotEmpty().noneMatch(l -> l.contains(CLEAR) || l.contains(SALT));
        assertThat(error.get()).isNull();
    }
}
