/**
 * The {@code duckdb} destination: exactly once into an embedded DuckDB file. Public API:
 * {@link io.millrace.sink.duckdb.DuckDbSink} and {@link io.millrace.sink.duckdb.DuckDbSinkConfig};
 * the rest (per-key reduction, staging and merge, table shapes, type mapping) is package-private.
 */
package io.millrace.sink.duckdb;
