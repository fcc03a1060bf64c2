package io.millrace.cli.badinput;

import io.millrace.cli.Cli.Run;
import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;

import static io.millrace.cli.Cli.millrace;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code millrace run config.yaml} on bad input, in-process: the exit code of the README's table and one
 * line on standard error that names the problem and the fix — no stack trace, no password.
 */
class RunBadInputIT {
    private static final String RIGHT_PW = "cli-Right-Pw-31";
    private static final String WRONG_PW = "cli-Wrong-Pw-42";

    private static EmbeddedPg pg;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().start();
        pg.createDatabase("src");
        pg.createDatabase("dst");
        pg.execute("src", "CREATE TABLE public.items (id int PRIMARY KEY, v text)",
                "CREATE ROLE cli_role LOGIN REPLICATION PASSWORD '" + RIGHT_PW + "'",
                "GRANT SELECT ON public.items TO cli_role");
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    private Path config(String name, String sourceLines) throws IOException {
        Path f = dir.resolve(name + ".yaml");
        Files.writeString(f, "name: cli\nsource:\n  host: 127.0.0.1\n" + sourceLines
                + "  database: src\n  slot: " + name + "\n  publication: " + name + "_pub\n  tables: [public.items]\n"
                + "destinations:\n  - name: replica\n    type: postgres\n    port: " + pg.port() + "\n    database: dst\n"
                + "    user: postgres\n    state_schema: " + name + "_state\n"
                + "  - name: files\n    type: jsonl\n    directory: ./" + name + "-events\n");
        return f;
    }

    private static void assertOneLineError(Run r, String... parts) {
        assertThat(r.err()).startsWith("millrace: ").contains(parts).doesNotContain("\tat ").doesNotContain(RIGHT_PW).doesNotContain(WRONG_PW);
        assertThat(r.err().strip().lines()).hasSize(1);
    }

    private void assertNothingWritten(String name) throws Exception {
        try (Connection c = pg.connect("src"); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT (SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + name + "'),"
                     + " (SELECT count(*) FROM pg_publication WHERE pubname = '" + name + "_pub')")) {
            rs.next();
            assertThat(rs.getLong(1)).as("slot").isZero();
            assertThat(rs.getLong(2)).as("publication").isZero();
        }
        try (Connection c = pg.connect("dst"); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_namespace WHERE nspname = '" + name + "_state'")) {
            rs.next();
            assertThat(rs.getLong(1)).as("destination state").isZero();
        }
        assertThat(dir.resolve(name + "-events")).doesNotExist();
    }

    @Test
    void aMisspeltKeyExitsWith2() throws Exception {
        Path f = config("typo", "  port: " + pg.port() + "\n  user: postgres\n  pasword_env: X\n");
        Run r = millrace("run", f.toString());
        assertThat(r.exitCode()).isEqualTo(2);
        assertOneLineError(r, "config: source.pasword_env is not a known setting; did you mean 'password_env'?");
        assertNothingWritten("typo");
    }

    @Test
    void aMissingConfigFileExitsWith2() {
        Run r = millrace("run", dir.resolve("nope.yaml").toString());
        assertThat(r.exitCode()).isEqualTo(2);
        assertOneLineError(r, "nope.yaml", "does not exist");
    }

    /** A port nothing listens on (the OS gave it, and it was closed again). */
    private static int closedPort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void anUnreachableSourceExitsWith3() throws Exception {
        int port = closedPort();
        Path f = config("unreachable", "  port: " + port + "\n  user: postgres\n");
        // an unreachable source is transient: retried (operations.retry.attempts times in a row), then exit 3
        Files.writeString(f, Files.readString(f) + "operations:\n  retry: {initial_ms: 10, max_ms: 20, attempts: 2}\n");
        long t0 = System.nanoTime();
        Run r = millrace("run", f.toString());
        assertThat(r.exitCode()).isEqualTo(3);
        assertThat(System.nanoTime() - t0).as("two retries of 5-20 ms, not the default minutes").isLessThan(20_000_000_000L);
        assertOneLineError(r, "127.0.0.1:" + port + "/src", "Check that the server is running");
        assertThat(r.err()).as("one piece of advice, not the driver's too").doesNotContain("postmaster");
        assertNothingWritten("unreachable");
    }

