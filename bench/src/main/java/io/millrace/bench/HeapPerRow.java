package io.millrace.bench;

import io.millrace.bench.jmh.BenchRow;
import io.millrace.core.HeapCost;
import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.types.Codecs;
import io.millrace.pgoutput.PgOutputFramer;
import io.millrace.pgoutput.PgOutputMessage;

import java.util.ArrayList;
import java.util.List;

/**
 * Measures what a decoded row change takes on the heap, beside {@link HeapCost}'s estimate that the memory budget
 * counts (INV: BOUNDED): the benchmark table's row ({@link BenchRow}: bigint, int, text, timestamptz, numeric, text) in
 * binary and in text values, decoded as the assembler does (framer, tuple decode, one event per row with its own WAL
 * position), {@code N} rows kept live, heap measured after full collections.
 *
 * <p>Run: {@code java -jar bench/target/millrace-bench.jar heap-per-row [rows]} (docs/BENCHMARKS.md, "Memory per row").
 */
final class HeapPerRow {
    private HeapPerRow() {
    }

    static void main(List<String> args) {
        int n = args.isEmpty() ? 200_000 : Integer.parseInt(args.get(0));
        System.out.println("| row | wire bytes | measured heap bytes per event | HeapCost.row estimate |");
        System.out.println("|---|---|---|---|");
        measure("benchmark row, binary values", BenchRow.relation(), BenchRow.insertBinary(), 6, n);
        measure("benchmark row, text values", BenchRow.relation(), BenchRow.insertText(), 6, n);
        measure("(bigint, int), binary values", narrowRelation(), narrowInsert(), 2, n);
    }

    /** Table public.narrow (id bigint, qty int). */
    private static byte[] narrowRelation() {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(64);
        b.put((byte) 'R').putInt(16_385).put("public\0narrow\0".getBytes(java.nio.charset.StandardCharsets.UTF_8)).put((byte) 'd')
                .putShort((short) 2);
        b.put((byte) 1).put("id\0".getBytes(java.nio.charset.StandardCharsets.UTF_8)).putInt(BenchRow.INT8).putInt(-1);
        b.put((byte) 0).put("qty\0".getBytes(java.nio.charset.StandardCharsets.UTF_8)).putInt(BenchRow.INT4).putInt(-1);
        return java.util.Arrays.copyOf(b.array(), b.position());
    }

    private static byte[] narrowInsert() {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(64);
        b.put((byte) 'I').putInt(16_385).put((byte) 'N').putShort((short) 2);
        b.put((byte) 'b').putInt(8).putLong(123_456L);
        b.put((byte) 'b').putInt(4).putInt(654);
        return java.util.Arrays.copyOf(b.array(), b.position());
    }

    private static void measure(String what, byte[] rel, byte[] insert, int columns, int n) {
        PgOutputFramer framer = new PgOutputFramer(Codecs.builtins());
        framer.frame(rel, 0, rel.length);
        Lsn commit = Lsn.of(0x1_0000_0000L);
        List<ChangeEvent> live = new ArrayList<>(n);
        long before = usedAfterGc();
        for (int i = 0; i < n; i++) {
            byte[] copy = insert.clone(); // pgjdbc hands each message over in an array of its own
            PgOutputMessage.Insert m = (PgOutputMessage.Insert) framer.frame(copy, 0, copy.length);
            live.add(new ChangeEvent(Op.CREATE, m.relation(), null, m.newTuple().decode(m.relation()), Lsn.of(commit.value() + i),
                    new Position(commit, i + 1), 770, 1_767_349_056_123_456L, false));
        }
        long after = usedAfterGc();
        long per = (after - before) / n;
        System.out.printf("| %s | %d | %d | %d |%n", what, insert.length, per, HeapCost.row(insert.length, columns, 1));
        if (live.size() != n) {
            throw new AssertionError();
        }
    }

    private static long usedAfterGc() {
        Runtime r = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return r.totalMemory() - r.freeMemory();
    }
}
