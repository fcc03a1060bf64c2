package io.millrace.core.change;

import io.millrace.core.Lsn;
import io.millrace.core.schema.TableRef;

import java.util.List;

/**
 * Where the initial snapshot stands, persisted with every checkpoint.
 *
 * @param state           see {@link State}
 * @param consistentPoint the slot's consistent point: streaming starts there (INV: HANDOVER)
 * @param tablesDone      tables whose copy has landed in full
 * @param chunksDone      chunks landed of the tables not yet in {@code tablesDone} (for the status and for a reader of the
 *                        checkpoint: a restart copies an unfinished table online, whole)
 */
public record SnapshotProgress(State state, Lsn consistentPoint, List<TableRef> tablesDone, List<Chunk> chunksDone) {

    /**
     * Chunk {@code index} of the {@code of} chunks of {@code table}'s initial copy. Stored as {@code schema.table#i/n},
     * the table by {@link TableRef#text()}.
     */
    public record Chunk(TableRef table, int index, int of) {
        public Chunk {
            java.util.Objects.requireNonNull(table, "table");
            if (index < 0 || of < 1 || index >= of) {
                throw new IllegalArgumentException("chunk " + index + " of " + of + " of " + table);
            }
        }

        /** {@code schema.table#i/n}. */
        public String text() {
            return table.text() + "#" + index + "/" + of;
        }

        /** The chunk of its {@link #text()}: the table is what comes before the last {@code #}. */
        public static Chunk parse(String text, java.util.function.Function<String, TableRef> tables) {
            int hash = text.lastIndexOf('#');
            int slash = text.lastIndexOf('/');
            if (hash <= 0 || slash < hash) {
                throw new IllegalArgumentException("snapshot chunk '" + text + "': not schema.table#i/n");
            }
            return new Chunk(tables.apply(text.substring(0, hash)), Integer.parseInt(text.substring(hash + 1, slash)),
                    Integer.parseInt(text.substring(slash + 1)));
        }
    }

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

    public SnapshotProgress(State state, Lsn consistentPoint, List<TableRef> tablesDone) {
        this(state, consistentPoint, tablesDone, List.of());
    }

    public static SnapshotProgress skipped(Lsn consistentPoint) {
        return new SnapshotProgress(State.SKIPPED, consistentPoint, List.of());
    }
}
