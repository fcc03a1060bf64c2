package io.millrace.migrate;

import io.millrace.api.Millrace;
import io.millrace.api.SourceSettings;
import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The copy rate of {@code millrace migrate run} (until FOLLOWING: schema, copy, indexes and constraints) beside
 * {@code pg_dump -Fd -j2 -Z0} + {@code pg_restore -j2} and PostgreSQL's native {@code CREATE SUBSCRIPTION ... WITH
 * (copy_data = true)} (until every table's {@code pg_subscription_rel.srsubstate} is {@code r}, the schema made
 * beforehand with {@code pg_dump --schema-only}), from one embedded PostgreSQL 15 server to another, each contestant into
 * an empty target database, contestants interleaved in rounds (the order rotated each round). A measurement when
 * {@code -Dmillrace.migrate.copy.mb=2048} (the source's size in MB, rounds {@code -Dmillrace.migrate.copy.rounds=2});
 * without it a smoke run of a few MB that checks every contestant copied every row and made every index and constraint
 * (no timing asserted). Needs the system's PostgreSQL 15 client binaries ({@code /usr/lib/postgresql/15/bin}, or
 * {@code -Dmillrace.pg15.bin}); skipped without them. docs/BENCHMARKS.md, "Issue 19".
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CopyRateIT {
    static final Path BIN = Path.of(System.getProperty("millrace.pg15.bin", "/usr/lib/postgresql/15/bin"));
    static final List<String> TABLES = List.of("public.customers", "public.orders", "public.events");
    static final String SRC_DB = "copysrc";

    EmbeddedPg src;
    EmbeddedPg tgt;

    @BeforeAll
    void startServers() {
        Assumptions.assumeTrue(Files.isExecutable(BIN.resolve("pg_dump")) && Files.isExecutable(BIN.resolve("pg_restore"))
                && Files.isExecutable(BIN.resolve("psql")), "PostgreSQL 15 client binaries in " + BIN);
        src = server();
        tgt = server();
    }

    /** Embedded PostgreSQL 15 (fsync off, synchronous_commit on: EmbeddedPg's settings), room for a bulk load. */
    static EmbeddedPg server() {
        return EmbeddedPg.builder().major(15).setting("shared_buffers", "256MB").setting("max_wal_size", "8GB")
                .setting("maintenance_work_mem", "256MB").setting("max_logical_replication_workers", "6")
                .setting("max_sync_workers_per_subscription", "2").start();
    }

    @AfterAll
    void stopServers() {
        if (src != null) {
            src.close();
        }
        if (tgt != null) {
            tgt.close();
        }
    }

    @Test
    void copyRateBesidePgDumpAndNativeSubscription() throws Exception {
        int mb = Integer.getInteger("millrace.migrate.copy.mb", 0);
        boolean smoke = mb <= 0;
        int rounds = smoke ? 1 : Integer.getInteger("millrace.migrate.copy.rounds", 2);
        load(smoke ? 4 : mb);
        Map<String, Long> rows = new LinkedHashMap<>();
        for (String t : TABLES) {
            rows.put(t, Servers.count(src, SRC_DB, "SELECT count(*) FROM " + t));
        }
        double sizeMb = Servers.count(src, SRC_DB, "SELECT pg_database_size(current_database())") / 1048576.0;
        log("copy rate: source %.0f MB (pg_database_size, tables with their indexes), rows %s; %d round(s); servers embedded PostgreSQL 15"
                + " (fsync off, synchronous_commit on)", sizeMb, rows, rounds);
        List<String> names = List.of("millrace", "pg_dump|pg_restore", "native");
        Map<String, List<Double>> secs = new LinkedHashMap<>();
        names.forEach(n -> secs.put(n, new ArrayList<>()));
        for (int r = 0; r < rounds; r++) {
            for (int i = 0; i < names.size(); i++) {
                String name = names.get((i + r) % names.size());
                String db = "t_" + name.replaceAll("[^a-z]", "") + "_" + r;
                tgt.createDatabase(db);
                src.execute(SRC_DB, "CHECKPOINT");
                tgt.execute("postgres", "CHECKPOINT");
                String loadavg = loadavg();
                long t0 = System.nanoTime();
                String detail = switch (name) {
                    case "millrace" -> millrace(db, r);
                    case "native" -> nativeSubscription(db, r);
                    default -> pgDump(db, r);
                };
                double s = (System.nanoTime() - t0) / 1e9;
                secs.get(name).add(s);
                check(db, rows);
                log("round %d %-19s %8.1f s %7.1f MB/s  load average before %s, after %s%s", r, name, s, sizeMb / s, loadavg, loadavg(), detail);
                tgt.execute("postgres", "DROP DATABASE " + db + " WITH (FORCE)");
            }
        }
        double dump = median(secs.get("pg_dump|pg_restore"));
        double nat = median(secs.get("native"));
        log("| contestant | seconds (median of %d) | all | MB/s | × pg_dump|pg_restore | × native |", rounds);
        for (String n : names) {
            double m = median(secs.get(n));
            log("| %s | %.1f | %s | %.1f | %.2f | %.2f |", n, m, secs.get(n).stream().map(x -> String.format(Locale.ROOT, "%.1f", x)).toList(),
                    sizeMb / m, dump / m, nat / m);
        }
    }

    /** Three tables of int, bigint, text, numeric, timestamptz and jsonb columns, secondary indexes, a unique index, a foreign key. */
    void load(int mb) throws Exception {
        src.createDatabase(SRC_DB);
        src.execute(SRC_DB,
                "CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, email text NOT NULL, balance numeric(12,2) NOT NULL,"
                        + " created timestamptz NOT NULL, attrs jsonb NOT NULL)",
                "CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int NOT NULL, amount numeric(12,2) NOT NULL, status text NOT NULL,"
                        + " placed timestamptz NOT NULL, items jsonb NOT NULL)",
                "CREATE TABLE events (id bigint PRIMARY KEY, kind int NOT NULL, body text NOT NULL, at timestamptz NOT NULL, payload jsonb)");
        long customers = mb * 550L;
        long orders = mb * 2_420L;
        long events = mb * 1_210L;
        long t0 = System.nanoTime();
        insert("INSERT INTO customers SELECT g, 'customer ' || g, 'c' || g || '@example.com', (g %% 100000) / 7.0,"
                + " timestamptz '2024-01-01' + g * interval '1 second', jsonb_build_object('tier', g %% 5, 'tags', jsonb_build_array('a', g %% 13))"
                + " FROM generate_series(%d, %d) g", customers);
        insert("INSERT INTO orders SELECT g, 1 + (g::bigint * 7919) %% " + customers + ", (g %% 99999) / 100.0, (ARRAY['new','paid','shipped','done'])[1 + g %% 4],"
                + " timestamptz '2024-01-01' + g * interval '10 seconds', jsonb_build_array(jsonb_build_object('sku', g %% 1000, 'qty', 1 + g %% 3,"
                + " 'note', md5(g::text)))"
                + " FROM generate_series(%d, %d) g", orders);
        insert("INSERT INTO events SELECT g, g %% 17, repeat(md5(g::text), 4), timestamptz '2024-01-01' + g * interval '1 second',"
                + " CASE WHEN g %% 3 = 0 THEN NULL ELSE jsonb_build_object('k', g, 'v', md5((g * 3)::text)) END"
                + " FROM generate_series(%d, %d) g", events);
        src.execute(SRC_DB, "CREATE UNIQUE INDEX customers_email ON customers (email)", "CREATE INDEX orders_customer ON orders (customer_id)",
                "CREATE INDEX orders_placed ON orders (placed)", "CREATE INDEX events_kind_at ON events (kind, at)",
                "ALTER TABLE orders ADD CONSTRAINT orders_customer_fk FOREIGN KEY (customer_id) REFERENCES customers (id)",
                "VACUUM ANALYZE");
        log("source loaded in %.1f s", (System.nanoTime() - t0) / 1e9);
    }

    /** {@code sql} with %d..%d, run in chunks of 200k rows (each its own transaction). */
    void insert(String sql, long rows) {
        for (long lo = 1; lo <= rows; lo += 200_000) {
            src.execute(SRC_DB, String.format(Locale.ROOT, sql, lo, Math.min(rows, lo + 199_999)));
        }
    }

    /** {@code millrace migrate run} through the API, until FOLLOWING (the copy done, indexes and constraints made). */
    String millrace(String db, int round) throws Exception {
        String slot = "mr_copy_" + round;
        SourceSettings s = SourceSettings.builder().host(src.host()).port(src.port()).database(SRC_DB).user("postgres").slot(slot)
                .publication(slot).tables(TABLES).build();
        Migration m = Migration.of(s, Servers.target(tgt, db));
        long t0 = System.nanoTime();
        try (Millrace following = m.follow(Duration.ofHours(2))) {
            assertThat(following.status().state()).isEqualTo("streaming");
        }
        double s1 = (System.nanoTime() - t0) / 1e9;
        dropSlot(slot);
        src.execute(SRC_DB, "DROP PUBLICATION IF EXISTS " + slot);
        return String.format(Locale.ROOT, " (to FOLLOWING %.1f s)", s1);
    }

    /** {@code pg_dump -Fd -j2 -Z0} into a directory, then {@code pg_restore -j2} from it. */
    String pgDump(String db, int round) throws Exception {
        Path dir = Files.createTempDirectory("millrace-copyrate-");
        Path out = dir.resolve("dump");
        try {
            long t0 = System.nanoTime();
            run(List.of(BIN.resolve("pg_dump").toString(), "-h", src.host(), "-p", Integer.toString(src.port()), "-U", "postgres",
                    "-Fd", "-j2", "-Z0", "-f", out.toString(), SRC_DB));
            double dump = (System.nanoTime() - t0) / 1e9;
            run(List.of(BIN.resolve("pg_restore").toString(), "-h", tgt.host(), "-p", Integer.toString(tgt.port()), "-U", "postgres",
                    "-j2", "--exit-on-error", "-d", db, out.toString()));
            double restore = (System.nanoTime() - t0) / 1e9 - dump;
            return String.format(Locale.ROOT, " (dump %.1f s, restore %.1f s)", dump, restore);
        } finally {
            try (Stream<Path> w = Files.walk(dir)) {
                w.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    /**
     * The schema by {@code pg_dump --schema-only | psql} (tables, indexes, constraints: timed apart, not in the copy's
     * seconds), then {@code CREATE SUBSCRIPTION ... WITH (copy_data = true)} until every table is ready.
     */
    String nativeSubscription(String db, int round) throws Exception {
        String name = "nat_copy_" + round;
        long t0 = System.nanoTime();
        Path schema = Files.createTempFile("millrace-copyrate-schema-", ".sql");
        try {
            run(List.of(BIN.resolve("pg_dump").toString(), "-h", src.host(), "-p", Integer.toString(src.port()), "-U", "postgres",
                    "--schema-only", "-f", schema.toString(), SRC_DB));
            run(List.of(BIN.resolve("psql").toString(), "-h", tgt.host(), "-p", Integer.toString(tgt.port()), "-U", "postgres", "-q",
                    "-v", "ON_ERROR_STOP=1", "-d", db, "-f", schema.toString()));
        } finally {
            Files.deleteIfExists(schema);
        }
        double schemaSecs = (System.nanoTime() - t0) / 1e9;
        src.execute(SRC_DB, "CREATE PUBLICATION " + name + " FOR TABLE " + String.join(", ", TABLES));
        long t1 = System.nanoTime();
        tgt.execute(db, "CREATE SUBSCRIPTION " + name + " CONNECTION 'host=" + src.host() + " port=" + src.port() + " dbname=" + SRC_DB
                + " user=postgres' PUBLICATION " + name + " WITH (copy_data = true)");
        while (Servers.count(tgt, db, "SELECT count(*) FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid"
                + " WHERE s.subname = '" + name + "' AND r.srsubstate = 'r'") < TABLES.size()) {
            Thread.sleep(100);
        }
        double copy = (System.nanoTime() - t1) / 1e9;
        tgt.execute(db, "DROP SUBSCRIPTION " + name);
        src.execute(SRC_DB, "DROP PUBLICATION " + name);
        return String.format(Locale.ROOT, " (schema beforehand %.1f s, not counted; copy %.1f s)", schemaSecs, copy);
    }

    /** Every row of every table, the unique and secondary indexes valid, the foreign key validated. */
    void check(String db, Map<String, Long> rows) throws SQLException {
        for (Map.Entry<String, Long> e : rows.entrySet()) {
            assertThat(Servers.count(tgt, db, "SELECT count(*) FROM " + e.getKey())).as(db + " " + e.getKey()).isEqualTo(e.getValue());
        }
        assertThat(Servers.count(tgt, db, "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                + " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND i.indisvalid")).as(db + " valid indexes")
                .isEqualTo(7);
        assertThat(Servers.count(tgt, db, "SELECT count(*) FROM pg_constraint WHERE conname = 'orders_customer_fk' AND convalidated"))
                .as(db + " foreign key").isEqualTo(1);
        assertThat(Servers.text(tgt, db, "SELECT md5(string_agg(md5(o::text), '' ORDER BY id)) FROM (SELECT * FROM orders WHERE id % 997 = 0) o"))
                .as(db + " a sample of orders").isEqualTo(Servers.text(src, SRC_DB,
                        "SELECT md5(string_agg(md5(o::text), '' ORDER BY id)) FROM (SELECT * FROM orders WHERE id % 997 = 0) o"));
    }

    void dropSlot(String slot) throws Exception {
        for (int i = 0; ; i++) {
            try (Connection c = src.connect(SRC_DB); Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '" + slot + "'")) {
                while (rs.next()) {
                    rs.getObject(1);
                }
                return;
            } catch (SQLException e) {
                if (i > 100) {
                    throw e;
                }
                Thread.sleep(100); // still active for a moment after the pipeline stopped
            }
        }
    }

    static void run(List<String> cmd) throws IOException, InterruptedException {
        Path log = Files.createTempFile("millrace-copyrate-", ".log");
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            if (!p.waitFor(2, TimeUnit.HOURS)) {
                p.destroyForcibly();
                throw new IllegalStateException(cmd.get(0) + " did not finish");
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", cmd) + " exited " + p.exitValue() + ": " + Files.readString(log));
            }
        } finally {
            Files.deleteIfExists(log);
        }
    }

    static String loadavg() throws IOException {
        String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ");
        return f[0] + " " + f[1] + " " + f[2];
    }

    static double median(List<Double> xs) {
        List<Double> s = new ArrayList<>(xs);
        s.sort(null);
        return s.size() % 2 == 1 ? s.get(s.size() / 2) : (s.get(s.size() / 2 - 1) + s.get(s.size() / 2)) / 2;
    }

    static void log(String fmt, Object... args) {
        System.out.printf(Locale.ROOT, fmt + "%n", args);
        System.out.flush();
    }
}
