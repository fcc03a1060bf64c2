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
 * not when columns are only missing (the catalog has them and the stream does not: dropped since, which the destinations
 * follow as they are, or a publication's column list, see {@link Pipeline.Withholding}). A table in the same shape is told
 * too: a column dropped and added again under its name looks the same, and only the catalog's attribute numbers tell
 * (the callee reads them). Fails without the comparison: no shape change is told.
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
        return told(commit, atStart, List.of(), atStart);
    }

    /**
     * The same with the destinations' checkpoints {@code written}, for the tables {@code sent}; a change told with no
     * shape before reads {@code "t: ? → 2 columns"}.
     */
    private List<String> told(long commit, List<RelationInfo> atStart, List<Checkpoint> written, List<RelationInfo> sent) throws Exception {
        List<String> told = Collections.synchronizedList(new ArrayList<>());
        Pipeline.Options o = new Pipeline.Options(64L << 20, 64 << 10, 256 << 10, 20);
        AtomicReference<Lsn> durable = new AtomicReference<>(Lsn.ZERO);
        Checkpoint start = new Checkpoint(Checkpoint.VERSION, new Identity("1", "db", "slot", "pub", "null"), Lsn.ZERO,
                Position.START, null);
        Pipeline p = new Pipeline(o, List.of(new NullSink("null")), List.of(start), durable::set);
        p.onShapeChange((before, after) -> told.add(after.table().table() + ": " + (before == null ? "?" : before.columns().size())
                + " → " + after.columns().size() + " columns"));
        p.shapesAtStart(atStart, Lsn.of(READ_AT));
        p.shapesWritten(written);
        p.startWriter();
        p.startStreaming(TYPES, relOid -> List.of("id"), Position.START, () -> Lsn.ZERO, spill);
        List<byte[]> ms = new ArrayList<>();
        ms.add(Wire.begin(commit, 700));
        for (RelationInfo r : sent) {
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
        assertEquals(List.of("added: 1 → 2 columns", "retyped: 2 → 2 columns", "renamed: 2 → 2 columns", "same: 2 → 2 columns"),
                told(READ_AT, startShapes()));
        assertEquals(List.of("added: 1 → 2 columns", "retyped: 2 → 2 columns", "renamed: 2 → 2 columns", "same: 2 → 2 columns"),
                told(READ_AT + 0x1000, startShapes()));
    }

    private static Checkpoint written(long appliedCommit, RelationInfo... lastWrittenIn) {
        java.util.SortedMap<Integer, String> shapes = new java.util.TreeMap<>();
        for (RelationInfo r : lastWrittenIn) {
            shapes.put(r.oid(), io.millrace.core.change.SourceShapes.fingerprint(r));
        }
        return new Checkpoint(Checkpoint.VERSION, new Identity("1", "db", "slot", "pub", "d" + appliedCommit), Lsn.of(appliedCommit),
                new Position(Lsn.of(appliedCommit), 1), null).withShapes(shapes);
    }

    /**
     * A table reshaped while stopped: its first Relation message of the run differs from the shape a destination last
     * wrote it in, and from the catalog's at the start. Told with no shape before, once, for a destination that has not
     * applied the transaction; not for one that has (it resumes further on), nor where the destination wrote the table in
     * the catalog's shape (a snapshot reads every column, the stream may carry fewer: a publication's column list).
     */
    @Test
    void aTableWrittenInAnotherShapeIsToldWithNoShapeBefore() throws Exception {
        long commit = READ_AT - 0x1000; // behind the start: the start's shapes say nothing here
        RelationInfo oneColumn = shape(16610, "was", "id int8");
        RelationInfo twoColumns = shape(16611, "same", "id int8", "v text");
        RelationInfo listed = shape(16612, "listed", "id int8", "v text", "secret text");
        List<RelationInfo> sent = List.of(oneColumn, twoColumns, listed);
        assertEquals(List.of("was: ? → 2 columns"),
                told(commit, List.of(listed), List.of(written(commit - 1, oneColumn, twoColumns, listed)), sent));
        assertEquals(List.of("was: ? → 2 columns"), told(commit, List.of(listed),
                List.of(written(commit - 1, oneColumn), written(commit - 1, shape(16610, "was", "id int8", "v text"))), sent));
        assertEquals(List.of(), told(commit, List.of(listed), List.of(written(commit, oneColumn), written(commit + 5, oneColumn)), sent),
                "the transaction applied there already");
    }

    @Test
    void notInATransactionCommittedBeforeTheStartsRead() throws Exception {
        assertEquals(List.of(), told(READ_AT - 1, startShapes())); // the stream behind the start: the catalog's shape may be newer
    }
}
