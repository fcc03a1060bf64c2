package io.millrace.core.change;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.schema.RelationInfo;

/**
 * One change to one row (or a truncate of one table), decoded, with where it stands.
 *
 * <p>{@code before} and {@code after} are column values in the relation's column order: {@code null}
 * for SQL NULL, {@link io.millrace.core.types.UnchangedToast#INSTANCE} for an unchanged TOASTed
 * column, otherwise the codec's Java value. {@code before} is {@code null} for inserts and reads, and
 * holds only the key columns (others {@code null}) unless the table has REPLICA IDENTITY FULL;
 * {@code after} is {@code null} for deletes and truncates. The arrays are never mutated after
 * construction.
 *
 * @param op               c, u, d, r or t
 * @param relation         the table's shape when the change was made
 * @param before           old row image (see above) or {@code null}
 * @param after            new row image or {@code null}
 * @param lsn              WAL position of the change record (for snapshot rows: the consistent point)
 * @param position         {@code (commit_lsn, ordinal)}: identifies the event across restarts
 * @param xid              source transaction id (0 for snapshot rows)
 * @param commitTimeMicros commit time of the source transaction, microseconds since the Unix epoch
 *                         (for snapshot rows: when the row was read)
 * @param snapshot         true for rows read by a snapshot (op r) and the truncate that opens a re-copy
 */
public record ChangeEvent(Op op, RelationInfo relation, Object[] before, Object[] after, Lsn lsn,
                          Position position, long xid, long commitTimeMicros, boolean snapshot) {

    /**
     * The truncate that opens a copy of {@code relation} again (a restarted initial snapshot, or the unfinished tables of
     * an interrupted one): a snapshot event at the consistent point {@code at} and {@link Position#START}, before the rows
     * the copy reads, so a destination drops what it holds of the table first.
     */
    public static ChangeEvent reopening(RelationInfo relation, Lsn at) {
        return new ChangeEvent(Op.TRUNCATE, relation, null, null, at, Position.START, 0, System.currentTimeMillis() * 1000, true);
    }

    /**
     * Whether this is an update that moved the row to another key (PostgreSQL then sends the old key in
     * {@code before}); an unchanged TOASTed key column did not change. Destinations with keys (Kafka, Kafka Connect)
     * write such an update as a delete of the old key and a create of the new one, as Debezium does.
     */
    public boolean keyChanged() {
        if (op != Op.UPDATE || before == null || after == null || !relation.hasKey()) {
            return false;
        }
        for (int i : relation.keyIndexes()) {
            Object a = after[i];
            if (a == io.millrace.core.types.UnchangedToast.INSTANCE || before[i] == io.millrace.core.types.UnchangedToast.INSTANCE) {
                continue;
            }
            if (!java.util.Objects.deepEquals(before[i], a)) {
                return true;
            }
        }
        return false;
    }
}
