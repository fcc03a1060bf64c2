package io.millrace.pipeline;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.RelationInfo;
import io.millrace.pgoutput.RawTuple;

/**
 * A row change framed and positioned by the assembler but not yet decoded: a {@link ChangeEvent}
 * waiting for the decoder pool. Immutable; {@link #decode} is pure and may run on any thread.
 */
record RawRow(Op op, RelationInfo relation, RawTuple before, RawTuple after, Lsn lsn, Position position, long xid,
              long commitTimeMicros) {

    ChangeEvent decode() {
        return new ChangeEvent(op, relation, before == null ? null : before.decode(relation),
                after == null ? null : after.decode(relation), lsn, position, xid, commitTimeMicros, false);
    }
}
