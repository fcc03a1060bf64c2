package io.millrace.snapshot.online;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.Codecs;
import io.millrace.pipeline.Collected;
import io.millrace.pipeline.Pipeline;
import io.millrace.pipeline.Wire;
import io.millrace.snapshot.online.Watermarks.Window;
import io.millrace.snapshot.online.Watermarks.Window.Outcome;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * INV: WATERMARK at the assembler, without a server: a chunk's window reaches its reader as an outcome through the
 * stream's watermark messages. A chunk whose high watermark comes without its low one (the window recorded no key the
 * stream changed) is read again, not emitted, and the pipeline goes on; a chunk between both is emitted at its high
 * watermark, before the changes after it. Without the assembler's check of the window's phase the high watermark of
 * the first would stop the pipeline (a window moved from REGISTERED to EMITTED) and its reader would wait for ever.
 */
class WatermarkWindowsTest {
    private static final int OID = 16600;

    @TempDir
    Path spill;

    @Test
    void aChunkWithoutItsLowWatermarkIsReadAgainAndOneBetweenBothIsEmitted() throws Exception {
        RelationInfo t = new RelationInfo(OID, new TableRef("public", "t"), 'd', List.of(new ColumnInfo("id", Codecs.builtin(Wire.INT8), -1,
                true), new ColumnInfo("v", Codecs.builtin(Wire.TEXT), -1, false)), TypeResolver.builtinsOnly());
        Collected sink = new Collected();
        Pipeline p = new Pipeline(new Pipeline.Options(64L << 20, 64 << 10, 256 << 10, 20), List.of(sink),
                List.of(new Checkpoint(Checkpoint.VERSION, new Identity("1", "db", "slot", "pub", "rows"), Lsn.ZERO, Position.START, null)),
                l -> { });
        Watermarks watermarks = new Watermarks();
        p.watermarks(watermarks);
        p.startWriter();
        p.startStreaming(TypeResolver.builtinsOnly(), oid -> List.of("id"), Position.START, () -> Lsn.ZERO, spill);
        long[] lsn = {0x200_0000L};
        try {
            offer(p, lsn, Wire.relation(OID, "t"));
            Window lost = watermarks.open(t, List.of("id"), null);
            lost.fill(List.<Object[]>of(new Object[] {1L, "chunk 1"}), new long[0], 10);
            tx(p, lsn, 20, Wire.message(lsn[0], Watermarks.PREFIX, lost.message(false))); // its low watermark never came
            p.flush();
            assertThat(await(lost)).isEqualTo(new Outcome.ReadAgain());
            assertThat(lost.phase()).isEqualTo(Window.Phase.READ_AGAIN);

            Window chunk = watermarks.open(t, List.of("id"), null);
            tx(p, lsn, 21, Wire.message(lsn[0], Watermarks.PREFIX, chunk.message(true)));
            chunk.fill(List.of(new Object[] {1L, "chunk 1"}, new Object[] {2L, "chunk 2"}), new long[0], 30);
            tx(p, lsn, 22, Wire.message(lsn[0], Watermarks.PREFIX, chunk.message(false)));
            tx(p, lsn, 23, Wire.insert(OID, "3", "streamed after"));
            p.flush();
            assertThat(await(chunk)).isEqualTo(new Outcome.Emitted(2));
            long deadline = System.currentTimeMillis() + 10_000;
            while (sink.events.size() < 3 && !p.failure().isSet() && System.currentTimeMillis() < deadline) {
                Thread.sleep(5);
            }
            assertThat(p.failure().isSet()).as("the pipeline goes on").isFalse();
            assertThat(sink.events).extracting(e -> e.op().name() + " " + e.after()[1])
                    .containsExactly("READ chunk 1", "READ chunk 2", "CREATE streamed after");
        } finally {
            p.close();
        }
    }

    /** One transaction of {@code body}, its commit LSN as its BEGIN announced. */
    private static void tx(Pipeline p, long[] lsn, long xid, byte[] body) throws Exception {
        long commit = lsn[0] + 10;
        offer(p, lsn, Wire.begin(commit, xid));
        offer(p, lsn, body);
        offer(p, lsn, Wire.commit(commit, commit + 1));
        lsn[0] = commit + 2;
    }

    private static void offer(Pipeline p, long[] lsn, byte[] m) throws Exception {
        p.offer(Lsn.of(lsn[0]++), m, 0, m.length);
    }

    private static Outcome await(Window w) throws InterruptedException {
        Optional<Outcome> o = w.await(10_000);
        assertThat(o).as("the reader learns what became of its chunk").isPresent();
        return o.get();
    }
}
