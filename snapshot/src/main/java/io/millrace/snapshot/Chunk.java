package io.millrace.snapshot;

import io.millrace.core.schema.RelationInfo;

/**
 * A part of one table read by one COPY. Chunks of a table tile it (INV: COVER): the first is open
 * below, the last open above, neighbours share their bound. A {@code fromPage}/{@code toPage} of -1
 * means unbounded; a table read whole (partitioned tables, tiny tables) has both unbounded.
 */
record Chunk(RelationInfo relation, int index, int of, long fromPage, long toPage) {

    /** The WHERE clause selecting this chunk's rows by physical position (a TID range scan on PG14+). */
    String where() {
        if (fromPage < 0 && toPage < 0) {
            return "";
        }
        StringBuilder w = new StringBuilder(" WHERE ");
        if (fromPage >= 0) {
            w.append("ctid >= '(").append(fromPage).append(",0)'::tid");
        }
        if (toPage >= 0) {
            if (fromPage >= 0) {
                w.append(" AND ");
            }
            w.append("ctid < '(").append(toPage).append(",0)'::tid");
        }
        return w.toString();
    }
}
