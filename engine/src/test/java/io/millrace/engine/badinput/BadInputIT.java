package io.millrace.engine.badinput;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.postgresql.PGConnection;
import org.postgresql.PGProperty;
import org.postgresql.replication.PGReplicationStream;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static io.millrace.engine.badinput.BadInput.awaitSlotActive;
import static io.millrace.engine.badinput.BadInput.allText;
import static io.millrace.engine.badinput.BadInput.closedPort;
import static io.millrace.engine.badinput.BadInput.count;
import static io.millrace.engine.badinput.BadInput.files;
import static io.millrace.engine.badinput.BadInput.publicationExists;
import static io.millrace.engine.badinput.BadInput.schemaExists;
import static io.millrace.engine.badinput.BadInput.slotExists;
import static io.millrace.engine.badinput.BadInput.startFails;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Bad input against a real server: each mistake stops the start with the right {@link Kind} (the
 * exit code), a message that names the object and the fix and never the password, and nothing
 * written — no slot, no publication, no destination schema or checkpoint row, no jsonl file.
 */
class BadInputIT {
    private static final String SRC = "src";
    private static final String DST = "dst";
    private static final String RIGHT_PW = "right-Pw-4711";
    private static final String WRONG_PW = "wrong-Pw-0815";
    private static final Map<String, String> ENV = Map.of("SRC_PW", RIGHT_PW, "WRONG_PW", WRONG_PW,
            "NOREPL_PW", "norepl-Pw-1", "NOSELECT_PW", "noselect-Pw-2");

    private static EmbeddedPg pg;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        BadInput.init();
        pg = EmbeddedPg.builder().start();
        pg.createDatabase(SRC);
        pg.createDatabase(DST);
        pg.execute(SRC,
                "CREATE TABLE public.items (id int PRIMARY KEY, v text)",
                "INSERT INTO public.items SELECT g, 'v' || g FROM generate_series(1, 10) g",
                "CREATE ROLE pw_role LOGIN REPLICATION PASSWORD '" + RIGHT_PW + "'",
                "GRANT SELECT ON public.items TO pw_role",
                "CREATE ROLE norepl LOGIN PASSWORD 'norepl-Pw-1'",
                "GRANT SELECT ON public.items TO norepl",
                "CREATE ROLE noselect LOGIN REPLICATION PASSWORD 'noselect-Pw-2'");
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    /** The usual pipeline: slot {@code <slot>}, publication {@code <slot>_pub}, a postgres and a jsonl destination. */
    private BadInput.Config config(String slot) {
        return new BadInput.Config(pg, SRC, slot)
                .postgres("replica", pg.host(), pg.port(), DST, slot, null)
                .jsonl("files", dir.resolve(slot + "-events"));
    }

    private void assertNothingWritten(String slot) throws SQLException {
        assertThat(slotExists(pg, slot)).as("slot " + slot + " created").isFalse();
        assertThat(publicationExists(pg, SRC, slot + "_pub")).as("publication " + slot + "_pub created").isFalse();
        assertThat(schemaExists(pg, DST, slot + "_t")).as("destination tables created").isFalse();
        assertThat(schemaExists(pg, DST, slot + "_state")).as("destination checkpoint table created").isFalse();
        assertThat(files(dir.resolve(slot + "-events"))).as("jsonl files written").isEmpty();
    }

    private static void assertNoSecret(MillraceException e, BadInput.LogCapture log, String... secrets) {
        for (String s : secrets) {
            assertThat(allText(e)).doesNotContain(s);
            assertThat(log.text()).doesNotContain(s);
        }
    }

    @Test
    void wrongPasswordIsAuthenticationAndNeverPrinted() throws Exception {
        String yaml = config("bad_pw").set("user", "pw_role").set("password_env", "WRONG_PW").yaml();
        try (BadInput.LogCapture log = new BadInput.LogCapture()) {
            MillraceException e = startFails(yaml, dir, ENV);
            assertThat(e.kind()).isEqualTo(Kind.AUTHENTICATION);
            assertThat(e.kind().exitCode()).isEqualTo(4);
            assertThat(e.getMessage()).contains("127.0.0.1:" + pg.port() + "/src").contains("'pw_role'")
                    .contains("password was rejected").contains("source.password_env");
            assertNoSecret(e, log, WRONG_PW, RIGHT_PW);
        }
        assertNothingWritten("bad_pw");
    }

