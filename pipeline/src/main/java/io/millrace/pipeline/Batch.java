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
 * @param events      changes in commit order (INV: ORDER)
 * @param flushLsn    end LSN of the last source transaction complete in this or an earlier batch
 *                    (null: unchanged); the checkpoint's flush position after this batch
 * @param last        position of the last streamed event (null: none streamed)
 * @param budgetBytes bytes to give back to the reader's budget once the batch is durable
 * @param snapshot    new snapshot progress to record with this batch (null: unchanged)
 * @param online      new online snapshot progress to record with this batch (null: unchanged)
 * @param heldBytes   bytes to give back to the assembler's budget for replayed and chunk rows once the batch is durable
 */
public record Batch(List<ChangeEvent> events, Lsn flushLsn, Position last, long budgetBytes, SnapshotProgress snapshot,
                    List<OnlineTask> online, long heldBytes) {
    public Batch(List<ChangeEvent> events, Lsn flushLsn, Position last, long budgetBytes, SnapshotProgress snapshot) {
        this(events, flushLsn, last, budgetBytes, snapshot, null, 0);
    }

    public Batch(List<ChangeEvent> events, Lsn flushLsn, Position last, long budgetBytes, SnapshotProgress snapshot,
                 List<OnlineTask> online) {
        this(events, flushLsn, last, budgetBytes, snapshot, online, 0);
    }
}
