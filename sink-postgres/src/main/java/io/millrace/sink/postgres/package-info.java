/**
 * The {@code postgres} destination: exactly once, set-wise.
 *
 * <p>Public API: {@link io.millrace.sink.postgres.PostgresSink} and its
 * {@link io.millrace.sink.postgres.PostgresSinkConfig}. Everything else is package-private:
 * <ul>
 *   <li>{@code BatchApplier} — one batch inside the sink's transaction: per table, runs of one shape;
 *       keyed runs through {@code KeyedReduction} + COPY into a temporary staging table + one
 *       {@code DELETE ... USING} + one {@code INSERT ... ON CONFLICT DO UPDATE} (runs of new rows only are
 *       COPYed straight into the table), in COPY binary format when every column's codec writes its send form and
 *       the destination columns have the source's types, else in text; runs without key by COPY and single-row
 *       matches on the old row;</li>
 *   <li>{@code TargetTables} — creates and follows the destination tables (DDL in the same transaction);</li>
 *   <li>{@code TypeMapping} — destination column types; {@code CopyText} — COPY text and binary format;</li>
 *   <li>{@code Errors} — driver errors to {@link io.millrace.core.MillraceException} kinds with the fix;</li>
 *   <li>{@code FaultPoints} — hooks around the commit for crash tests.</li>
 * </ul>
 *
 * <p>State kept in the destination: {@code <stateSchema>.checkpoints(destination, checkpoint jsonb,
 * updated_at)}, one row per destination name, written in the same transaction as the data it covers
 * (INV: DURABLE, INV: RESUME).
 */
package io.millrace.sink.postgres;
