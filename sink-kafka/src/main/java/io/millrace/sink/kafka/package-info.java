/**
 * The {@code kafka} destination: one topic per table, key = replica identity columns, value = the
 * Debezium-compatible envelope, written exactly once by a transactional producer that commits each
 * batch together with the checkpoint (docs/EVENTS.md, "The kafka destination").
 */
package io.millrace.sink.kafka;
