package io.millrace.pipeline;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.OnlineTask;
import io.millrace.core.change.SnapshotProgress;

import java.util.List;

/**
 * What the sink writer applies in one go.
 *
 * @param events    changes in commit order (INV: ORDER)
 * @param flushLsn  end LSN of the last source transaction complete in this or an earlier batch
 *                  (null: unchanged); the checkpoint's flush position after this batch
 * @param last      position of the last streamed event (null: none streamed)
 * @param snapshot  new snapshot progress to record with this batch (null: unchanged)
 * @param online    new online snapshot progress to record with this batch (null: unchanged)
 * @param heldBytes what the batch's rows take on the heap ({@link io.millrace.core.HeapCost}), taken from the budget of
 *                  rows in flight before they joined it; given back once the batch is durable (INV: BOUNDED)
 * @param shapes    tables' shape entries to record with this batch, by oid, over what its events say (empty: none): a
 *                  table whose changes are withheld from here on, or flow again ({@link
 *                  io.millrace.core.change.SourceShapes#withheld}); {@link #NO_SHAPE} takes a table's entry away
 */
public record Batch(List<ChangeEvent> events, Lsn flushLsn, Position last, SnapshotProgress snapshot,
                    List<OnlineTask> online, long heldBytes, java.util.Map<Integer, String> shapes) {
    /** A {@link #shapes} value: the table's entry is taken away (a hold ended before the stream described the table). */
    public static final String NO_SHAPE = "";
    /** A {@link #shapes} value: the table's pending DDL was described; its entry goes back to the shape it keeps. */
    public static final String DDL_TOLD = "ddl-told";
    /**
     * A {@link #shapes} value: the event trigger reported a DDL of the table, which the stream has not described since; each
     * destination records it with the shape it wrote put in ({@link io.millrace.core.change.SourceShapes#withWritten}): one
     * encoding, the checkpoint entry's.
     */
    public static String pendingDdl(io.millrace.core.schema.SchemaChange ddl) {
        return io.millrace.core.change.SourceShapes.pendingDdl(null, ddl);
    }

    /** Whether {@code value} is a {@link #pendingDdl} value. */
    static boolean isPendingDdl(String value) {
        return io.millrace.core.change.SourceShapes.isPendingDdl(value);
    }

    public Batch {
        shapes = shapes == null ? java.util.Map.of() : java.util.Map.copyOf(shapes);
    }

    public Batch(List<ChangeEvent> events, Lsn flushLsn, Position last, SnapshotProgress snapshot, List<OnlineTask> online,
                 long heldBytes) {
        this(events, flushLsn, last, snapshot, online, heldBytes, null);
    }

    public Batch(List<ChangeEvent> events, Lsn flushLsn, Position last, SnapshotProgress snapshot) {
        this(events, flushLsn, last, snapshot, null, 0);
    }
}
