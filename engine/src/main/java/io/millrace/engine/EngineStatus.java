package io.millrace.engine;

import java.util.List;

/**
 * A point-in-time view of a running engine, for the status API, the status page, {@code millrace
 * status} and the metrics. Holds no secret.
 *
 * @param name            the pipeline's name
 * @param state           the engine's lifecycle state
 * @param source          {@code host:port/database} of the server the stream is read from (the standby the slot is on with
 *                        {@code source.capture_from: standby})
 * @param slot            replication slot
 * @param publication     publication
 * @param durableLsn      the position every destination has made durable (what the slot may be confirmed to)
 * @param serverLsn       the source's current WAL position (sampled), or null before the first sample
 * @param confirmedLsn    the slot's confirmed_flush_lsn (sampled), or null
 * @param retainedWalBytes WAL the slot holds on the source (current position − restart_lsn), -1 when unknown
 * @param lagBytes        WAL between the source's current position and the durable position, -1 when unknown
 * @param lagMillis       how far behind the source the destinations are, in time: the age of the oldest change being
 *                        written when a write is under way, else the commit-to-durable latency of the newest durable
 *                        change; -1 when none yet
 * @param eventsWritten   change events delivered (snapshot rows included)
 * @param budgetUsed      bytes in flight between the reader and durable
 * @param budgetLimit     the configured budget
 * @param tables          per-table phase and counters
 * @param lastError       the error that stopped the engine, or null
 * @param online          online snapshots: under way, paused, figures; null when none can run
 * @param slowDestination the destination the writer has been waiting on for a second or more, or null
 * @param values          how the stream reads values (binary or text, and why text); null before the source is surveyed
 * @param slotLost        the slot's last loss and replacement ({@code source.on_slot_lost: resnapshot}), or null when the
 *                        checkpoints record none
 * @param notCaptured     tables {@code source.tables} selects that this run found and does not capture, with why and the fix
 *                        (no replica identity, a publication Millrace does not manage, a failure); empty when none
 * @param lastReload      the last reload of the configuration ({@code SIGHUP}, {@code POST /reload}), or null when none
 */