    @Test
    void aWrongPasswordExitsWith4() throws Exception {
        Files.writeString(dir.resolve("pw.txt"), WRONG_PW + "\n");
        Path f = config("wrongpw", "  port: " + pg.port() + "\n  user: cli_role\n  password_file: pw.txt\n");
        Run r = millrace("run", f.toString());
        assertThat(r.exitCode()).isEqualTo(4);
        assertOneLineError(r, "'cli_role'", "the password was rejected", "source.password_file");
        assertNothingWritten("wrongpw");
    }

    /**
     * No password for a role the server asks one of: pgjdbc refuses before the server says anything (SQLSTATE 08004),
     * which was taken for a server that is down and retried, with "check that the server is running" (exit 3).
     */
    @Test
    void noPasswordWhereTheServerAsksForOneExitsWith4() throws Exception {
        Path f = config("nopw", "  port: " + pg.port() + "\n  user: cli_role\n");
        Run r = millrace("run", f.toString());
        assertThat(r.exitCode()).as(r.out() + r.err()).isEqualTo(4);
        assertOneLineError(r, "the server asks for a password and none is set", "source.password_env");
        assertNothingWritten("nopw");
    }

    @Test
    void aTableThatDoesNotExistExitsWith2() throws Exception {
        Path f = config("notable", "  port: " + pg.port() + "\n  user: postgres\n");
        Files.writeString(f, Files.readString(f).replace("[public.items]", "[public.items, public.missing]"));
        Run r = millrace("run", f.toString());
        assertThat(r.exitCode()).isEqualTo(2);
        assertOneLineError(r, "table \"public\".\"missing\" does not exist in database 'src'", "source.tables");
        assertNothingWritten("notable");
    }