    @Test
    void unreachableSourceIsConnection() throws Exception {
        int port = closedPort();
        MillraceException e = startFails(config("no_host").set("port", Integer.toString(port)).yaml(), dir, ENV);
        assertThat(e.kind()).isEqualTo(Kind.CONNECTION);
        assertThat(e.kind().exitCode()).isEqualTo(3);
        assertThat(e.getMessage()).contains("127.0.0.1:" + port).contains("Check that the server is running and reachable")
                .doesNotContain("..");
        assertNothingWritten("no_host");
    }

    @Test
    void unknownHostIsConnection() throws Exception {
        long t0 = System.nanoTime();
        MillraceException e = startFails(config("no_dns").set("host", "no-such-host.invalid").yaml(), dir, ENV);
        assertThat(e.kind()).isEqualTo(Kind.CONNECTION);
        assertThat(e.getMessage()).contains("no-such-host.invalid").contains("reachable at that host and port");
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(30));
        assertNothingWritten("no_dns");
    }

    @Test
    void missingSourceDatabaseIsConfig() throws Exception {
        MillraceException e = startFails(config("no_db").set("database", "nodb").yaml(), dir, ENV);
        assertThat(e.kind()).isEqualTo(Kind.CONFIG);
        assertThat(e.getMessage()).contains("\"nodb\" does not exist").contains("source.database");
        assertNothingWritten("no_db");
    }

    @Test
    void walLevelReplicaIsSourceSetup() throws Exception {
        try (EmbeddedPg replica = EmbeddedPg.builder().setting("wal_level", "replica").start()) {
            replica.createDatabase(SRC);
            replica.execute(SRC, "CREATE TABLE public.items (id int PRIMARY KEY, v text)");
            BadInput.Config c = new BadInput.Config(replica, SRC, "wal_replica")
                    .postgres("replica", pg.host(), pg.port(), DST, "wal_replica", null)
                    .jsonl("files", dir.resolve("wal_replica-events"));
            MillraceException e = startFails(c.yaml(), dir, ENV);
            assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
            assertThat(e.kind().exitCode()).isEqualTo(6);
            assertThat(e.getMessage()).contains("wal_level is 'replica'").contains("ALTER SYSTEM SET wal_level = logical")
                    .contains("restart PostgreSQL");
            assertThat(slotExists(replica, "wal_replica")).isFalse();
            assertThat(publicationExists(replica, SRC, "wal_replica_pub")).isFalse();
            assertThat(schemaExists(pg, DST, "wal_replica_t")).isFalse();
            assertThat(schemaExists(pg, DST, "wal_replica_state")).isFalse();
            assertThat(files(dir.resolve("wal_replica-events"))).isEmpty();
        }
    }

    @Test
    void roleWithoutReplicationIsPermission() throws Exception {
        String yaml = config("no_repl").set("user", "norepl").set("password_env", "NOREPL_PW").yaml();
        try (BadInput.LogCapture log = new BadInput.LogCapture()) {
            MillraceException e = startFails(yaml, dir, ENV);
            assertThat(e.kind()).isEqualTo(Kind.PERMISSION);
            assertThat(e.kind().exitCode()).isEqualTo(5);
            assertThat(e.getMessage()).contains("role 'norepl' lacks the REPLICATION attribute")
                    .contains("ALTER ROLE \"norepl\" REPLICATION");
            assertNoSecret(e, log, "norepl-Pw-1");
        }
        assertNothingWritten("no_repl");
    }

    @Test
    void roleWithoutSelectIsPermission() throws Exception {
        String yaml = config("no_select").set("user", "noselect").set("password_env", "NOSELECT_PW").yaml();
        MillraceException e = startFails(yaml, dir, ENV);
        assertThat(e.kind()).isEqualTo(Kind.PERMISSION);
        assertThat(e.getMessage()).contains("role 'noselect' cannot SELECT from \"public\".\"items\"")
                .contains("GRANT SELECT ON \"public\".\"items\" TO \"noselect\";");
        assertNothingWritten("no_select");
    }

    @Test
    void aTableThatDoesNotExistIsConfig() throws Exception {
        MillraceException e = startFails(config("no_table").set("tables", "[public.items, public.nope]").yaml(), dir, ENV);
        assertThat(e.kind()).isEqualTo(Kind.CONFIG);
        assertThat(e.kind().exitCode()).isEqualTo(2);
        assertThat(e.getMessage()).contains("table \"public\".\"nope\" does not exist in database 'src'").contains("source.tables");
        assertNothingWritten("no_table");

        // Names are taken literally: Items is not items.
        MillraceException cased = startFails(config("no_table").set("tables", "[public.Items]").yaml(), dir, ENV);
        assertThat(cased.kind()).isEqualTo(Kind.CONFIG);
        assertThat(cased.getMessage()).contains("\"public\".\"Items\" does not exist").contains("case-sensitive");
        assertNothingWritten("no_table");
    }

    @Test
    void tableNamesThatNeedQuotesWork() throws Exception {
        pg.execute(SRC,
                "CREATE SCHEMA \"Sales.Dept\"",
                "CREATE TABLE public.\"MixedCase\" (id int PRIMARY KEY, v text)",
                "CREATE TABLE public.\"with space\" (id int PRIMARY KEY, v text)",
                "CREATE TABLE public.\"café ☃\" (id int PRIMARY KEY, v text)",
                "CREATE TABLE public.\"order\" (id int PRIMARY KEY, v text)",
                "CREATE TABLE public.\"say\"\"hi\" (id int PRIMARY KEY, v text)",
                "CREATE TABLE \"Sales.Dept\".\"T\" (id int PRIMARY KEY, v text)");
        List<TableRef> tables = List.of(new TableRef("public", "MixedCase"), new TableRef("public", "with space"),
                new TableRef("public", "café ☃"), new TableRef("public", "order"), new TableRef("public", "say\"hi"),
                new TableRef("Sales.Dept", "T"));
        for (TableRef t : tables) {
            pg.execute(SRC, "INSERT INTO " + t.sql() + " VALUES (1, 'before')");
        }
        // As written in YAML: literal names, a quoted part for a double quote or a dot.
        String list = "['public.MixedCase', 'public.with space', 'public.café ☃', 'public.order', 'public.\"say\"\"hi\"',"
                + " '\"Sales.Dept\".T']";
        // Each target table lands in one schema (names stay distinct), so the copy can be compared. The engine
        // creates the publication (quoting every name) and the target tables.
        String yaml = config("quoted").set("tables", list).yaml();
        try (RunningEngine e = RunningEngine.start(yaml, dir, ENV); Connection src = pg.connect(SRC); Connection dst = pg.connect(DST)) {
            e.awaitStreaming(Duration.ofSeconds(60));
            try (Statement s = src.createStatement()) {
                for (TableRef t : tables) {
                    s.execute("INSERT INTO " + t.sql() + " VALUES (2, 'streamed " + t.table().replace("'", "''") + "')");
                    s.execute("UPDATE " + t.sql() + " SET v = 'changed' WHERE id = 1");
                }
            }
            RunningEngine.awaitEqual(src, dst, tables, "quoted_t", Duration.ofSeconds(30));
            assertThat(count(dst, "SELECT count(*) FROM quoted_t.\"say\"\"hi\" WHERE v = 'streamed say\"hi'")).isEqualTo(1);
        }
        // The jsonl destination names each table as the catalog spells it, and holds the streamed rows.
        ObjectMapper json = new ObjectMapper();
        Set<String> streamed = new HashSet<>();
        Path events = dir.resolve("quoted-events");
        try (Stream<Path> s = Files.list(events)) {
            for (Path f : s.filter(p -> p.getFileName().toString().endsWith(".jsonl")).toList()) {
                for (String line : Files.readAllLines(f)) {
                    JsonNode ev = json.readTree(line);
                    JsonNode value = ev.has("payload") ? ev.get("payload") : ev;
                    if ("c".equals(value.path("op").asText())) {
                        streamed.add(value.path("source").path("schema").asText() + "." + value.path("source").path("table").asText()
                                + "=" + value.path("after").path("v").asText());
                    }
                }
            }
        }
        assertThat(streamed).contains("public.MixedCase=streamed MixedCase", "public.with space=streamed with space",
                "public.café ☃=streamed café ☃", "public.order=streamed order", "public.say\"hi=streamed say\"hi",
                "Sales.Dept.T=streamed T");
    }

    @Test
    void aRoleThatCannotCreateThePublicationIsToldWhoCanAndAnExistingOneIsUsed() throws Exception {
        String yaml = config("no_pub").set("user", "pw_role").set("password_env", "SRC_PW").yaml();
        try (BadInput.LogCapture log = new BadInput.LogCapture()) {
            MillraceException e = startFails(yaml, dir, ENV);
            // Found by the preflight, before anything is created (it used to fail at CREATE PUBLICATION).
            assertThat(e.kind()).isEqualTo(Kind.PERMISSION);
            assertThat(e.getMessage()).contains("publication 'no_pub_pub' does not exist, and role 'pw_role' cannot create it")
                    .contains("the CREATE privilege on database \"src\"").contains("ownership of \"public\".\"items\"")
                    .contains("CREATE PUBLICATION \"no_pub_pub\" FOR TABLE \"public\".\"items\" WITH (publish_via_partition_root = true);");
            assertNoSecret(e, log, RIGHT_PW);
        }
        assertNothingWritten("no_pub");

        // The fix as the message gives it; then the same role, with its right password, starts.
        pg.execute(SRC, "CREATE PUBLICATION no_pub_pub FOR TABLE public.items WITH (publish_via_partition_root = true)");
        try (RunningEngine e = RunningEngine.start(yaml, dir, ENV)) {
            e.awaitStreaming(Duration.ofSeconds(60));
        }
        try (Connection dst = pg.connect(DST)) {
            assertThat(count(dst, "SELECT count(*) FROM no_pub_t.items")).isEqualTo(10);
        }
        pg.execute(SRC, "SELECT pg_drop_replication_slot('no_pub')");
    }

    @Test
    void slotActiveInAnotherProcessIsSlotInUse() throws Exception {
        pg.execute(SRC, "CREATE PUBLICATION holder_pub FOR TABLE public.items");
        Properties p = new Properties();
        PGProperty.USER.set(p, "postgres");
        PGProperty.REPLICATION.set(p, "database");
        PGProperty.ASSUME_MIN_SERVER_VERSION.set(p, "10");
        PGProperty.PREFER_QUERY_MODE.set(p, "simple");
        try (Connection holder = DriverManager.getConnection(pg.jdbcUrl(SRC), p)) {
            PGConnection h = holder.unwrap(PGConnection.class);
            h.getReplicationAPI().createReplicationSlot().logical().withSlotName("held").withOutputPlugin("pgoutput").make();
            PGReplicationStream stream = h.getReplicationAPI().replicationStream().logical().withSlotName("held")
                    .withSlotOption("proto_version", "1").withSlotOption("publication_names", "holder_pub")
                    .withStatusInterval(1, TimeUnit.SECONDS).start();
            stream.readPending();
            int holderPid = awaitSlotActive(pg, "held", Duration.ofSeconds(10));

            MillraceException e = startFails(config("held").yaml(), dir, ENV);
            assertThat(e.kind()).isEqualTo(Kind.SLOT_IN_USE);
            assertThat(e.kind().exitCode()).isEqualTo(7);
            assertThat(e.getMessage()).contains("slot 'held' is in use by process " + holderPid)
                    .contains("pg_terminate_backend(" + holderPid + ")").contains("choose another source.slot");
            stream.readPending();
            try (Connection c = pg.connect(SRC)) {
                // The holder still holds it: the engine neither dropped nor took over the slot.
                assertThat(count(c, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = 'held'")).isEqualTo(holderPid);
            }
            assertThat(publicationExists(pg, SRC, "held_pub")).isFalse();
            assertThat(schemaExists(pg, DST, "held_t")).isFalse();
            assertThat(schemaExists(pg, DST, "held_state")).isFalse();
            assertThat(files(dir.resolve("held-events"))).isEmpty();
            stream.close();
        }
        try (Connection c = pg.connect(SRC)) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (count(c, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'held' AND active") != 0 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
        }
        pg.execute(SRC, "SELECT pg_drop_replication_slot('held')", "DROP PUBLICATION holder_pub");
    }

    @Test
    void theSamePipelineStartedTwiceIsSlotInUseAndTheFirstGoesOn() throws Exception {
        String yaml = config("twice").yaml();
        try (RunningEngine first = RunningEngine.start(yaml, dir, ENV); Connection src = pg.connect(SRC); Connection dst = pg.connect(DST)) {
            first.awaitStreaming(Duration.ofSeconds(60));
            int firstPid = awaitSlotActive(pg, "twice", Duration.ofSeconds(30));
            MillraceException e = startFails(yaml, dir, ENV);
            assertThat(e.kind()).isEqualTo(Kind.SLOT_IN_USE);
            // named as the same pipeline running, with no fix that would end the first one's connection (before: "stop that
            // process (SELECT pg_terminate_backend(<the first's walsender>))", found by a user)
            assertThat(e.getMessage()).contains("slot 'twice' is read by another Millrace engine running this pipeline (it holds the"
                    + " pipeline's lock; its replication connection is process " + firstPid + ")").contains("its own source.slot")
                    .doesNotContain("pg_terminate_backend");
            // The first one is undisturbed.
            pg.execute(SRC, "UPDATE public.items SET v = 'seen by the first' WHERE id = 3");
            RunningEngine.awaitEqual(src, dst, List.of(new TableRef("public", "items")), "twice_t", Duration.ofSeconds(30));
        }
        pg.execute(SRC, "SELECT pg_drop_replication_slot('twice')");
    }

    @Test
    void aSecondEngineStartedBeforeTheFirstStreamsIsRefusedBeforeItOpensADestination() throws Exception {
        // INV: IDENTITY — the slot is held only while streaming. Before that (opening the destinations, catching up)
        // only the pipeline lock keeps a second engine from opening the destinations the first is writing.
        String yaml = config("early").yaml();
        try (RunningEngine first = RunningEngine.start(yaml, dir, ENV)) {
            first.awaitStreaming(Duration.ofSeconds(60));
        }
        try (Connection blocker = pg.connect(DST); Connection src = pg.connect(SRC); Connection dst = pg.connect(DST)) {
            blocker.setAutoCommit(false);
            try (java.sql.Statement st = blocker.createStatement()) {
                // the first engine's next start waits for its checkpoint, the slot not yet taken
                st.execute("LOCK TABLE " + String.join(", ", BadInput.strings(dst, "SELECT format('%I.%I', schemaname, tablename)"
                        + " FROM pg_tables WHERE schemaname = 'early_state'")) + " IN ACCESS EXCLUSIVE MODE");
            }
            try (RunningEngine first = RunningEngine.start(yaml, dir, ENV)) {
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                while (count(dst, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'relation'") == 0) {
                    assertThat(System.nanoTime()).as("the first engine waits for its checkpoint").isLessThan(deadline);
                    Thread.sleep(20);
                }
                assertThat(count(src, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'early' AND active")).isZero();
                MillraceException e = startFails(yaml, dir, ENV);
                assertThat(e.kind()).isEqualTo(Kind.SLOT_IN_USE);
                assertThat(e.getMessage()).contains("slot 'early' is in use by another Millrace engine running this pipeline")
                        .containsPattern("its source session, process \\d+ from [^,]+, holds the pipeline's lock")
                        .contains("stop that engine");
                blocker.rollback();
                first.awaitStreaming(Duration.ofSeconds(60));
                pg.execute(SRC, "UPDATE public.items SET v = 'seen by the first' WHERE id = 2");
                RunningEngine.awaitEqual(src, dst, List.of(new TableRef("public", "items")), "early_t", Duration.ofSeconds(30));
            }
        }
        pg.execute(SRC, "SELECT pg_drop_replication_slot('early')");
    }

    @Test
    void anUnclaimedExistingSlotIsNeverDroppedAndTheMessageSaysWhatToDo() throws Exception {
        // INV: IDENTITY — a slot that no destination's checkpoint claims may be another pipeline's.
        pg.execute(SRC, "SELECT pg_create_logical_replication_slot('someone_elses', 'pgoutput')");
        String yaml = config("someone_elses").yaml();
        MillraceException e = startFails(yaml, dir, ENV);
        assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
        assertThat(e.getMessage()).contains("slot 'someone_elses' exists, but no destination holds a checkpoint of it")
                .contains("SELECT pg_drop_replication_slot('someone_elses')").contains("snapshot.mode: never");
        assertThat(slotExists(pg, "someone_elses")).as("the slot is left alone").isTrue();
        pg.execute(SRC, "SELECT pg_drop_replication_slot('someone_elses')");
    }

    @Test
    void aDestinationThatIsDownIsConnectionAndNothingIsCreatedAtTheSource() throws Exception {
        int port = closedPort();
        BadInput.Config c = new BadInput.Config(pg, SRC, "dst_down")
                .postgres("replica", pg.host(), port, DST, "dst_down", null)
                .jsonl("files", dir.resolve("dst_down-events"));
        MillraceException e = startFails(c.yaml(), dir, ENV);
        assertThat(e.kind()).isEqualTo(Kind.CONNECTION);
        assertThat(e.kind().exitCode()).isEqualTo(3);
        assertThat(e.getMessage()).contains("destination 'replica'").contains("127.0.0.1:" + port + "/dst")
                .contains("Check that the server is running");
        assertNothingWritten("dst_down");
    }

    @Test
    void aDestinationDownAfterAJsonlOneLeavesOnlyAnEmptyStateAndTheNextStartWorks() throws Exception {
        // Destinations are opened in order, before any is written to: a jsonl destination listed first has
        // prepared its (empty) state when the postgres one fails. That state holds no checkpoint and no event,
        // so it does not change what the next start does.
        int port = closedPort();
        Path events = dir.resolve("dst_down2-events");
        BadInput.Config c = new BadInput.Config(pg, SRC, "dst_down2").jsonl("files", events)
                .postgres("replica", pg.host(), port, DST, "dst_down2", null);
        MillraceException e = startFails(c.yaml(), dir, ENV);
        assertThat(e.kind()).isEqualTo(Kind.CONNECTION);
        assertThat(slotExists(pg, "dst_down2")).isFalse();
        assertThat(publicationExists(pg, SRC, "dst_down2_pub")).isFalse();
        assertThat(files(events)).containsExactly("checkpoint.json", "events-000001.jsonl");
        assertThat(new ObjectMapper().readTree(events.resolve("checkpoint.json").toFile()).get("checkpoint").isNull()).isTrue();
        assertThat(Files.size(events.resolve("events-000001.jsonl"))).isZero();

        BadInput.Config fixed = new BadInput.Config(pg, SRC, "dst_down2").jsonl("files", events)
                .postgres("replica", pg.host(), pg.port(), DST, "dst_down2", null);
        try (RunningEngine r = RunningEngine.start(fixed.yaml(), dir, ENV)) {
            r.awaitStreaming(Duration.ofSeconds(60));
        }
        assertThat(Files.readAllLines(events.resolve("events-000001.jsonl"))).hasSize(10); // the snapshot of items
        pg.execute(SRC, "SELECT pg_drop_replication_slot('dst_down2')");
    }

    @Test
    void aDestinationPasswordThatIsWrongIsAuthentication() throws Exception {
        BadInput.Config c = new BadInput.Config(pg, SRC, "dst_pw")
                .postgres("replica", pg.host(), pg.port(), DST, "dst_pw", "    password_env: WRONG_PW\n")
                .jsonl("files", dir.resolve("dst_pw-events"));
        c.destinations.set(0, c.destinations.get(0).replace("user: postgres", "user: pw_role"));
        try (BadInput.LogCapture log = new BadInput.LogCapture()) {
            MillraceException e = startFails(c.yaml(), dir, ENV);
            assertThat(e.kind()).isEqualTo(Kind.AUTHENTICATION);
            assertThat(e.getMessage()).contains("destination 'replica'").contains("'pw_role'").contains("password");
            assertNoSecret(e, log, WRONG_PW, RIGHT_PW);
        }
        assertNothingWritten("dst_pw");
    }
}
