package io.millrace.pipeline;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.Codecs;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Issue 17: the decoder reads no catalog on the row path. What the stream needs from the catalog (a user type's
 * details, the key of a REPLICA IDENTITY FULL table) is read when the Relation message that introduces it arrives,
 * before its rows are framed; every row after uses what was read. Rows in the main stream, in a streamed transaction
 * replayed at its commit, after it, and after a streamed transaction that aborted (its Relation message never framed):
 * the catalog is read once per Relation message framed, however many rows follow (a lookup on the row path makes the
 * key count grow with the rows: checked by adding one to {@code RelationKeys.of}). Both with the rows decoded on the
 * assembler thread and by the decoder pool.
 */
class CatalogOffTheRowPathTest {
    private static final int OID = 16500;
    private static final int MOOD = 90_001; // a user enum: no built-in codec, so the resolver is asked

    @TempDir
    Path spill;

    /** Transactions of 50 rows in the main stream, ids after {@code id}; returns the last id. */
    private static long main(java.util.function.Consumer<byte[]> send, long[] lsn, int xid, long id, int rows, String mood) {
        for (int tx = 0; tx < rows / 50; tx++) {
            long commit = lsn[0] + 60;
            send.accept(Wire.begin(commit, xid + tx));
            for (int i = 0; i < 50; i++) {
                id++;
                send.accept(Wire.insert3(OID, id, "v" + id, mood));
            }
            send.accept(Wire.commit(commit, commit + 1));
            lsn[0] = commit + 2;
        }
        return id;
    }

    @ParameterizedTest(name = "decoders: {0}")
    @ValueSource(ints = {0, 3})
    void theCatalogIsReadOncePerRelationMessageNotPerRow(int decoders) throws Exception {
        AtomicInteger keyReads = new AtomicInteger();
        AtomicInteger typeReads = new AtomicInteger();
        TypeResolver types = oid -> {
            TypeInfo b = Codecs.builtin(oid);
            if (b != null) {
                return b;
            }
            typeReads.incrementAndGet();
            return oid == MOOD ? new TypeInfo(MOOD, "public", "mood", 'e', 'E', 0, 0) : null;
        };
        List<byte[]> ms = new ArrayList<>();
        List<Long> ats = new ArrayList<>();
        long[] lsn = {0x100_0000L};
        java.util.function.Consumer<byte[]> send = m -> {
            ms.add(m);
            ats.add(lsn[0]++);
        };
        long id = 0;
        int rowsPerPart = 500;
        // 1. the main stream: its Relation message, then rows in transactions of 50
        send.accept(Wire.fullRelation(OID, "t", MOOD));
        id = main(send, lsn, 1000, id, rowsPerPart, "happy");
        // 2. a large transaction streamed while in progress (its own Relation message), committed: replayed
        long big = 5000;
        send.accept(Wire.streamStart(big, true));
        send.accept(Wire.streamed(big, Wire.fullRelation(OID, "t", MOOD)));
        for (int i = 0; i < rowsPerPart; i++) {
            send.accept(Wire.streamed(big, Wire.insert3(OID, ++id, "v" + id, "sad")));
        }
        send.accept(Wire.streamStop());
        long bigCommit = lsn[0] + 10;
        send.accept(Wire.streamCommit(big, bigCommit, bigCommit + 1));
        lsn[0] = bigCommit + 2;
        // 3. another streamed transaction, aborted: never replayed
        long aborted = 5001;
        send.accept(Wire.streamStart(aborted, true));
        send.accept(Wire.streamed(aborted, Wire.fullRelation(OID, "t", MOOD)));
        for (int i = 0; i < 50; i++) {
            send.accept(Wire.streamed(aborted, Wire.insert3(OID, 1_000_000 + i, "never", "sad")));
        }
        send.accept(Wire.streamStop());
        send.accept(Wire.streamAbort(aborted));
        // 4. the main stream again, with the relation as the replay left it
        id = main(send, lsn, 2000, id, rowsPerPart, "ok");
        long end = lsn[0] - 1;

        Pipeline.Options o = new Pipeline.Options(64L << 20, 64 << 10, 256 << 10, 20).withDecoders(decoders);
        Collected sink = new Collected();
        AtomicReference<Lsn> durable = new AtomicReference<>(Lsn.ZERO);
        Checkpoint start = new Checkpoint(Checkpoint.VERSION, new Identity("1", "db", "slot", "pub", "catalog"), Lsn.ZERO,
                Position.START, null);
        Pipeline p = new Pipeline(o, List.of(sink), List.of(start), durable::set);
        p.startWriter();
        p.startStreaming(types, relOid -> {
            keyReads.incrementAndGet();
            return List.of("id");
        }, Position.START, () -> Lsn.ZERO, spill);
        for (int i = 0; i < ms.size(); i++) {
            p.offer(Lsn.of(ats.get(i)), ms.get(i), 0, ms.get(i).length);
        }
        p.flush();
        long deadline = System.currentTimeMillis() + 30_000;
        while (durable.get().value() < end && !p.failure().isSet() && System.currentTimeMillis() < deadline) {
            Thread.sleep(5);
        }
        p.close();

        assertEquals(id, sink.events.size(), "every row of the committed transactions, none of the aborted one");
        for (int i = 0; i < sink.events.size(); i++) {
            ChangeEvent e = sink.events.get(i);
            assertEquals(i + 1L, e.after()[0], "row " + (i + 1) + " in order");
            assertEquals(1, e.relation().keyIndexes().length, "keyed by the catalog's key, not by every column");
            assertEquals(0, e.relation().keyIndexes()[0]);
            assertEquals(i < 500 ? "happy" : i < 1000 ? "sad" : "ok", e.after()[2], "the enum's value, decoded");
        }
        // Two Relation messages framed (the main stream's, the committed streamed transaction's): the key read once each.
        assertEquals(2, keyReads.get(), "key reads for " + id + " rows");
        // The user type: resolved when the framer reads each of those Relation messages, never per row.
        assertEquals(2, typeReads.get(), "type reads for " + id + " rows");
    }
}
