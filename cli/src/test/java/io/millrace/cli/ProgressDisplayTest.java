package io.millrace.cli;

import io.millrace.core.schema.TableRef;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

class ProgressDisplayTest {
    /**
     * A table copied again later (an online re-copy, a table that joined): its rate is over this copy, not from the
     * first rows of the copy before (a user read "22861 rows, landed at 1.3 s (100 rows/s over its 228.9 s)").
     */
    @Test
    void aTableCopiedAgainIsTimedFromItsNewCopy() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ProgressDisplay d = new ProgressDisplay(new PrintStream(bytes, true, StandardCharsets.UTF_8), false);
        TableRef t = new TableRef("shop", "items");
        d.tableStarted(t, 100);
        d.rowsCopied(t, 100);
        d.tableDone(t, 100);
        Thread.sleep(1_500);
        d.tableStarted(t, 50);
        d.rowsCopied(t, 50);
        d.tableDone(t, 50);
        String[] lines = bytes.toString(StandardCharsets.UTF_8).strip().split("\n");
        assertThat(lines).hasSize(2);
        assertThat(lines[1]).contains("50 rows, landed at 0.0 s").doesNotContain("over its");
    }
}
