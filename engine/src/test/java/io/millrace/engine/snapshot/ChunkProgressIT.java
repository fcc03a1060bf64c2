package io.millrace.engine.snapshot;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** Each landed snapshot chunk is recorded in the checkpoint; when the table lands, its chunks give way to the table. */
class ChunkProgressIT {
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase("cp");
        pg.execute("cp", "CREATE TABLE public.t (id int PRIMARY KEY, v text)",
                "INSERT INTO public.t SELECT g, repeat('v', 100) FROM generate_series(1, 200000) g");
    }

    @AfterAll
    static void stop() {
        pg.close();
    }

    @Test
    void landedChunksAreRecordedThenReplacedByTheTable(@TempDir Path dir) throws Exception {
        String yaml = String.join("\n",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: cp, user: postgres, slot: cp, publication: cp, tables: [public.t]}",
                "snapshot: {readers: 1, chunk_pages: 64}",
                "destinations:",
                "  - {name: files, type: jsonl, directory: events}",
                "");
        Set<String> seenChunks = new LinkedHashSet<>();
        ObjectMapper json = new ObjectMapper();
        Path state = dir.resolve("events").resolve("checkpoint.json");
        try (RunningEngine e = RunningEngine.start(yaml, dir)) {
            long deadline = System.currentTimeMillis() + 120_000;
            while (e.engine().state() != io.millrace.engine.Engine.State.STREAMING && System.currentTimeMillis() < deadline) {
                if (Files.exists(state)) {
                    try {
                        JsonNode cp = json.readTree(Files.readString(state)).path("checkpoint").path("snapshot").path("chunks_done");
                        cp.forEach(c -> seenChunks.add(c.asText()));
                    } catch (Exception replacedWhileReading) {
                        // the state file is replaced atomically; read it again next time
                    }
                }
                Thread.sleep(5);
            }
            e.awaitStreaming(Duration.ofSeconds(5));
            JsonNode snap = json.readTree(Files.readString(state)).path("checkpoint").path("snapshot");
            assertThat(snap.path("state").asText()).isEqualTo("DONE");
            assertThat(snap.path("tables_done").toString()).contains("public.t");
            assertThat(snap.path("chunks_done").size()).as("chunks of landed tables give way to the table").isZero();
        }
        System.out.println("ChunkProgressIT: chunk records seen during the snapshot: " + seenChunks.size());
        assertThat(seenChunks).as("landed chunks were recorded while the table was being copied").isNotEmpty()
                .allMatch(c -> c.matches("public\\.t#\\d+/\\d+"));
    }
}
