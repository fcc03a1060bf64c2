package io.millrace.core.change;

import io.millrace.core.Lsn;

import java.util.List;

/**
 * Where the initial snapshot stands, persisted with every checkpoint.
 *
 * @param state           see {@link State}
 * @param consistentPoint the slot's consistent point: streaming starts there (INV: HANDOVER)
 * @param tablesDone      tables ({@code schema.table}) whose copy has landed in full
 * @param chunksDone      chunks ({@code schema.table#i/n}) landed of the tables not yet in {@code tablesDone}
 */
public record SnapshotProgress(State state, Lsn consistentPoint, List<String> tablesDone, List<String> chunksDone) {

    public enum State {
        /** No snapshot was asked for (mode {@code never}): streaming only. Set at first start. */
        SKIPPED,
        /** Copying. Set when the slot was created with an exported snapshot; the copy of the tables
         *  not in {@code tablesDone} has not landed. A restart in this state re-copies (see engine). */
        RUNNING,
        /** Every table landed. Set in the sink transaction that lands the last rows. */
        DONE
    }

    public SnapshotProgress {
        tablesDone = List.copyOf(tablesDone);
        chunksDone = List.copyOf(chunksDone);
    }

    public SnapshotProgress(State state, Lsn consistentPoint, List<String> tablesDone) {
        this(state, consistentPoint, tablesDone, List.of());
    }

    public static SnapshotProgress skipped(Lsn consistentPoint) {
        return new SnapshotProgress(State.SKIPPED, consistentPoint, List.of());
    }
}