public record EngineStatus(String name, String state, String source, String slot, String publication, String durableLsn,
                           String serverLsn, String confirmedLsn, long retainedWalBytes, long lagBytes, long lagMillis,
                           long eventsWritten, long budgetUsed, long budgetLimit, List<Table> tables, String lastError, Online online,
                           Slow slowDestination, Values values, SlotLost slotLost, List<NotCaptured> notCaptured, Reload lastReload) {

    public EngineStatus {
        notCaptured = notCaptured == null ? List.of() : List.copyOf(notCaptured);
    }

    /** This status with {@code reload} as the last reload. */
    /** This status with {@code events} delivered and these {@code tables} (their counters). */
    public EngineStatus withCounts(long events, List<Table> tables) {
        return new EngineStatus(name, state, source, slot, publication, durableLsn, serverLsn, confirmedLsn, retainedWalBytes, lagBytes,
                lagMillis, events, budgetUsed, budgetLimit, tables, lastError, online, slowDestination, values, slotLost, notCaptured,
                lastReload);
    }

    public EngineStatus withLastReload(Reload reload) {
        return new EngineStatus(name, state, source, slot, publication, durableLsn, serverLsn, confirmedLsn, retainedWalBytes, lagBytes,
                lagMillis, eventsWritten, budgetUsed, budgetLimit, tables, lastError, online, slowDestination, values, slotLost, notCaptured,
                reload);
    }

    public EngineStatus(String name, String state, String source, String slot, String publication, String durableLsn,
                        String serverLsn, String confirmedLsn, long retainedWalBytes, long lagBytes, long lagMillis,
                        long eventsWritten, long budgetUsed, long budgetLimit, List<Table> tables, String lastError, Online online,
                        Slow slowDestination, Values values) {
        this(name, state, source, slot, publication, durableLsn, serverLsn, confirmedLsn, retainedWalBytes, lagBytes, lagMillis,
                eventsWritten, budgetUsed, budgetLimit, tables, lastError, online, slowDestination, values, null, List.of(), null);
    }

    /**
     * A table {@code source.tables} selects that the pipeline does not capture.
     *
     * @param table  {@code schema.table}
     * @param reason why (the source's writes would fail once it is published, the publication is not Millrace's, ...)
     * @param fix    what to run, or null
     */
    public record NotCaptured(String table, String reason, String fix) {
    }

    /**
     * A reload of the configuration.
     *
     * @param at      when (ISO-8601, UTC)
     * @param ok      whether it took effect; when not, nothing changed
     * @param message what changed, or the error naming the setting
     */
    public record Reload(String at, boolean ok, String message) {
    }

    /**
     * A slot lost and replaced.
     *
     * @param count          how many times this pipeline's slot was replaced (the checkpoints count them)
     * @param reason         what was found (invalidated: {@code wal_status = lost}; or missing)
     * @param lostAt         the position the checkpoints held: changes after it and before {@code newSlotAt} were never read
     * @param newSlotAt      the new slot's consistent point
     * @param action         what is being done: {@code reconciling} while the re-copy runs (tables in {@code reconciling}),
     *                       then {@code reconciled}
     * @param reconciling    the tables whose re-copy has not landed
     * @param rowsDeleted    rows deleted since this start because the re-copy no longer found them in the source
     */
    public record SlotLost(int count, String reason, String lostAt, String newSlotAt, String action, List<String> reconciling,
                           long rowsDeleted) {
    }

    public EngineStatus(String name, String state, String source, String slot, String publication, String durableLsn,
                        String serverLsn, String confirmedLsn, long retainedWalBytes, long lagBytes, long lagMillis,
                        long eventsWritten, long budgetUsed, long budgetLimit, List<Table> tables, String lastError, Online online,
                        Slow slowDestination) {
        this(name, state, source, slot, publication, durableLsn, serverLsn, confirmedLsn, retainedWalBytes, lagBytes, lagMillis,
                eventsWritten, budgetUsed, budgetLimit, tables, lastError, online, slowDestination, null);
    }

    public EngineStatus(String name, String state, String source, String slot, String publication, String durableLsn,
                        String serverLsn, String confirmedLsn, long retainedWalBytes, long lagBytes, long lagMillis,
                        long eventsWritten, long budgetUsed, long budgetLimit, List<Table> tables, String lastError, Online online) {
        this(name, state, source, slot, publication, durableLsn, serverLsn, confirmedLsn, retainedWalBytes, lagBytes, lagMillis,
                eventsWritten, budgetUsed, budgetLimit, tables, lastError, online, null);
    }

    public EngineStatus(String name, String state, String source, String slot, String publication, String durableLsn,
                        String serverLsn, String confirmedLsn, long retainedWalBytes, long lagBytes, long lagMillis,
                        long eventsWritten, long budgetUsed, long budgetLimit, List<Table> tables, String lastError) {
        this(name, state, source, slot, publication, durableLsn, serverLsn, confirmedLsn, retainedWalBytes, lagBytes, lagMillis,
                eventsWritten, budgetUsed, budgetLimit, tables, lastError, null);
    }

    /**
     * @param paused            whether online snapshots are paused
     * @param tasks             the copies under way: table, filter, rows landed, key ranges left
     * @param chunksRead        chunks read since start
     * @param chunksReadAgain   chunks read again (their snapshot missed a transaction just before the low watermark)
     * @param peakBufferedRows  the most chunk rows held in memory at once
     */
    public record Online(boolean paused, List<Task> tasks, long chunksRead, long chunksReadAgain, long peakBufferedRows) {
    }

    /**
     * A destination that has not finished a write for a while (slow, or blocked — by a lock, a full disk, a broker).
     *
     * @param destination   the destination's name
     * @param waitingMillis how long its current write has taken so far
     */
    public record Slow(String destination, long waitingMillis) {
    }

    /**
     * How the stream reads values from {@code pgoutput}.
     *
     * @param mode       {@code binary} or {@code text}
     * @param textReason why text (the setting, the server's version, or the first column whose type Millrace reads only
     *                   as text); null when binary
     */
    public record Values(String mode, String textReason) {
    }

    /**
     * One online snapshot under way.
     *
     * @param kind   {@code copy}, {@code filtered} (the rows of an operator's {@code filter}), {@code reread} (rows read
     *               again by key, the keys in {@code filter}: not a copy of the table) or {@code reconcile} (a lost slot's
     *               re-copy, which also deletes what the source no longer has)
     * @param filter the SQL condition of a {@code filtered} or {@code reread} task; null otherwise
     */
    public record Task(String table, String kind, String filter, long rowsDone, int rangesLeft) {
    }

    /**
     * @param table         {@code schema.table}
     * @param phase         {@code waiting}, {@code snapshot}, {@code streaming}
     * @param rowsCopied    snapshot rows copied so far
     * @param rowsEstimated the table's estimated rows when the snapshot started (-1 when unknown)
     * @param events        streamed changes delivered
     */
    public record Table(String table, String phase, long rowsCopied, long rowsEstimated, long events) {
    }
}
