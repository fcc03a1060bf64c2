package io.millrace.api;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.event.EnvelopeWriter;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;

import java.nio.charset.StandardCharsets;
import java.time.Instant;

/**
 * One change to one row of a captured table (or the truncate of a table), as a {@link ChangeConsumer} or
 * {@link TransactionalConsumer} receives it: what happened, the row images with typed values, where it stands in the
 * source's history, and the Debezium-compatible JSON on demand.
 *
 * <p>{@link #position()} identifies a streamed change across restarts: streamed changes arrive in increasing position,
 * and one delivered again after a restart (at-least-once) has the position it had the first time. The rows of the initial
 * snapshot come first and all carry {@code Position.START} ({@code 0/0#0}): a consumer that drops what is not after the
 * last position it kept must keep every change whose {@link #snapshot()} is true (the rows read, and the truncate that
 * opens a copy again) whatever its position. Rows copied while streaming
 * (an online snapshot) carry the position of the window that emitted them, between streamed changes. A table whose
 * copy starts again (an interrupted initial snapshot, a lost slot) gets a truncate first. Immutable; {@link #json()}
 * and {@link #keyJson()} may be called from any thread.
 */
public final class Change {
    private final ChangeEvent event;
    private final EnvelopeWriter envelope;

    Change(ChangeEvent event, EnvelopeWriter envelope) {
        this.event = event;
        this.envelope = envelope;
    }

    /** Insert, update, delete, read (a row copied by a snapshot) or truncate. */
    public Op op() {
        return event.op();
    }

    /** The table, {@code schema.table}. */
    public TableRef table() {
        return event.relation().table();
    }

    /** The table's shape (columns, types, key) when the change was made. */
    public RelationInfo relation() {
        return event.relation();
    }

    /**
     * The row before the change, as PostgreSQL logs it: the whole row under {@code REPLICA IDENTITY FULL}; otherwise, for
     * deletes, its key columns (others null), and for updates, its key columns only when the update changed the key —
     * null for an update that kept its key (then {@link #after()} holds the key); null for inserts, reads and truncates.
     */
    public Row before() {
        return event.before() == null ? null : new Row(event.relation(), event.before());
    }

    /** The row after the change; null for deletes and truncates. */
    public Row after() {
        return event.after() == null ? null : new Row(event.relation(), event.after());
    }

    /** {@code (commit LSN, ordinal)}: where this change stands, the same across restarts. */
    public Position position() {
        return event.position();
    }

    /** The WAL position of the change's record (for snapshot rows: the snapshot's consistent point). */
    public Lsn lsn() {
        return event.lsn();
    }

    /** The source transaction's id (0 for rows of the initial snapshot; an online snapshot's rows carry its window's). */
    public long xid() {
        return event.xid();
    }

    /** When the source transaction committed (for snapshot rows: when the row was read). */
    public Instant commitTime() {
        long micros = event.commitTimeMicros();
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000);
    }

    /** Whether a snapshot read this row (op {@code r}, or the truncate that opens a copy again). */
    public boolean snapshot() {
        return event.snapshot();
    }

    /** The change as Debezium's PostgreSQL connector writes a record's value: the envelope with before, after, source and op. */
    public String json() {
        synchronized (envelope) { // the writer caches per relation and is not thread-safe
            return new String(envelope.valueBytes(event), StandardCharsets.UTF_8);
        }
    }

    /** The record's key as Debezium writes it (the key columns), or {@code null} JSON when the table has no key. */
    public String keyJson() {
        synchronized (envelope) {
            return new String(envelope.keyBytes(event), StandardCharsets.UTF_8);
        }
    }

    /** The change as the engine carries it to every destination (the destination SPI's type). */
    public ChangeEvent event() {
        return event;
    }

    @Override
    public String toString() {
        return op().code() + " " + table() + " at " + position();
    }
}
