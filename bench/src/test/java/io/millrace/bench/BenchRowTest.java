package io.millrace.bench;

import io.millrace.bench.jmh.BenchRow;
import io.millrace.bench.jmh.DecoderBenchmark;
import io.millrace.core.types.Codecs;
import io.millrace.pgoutput.PgOutputFramer;
import io.millrace.pgoutput.PgOutputMessage;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** The JMH fixtures measure what they claim: a real-looking row whose text and binary forms decode alike. */
class BenchRowTest {
    @Test
    void textAndBinaryFormsOfTheRowDecodeToTheSameValues() {
        PgOutputFramer framer = new PgOutputFramer(Codecs.builtins());
        byte[] rel = BenchRow.relation();
        framer.frame(rel, 0, rel.length);
        byte[] t = BenchRow.insertText();
        byte[] b = BenchRow.insertBinary();
        PgOutputMessage.Insert text = (PgOutputMessage.Insert) framer.frame(t, 0, t.length);
        PgOutputMessage.Insert bin = (PgOutputMessage.Insert) framer.frame(b, 0, b.length);
        assertThat(text.newTuple().kind(0)).isEqualTo('t');
        assertThat(bin.newTuple().kind(0)).isEqualTo('b');

        Object[] tv = text.newTuple().decode(text.relation());
        Object[] bv = bin.newTuple().decode(bin.relation());
        assertThat(tv).hasSize(6);
        for (int i = 0; i < 6; i++) {
            assertThat(text.relation().codec(i).toPgText(bv[i])).as("column %d", i)
                    .isEqualTo(text.relation().codec(i).toPgText(tv[i]));
        }
        assertThat(text.relation().codec(3).toPgText(bv[3])).startsWith("2026-01-02 10:17:36.123456");
        assertThat(text.relation().codec(4).toPgText(bv[4])).isEqualTo(BenchRow.D_TEXT);
        // about the benchmark table's row size: ~150 bytes of values in text
        assertThat(t.length).isBetween(140, 200);
    }

    @Test
    void benchmarkStateRunsEveryHotPath() throws Exception {
        DecoderBenchmark bm = new DecoderBenchmark();
        bm.setUp();
        assertThat(bm.frameInsertText()).isInstanceOf(PgOutputMessage.Insert.class);
        assertThat(bm.decodeText()).hasSize(6);
        assertThat(bm.decodeBinary()).hasSize(6);
        String json = new String(bm.envelopeValueBytes(), StandardCharsets.UTF_8);
        assertThat(json).contains("\"op\":\"c\"").contains(BenchRow.E).contains("\"id\":123456");
        bm.envelopeValue();
        bm.tearDown();
    }
}
