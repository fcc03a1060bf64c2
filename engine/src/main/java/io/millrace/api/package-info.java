/**
 * Millrace embedded in a Java application: the one public surface for embedders.
 *
 * <p>{@link io.millrace.api.Millrace#builder()} takes the source ({@link io.millrace.api.SourceSettings}), the
 * snapshot, pipeline and operations settings, and one or more destinations — a configured one (a
 * {@link io.millrace.core.sink.DestinationConfig}, or a type and its settings), your own
 * {@link io.millrace.core.sink.Sink}, a {@link io.millrace.api.ChangeConsumer} (at least once) or a
 * {@link io.millrace.api.TransactionalConsumer} (exactly once) — and returns the engine's handle,
 * {@link io.millrace.api.Millrace}. Every setting is checked where it is given, with the message the YAML
 * configuration gives for the same mistake; the YAML loader reads its sections through these builders.
 *
 * <p>What this package accepts and returns is either in it or among the destination SPI's types
 * ({@code io.millrace.core.sink}, {@code io.millrace.core.change.ChangeEvent}/{@code Checkpoint}/{@code Op},
 * {@code io.millrace.core.schema.RelationInfo}/{@code ColumnInfo}/{@code TableRef}, {@code io.millrace.core.Lsn},
 * {@code Position}, {@code MillraceException}, {@code Secret}); an architecture test (examples/embedded) keeps it so.
 */
package io.millrace.api;
