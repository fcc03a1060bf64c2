package io.millrace.api;

import io.millrace.engine.config.Limit;
import io.millrace.pipeline.Pipeline;

import java.nio.file.Path;

/**
 * Batching and memory between the source and the destinations. Immutable; made by {@link #builder()}, with the checks
 * and messages of the YAML configuration's {@code pipeline:} section.
 */
public final class PipelineSettings {
    private final int memoryBudgetMb;
    private final int batchKb;
    private final int lingerMs;
    private final int decoders;
    private final int decodeChunkRows;
    private final Path spillDir;

    private PipelineSettings(Builder b) {
        this.memoryBudgetMb = b.memoryBudgetMb;
        this.batchKb = b.batchKb;
        this.lingerMs = b.lingerMs;
        this.decoders = b.decoders;
        this.decodeChunkRows = b.decodeChunkRows;
        this.spillDir = b.spillDir;
    }

    /**
     * The largest memory budget, in MB, a JVM whose maximum heap ({@code Runtime.maxMemory()}) is {@code maxHeapBytes}
     * takes: about half of -Xmx (the maximum heap leaves one survivor space out: 184 MB at -Xmx192m, 123 at -Xmx128m, where
     * the example configuration's 64 has always run). INV: BOUNDED.
     */
    public static long maxBudgetMb(long maxHeapBytes) {
        return (long) (maxHeapBytes * 0.55) >> 20;
    }

    /** A builder with the defaults of the YAML configuration. */
    public static Builder builder() {
        return new Builder();
    }

    /** The defaults. */
    public static PipelineSettings defaults() {
        return builder().build();
    }

    /** Bytes of change data in flight between the reader and durable, in MB ({@code memory_budget_mb}). */
    public int memoryBudgetMb() {
        return memoryBudgetMb;
    }

    /** The size a batch grows to before it is handed to the destinations, in KB ({@code batch_kb}). */
    public int batchKb() {
        return batchKb;
    }

    /** The longest a batch waits to grow ({@code linger_ms}). */
    public int lingerMs() {
        return lingerMs;
    }

    /** Threads decoding streamed rows ({@code decoders}; 0: on the reading thread). */
    public int decoders() {
        return decoders;
    }

    /** Rows a decoder takes at a time ({@code decode_chunk_rows}). */
    public int decodeChunkRows() {
        return decodeChunkRows;
    }

    /** Where large in-progress transactions wait on disk ({@code spill_dir}), or null for a folder in java.io.tmpdir named after the slot and the source (one pipeline at a time holds a folder). */
    public Path spillDir() {
        return spillDir;
    }

    /** Builds {@link PipelineSettings}; each setter checks its value, naming the setting. Not thread-safe. */
    public static final class Builder {
        private static final Pipeline.Options DEFAULTS = Pipeline.Options.defaults();
        private int memoryBudgetMb = (int) (DEFAULTS.budgetBytes() >> 20);
        private int batchKb = (int) (DEFAULTS.batchBytes() >> 10);
        private int lingerMs = (int) DEFAULTS.lingerMillis();
        private int decoders = DEFAULTS.decoders();
        private int decodeChunkRows = DEFAULTS.decodeChunkRows();
        private Path spillDir;

        private Builder() {
        }

        public Builder memoryBudgetMb(int mb) {
            this.memoryBudgetMb = Check.range(Limit.PIPELINE_MEMORY_BUDGET_MB, "pipeline.memory_budget_mb", mb);
            return this;
        }

        public Builder batchKb(int kb) {
            this.batchKb = Check.range(Limit.PIPELINE_BATCH_KB, "pipeline.batch_kb", kb);
            return this;
        }

        public Builder lingerMs(int millis) {
            this.lingerMs = Check.range(Limit.PIPELINE_LINGER_MS, "pipeline.linger_ms", millis);
            return this;
        }

        public Builder decoders(int threads) {
            this.decoders = Check.range(Limit.PIPELINE_DECODERS, "pipeline.decoders", threads);
            return this;
        }

        public Builder decodeChunkRows(int rows) {
            this.decodeChunkRows = Check.range(Limit.PIPELINE_DECODE_CHUNK_ROWS, "pipeline.decode_chunk_rows", rows);
            return this;
        }

        public Builder spillDir(Path dir) {
            this.spillDir = Check.given("pipeline.spill_dir", dir);
            return this;
        }

        /**
         * Checks that a batch is at most half the memory budget and the budget at most half the heap of this JVM, and
         * returns the settings.
         */
        public PipelineSettings build() {
            checkHeap(memoryBudgetMb, Runtime.getRuntime().maxMemory());
            if ((long) batchKb * 2 > (long) memoryBudgetMb << 10) {
                throw Check.error("pipeline.batch_kb", "(" + batchKb + ") must be at most half of pipeline.memory_budget_mb ("
                        + memoryBudgetMb + " MB)");
            }
            return new PipelineSettings(this);
        }

        /**
         * INV: BOUNDED — the budget bounds what the rows in flight take on the heap, and replayed rows take up to half
         * as much again beside the destinations' own copies of a batch: a budget above half the heap does not bound
         * anything the heap can hold (a helper's 100000 at -Xmx192m was taken without a word), so it is refused at start.
         */
        static void checkHeap(int budgetMb, long maxHeapBytes) {
            long maxMb = maxBudgetMb(maxHeapBytes);
            if (budgetMb > maxMb) {
                throw Check.error("pipeline.memory_budget_mb", "(" + budgetMb + ") must be at most about half of the JVM's maximum"
                        + " heap (" + (maxHeapBytes >> 20) + " MB, so at most " + maxMb + "): lower it, or leave it out for the"
                        + " default (64, or an eighth of the heap if less), or give the JVM more heap (-Xmx; MILLRACE_JAVA_OPTS for"
                        + " bin/millrace)");
            }
        }
    }
}
