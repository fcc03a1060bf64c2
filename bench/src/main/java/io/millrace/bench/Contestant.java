package io.millrace.bench;

import java.util.List;

/**
 * One competitor of a benchmark run. Each runs alone, in a process of its own (a child JVM, or
 * {@code pg_recvlogical}), so its time and peak memory are its own.
 *
 * @param id       stable name, used on the command line ({@code --only}) and in the results
 * @param phase    snapshot (copy a table) or streaming (drain a pre-filled slot)
 * @param kind     what runs
 * @param label    what the results table shows
 * @param limit    id of the PostgreSQL limit this contestant is compared with (itself for a limit)
 * @param binary   for streaming: values in binary (pgoutput {@code binary 'true'}) instead of text
 * @param dest     for Millrace: the destination, {@code null} (configured as {@code type: discard}, which drops every
 *                 event), {@code jsonl} or {@code kafka}; for Debezium: {@code kafka} sends each record to Kafka with a
 *                 producer (as Debezium Server's Kafka sink does), otherwise records are only counted
 * @param schemas  for Debezium: JsonConverter {@code schemas.enable}
 */
public record Contestant(String id, Phase phase, Kind kind, String label, String limit, boolean binary, String dest,
                         boolean schemas) {

    public enum Phase { SNAPSHOT, STREAMING }

    public enum Kind { COPY, RECVLOGICAL, MILLRACE, DEBEZIUM }

    public boolean isLimit() {
        return id.equals(limit);
    }

    /**
     * The replication slot this contestant reads in repetition {@code run} (1-based): created by the
     * orchestrator for streaming, by the contestant itself for snapshots.
     */
    public String slot(int run) {
        return "bench_" + id.replace('-', '_') + "_" + run;
    }

    /** Every contestant of a full run, in the order they run. */
    public static List<Contestant> all() {
        return List.of(
                new Contestant("snap-copy", Phase.SNAPSHOT, Kind.COPY, "PostgreSQL COPY TO STDOUT (limit)", "snap-copy", false, null, false),
                new Contestant("snap-millrace-null", Phase.SNAPSHOT, Kind.MILLRACE, "Millrace → null", "snap-copy", false, "null", false),
                new Contestant("snap-millrace-jsonl", Phase.SNAPSHOT, Kind.MILLRACE, "Millrace → jsonl", "snap-copy", false, "jsonl", false),
                new Contestant("snap-debezium-noschema", Phase.SNAPSHOT, Kind.DEBEZIUM, "Debezium embedded, JSON schemas off", "snap-copy",
                        false, null, false),
                new Contestant("snap-debezium-schema", Phase.SNAPSHOT, Kind.DEBEZIUM, "Debezium embedded, JSON defaults (schemas on)",
                        "snap-copy", false, null, true),

                new Contestant("stream-recvlogical", Phase.STREAMING, Kind.RECVLOGICAL, "pg_recvlogical, text (limit)", "stream-recvlogical",
                        false, null, false),
                new Contestant("stream-recvlogical-binary", Phase.STREAMING, Kind.RECVLOGICAL, "pg_recvlogical, binary (limit)",
                        "stream-recvlogical-binary", true, null, false),
                new Contestant("stream-millrace-null-text", Phase.STREAMING, Kind.MILLRACE, "Millrace → null, text", "stream-recvlogical",
                        false, "null", false),
                new Contestant("stream-millrace-null-binary", Phase.STREAMING, Kind.MILLRACE, "Millrace → null, binary",
                        "stream-recvlogical-binary", true, "null", false),
                new Contestant("stream-millrace-jsonl-text", Phase.STREAMING, Kind.MILLRACE, "Millrace → jsonl, text", "stream-recvlogical",
                        false, "jsonl", false),
                new Contestant("stream-millrace-jsonl-binary", Phase.STREAMING, Kind.MILLRACE, "Millrace → jsonl, binary",
                        "stream-recvlogical-binary", true, "jsonl", false),
                new Contestant("stream-debezium-noschema", Phase.STREAMING, Kind.DEBEZIUM, "Debezium embedded, JSON schemas off",
                        "stream-recvlogical", false, null, false),
                new Contestant("stream-debezium-schema", Phase.STREAMING, Kind.DEBEZIUM, "Debezium embedded, JSON defaults (schemas on)",
                        "stream-recvlogical", false, null, true),
                // --kafka: into the broker in the orchestrator's JVM
                new Contestant("stream-millrace-kafka-text", Phase.STREAMING, Kind.MILLRACE, "Millrace → Kafka (exactly once), text",
                        "stream-recvlogical", false, "kafka", false),
                new Contestant("stream-millrace-kafka-binary", Phase.STREAMING, Kind.MILLRACE, "Millrace → Kafka (exactly once), binary",
                        "stream-recvlogical-binary", true, "kafka", false),
                new Contestant("stream-debezium-kafka", Phase.STREAMING, Kind.DEBEZIUM,
                        "Debezium embedded → Kafka producer, JSON schemas off", "stream-recvlogical", false, "kafka", false));
    }

    public static Contestant byId(String id) {
        return all().stream().filter(c -> c.id().equals(id)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no contestant '" + id + "'; known: "
                        + all().stream().map(Contestant::id).toList()));
    }
}
