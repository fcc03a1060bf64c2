package io.millrace.cli.migrate;

import io.millrace.api.Millrace;
import io.millrace.api.SourceSettings;
import io.millrace.core.Secret;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.migrate.Migration;
import io.millrace.migrate.MigrationState;
import io.millrace.sink.postgres.PostgresSinkConfig;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code millrace migrate cutover} halted (as by SIGKILL: {@code Runtime.halt}, no finally block runs) at each of its
 * named fault points, in a JVM of its own, while the target follows and a writer commits multi-statement transactions:
 * afterwards {@code status} names the step (FENCING or FENCED) and says whether the source is fenced, and the
 * migration ends cleanly either way — {@code cutover} run again reaches CUT_OVER with every transaction whose COMMIT
 * returned on the target and the tables equal, or {@code abort} reaches ABORTED with the source writable again.
 * Each point once, alternating the ending (5 runs); {@code -Dmillrace.migrate.crash.all=true} runs both endings at each
 * point (10 runs).
 */
class MigrateCrashIT extends TwoServers {
    static int n;

    @TempDir
    static Path dir;

    static Stream<Arguments> runs() {
        String[] points = {"migrate.cutover.fencing-recorded", "migrate.cutover.source-fenced", "migrate.cutover.marker-written",
                "migrate.cutover.fenced-recorded", "migrate.cutover.sequences-set"};
        List<Arguments> out = new ArrayList<>();
        for (int i = 0; i < points.length; i++) {
            if (Boolean.getBoolean("millrace.migrate.crash.all")) {
                out.add(Arguments.of(points[i], true));
                out.add(Arguments.of(points[i], false));
            } else {
                out.add(Arguments.of(points[i], i % 2 == 0));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0}, then {1}")
    @MethodSource("runs")
    void aCutoverHaltedAtEachStepEndsCompletedOrCleanlyAborted(String point, boolean finish) throws Exception {
        String db = "crash" + (++n);
        src.createDatabase(db);
        tgt.createDatabase(db);
        src.execute(db, "CREATE TABLE account (id serial PRIMARY KEY, balance int NOT NULL CHECK (balance >= 0))",
                "CREATE TABLE ledger (id bigserial PRIMARY KEY, account int NOT NULL REFERENCES account, amount int NOT NULL)",
                "INSERT INTO account (balance) SELECT 1000 FROM generate_series(1, 50)");
        Path cfg = config(dir, db, "public.account", "public.ledger");
        Migration m = migration(db, "public.account", "public.ledger");
        Set<Long> committed = ConcurrentHashMap.newKeySet();
        AtomicBoolean stopLoad = new AtomicBoolean();
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            Thread load = new Thread(() -> write(db, committed, stopLoad), "crash-load");
            load.start();
            while (committed.size() < 100) {
                Thread.sleep(20);
            }
            haltedAt(point, dir.resolve(db + "-cutover.log"), "cutover", cfg.toString(), "--max-lag-mb", "1", "--timeout-s", "30");

            Migration.MigrationStatus st = m.status();
            System.out.println(point + ": " + st.render().lines().findFirst().orElse(""));
            boolean beforeFenced = point.endsWith("fencing-recorded") || point.endsWith("source-fenced") || point.endsWith("marker-written");
            assertThat(st.state()).isEqualTo(beforeFenced ? MigrationState.FENCING : MigrationState.FENCED);
            assertThat(st.fenced()).isEqualTo(!point.endsWith("fencing-recorded"));
            assertThat(st.render()).contains("a cutover was interrupted");
            if (finish) {
                m.cutover(1 << 20, Duration.ofSeconds(30));
            }
            stopLoad.set(true);
            load.join(10_000);
        }
        if (!finish) {
            m.abort(); // with the follower stopped, as 'migrate run' stops itself: the slot is dropped too
            assertThat(one(src, db, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + db + "'")).isZero();
        }
        Migration.MigrationStatus end = m.status();
        if (finish) {
            assertThat(end.state()).isEqualTo(MigrationState.CUT_OVER);
            assertThat(end.fenced()).isTrue();
            assertThat(ids(tgt, db)).containsAll(committed);
            for (String t : new String[] {"account", "ledger"}) {
                assertThat(rows(tgt, db, t)).as(t).isEqualTo(rows(src, db, t));
            }
            long srcLast = one(src, db, "SELECT last_value FROM ledger_id_seq");
            assertThat(one(tgt, db, "SELECT nextval('ledger_id_seq')")).isGreaterThan(srcLast);
        } else {
            assertThat(end.state()).isEqualTo(MigrationState.ABORTED);
            assertThat(end.fenced()).isFalse();
            src.execute(db, "INSERT INTO ledger (account, amount) VALUES (1, 1)"); // writable again
        }
        src.execute("postgres", "ALTER DATABASE " + db + " RESET default_transaction_read_only");
    }

    /** Runs {@code millrace migrate ARGS} in a JVM of its own with {@code point} armed to halt it, and awaits the halt. */
    static void haltedAt(String point, Path log, String... args) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:+UseSerialGC", "-Dmillrace.fault=" + point + ":crash:1",
                "-cp", System.getProperty("java.class.path"), "io.millrace.cli.Main", "migrate"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as(Files.readString(log)).isEqualTo(io.millrace.core.fault.Faults.CRASH_EXIT);
        } finally {
            p.destroyForcibly();
        }
    }

    /** The configuration file of a migration of {@code tables} of {@code db}, slot and publication named {@code db}. */
    static Path config(Path dir, String db, String... tables) throws java.io.IOException {
        Path cfg = dir.resolve(db + ".yaml");
        Files.writeString(cfg, "source:\n  host: 127.0.0.1\n  port: " + src.port() + "\n  database: " + db + "\n  user: postgres\n"
                + "  slot: " + db + "\n  publication: " + db + "\n  tables: [" + String.join(", ", tables) + "]\ndestinations:\n"
                + "  - name: target\n    type: postgres\n    port: " + tgt.port() + "\n    database: " + db + "\n    user: postgres\n");
        return cfg;
    }

    /** The same migration as {@link #config}, through the API. */
    static Migration migration(String db, String... tables) {
        return Migration.of(SourceSettings.builder().host(src.host()).port(src.port()).database(db).user("postgres").slot(db)
                .publication(db).tables(tables).build(), PostgresSinkConfig.of("target", tgt.jdbcUrl(db), "postgres", Secret.NONE));
    }

    /** One writer on the source: a ledger row and the account's balance in one transaction; the ledger ids whose COMMIT returned. */
    static void write(String db, Set<Long> committed, AtomicBoolean stop) {
        write(src, db, committed, stop);
    }

    /** One writer on {@code pg}, as {@link #write(String, Set, AtomicBoolean)}. */
    static void write(EmbeddedPg pg, String db, Set<Long> committed, AtomicBoolean stop) {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(7);
        while (!stop.get()) {
            try (Connection c = pg.connect(db)) {
                c.setAutoCommit(false);
                try (PreparedStatement led = c.prepareStatement("INSERT INTO ledger (account, amount) VALUES (?, 1) RETURNING id");
                     PreparedStatement acc = c.prepareStatement("UPDATE account SET balance = balance + 1 WHERE id = ?")) {
                    while (!stop.get()) {
                        int a = 1 + rnd.nextInt(50);
                        led.setInt(1, a);
                        long id;
                        try (ResultSet rs = led.executeQuery()) {
                            rs.next();
                            id = rs.getLong(1);
                        }
                        acc.setInt(1, a);
                        acc.executeUpdate();
                        c.commit();
                        committed.add(id);
                        Thread.sleep(2);
                    }
                }
            } catch (SQLException e) {
                try {
                    Thread.sleep(20); // fenced or ended by the fence: try again
                } catch (InterruptedException ie) {
                    return;
                }
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    static Set<Long> ids(EmbeddedPg pg, String db) throws SQLException {
        Set<Long> out = new HashSet<>();
        try (Connection c = pg.connect(db); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT id FROM ledger")) {
            while (rs.next()) {
                out.add(rs.getLong(1));
            }
        }
        return out;
    }

    static String rows(EmbeddedPg pg, String db, String table) throws SQLException {
        try (Connection c = pg.connect(db); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT count(*) || ' ' || md5(string_agg(r::text, ',' ORDER BY r::text)) FROM " + table + " r")) {
            rs.next();
            return rs.getString(1);
        }
    }

    static long one(EmbeddedPg pg, String db, String sql) throws SQLException {
        try (Connection c = pg.connect(db); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
