package io.millrace.core.fault;

import java.util.List;

/**
 * A named place where a crash test may stop or slow the engine ({@link Faults#hit}). The built-in points are the
 * constants below, each documented with where it fires and what a crash there tests; docs/RELIABILITY.md lists them
 * too. A third-party sink names its own with {@link #FaultPoint(String)} (e.g. {@code sink.mine.before-commit}) and
 * keeps them as constants the same way: never a string literal at a call site.
 *
 * @param id the name a fault spec arms ({@code millrace.fault=<id>:crash:3}): lower-case words joined by {@code .} and {@code -}
 */
public record FaultPoint(String id) {

    /** {@code SnapshotRunner}: a batch of a chunk was handed to the writer, the chunk has not ended (INV: COVER, RESUME). */
    public static final FaultPoint SNAPSHOT_MID_CHUNK = new FaultPoint("snapshot.mid-chunk");
    /**
     * {@code SnapshotRunner.run}: the slot exists, the tables are not locked yet. Armed with a delay it widens the moment a
     * TRUNCATE or a rewriting ALTER can commit after the snapshot's consistent point: the copy must start again (INV: HANDOVER).
     */
    public static final FaultPoint SNAPSHOT_BEFORE_LOCKS = new FaultPoint("snapshot.before-locks");
    /** {@code PostgresSink.write}: data and checkpoint row written, not committed: both must vanish together. */
    public static final FaultPoint SINK_POSTGRES_BEFORE_COMMIT = new FaultPoint("sink.postgres.before-commit");
    /** {@code PostgresSink.write}: committed, {@code write} has not returned: skipped on resume, never applied twice. */
    public static final FaultPoint SINK_POSTGRES_AFTER_COMMIT = new FaultPoint("sink.postgres.after-commit");
    /** {@code DuckDbSink.write}: data and checkpoint written, not committed. */
    public static final FaultPoint SINK_DUCKDB_BEFORE_COMMIT = new FaultPoint("sink.duckdb.before-commit");
    /** {@code DuckDbSink.write}: committed, {@code write} has not returned. */
    public static final FaultPoint SINK_DUCKDB_AFTER_COMMIT = new FaultPoint("sink.duckdb.after-commit");
    /** {@code KafkaSink.write}: records and checkpoint record sent, transaction not committed: aborted when the next producer starts. */
    public static final FaultPoint SINK_KAFKA_BEFORE_COMMIT = new FaultPoint("sink.kafka.before-commit");
    /** {@code KafkaSink.write}: transaction committed, {@code write} has not returned. */
    public static final FaultPoint SINK_KAFKA_AFTER_COMMIT = new FaultPoint("sink.kafka.after-commit");
    /** {@code JsonlSink.write}: lines fsynced, state file not yet replaced: lines past the checkpoint are cut on open and written again. */
    public static final FaultPoint SINK_JSONL_BEFORE_CHECKPOINT = new FaultPoint("sink.jsonl.before-checkpoint");
    /** {@code JsonlSink.write}: state file replaced: nothing repeats beyond the documented at-least-once rule. */
    public static final FaultPoint SINK_JSONL_AFTER_CHECKPOINT = new FaultPoint("sink.jsonl.after-checkpoint");
    /** {@code SinkWriter}: every sink wrote its checkpoint, the durable position not yet published (INV: DURABLE). */
    public static final FaultPoint PIPELINE_BEFORE_DURABLE = new FaultPoint("pipeline.before-durable");
    /** {@code ReplicationReader}: before the flushed LSN is sent to the server: the slot stays at or behind the durable position. */
    public static final FaultPoint SOURCE_BEFORE_FEEDBACK = new FaultPoint("source.before-feedback");

    /**
     * {@code OnlineSnapshotter}: a chunk (and, when it reconciles, the destinations' keys in its range) was read, its high
     * watermark not written yet. Armed with a delay it widens every chunk's window, so that a write load's changes land
     * inside windows (INV: WATERMARK — and the re-copy after a lost slot must not delete a row inserted there).
     */
    public static final FaultPoint ONLINE_CHUNK_READ = new FaultPoint("snapshot.online.chunk-read");
    /**
     * {@code SlotReplacement}: a lost slot's replacement created the new slot, the checkpoints still say REPLACING: the next
     * start replaces it again (INV: IDENTITY — the new slot is confirmed past the checkpoints, and only the mark explains it).
     */
    public static final FaultPoint ENGINE_SLOT_REPLACED = new FaultPoint("engine.slot-replaced");

    /** Every built-in point, in the order of the data flow's stages (snapshot, sinks, pipeline, source). */
    public static final List<FaultPoint> BUILT_IN = List.of(SNAPSHOT_BEFORE_LOCKS, SNAPSHOT_MID_CHUNK, SINK_POSTGRES_BEFORE_COMMIT, SINK_POSTGRES_AFTER_COMMIT,
            SINK_DUCKDB_BEFORE_COMMIT, SINK_DUCKDB_AFTER_COMMIT, SINK_KAFKA_BEFORE_COMMIT, SINK_KAFKA_AFTER_COMMIT, SINK_JSONL_BEFORE_CHECKPOINT, SINK_JSONL_AFTER_CHECKPOINT,
            PIPELINE_BEFORE_DURABLE, SOURCE_BEFORE_FEEDBACK, ONLINE_CHUNK_READ, ENGINE_SLOT_REPLACED);

    public FaultPoint {
        if (id == null || !id.matches("[a-z0-9]+([.-][a-z0-9]+)*")) {
            throw new IllegalArgumentException("a fault point's name is lower-case words joined by '.' and '-'"
                    + " (e.g. sink.mine.before-commit), got '" + id + "'");
        }
    }

    /** The fault spec that halts the JVM at this point's {@code hit}-th hit, e.g. {@code sink.postgres.after-commit:crash:3}. */
    public String crashAt(int hit) {
        return id + ":crash:" + hit;
    }

    /** The line a crash here prints to stderr before the JVM halts (crash tests look for it). */
    public String crashLine(int hit) {
        return "millrace fault point " + id + ": crash at hit " + hit;
    }

    @Override
    public String toString() {
        return id;
    }
}
