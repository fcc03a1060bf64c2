package io.millrace.engine.faults;

import io.millrace.api.Millrace;
import io.millrace.api.PipelineSettings;
import io.millrace.api.SourceSettings;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

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

    /**
     * DDL inside a transaction the server streams in progress, larger than the memory budget, so that it is held on disk
     * and replayed in batches: rows written before and after an ADD COLUMN ... DEFAULT and an ALTER COLUMN ... TYPE ...
     * USING in the same transaction, on a table changed before it in the run ({@code seen}), on one not changed since the
     * start ({@code quiet}); and a table without a key ({@code keyless}, REPLICA IDENTITY FULL) given a column without a
     * default, whose rows are then updated and deleted by their whole old image, the new column in it. The source fills
     * and rewrites the old rows of the keyed tables without change events; the replay must see each new shape at its
     * Relation message, inside the transaction, and copy those tables again. The postgres destination must equal the
     * source. (A keyless table given a column with a default is followed exactly only with the DDL event trigger:
     * DdlTriggerIT.)
     */
    @Test
    void ddlInsideAStreamedTransactionLargerThanTheBudgetKeepsTheDestinationEqual() throws Exception {
        pg.createDatabase("sr_ddl");
        pg.createDatabase("sr_ddl_dst");
        List<String> tables = List.of("public.seen", "public.quiet", "public.keyless");
        try (Connection s = pg.connect("sr_ddl"); Connection d = pg.connect("sr_ddl_dst")) {
            E2e.exec(s, "CREATE TABLE public.seen (id int PRIMARY KEY, n int, pad text)",
                    "CREATE TABLE public.quiet (id int PRIMARY KEY, n int)",
                    "CREATE TABLE public.keyless (a int, b text)",
                    "ALTER TABLE public.keyless REPLICA IDENTITY FULL",
                    "INSERT INTO public.seen SELECT g, g, 'p' FROM generate_series(1, 100) g",
                    "INSERT INTO public.quiet SELECT g, g FROM generate_series(1, 100) g",
                    "INSERT INTO public.keyless SELECT g % 10, 'k' || (g % 10) FROM generate_series(1, 100) g");
            Millrace.Builder pipeline = Millrace.builder().name("sr_ddl")
                    .source(E2e.source(pg, "sr_ddl", "sr_ddl").tables(tables).binary(SourceSettings.BinaryMode.AUTO).build())
                    .snapshot(io.millrace.api.SnapshotSettings.builder().mode(io.millrace.api.SnapshotSettings.Mode.INITIAL).build())
                    .destination("postgres", E2e.postgres("replica", pg, "sr_ddl_dst"))
                    .destination("jsonl", java.util.Map.of("name", "files", "directory", dir.resolve("events").toString()))
                    .pipeline(PipelineSettings.builder().lingerMs(20).memoryBudgetMb(4).batchKb(64).build());
            try (RunningEngine run = RunningEngine.start(pipeline)) {
                run.awaitStreaming(Duration.ofSeconds(60));
                E2e.exec(s, "UPDATE public.seen SET n = -n WHERE id = 1");
                E2e.awaitRow(d, "SELECT count(*) FROM public.seen WHERE id = 1 AND n = -1", Duration.ofSeconds(60));
                E2e.tx(s, "INSERT INTO public.seen SELECT g, g, repeat('x', 500) FROM generate_series(1001, 11000) g",
                        "ALTER TABLE public.seen ADD COLUMN flag int NOT NULL DEFAULT 7",
                        "ALTER TABLE public.quiet ALTER COLUMN n TYPE text USING 'n=' || n",
                        "ALTER TABLE public.keyless ADD COLUMN c int",
                        "INSERT INTO public.seen SELECT g, g, repeat('y', 500), 8 FROM generate_series(11001, 21000) g",
                        "INSERT INTO public.quiet SELECT g, 'n=' || g FROM generate_series(1001, 11000) g",
                        "UPDATE public.keyless SET b = b || '!' WHERE a = 3",
                        "UPDATE public.keyless SET c = a WHERE a = 5",
                        "DELETE FROM public.keyless WHERE a = 4");
                E2e.exec(s, "INSERT INTO public.seen VALUES (0, 0, 'after', 9)");
                E2e.awaitSame(s, d, E2e.refs(tables), Duration.ofSeconds(120));
                assertThat(run.engine().stats().spilledBytes()).as("the transaction arrived streamed, in progress").isPositive();
            }
        }
    }
}
