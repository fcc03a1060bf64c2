package io.millrace.pipeline;

import io.millrace.core.change.OnlineTask;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;

import java.util.List;

/**
 * The stream's side of online snapshots (DBLog's watermark windows), as the assembler calls it: the stream's facts go in,
 * in commit order, and a chunk's surviving rows come out at its high watermark, which the assembler emits there
 * (INV: WATERMARK). The online snapshot implements it ({@code io.millrace.snapshot.online.Watermarks}); a pipeline
 * without online snapshots has {@link #NONE}. So the pipeline knows no snapshot logic, and the snapshot depends on the
 * pipeline only through this interface.
 *
 * <p>Threads: the assembler thread calls every method, one call at a time, except {@link #dirty}, which any thread may
 * call.
 */
public interface WatermarkStream {
    /** Prefix of the watermark logical messages; messages with other prefixes never reach {@link #watermark}. */
    String PREFIX = "millrace.watermark";

    /** A transaction committed in the stream. */
    void committed(long xid);

    /** A Relation message described {@code r}. */
    void described(RelationInfo r);

    /** {@code table} was truncated (or dropped) in the stream. */
    void truncated(TableRef table);

    /** Whether an update of {@code table} that kept unchanged TOAST values and carried an old key must go to {@link #moved}. */
    boolean copying(TableRef table);

    /** An update {@link #copying} let through, its {@code after} holding unchanged TOAST values. */
    void moved(RelationInfo r, Object[] before, Object[] after);

    /** Whether a change of {@code table} must reach {@link #changed} decoded (a chunk's window is open on it). */
    boolean watches(TableRef table);

    /** A streamed change of {@code r} by transaction {@code xid} ({@code before} or {@code after} null as the change has it). */
    void changed(RelationInfo r, Object[] before, Object[] after, long xid);

    /**
     * A logical message with {@link #PREFIX} inside a transaction: a low watermark opens its window and gives null, a high
     * watermark gives its chunk to emit here, or null when there is none (not this run's window, or one to read again).
     */
    Chunk watermark(byte[] content);

    /** The assembler emitted {@code chunk}'s rows, {@code rows} of them after {@code deleted} reconciling deletes. */
    void emitted(Chunk chunk, long rows, long deleted);

    /** Whether the online snapshot's progress changed since it was last taken. Any thread. */
    boolean dirty();

    /** The progress to record with the batch being cut, or null when unchanged. */
    List<OnlineTask> takeProgress();

    /** A chunk at its high watermark, whose rows the assembler emits in key order. */
    interface Chunk {
        RelationInfo relation();

        /** Old images (key columns) of rows the destinations hold in the chunk's range and the source no longer has. */
        List<Object[]> gone();

        /** The rows read, in key order. */
        List<Object[]> rows();

        /** Whether the stream changed {@code row}'s key in the window: the stream's own event carries its state. */
        boolean isStale(Object[] row);

        /** {@code row} with the updates the stream made to it in the window laid over it. */
        Object[] current(Object[] row);

        /** The average size of the rows as read (0: unknown), for their heap cost (INV: BOUNDED). */
        int encodedBytesPerRow();

        /** A batch is cut after {@code row} of this chunk, before the batch's progress is taken. */
        void landedThrough(Object[] row);
    }

    /** No online snapshot: no window is ever open, every watermark is ignored. */
    WatermarkStream NONE = new WatermarkStream() {
        @Override
        public void committed(long xid) {
        }

        @Override
        public void described(RelationInfo r) {
        }

        @Override
        public void truncated(TableRef table) {
        }

        @Override
        public boolean copying(TableRef table) {
            return false;
        }

        @Override
        public void moved(RelationInfo r, Object[] before, Object[] after) {
        }

        @Override
        public boolean watches(TableRef table) {
            return false;
        }

        @Override
        public void changed(RelationInfo r, Object[] before, Object[] after, long xid) {
        }

        @Override
        public Chunk watermark(byte[] content) {
            return null;
        }

        @Override
        public void emitted(Chunk chunk, long rows, long deleted) {
        }

        @Override
        public boolean dirty() {
            return false;
        }

        @Override
        public List<OnlineTask> takeProgress() {
            return null;
        }
    };
}
