package io.millrace.pipeline;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.sink.NullSink;
import io.millrace.core.types.Codecs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@link Pipeline#shapesAtStart}: pgoutput describes a table at its first change of a session, in its shape then, so a
 * table whose columns changed before its first change of the run shows no shape change in the stream. Its first Relation
 * message is compared with the catalog's shape at the start — only in a transaction committed at or after the position
 * read after that shape (an earlier one may be older than the catalog's shape: the stream resumes behind the start), and
 * only for a column added, renamed or retyped (columns the catalog has and the stream does not are a publication's
 * column list, not a change). Fails without the comparison: no shape change is told.
 */
class ShapesAtStartTest {
    private static final TypeResolver TYPES = Codecs::builtin;
    private static final long READ_AT = 0x200_0000L;

    @TempDir
    Path spill;

    private static RelationInfo shape(int oid, String name, String... columns) {
        List<ColumnInfo> cols = new ArrayList<>();
        for (String c : columns) {
            String[] nt = c.split(" ");
            int type = nt[1].equals("int8") ? Wire.INT8 : Wire.TEXT;
            cols.add(new ColumnInfo(nt[0], TYPES.resolve(type), -1, nt[0].equals("id")));
        }
        return new RelationInfo(oid, new TableRef("public", name), 'd', cols, TYPES);
    }

    /** The shape changes told when each table's first Relation message (id int8, v text) comes in a transaction at {@code commit}. */
    private List<String> told(long commit, List<RelationInfo> atStart) throws Exception {
        List<String> told = Collections.synchronizedList(new ArrayList<>());
        Pipeline.Options o = new Pipeline.Options(64L << 20, 64 << 10, 256 << 10, 20);
        AtomicReference<Lsn> durable = new AtomicReference<>(Lsn.ZERO);
        Checkpoint start = new Checkpoint(Checkpoint.VERSION, new Identity("1", "db", "slot", "pub", "null"), Lsn.ZERO,
                Position.START, null);
        Pipeline p = new Pipeline(o, List.of(new NullSink("null")), List.of(start), durable::set);
        p.onShapeChange((before, after) -> told.add(after.table().table() + ": " + before.columns().size() + " → "
                + after.columns().size() + " columns"));
        p.shapesAtStart(atStart, Lsn.of(READ_AT));
        p.startWriter();
        p.startStreaming(TYPES, relOid -> List.of("id"), Position.START, () -> Lsn.ZERO, spill);
        List<byte[]> ms = new ArrayList<>();
        ms.add(Wire.begin(commit, 700));
        for (RelationInfo r : atStart) {
            ms.add(Wire.relation(r.oid(), r.table().table()));
            ms.add(Wire.insert(r.oid(), "1", "x"));
        }
        ms.add(Wire.commit(commit, commit + 1));
        long at = commit - ms.size();
        for (byte[] m : ms) {
            p.offer(Lsn.of(at++), m, 0, m.length);
        }
        p.flush();
        long deadline = System.currentTimeMillis() + 30_000;
        while (durable.get().value() < commit + 1 && !p.failure().isSet() && System.currentTimeMillis() < deadline) {
            Thread.sleep(5);
        }
        p.close();
        assertEquals(commit + 1, durable.get().value(), "the transaction durable");
        return told;
    }

    private static List<RelationInfo> startShapes() {
        return List.of(shape(16600, "added", "id int8"), // v added since
                shape(16601, "retyped", "id int8", "v int8"), // v retyped since
                shape(16602, "renamed", "id int8", "w text"), // w renamed to v since
                shape(16603, "same", "id int8", "v text"),
                shape(16604, "listed", "id int8", "v text", "secret text")); // a publication's column list leaves out secret
    }

    @Test
    void aTableReshapedBeforeItsFirstChangeOfTheRunIsToldInATransactionAfterTheStartsRead() throws Exception {
        assertEquals(List.of("added: 1 → 2 columns", "retyped: 2 → 2 columns", "renamed: 2 → 2 columns"),
                told(READ_AT, startShapes()));
        assertEquals(List.of("added: 1 → 2 columns", "retyped: 2 → 2 columns", "renamed: 2 → 2 columns"),
                told(READ_AT + 0x1000, startShapes()));
    }

    @Test
    void notInATransactionCommittedBeforeTheStartsRead() throws Exception {
        assertEquals(List.of(), told(READ_AT - 1, startShapes())); // the stream behind the start: the catalog's shape may be newer
    }
}
