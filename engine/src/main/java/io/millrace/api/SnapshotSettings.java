package io.millrace.api;

import io.millrace.core.schema.TableRef;
import io.millrace.engine.config.Limit;
import io.millrace.snapshot.SnapshotRunner;
import io.millrace.snapshot.online.OnlineSnapshotter;

/**
 * Whether and how the tables are copied: the initial snapshot's mode and readers, and the online (watermark)
 * snapshots' readers and chunk sizes. Immutable; made by {@link #builder()}, with the checks and messages of the YAML
 * configuration's {@code snapshot:} section.
 */
public final class SnapshotSettings {
    /** Whether the tables are copied before streaming. */
    public enum Mode {
        /** Copy the tables, then stream (default). */
        INITIAL,
        /** Stream only, from the slot's position. */
        NEVER,
        /** Copy the tables and stop. */
        INITIAL_ONLY
    }

    private final Mode mode;
    private final int readers;
    private final int chunkPages;
    private final int onlineReaders;
    private final int chunkRows;
    private final int minChunkRows;
    private final int maxChunkRows;
    private final int targetChunkMs;
    private final int maxChunkMb;
    private final TableRef signalTable;

    private SnapshotSettings(Builder b, int chunkRows) {
        this.mode = b.mode;
        this.readers = b.readers;
        this.chunkPages = b.chunkPages;
        this.onlineReaders = b.onlineReaders;
        this.chunkRows = chunkRows;
        this.minChunkRows = b.minChunkRows;
        this.maxChunkRows = b.maxChunkRows;
        this.targetChunkMs = b.targetChunkMs;
        this.maxChunkMb = b.maxChunkMb;
        this.signalTable = b.signalTable;
    }

    /** A builder with the defaults of the YAML configuration. */
    public static Builder builder() {
        return new Builder();
    }

    /** The defaults: an initial snapshot, then streaming. */
    public static SnapshotSettings defaults() {
        return builder().build();
    }

    /** {@code mode}. */
    public Mode mode() {
        return mode;
    }

    /** Initial-snapshot readers ({@code readers}; by default the processors, at least 2). */
    public int readers() {
        return readers;
    }

    /** Heap pages per initial-snapshot chunk ({@code chunk_pages}). */
    public int chunkPages() {
        return chunkPages;
    }

    /** Online-snapshot readers ({@code online.readers}). */
    public int onlineReaders() {
        return onlineReaders;
    }

    /** Rows of the first online-snapshot chunk ({@code online.chunk_rows}). */
    public int chunkRows() {
        return chunkRows;
    }

    /** The fewest rows an online chunk shrinks to ({@code online.min_chunk_rows}). */
    public int minChunkRows() {
        return minChunkRows;
    }

    /** The most rows an online chunk grows to ({@code online.max_chunk_rows}). */
    public int maxChunkRows() {
        return maxChunkRows;
    }

    /** The time one online chunk's read aims at ({@code online.target_chunk_ms}). */
    public int targetChunkMs() {
        return targetChunkMs;
    }

    /** The most memory one online chunk holds ({@code online.max_chunk_mb}). */
    public int maxChunkMb() {
        return maxChunkMb;
    }

    /** The table whose rows start online snapshots ({@code signal_table}, Debezium's signalling table), or null. */
    public TableRef signalTable() {
        return signalTable;
    }

    /** Builds {@link SnapshotSettings}; each setter checks its value, naming the setting. Not thread-safe. */
    public static final class Builder {
        private static final SnapshotRunner.Options INITIAL = SnapshotRunner.Options.defaults();
        private static final OnlineSnapshotter.Options ONLINE = OnlineSnapshotter.Options.defaults();
        private Mode mode = Mode.INITIAL;
        private int readers = INITIAL.readers();
        private int chunkPages = (int) INITIAL.pagesPerChunk();
        private int onlineReaders = ONLINE.readers();
        private Integer chunkRows;
        private int minChunkRows = (int) ONLINE.sizing().minRows();
        private int maxChunkRows = (int) ONLINE.sizing().maxRows();
        private int targetChunkMs = (int) (ONLINE.sizing().targetNanos() / 1_000_000);
        private int maxChunkMb = (int) (ONLINE.sizing().maxBytes() >> 20);
        private TableRef signalTable;

        private Builder() {
        }

        public Builder mode(Mode mode) {
            this.mode = Check.given("snapshot.mode", mode);
            return this;
        }

        public Builder readers(int readers) {
            this.readers = Check.range(Limit.SNAPSHOT_READERS, "snapshot.readers", readers);
            return this;
        }

        public Builder chunkPages(int pages) {
            this.chunkPages = Check.range(Limit.SNAPSHOT_CHUNK_PAGES, "snapshot.chunk_pages", pages);
            return this;
        }

        public Builder onlineReaders(int readers) {
            this.onlineReaders = Check.range(Limit.ONLINE_READERS, "snapshot.online.readers", readers);
            return this;
        }

        /** The first chunk's rows; by default 5000, held within [min, max]. */
        public Builder chunkRows(int rows) {
            this.chunkRows = Check.range(Limit.ONLINE_CHUNK_ROWS, "snapshot.online.chunk_rows", rows);
            return this;
        }

        public Builder minChunkRows(int rows) {
            this.minChunkRows = Check.range(Limit.ONLINE_CHUNK_ROWS, "snapshot.online.min_chunk_rows", rows);
            return this;
        }

        public Builder maxChunkRows(int rows) {
            this.maxChunkRows = Check.range(Limit.ONLINE_CHUNK_ROWS, "snapshot.online.max_chunk_rows", rows);
            return this;
        }

        public Builder targetChunkMs(int millis) {
            this.targetChunkMs = Check.range(Limit.ONLINE_TARGET_CHUNK_MS, "snapshot.online.target_chunk_ms", millis);
            return this;
        }

        public Builder maxChunkMb(int mb) {
            this.maxChunkMb = Check.range(Limit.ONLINE_MAX_CHUNK_MB, "snapshot.online.max_chunk_mb", mb);
            return this;
        }

        /** The signal table, {@code schema.table}; it must exist when the engine starts. */
        public Builder signalTable(String table) {
            Check.text("snapshot.signal_table", table);
            try {
                this.signalTable = TableRef.parse(table);
            } catch (IllegalArgumentException e) {
                throw Check.error("snapshot.signal_table", e.getMessage());
            }
            return this;
        }

        /** Checks that {@code min_chunk_rows <= chunk_rows <= max_chunk_rows} and returns the settings. */
        public SnapshotSettings build() {
            int rows = chunkRows != null ? chunkRows : Math.max(minChunkRows, (int) Math.min(maxChunkRows, ONLINE.sizing().initialRows()));
            if (minChunkRows > rows || rows > maxChunkRows) {
                throw Check.error("snapshot.online", "needs min_chunk_rows (" + minChunkRows + ") <= chunk_rows (" + rows
                        + ") <= max_chunk_rows (" + maxChunkRows + ")");
            }
            return new SnapshotSettings(this, rows);
        }
    }
}
