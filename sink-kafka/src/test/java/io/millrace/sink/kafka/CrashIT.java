package io.millrace.sink.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.sink.kafka.testing.KafkaBroker;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A writer killed with SIGKILL in the middle of its transactions leaves, for read_committed readers,
 * exactly the batches of the checkpoint it committed: none twice, none half (INV: DURABLE, INV: RESUME).
 * Fails when the checkpoint is written outside the data's transaction, or when open() does not abort
 * the transaction the killed writer left open.
 */
class CrashIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static KafkaBroker kafka;

    @BeforeAll
    static void start() throws Exception {
        kafka = KafkaBroker.start();
    }

    @AfterAll
    static void stop() throws Exception {
        kafka.close();
    }

    @Test
    void killedWriterLeavesEachBatchExactlyOnce() throws Exception {
        long lastSeen = 0;
        for (int round = 0; round < 3; round++) {
            Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
                    "-cp", System.getProperty("java.class.path"), CrashWriter.class.getName(), kafka.bootstrapServers())
                    .redirectErrorStream(true).start();
            long committed = 0;
            try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                long target = lastSeen + 3 + round;
                while ((line = out.readLine()) != null) {
                    if (line.startsWith("committed ")) {
                        committed = Long.parseLong(line.substring(10));
                        if (committed >= target) {
                            Thread.sleep(7L * round);
                            p.destroyForcibly(); // SIGKILL, most likely inside the next transaction
                            break;
                        }
                    }
                }
            }
            assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            assertTrue(committed > lastSeen, "round " + round + " committed nothing after " + lastSeen);

            long checkpoint;
            try (KafkaSink sink = new KafkaSink(CrashWriter.config(kafka.bootstrapServers()))) {
                checkpoint = sink.open().orElseThrow().flushLsn().value(); // aborts the killed writer's open transaction
            }
            assertTrue(checkpoint >= committed, "checkpoint " + checkpoint + ", committed " + committed);

            List<ConsumerRecord<String, String>> records = kafka.readCommitted("crashsrc.public.crash");
            Set<Long> ids = new HashSet<>();
            long maxBatch = 0;
            for (ConsumerRecord<String, String> r : records) {
                JsonNode after = JSON.readTree(r.value()).get("after");
                long id = after.get("id").asLong();
                assertTrue(ids.add(id), "row " + id + " visible twice (round " + round + ")");
                assertEquals(id, JSON.readTree(r.key()).get("id").asLong(), "key of row " + id);
                maxBatch = Math.max(maxBatch, after.get("batch").asLong());
            }
            assertEquals(checkpoint * 1000, ids.size(), "exactly the rows of the checkpointed batches");
            assertEquals(checkpoint, maxBatch);
            // the killed writer's last, unfinished transaction is in the log, aborted: read_uncommitted sees more
            if (round == 2) {
                assertTrue(kafka.readUncommitted("crashsrc.public.crash").size() >= records.size());
            }
            lastSeen = checkpoint;
        }
    }
}
