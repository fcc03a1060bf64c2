/**
 * The change-event JSON that destinations emit: a Debezium-compatible envelope
 * ({@code before}, {@code after}, {@code source}, {@code op}, {@code ts_ms}) written with Jackson's
 * streaming API. docs/EVENTS.md describes every field and how it differs from Debezium.
 */
package io.millrace.core.event;
