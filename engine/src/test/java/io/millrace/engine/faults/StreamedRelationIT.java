package io.millrace.engine.faults;

import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;

/**
 * Found by the crash matrix: when the first change of a table in a walsender session arrives inside a transaction
 * that the server streams in progress (protocol v2, larger than {@code logical_decoding_work_mem}), pgoutput sends
 * that table's Relation message inside the stream, and once the streamed transaction commits it marks the schema as
 * sent ({@code cleanup_rel_sync_cache(xid, is_commit = true)} in pgoutput.c): the next, ordinary, transaction on the
 * table comes without a Relation message. The engine must then still know the relation (INV: RESUME, NO-SILENT-ERROR:
 * a restart must not turn into a DECODE failure). Deterministic: a fresh session, a 20 000-row streamed insert, then
 * a one-row insert.
 */
class StreamedRelationIT {
    private static EmbeddedPg pg;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        E2e.init();
        pg = EmbeddedPg.builder().major(17).setting("logical_decoding_work_mem", "64kB").start();
        pg.createDatabase("sr_src");
        pg.execute("sr_src", "CREATE TABLE a (id int PRIMARY KEY, v text)");
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    @Test
    void aTableFirstSeenInAStreamedTransactionIsKnownToTheTransactionsAfterIt() throws Exception {
        Path out = dir.resolve("events");
        String yaml = String.join("\n", "name: sr", "source:", "  host: 127.0.0.1", "  port: " + pg.port(), "  database: sr_src",
                "  user: postgres", "  slot: sr", "  publication: sr", "  tables: [public.a]", "destinations:", "  - name: files",
                "    type: jsonl", "    directory: " + out, "");
        try (RunningEngine run = RunningEngine.start(yaml, dir)) {
            run.awaitStreaming(Duration.ofSeconds(60));
            pg.execute("sr_src", "INSERT INTO a SELECT g, 'streamed ' || g FROM generate_series(1, 20000) g");
            pg.execute("sr_src", "INSERT INTO a VALUES (0, 'after the streamed one')");
            E2e.awaitEvent(out, e -> "after the streamed one".equals(E2e.row(e).path("v").asText()), "the one-row insert",
                    Duration.ofSeconds(30));
        }
    }
}
