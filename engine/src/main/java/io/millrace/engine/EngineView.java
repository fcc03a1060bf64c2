package io.millrace.engine;

import io.millrace.engine.config.EngineConfig;
import io.millrace.pipeline.PipelineStats;

/**
 * What the status page, the status API and the metrics read of a running pipeline: an {@link Engine}, or a
 * {@link Supervisor} that restarts engines. Every method may be called from any thread.
 */
public interface EngineView {
    EngineConfig config();

    /** A point-in-time status; never null. */
    EngineStatus status();

    /** Counters of the running pipeline, or null while none runs. */
    PipelineStats stats();

    /** Copies {@code tables} again while streaming, limited by {@code filter} (or null); see {@link Engine#snapshot}. */
    void snapshot(java.util.List<io.millrace.core.schema.TableRef> tables, String filter);

    /** Pauses or resumes online snapshots; see {@link Engine#pauseSnapshots}. */
    void pauseSnapshots(boolean pause);

    /** Writes a consistent copy of a duckdb destination to a new file; see {@link Engine#copyDuckDb}. */
    String copyDuckDb(String destination, java.nio.file.Path file);

    /**
     * Reads the configuration file again and applies the new table selection ({@code source.tables},
     * {@code source.exclude_tables}) to the running pipeline; returns what changed. Throws, changing nothing, when the
     * file is not valid or another setting changed (naming it: that needs a restart). Only a pipeline started from a
     * configuration file can reload.
     */
    default String reload() {
        throw new io.millrace.core.MillraceException(io.millrace.core.MillraceException.Kind.CONFIG,
                "this pipeline was not started from a configuration file ('millrace run CONFIG'): there is nothing to reload");
    }

    /** A view of one engine. */
    static EngineView of(Engine engine) {
        return new EngineView() {
            @Override
            public EngineConfig config() {
                return engine.config();
            }

            @Override
            public EngineStatus status() {
                return engine.status();
            }

            @Override
            public PipelineStats stats() {
                return engine.stats();
            }

            @Override
            public void snapshot(java.util.List<io.millrace.core.schema.TableRef> tables, String filter) {
                engine.snapshot(tables, filter);
            }

            @Override
            public void pauseSnapshots(boolean pause) {
                engine.pauseSnapshots(pause);
            }

            @Override
            public String copyDuckDb(String destination, java.nio.file.Path file) {
                return engine.copyDuckDb(destination, file);
            }
        };
    }
}
