package io.millrace.api;

import io.millrace.core.Lsn;

import java.util.List;

/**
 * A point-in-time view of an embedded engine ({@link Millrace#status()}). Holds no secret.
 *
 * @param name          the pipeline's name
 * @param state         {@code created}, {@code starting}, {@code snapshotting}, {@code streaming} (the replication
 *                      connection holds the slot), {@code retrying} (waiting to restart after a transient failure),
 *                      {@code stopping} (also while an attempt that failed ends, before the pipeline retries or gives
 *                      up), {@code stopped} or {@code failed} (final: the pipeline has ended and will not retry)
 * @param durable       the position every destination has made durable, or null before the first
 * @param lagBytes      WAL between the source's current position and the durable position; -1 when unknown
 * @param lagMillis     how far behind the source the destinations are, in time; -1 when unknown
 * @param eventsWritten changes delivered so far (snapshot rows included)
 * @param tables        each captured table's phase and counters
 * @param lastError     the error that stopped the engine, or that it is retrying after; null when none
 * @param notCaptured   tables the selection takes that are not captured (no key or replica identity, a publication
 *                      Millrace does not manage, ...), and captured tables whose UPDATEs and DELETEs fail on the source
 *                      now (their replica identity taken away), each with why and the fix; empty when none
 */
public record Status(String name, String state, Lsn durable, long lagBytes, long lagMillis, long eventsWritten, List<Table> tables,
                     String lastError, List<NotCaptured> notCaptured) {

    public Status {
        tables = List.copyOf(tables);
        notCaptured = List.copyOf(notCaptured);
    }

    /** A status without tables that need attention (the form before {@code notCaptured}). */
    public Status(String name, String state, Lsn durable, long lagBytes, long lagMillis, long eventsWritten, List<Table> tables,
                  String lastError) {
        this(name, state, durable, lagBytes, lagMillis, eventsWritten, tables, lastError, List.of());
    }

    /**
     * A table that needs attention.
     *
     * @param table  {@code schema.table}
     * @param reason why it is not captured (or why the source's UPDATEs of it fail)
     * @param fix    what to run or change, or null
     */
    public record NotCaptured(String table, String reason, String fix) {
    }

    /**
     * One captured table.
     *
     * @param table      {@code schema.table}
     * @param phase      {@code waiting} or {@code snapshot} (being copied) before its copy landed; once it landed, the
     *                   pipeline's state: {@code streaming}, or {@code snapshotting} while other tables are still copied,
     *                   {@code starting}, {@code stopped}, {@code failed}
     * @param rowsCopied rows its snapshot has copied
     * @param events     streamed changes delivered
     */
    public record Table(String table, String phase, long rowsCopied, long events) {
    }
}
