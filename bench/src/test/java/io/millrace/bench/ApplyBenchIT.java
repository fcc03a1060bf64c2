package io.millrace.bench;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A tiny run of {@link ApplyBench}: each contestant drains each phase, and every target equals the source after the
 * updates (the benchmark checks it and throws otherwise). No timing is asserted.
 */
class ApplyBenchIT {
    @Test
    void everyContestantAppliesEveryPhase() throws Exception {
        PrintStream out = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            ApplyBench.main(new String[]{"--rows", "3000", "--tx-rows", "100"});
        } finally {
            System.setOut(out);
        }
        String table = captured.toString(StandardCharsets.UTF_8);
        out.print(table);
        long rows = Arrays.stream(table.split("\n")).filter(l -> l.startsWith("| 0 | 100 rows |")).count();
        assertThat(rows).as(table).isEqualTo(9); // 3 phases × native, millrace-postgres, millrace-duckdb
        assertThat(table).contains("| insert | millrace-postgres |", "| delete | native |", "| update | millrace-duckdb |");
    }
}
