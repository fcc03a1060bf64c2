package io.millrace.bench.jmh;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.event.EnvelopeWriter;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.types.Codecs;
import io.millrace.pgoutput.PgOutputFramer;
import io.millrace.pgoutput.PgOutputMessage;
import io.millrace.pgoutput.RawTuple;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.io.OutputStream;
import java.time.Clock;
import java.util.concurrent.TimeUnit;

/**
 * The per-row hot paths of streaming, on one typical row of the benchmark table ({@link BenchRow}):
 * framing an Insert message, decoding its tuple (text and binary values), and writing the change
 * event's JSON envelope (the jsonl destination's per-row work) into a discarding stream.
 *
 * <p>Run: {@code java -jar bench/target/millrace-bench.jar jmh DecoderBenchmark} (docs/BENCHMARKS.md).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "-Xmx2g")
public class DecoderBenchmark {
    PgOutputFramer framer;
    byte[] insertText;
    byte[] insertBinary;
    RelationInfo relation;
    RawTuple textTuple;
    RawTuple binaryTuple;
    EnvelopeWriter envelope;
    ChangeEvent event;
    JsonGenerator gen;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        framer = new PgOutputFramer(Codecs.builtins());
        byte[] rel = BenchRow.relation();
        framer.frame(rel, 0, rel.length);
        insertText = BenchRow.insertText();
        insertBinary = BenchRow.insertBinary();
        PgOutputMessage.Insert t = (PgOutputMessage.Insert) framer.frame(insertText, 0, insertText.length);
        PgOutputMessage.Insert b = (PgOutputMessage.Insert) framer.frame(insertBinary, 0, insertBinary.length);
        relation = t.relation();
        textTuple = t.newTuple();
        binaryTuple = b.newTuple();
        envelope = new EnvelopeWriter(new SourceMeta("bench", "bench"), Clock.systemUTC(), "bench");
        Lsn lsn = Lsn.of(0x1_6B37_4D48L);
        event = new ChangeEvent(Op.CREATE, relation, null, binaryTuple.decode(relation), lsn, new Position(lsn, 42), 770,
                1_767_349_056_123_456L, false);
        gen = new JsonFactory().createGenerator(OutputStream.nullOutputStream());
        gen.setRootValueSeparator(null);
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        gen.close();
    }

    /** The framer's work per row message: parse the Insert, index the tuple's columns (no value decoded). */
    @Benchmark
    public PgOutputMessage frameInsertText() {
        return framer.frame(insertText, 0, insertText.length);
    }

    @Benchmark
    public Object[] decodeText() {
        return textTuple.decode(relation);
    }

    @Benchmark
    public Object[] decodeBinary() {
        return binaryTuple.decode(relation);
    }

    /** The jsonl destination's per-row work: the value envelope into a buffered generator, then a line end. */
    @Benchmark
    public JsonGenerator envelopeValue() throws IOException {
        envelope.writeValue(gen, event);
        gen.writeRaw('\n');
        return gen;
    }

    /** The convenience form: the value envelope as a new byte array. */
    @Benchmark
    public byte[] envelopeValueBytes() {
        return envelope.valueBytes(event);
    }
}
