package io.millrace.cli.online;

import io.millrace.cli.crash.EngineProcess;

import io.millrace.core.change.CheckpointJson;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.verify.Verifier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SIGKILL right after a table added to the configuration was added to the publication, before any
 * checkpoint recorded that it must be copied. INV: RESUME — the next start must still copy it: the
 * table is in the publication by then, so it no longer looks "added", and only a durable record of the
 * pending copy can tell. The engine therefore records the copy in every destination before it alters the
 * publication; the test asserts that order, then that the restart copies the table.
 */
class AddTableCrashIT {
    private static EmbeddedPg pg;

    @BeforeAll
    static void startServer() {
        pg = EmbeddedPg.builder().major(17).setting("synchronous_commit", "on").start();
        pg.createDatabase("ac_src");
        pg.createDatabase("ac_dst");
    }

    @AfterAll
    static void stopServer() {
        if (pg != null) {
            pg.close();
        }
    }

    private static String config(List<String> tables, Path events) {
        return String.join("\n", "name: add-crash", "source:", "  host: 127.0.0.1", "  port: " + pg.port(), "  database: ac_src",
                "  user: postgres", "  slot: ac", "  publication: ac", "  tables: [" + String.join(", ", tables) + "]", "destinations:",
                "  - name: replica", "    type: postgres", "    host: 127.0.0.1", "    port: " + pg.port(), "    database: ac_dst",
                "    user: postgres", "  - name: files", "    type: jsonl", "    directory: " + events, "pipeline:", "  linger_ms: 200", "");
    }

    @Test
    void aTableAddedToThePublicationJustBeforeAKillIsStillCopied() throws Exception {
        Path work = Path.of("target", "add-crash").toAbsolutePath();
        if (Files.exists(work)) {
            try (var walk = Files.walk(work)) {
                for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
        Path events = work.resolve("events");
        Files.createDirectories(events);
        Path configA = work.resolve("a.yaml");
        Path configAB = work.resolve("ab.yaml");
        Files.writeString(configA, config(List.of("public.a"), events));
        Files.writeString(configAB, config(List.of("public.a", "public.b"), events));
        pg.execute("ac_src", "CREATE TABLE a (id int PRIMARY KEY, v int)", "INSERT INTO a SELECT g, g FROM generate_series(1, 100) g",
                "CREATE TABLE b (id int PRIMARY KEY, v int)", "INSERT INTO b SELECT g, g FROM generate_series(1, 5000) g");
        EngineProcess engine = EngineProcess.start(configA, work.resolve("engine-a.log"));
        try (Connection src = pg.connect("ac_src"); Connection dst = pg.connect("ac_dst")) {
            await(engine, "streaming from slot");
            long deadline = System.currentTimeMillis() + 60_000;
            while (!Verifier.compare(src, dst, List.of(TableRef.parse("public.a")), null).get(0).equal()) {
                assertThat(System.currentTimeMillis()).isLessThan(deadline);
                Thread.sleep(50);
            }
            assertThat(engine.terminate(60)).isZero();

            engine = EngineProcess.start(configAB, work.resolve("engine-ab.log"));
            while (!engine.logText().contains("to publication 'ac'")) {
                assertThat(engine.alive()).as("log %s", engine.log()).isTrue();
                Thread.sleep(1);
            }
            assertThat(engine.kill()).isEqualTo(EngineProcess.SIGKILL_EXIT);
            String cp;
            try (Statement s = dst.createStatement(); ResultSet rs = s.executeQuery("SELECT checkpoint::text FROM millrace.checkpoints")) {
                rs.next();
                cp = rs.getString(1);
            }
            boolean recorded = CheckpointJson.read(cp).online().stream().anyMatch(t -> t.table().equals(TableRef.parse("public.b")));
            try (Statement s = src.createStatement(); ResultSet rs = s.executeQuery(
                    "SELECT count(*) FROM pg_publication_tables WHERE pubname = 'ac' AND tablename = 'b'")) {
                rs.next();
                assertThat(rs.getLong(1)).as("b was added to the publication before the kill").isEqualTo(1);
            }
            // INV: RESUME — the copy of b is in the checkpoint before b joins the publication
            assertThat(recorded).as("the copy of b is recorded before b is added to the publication: %s", cp).isTrue();

            while (true) {
                try (Statement s = src.createStatement(); ResultSet rs = s.executeQuery("SELECT active FROM pg_replication_slots WHERE slot_name = 'ac'")) {
                    if (!rs.next() || !rs.getBoolean(1)) {
                        break;
                    }
                }
                Thread.sleep(10);
            }
            engine = EngineProcess.start(configAB, work.resolve("engine-restart.log"));
            await(engine, "streaming from slot");
            pg.execute("ac_src", "UPDATE a SET v = -1 WHERE id = 1");
            deadline = System.currentTimeMillis() + 30_000;
            List<Verifier.TableResult> last;
            while (!(last = Verifier.compare(src, dst, List.of(TableRef.parse("public.a"), TableRef.parse("public.b")), null)).stream()
                    .allMatch(Verifier.TableResult::equal)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new AssertionError("b was never copied after a kill right after it was added to the publication: " + last
                            + "; log " + engine.log() + ":\n" + engine.logTail(15));
                }
                Thread.sleep(100);
            }
            assertThat(engine.terminate(60)).isZero();
        } finally {
            engine.destroyQuietly();
        }
    }

    private static void await(EngineProcess engine, String line) throws InterruptedException {
        while (!engine.logText().contains(line)) {
            assertThat(engine.alive()).as("engine ended before '%s'; log %s:%n%s", line, engine.log(), engine.logTail(30)).isTrue();
            assertThat(engine.millisSinceStart()).isLessThan(90_000);
            Thread.sleep(20);
        }
    }
}
