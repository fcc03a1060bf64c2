package io.millrace.engine.badinput;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static io.millrace.engine.badinput.BadInput.count;
import static io.millrace.engine.badinput.BadInput.files;
import static io.millrace.engine.badinput.BadInput.publicationExists;
import static io.millrace.engine.badinput.BadInput.slotExists;
import static io.millrace.engine.badinput.BadInput.startFails;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * INV: IDENTITY — destinations that hold a pipeline's checkpoints refuse a pipeline with another slot,
 * publication, database or source system: the start fails with {@link Kind#IDENTITY} (exit code 8), the
 * message names the differing field and the fix, and nothing is written (destination rows, checkpoints,
 * jsonl files unchanged; no slot or publication created at the new source). A slot re-created under the
 * same name while the pipeline was stopped is refused the same way, never resumed with a silent gap.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class IdentityIT {
    private static final String FIX = "Point this pipeline at an empty destination, or remove that destination's checkpoint";
    private static final List<TableRef> ITEMS = List.of(new TableRef("public", "items"));

    private static EmbeddedPg pg;
    private static EmbeddedPg other;

    @TempDir
    static Path dir;

    @BeforeAll
    static void runTheOriginalPipeline() throws Exception {
        BadInput.init();
        pg = EmbeddedPg.builder().start();
        other = EmbeddedPg.builder().start();
        for (String db : List.of("src", "src2")) {
            pg.createDatabase(db);
            pg.execute(db, "CREATE TABLE public.items (id int PRIMARY KEY, v text)",
                    "INSERT INTO public.items SELECT g, 'v' || g FROM generate_series(1, 10) g");
        }
        pg.createDatabase("dst");
        other.createDatabase("src");
        other.execute("src", "CREATE TABLE public.items (id int PRIMARY KEY, v text)");

        try (RunningEngine e = RunningEngine.start(config(pg, "src", "orig", "orig_pub"), dir);
             Connection src = pg.connect("src"); Connection dst = pg.connect("dst")) {
            e.awaitStreaming(Duration.ofSeconds(60));
            pg.execute("src", "INSERT INTO public.items SELECT g, 's' || g FROM generate_series(11, 15) g");
            RunningEngine.awaitEqual(src, dst, ITEMS, "ident_t", Duration.ofSeconds(30));
        }
        assertThat(written().rows()).isEqualTo(15);
        assertThat(written().checkpoints()).hasSize(1);
        assertThat(written().files()).containsKey("checkpoint.json");
    }

    @AfterAll
    static void stop() {
        for (EmbeddedPg p : new EmbeddedPg[] {pg, other}) {
            if (p != null) {
                p.close();
            }
        }
    }

    /** The pipeline: postgres destination {@code replica} (schema ident_t, checkpoint in ident_state) and jsonl {@code files}. */
    private static String config(EmbeddedPg source, String database, String slot, String publication) {
        return new BadInput.Config(source, database, slot).set("publication", publication)
                .postgres("replica", pg.host(), pg.port(), "dst", "ident", null)
                .jsonl("files", dir.resolve("events")).yaml();
    }

    /** What the destinations hold: target rows, checkpoint rows, and each jsonl file's digest. */
    record Written(long rows, List<String> checkpoints, Map<String, String> files) {
    }

    private static Written written() throws Exception {
        List<String> cps = new ArrayList<>();
        long rows;
        try (Connection dst = pg.connect("dst"); Statement s = dst.createStatement()) {
            rows = count(dst, "SELECT count(*) FROM ident_t.items");
            try (ResultSet rs = s.executeQuery("SELECT destination || ' ' || checkpoint::text || ' ' || updated_at::text"
                    + " FROM ident_state.checkpoints ORDER BY 1")) {
                while (rs.next()) {
                    cps.add(rs.getString(1));
                }
            }
        }
        Map<String, String> files = new TreeMap<>();
        for (String f : files(dir.resolve("events"))) {
            byte[] bytes = Files.readAllBytes(dir.resolve("events").resolve(f));
            files.put(f, bytes.length + " " + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes)));
        }
        return new Written(rows, cps, files);
    }

    private static void assertIdentityFailure(String yaml, String... fieldNamed) throws Exception {
        Written before = written();
        MillraceException e = startFails(yaml, dir, Map.of());
        assertThat(e.kind()).isEqualTo(Kind.IDENTITY);
        assertThat(e.kind().exitCode()).isEqualTo(8);
        assertThat(e.getMessage()).contains("destination 'replica' holds a checkpoint of another pipeline").contains(fieldNamed).contains(FIX);
        assertThat(written()).as("destinations unchanged").isEqualTo(before);
    }

    @Test
    @Order(1)
    void anotherSlotIsRefused() throws Exception {
        assertIdentityFailure(config(pg, "src", "other", "orig_pub"), "slot 'orig' (this pipeline uses 'other')");
        assertThat(slotExists(pg, "other")).isFalse();
    }

    @Test
    @Order(2)
    void anotherPublicationIsRefusedBeforeItIsCreated() throws Exception {
        assertIdentityFailure(config(pg, "src", "orig", "other_pub"), "publication 'orig_pub' (this pipeline uses 'other_pub')");
        // The publication used to be created before the identity check.
        assertThat(publicationExists(pg, "src", "other_pub")).isFalse();
    }

    @Test
    @Order(3)
    void anotherDatabaseIsRefused() throws Exception {
        // With its own slot name: the identity check names the database, and neither slot nor publication is created.
        assertIdentityFailure(config(pg, "src2", "orig_b", "orig_pub"), "database 'src' (this pipeline reads 'src2')");
        assertThat(slotExists(pg, "orig_b")).isFalse();
        assertThat(publicationExists(pg, "src2", "orig_pub")).isFalse();
    }

    @Test
    @Order(4)
    void anotherDatabaseWithTheSameSlotNameIsCaughtByThePreflight() throws Exception {
        // Slot names are per server, so the preflight sees first that 'orig' belongs to src: not IDENTITY but
        // SOURCE_SETUP (exit code 6), with the database named as the thing to check.
        Written before = written();
        MillraceException e = startFails(config(pg, "src2", "orig", "orig_pub"), dir, Map.of());
        assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
        assertThat(e.getMessage()).contains("slot 'orig' belongs to database 'src', not 'src2'").contains("check source.database");
        assertThat(written()).isEqualTo(before);
        assertThat(publicationExists(pg, "src2", "orig_pub")).isFalse();
    }

    @Test
    @Order(5)
    void anotherSystemWithTheSameDatabaseNameIsRefused() throws Exception {
        String systemId;
        try (Connection c = pg.connect("postgres"); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT system_identifier::text FROM pg_control_system()")) {
            rs.next();
            systemId = rs.getString(1);
        }
        assertIdentityFailure(config(other, "src", "orig", "orig_pub"), "source system identifier " + systemId);
        assertThat(slotExists(other, "orig")).isFalse();
        assertThat(publicationExists(other, "src", "orig_pub")).isFalse();
    }

    @Test
    @Order(6)
    void theSamePipelineResumesWithWhatChangedWhileItWasStopped() throws Exception {
        // The control: none of the refusals above touched what the right pipeline needs.
        pg.execute("src", "INSERT INTO public.items SELECT g, 'stopped' || g FROM generate_series(16, 20) g");
        try (RunningEngine e = RunningEngine.start(config(pg, "src", "orig", "orig_pub"), dir);
             Connection src = pg.connect("src"); Connection dst = pg.connect("dst")) {
            e.awaitStreaming(Duration.ofSeconds(60));
            pg.execute("src", "UPDATE public.items SET v = 'resumed' WHERE id = 1");
            RunningEngine.awaitEqual(src, dst, ITEMS, "ident_t", Duration.ofSeconds(30));
        }
        assertThat(written().rows()).isEqualTo(20);
    }

    @Test
    @Order(7)
    void aSlotReCreatedWhileStoppedIsRefusedNotResumedWithAGap() throws Exception {
        // Changes the destinations have not seen, then the slot is replaced (as another pipeline with the same
        // slot name and empty destinations would do): the new slot starts after those changes.
        pg.execute("src", "INSERT INTO public.items VALUES (21, 'lost if resumed')");
        pg.execute("src", "SELECT pg_drop_replication_slot('orig')", "SELECT pg_create_logical_replication_slot('orig', 'pgoutput')");
        pg.execute("src", "INSERT INTO public.items VALUES (22, 'after the new slot')");
        Written before = written();
        MillraceException e = startFails(config(pg, "src", "orig", "orig_pub"), dir, Map.of());
        assertThat(e.kind()).isEqualTo(Kind.IDENTITY);
        assertThat(e.getMessage()).contains("replication slot 'orig' is confirmed up to").contains("past the destinations' checkpoint")
                .contains("re-created or advanced by another process").contains("empty destinations");
        assertThat(written()).isEqualTo(before);
        try (Connection dst = pg.connect("dst")) {
            assertThat(count(dst, "SELECT count(*) FROM ident_t.items WHERE id IN (21, 22)")).isZero();
        }
    }
}
