package io.millrace.engine.stream;

import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Large transactions arrive while still in progress (pgoutput protocol v2 streaming, forced here by a
 * 64 kB logical_decoding_work_mem), wait on disk, and land at their commit as one transaction;
 * aborted ones and rolled-back subtransactions leave no trace (INV: BOUNDED, ORDER).
 */
class LargeTransactionIT {
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().major(17).setting("logical_decoding_work_mem", "64kB").start();
        pg.createDatabase("src");
        pg.createDatabase("dst");
        pg.execute("src", "CREATE TABLE big (id int PRIMARY KEY, v text)", "CREATE TABLE small (id serial PRIMARY KEY, note text)");
    }

    @AfterAll
    static void stop() {
        pg.close();
    }

    @Test
    void streamedTransactionsLandWholeAtCommitAndAbortedOnesLeaveNoTrace(@TempDir Path dir) throws Exception {
        String yaml = String.join("\n",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: src, user: postgres, slot: big_slot, publication: big_pub,",
                "         tables: [public.big, public.small]}",
                "destinations:",
                "  - {name: replica, type: postgres, host: 127.0.0.1, port: " + pg.port() + ", database: dst, user: postgres}",
                "pipeline: {spill_dir: spill, memory_budget_mb: 8, batch_kb: 256}",
                "");
        try (RunningEngine e = RunningEngine.start(yaml, dir).awaitStreaming(Duration.ofSeconds(60));
             Connection src = pg.connect("src"); Connection dst = pg.connect("dst")) {
            src.setAutoCommit(false);
            try (Statement s = src.createStatement(); Statement small = pg.connect("src").createStatement()) {
                // A large transaction, interleaved with small committed ones from another session.
                s.execute("INSERT INTO big SELECT g, repeat(md5(g::text), 4) FROM generate_series(1, 30000) g");
                small.execute("INSERT INTO small (note) VALUES ('during big 1')");
                s.execute("SAVEPOINT sp");
                s.execute("INSERT INTO big SELECT g, 'rolled back' FROM generate_series(30001, 40000) g");
                s.execute("ROLLBACK TO SAVEPOINT sp");
                s.execute("UPDATE big SET v = 'updated' WHERE id % 7 = 0");
                small.execute("INSERT INTO small (note) VALUES ('during big 2')");
                src.commit();
                // A large transaction that aborts.
                s.execute("INSERT INTO big SELECT g, 'aborted' FROM generate_series(50001, 80000) g");
                s.execute("DELETE FROM big WHERE id <= 1000");
                src.rollback();
                small.execute("INSERT INTO small (note) VALUES ('after abort')");
            }
            src.setAutoCommit(true);
            List<TableRef> tables = List.of(new TableRef("public", "big"), new TableRef("public", "small"));
            RunningEngine.awaitEqual(src, dst, tables, null, Duration.ofSeconds(90));
            try (Statement s = dst.createStatement(); ResultSet rs = s.executeQuery(
                    "SELECT count(*), count(*) FILTER (WHERE v = 'updated'), count(*) FILTER (WHERE v IN ('aborted', 'rolled back')) FROM big")) {
                rs.next();
                assertThat(rs.getLong(1)).isEqualTo(30000);
                assertThat(rs.getLong(2)).isEqualTo(30000 / 7);
                assertThat(rs.getLong(3)).as("aborted changes leave no trace").isZero();
            }
            assertThat(e.engine().stats().spilledBytes()).as("the large transactions arrived streamed, in progress").isPositive();
            try (Stream<Path> left = Files.list(dir.resolve("spill"))) {
                assertThat(left.filter(f -> !f.getFileName().toString().equals(".lock")).toList()) // the folder's holder, no spill
                        .as("spill files are removed once their transaction ends").isEmpty();
            }
        }
    }
}
