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
    /** What a {@link #shapes} value starts with when it carries a DDL waiting for the table's next description. */
    private static final String PENDING_DDL = "pending-ddl:";

    /**
     * A {@link #shapes} value: the event trigger reported a DDL of the table, which the stream has not described since;
     * each destination records it beside the shape it wrote ({@link io.millrace.core.change.SourceShapes#pendingDdl}).
     */
    public static String pendingDdl(io.millrace.core.schema.SchemaChange ddl) {
        return PENDING_DDL + new String(ddl.toJson(), java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The DDL of a {@link #pendingDdl} value, or null for any other value. */
    static io.millrace.core.schema.SchemaChange pendingDdl(String value) {
        return value.startsWith(PENDING_DDL)
                ? io.millrace.core.schema.SchemaChange.parse(value.substring(PENDING_DDL.length()).getBytes(java.nio.charset.StandardCharsets.UTF_8))
                : null;
    }

    /** Whether {@code value} is a {@link #pendingDdl} value. */
    static boolean isPendingDdl(String value) {
        return value != null && value.startsWith(PENDING_DDL);
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
