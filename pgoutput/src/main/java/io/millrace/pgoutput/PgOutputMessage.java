package io.millrace.pgoutput;

import io.millrace.core.Lsn;
import io.millrace.core.schema.RelationInfo;

import java.util.List;
import java.util.Objects;

/**
 * One pgoutput message, framed by {@link PgOutputFramer}. Row messages carry their tuples as
 * {@link RawTuple}s (bytes not yet decoded) together with the {@link RelationInfo} that was current
 * in the stream when the message was framed.
 *
 * <p>All messages are immutable and may be handed to other threads. Times are microseconds since
 * the Unix epoch (the protocol counts from 2000-01-01; the framer converts).
 *
 * <p>{@code xid} of row, type, truncate and logical messages: inside a {@link StreamStart}..{@link StreamStop}
 * block (protocol v2+) it is the xid the server sent with the message, which for a change made in a
 * subtransaction is the subtransaction's xid (a {@link StreamAbort} with that {@code subXid} discards
 * exactly those changes); the block's top-level xid is {@link StreamStart#xid()}. Outside a block it is
 * 0: the protocol does not repeat the xid there; take it from the enclosing {@link Begin}.
 */
public sealed interface PgOutputMessage {

    /** {@code B}: a transaction starts. Its changes follow, up to the matching {@link Commit}. */
    record Begin(Lsn finalLsn, long commitTimeMicros, long xid) implements PgOutputMessage {
    }

    /** {@code C}: the transaction opened by the last {@link Begin} committed. */
    record Commit(int flags, Lsn commitLsn, Lsn endLsn, long commitTimeMicros) implements PgOutputMessage {
    }

    /** {@code O}: the current transaction was replicated into this server from origin {@code name}. */
    record Origin(Lsn originLsn, String name) implements PgOutputMessage {
    }

    /** {@code R}: a table's shape. The framer's relation cache now holds {@code relation} for its oid. */
    record RelationMessage(RelationInfo relation) implements PgOutputMessage {
    }

    /** {@code Y}: a non-built-in type used by a following Relation message (namespace "" is reported as pg_catalog). */
    record TypeMessage(long xid, int oid, String namespace, String name) implements PgOutputMessage {
    }

    /** {@code I}: a row was inserted. */
    record Insert(long xid, RelationInfo relation, RawTuple newTuple) implements PgOutputMessage {
    }

    /**
     * {@code U}: a row was updated. {@code oldKind} is {@code 'K'} (old key columns only, sent when the
     * key changed), {@code 'O'} (whole old row, REPLICA IDENTITY FULL) or {@code 0} when no old tuple
     * was sent ({@code oldTuple} is then {@code null}).
     */
    record Update(long xid, RelationInfo relation, char oldKind, RawTuple oldTuple, RawTuple newTuple)
            implements PgOutputMessage {
    }

    /** {@code D}: a row was deleted. {@code oldKind} is {@code 'K'} (key columns) or {@code 'O'} (whole row). */
    record Delete(long xid, RelationInfo relation, char oldKind, RawTuple oldTuple) implements PgOutputMessage {
    }

    /** {@code T}: tables were truncated together. */
    record Truncate(long xid, List<RelationInfo> relations, boolean cascade, boolean restartIdentity)
            implements PgOutputMessage {
        public Truncate {
            relations = List.copyOf(relations);
        }
    }

    /**
     * {@code M}: a logical decoding message ({@code pg_logical_emit_message}). {@code content} is
     * owned by this record; do not modify it.
     */
    record LogicalMessage(long xid, boolean transactional, Lsn lsn, String prefix, byte[] content)
            implements PgOutputMessage {
        public LogicalMessage {
            Objects.requireNonNull(content, "content");
        }
    }

    /** {@code S}: a block of a streamed (in-progress) transaction starts. */
    record StreamStart(long xid, boolean firstSegment) implements PgOutputMessage {
    }

    /** {@code E}: the current block of a streamed transaction ends. */
    record StreamStop() implements PgOutputMessage {
    }

    /** {@code c}: a streamed transaction committed. */
    record StreamCommit(long xid, int flags, Lsn commitLsn, Lsn endLsn, long commitTimeMicros)
            implements PgOutputMessage {
    }

    /**
     * {@code A}: a streamed transaction ({@code subXid == xid}) or one of its subtransactions aborted.
     * {@code abortLsn} and {@code abortTimeMicros} are only sent with protocol v4 and
     * {@code streaming 'parallel'}; otherwise they are {@code null} and 0.
     */
    record StreamAbort(long xid, long subXid, Lsn abortLsn, long abortTimeMicros) implements PgOutputMessage {
    }
}