    @Test
    void anHttpPortInUseExitsWith2NamingThePortAndTheKey() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            int port = taken.getLocalPort();
            Path f = config("httpport", "  port: " + pg.port() + "\n  user: postgres\n");
            Files.writeString(f, Files.readString(f) + "operations:\n  http_port: " + port + "\n");
            Run r = millrace("run", f.toString());
            assertThat(r.exitCode()).isEqualTo(2);
            assertOneLineError(r, "operations.http_port", Integer.toString(port), "in use");
            assertNothingWritten("httpport");
        }
    }

    @Test
    void preflightNeedsNoSecretItDoesNotUseButSaysThatRunDoes() throws Exception {
        // The control token and a destination's password: preflight checks the source only. A variable no test sets.
        String unset = "MILLRACE_TEST_UNSET_4711";
        assertThat(System.getenv(unset)).isNull();
        Path f = config("preflight_env", "  port: " + pg.port() + "\n  user: postgres\n");
        Files.writeString(f, Files.readString(f).replace("    user: postgres\n", "    user: postgres\n    password_env: " + unset + "\n")
                + "operations:\n  control_token_env: " + unset + "\n");
        Run r = millrace("preflight", f.toString());
        assertThat(r.exitCode()).as(r.out() + r.err()).isZero();
        assertThat(r.out()).contains("ready").contains("operations.control_token_env").contains("destinations[0].password_env")
                .contains(unset);
        // run needs them: the same configuration is refused there, naming the key
        Run run = millrace("run", f.toString());
        assertThat(run.exitCode()).isEqualTo(2);
        assertOneLineError(run, unset);
        assertNothingWritten("preflight_env");
    }

    /**
     * Preflight checks the destinations too, writing nothing: one that answers and can be written is OK; a database that
     * is read-only for the user is named with run's exit code (11) and its fix; a database that does not exist with exit 2
     * and its fix; a DuckDB file in a directory that does not exist with exit 2. Before, preflight said "ready" to each.
     */
    @Test
    void preflightNamesADestinationThatCannotBeWrittenWithRunsExitCode() throws Exception {
        Path ok = config("pre_dst_ok", "  port: " + pg.port() + "\n  user: postgres\n");
        Run good = millrace("preflight", ok.toString());
        assertThat(good.exitCode()).as(good.out() + good.err()).isZero();
        assertThat(good.out()).contains("OK    destination replica").contains("OK    destination files").contains("ready");
        assertThat(Files.exists(dir.resolve("pre_dst_ok-events"))).as("the events directory is not created").isFalse();

        pg.createDatabase("dst_ro");
        pg.execute("postgres", "ALTER DATABASE dst_ro SET default_transaction_read_only = on");
        Path ro = config("pre_dst_ro", "  port: " + pg.port() + "\n  user: postgres\n");
        Files.writeString(ro, Files.readString(ro).replace("    database: dst\n", "    database: dst_ro\n"));
        Run readOnly = millrace("preflight", ro.toString());
        assertThat(readOnly.exitCode()).as(readOnly.out() + readOnly.err()).isEqualTo(11);
        assertThat(readOnly.out()).contains("FAIL  destination replica").contains("read-only")
                .contains("ALTER ROLE \"postgres\" IN DATABASE \"dst_ro\" SET default_transaction_read_only = off")
                .doesNotContain("ready:");
        try (Connection c = pg.connect("dst_ro"); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_namespace WHERE nspname = 'pre_dst_ro_state'")) {
            rs.next();
            assertThat(rs.getLong(1)).as("nothing written").isZero();
        }

        // a role that may read the checkpoints table but not write it (has_table_privilege with a list passes on any one)
        pg.execute("dst", "CREATE ROLE pre_reader LOGIN PASSWORD 'pre-reader-pw'", "CREATE SCHEMA pre_dst_priv_state",
                "CREATE TABLE pre_dst_priv_state.checkpoints (destination text PRIMARY KEY)",
                "GRANT USAGE ON SCHEMA pre_dst_priv_state TO pre_reader", "GRANT SELECT ON pre_dst_priv_state.checkpoints TO pre_reader");
        Path priv = config("pre_dst_priv", "  port: " + pg.port() + "\n  user: postgres\n");
        Files.writeString(priv, Files.readString(priv).replace("    database: dst\n    user: postgres\n", "    database: dst\n    user: pre_reader\n"));
        // without its password first: the server asks for one (scram), which is no connection problem to retry
        Run noPassword = millrace("preflight", priv.toString());
        assertThat(noPassword.exitCode()).as(noPassword.out() + noPassword.err()).isEqualTo(4);
        assertThat(noPassword.out()).contains("FAIL  destination replica").contains("asks user 'pre_reader' for a password and none is set")
                .contains("password_env");
        // its password named by a variable that is not set: the destination cannot be checked, and the warning says so
        Files.writeString(priv, Files.readString(priv).replace("    user: pre_reader\n", "    user: pre_reader\n    password_env: PRE_READER_UNSET\n"));
        Run unset = millrace("preflight", priv.toString());
        assertThat(unset.out()).as(unset.out() + unset.err()).contains("WARN  configuration").contains("PRE_READER_UNSET")
                .contains("so that destination is not checked here").doesNotContain("preflight does not need it")
                .doesNotContain("destination replica");
        Files.writeString(priv, Files.readString(priv).replace("    password_env: PRE_READER_UNSET\n", ""));
        Path pw = dir.resolve("pre_reader.pw");
        Files.writeString(pw, "pre-reader-pw\n");
        Files.writeString(priv, Files.readString(priv).replace("    user: pre_reader\n", "    user: pre_reader\n    password_file: " + pw + "\n"));
        Run reader = millrace("preflight", priv.toString());
        assertThat(reader.exitCode()).as(reader.out() + reader.err()).isEqualTo(5);
        assertThat(reader.out()).contains("FAIL  destination replica")
                .contains("GRANT SELECT, INSERT, UPDATE ON \"pre_dst_priv_state\".\"checkpoints\" TO \"pre_reader\"");

        Path missing = config("pre_dst_missing", "  port: " + pg.port() + "\n  user: postgres\n");
        Files.writeString(missing, Files.readString(missing).replace("    database: dst\n", "    database: no_such_db\n")
                .replace("  - name: files\n    type: jsonl\n    directory: ./pre_dst_missing-events\n",
                        "  - name: mirror\n    type: duckdb\n    file: ./no/such/dir/m.duckdb\n"
                        + "  - name: bus\n    type: kafka\n    bootstrap_servers: 127.0.0.1:" + closedPort() + "\n"));
        Run gone = millrace("preflight", missing.toString());
        assertThat(gone.exitCode()).as(gone.out() + gone.err()).isEqualTo(2);
        assertThat(gone.out()).contains("FAIL  destination replica").contains("no_such_db").contains("Create the database there")
                .contains("FAIL  destination mirror").contains("mkdir -p")
                .contains("FAIL  destination bus").contains("cannot reach Kafka at 127.0.0.1:");
        assertNothingWritten("pre_dst_missing");
    }

    @Test
    void aKeylessTableExitsWith6AndPreflightPrintsTheFix() throws Exception {
        pg.execute("src", "CREATE TABLE public.keyless (a int, v text)");
        Path f = config("keyless", "  port: " + pg.port() + "\n  user: postgres\n");
        Files.writeString(f, Files.readString(f).replace("[public.items]", "[public.items, public.keyless]"));
        Run pre = millrace("preflight", f.toString());
        assertThat(pre.exitCode()).isEqualTo(6);
        assertThat(pre.out()).contains("FAIL  table public.keyless").contains("no primary key and REPLICA IDENTITY DEFAULT")
                .contains("fix: ALTER TABLE \"public\".\"keyless\" REPLICA IDENTITY FULL;");
        Run run = millrace("run", f.toString());
        assertThat(run.exitCode()).isEqualTo(6);
        assertOneLineError(run, "\"public\".\"keyless\"", "Fix: ALTER TABLE \"public\".\"keyless\" REPLICA IDENTITY FULL;");
        assertNothingWritten("keyless");
    }

    /**
     * {@code millrace setup}: only a superuser may create the DDL event trigger, and another role is told so (exit 5);
     * preflight warns, with that fix, until it is installed; {@code --print-sql} prints the SQL, {@code --uninstall}
     * removes it.
     */
    @Test
    void setupInstallsTheDdlTriggerAsASuperuserOnly() throws Exception {
        Files.writeString(dir.resolve("pw.txt"), RIGHT_PW + "\n");
        Path plain = config("setup_plain", "  port: " + pg.port() + "\n  user: cli_role\n  password_file: pw.txt\n");
        Run refused = millrace("setup", plain.toString());
        assertThat(refused.exitCode()).isEqualTo(5);
        assertOneLineError(refused, "needs a superuser", "'cli_role'", "millrace setup --print-sql");
        Path su = config("setup_su", "  port: " + pg.port() + "\n  user: postgres\n");
        assertThat(millrace("preflight", su.toString()).out()).contains("WARN  ddl trigger").contains("millrace setup");
        Run ok = millrace("setup", su.toString());
        assertThat(ok.exitCode()).as(ok.out() + ok.err()).isZero();
        assertThat(ok.out()).contains("installed the DDL event trigger");
        assertThat(millrace("preflight", su.toString()).out()).contains("OK    ddl trigger");
        // a trigger an older Millrace installed (its function differs from this version's) is named, with the fix
        try (Connection c = pg.connect("src")) {
            String body;
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT prosrc FROM pg_proc WHERE proname = 'ddl_command_end'"
                    + " AND pronamespace = 'millrace'::regnamespace")) {
                rs.next();
                body = rs.getString(1);
            }
            try (Statement st = c.createStatement()) {
                st.execute("CREATE OR REPLACE FUNCTION millrace.ddl_command_end() RETURNS event_trigger LANGUAGE plpgsql SECURITY DEFINER"
                        + " SET search_path = pg_catalog, pg_temp AS $fn$" + body.replace("'key',", "'key_was_not_here',") + "$fn$");
            }
        }
        assertThat(millrace("preflight", su.toString()).out()).contains("WARN  ddl trigger").contains("installed by an older Millrace")
                .contains("run 'millrace setup CONFIG' again");
        assertThat(millrace("setup", su.toString()).exitCode()).isZero();
        assertThat(millrace("preflight", su.toString()).out()).contains("OK    ddl trigger");
        assertThat(millrace("setup", "--print-sql", su.toString()).out()).contains("CREATE EVENT TRIGGER millrace_ddl_command_end");
        assertThat(millrace("setup", "--uninstall", su.toString()).exitCode()).isZero();
        assertThat(millrace("preflight", su.toString()).out()).contains("WARN  ddl trigger");
    }
}
