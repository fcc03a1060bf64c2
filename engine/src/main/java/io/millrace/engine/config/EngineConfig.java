package io.millrace.engine.config;

import io.millrace.core.sink.DestinationConfig;
import io.millrace.engine.transform.Transforms;
import io.millrace.pipeline.Pipeline;
import io.millrace.snapshot.SnapshotRunner;
import io.millrace.source.SourceConfig;

import java.util.List;

/**
 * A whole pipeline's configuration, immutable, checked when built by {@link ConfigLoader}.
 *
 * @param name         the pipeline's logical name: the {@code source.name} in events (Debezium's topic prefix)
 * @param source       how to read the source
 * @param snapshotMode whether to copy the tables first
 * @param snapshot     snapshot reader settings
 * @param destinations one or more destinations (names unique), each made by the provider of its type
 * @param pipeline     batching and memory budget
 * @param operations   monitoring and the HTTP endpoint
 * @param spillDir     where large in-progress transactions wait on disk for their commit
 * @param online       online (watermark) snapshot readers and chunk sizes ({@code snapshot.online})
 * @param transforms   per-table column selection, masks and row filters ({@code transforms}); {@link Transforms#NONE} for none
 */
public record EngineConfig(String name, SourceConfig source, SnapshotMode snapshotMode, SnapshotRunner.Options snapshot,
                           List<DestinationConfig> destinations, Pipeline.Options pipeline, Operations operations,
                           java.nio.file.Path spillDir, io.millrace.snapshot.online.OnlineSnapshotter.Options online,
                           Transforms transforms) {

    public EngineConfig(String name, SourceConfig source, SnapshotMode snapshotMode, SnapshotRunner.Options snapshot,
                        List<DestinationConfig> destinations, Pipeline.Options pipeline, Operations operations,
                        java.nio.file.Path spillDir, io.millrace.snapshot.online.OnlineSnapshotter.Options online) {
        this(name, source, snapshotMode, snapshot, destinations, pipeline, operations, spillDir, online, Transforms.NONE);
    }

    /** This configuration with {@code s} as its source (an embedder's reload of the table selection). */
    public EngineConfig withSource(SourceConfig s) {
        return new EngineConfig(name, s, snapshotMode, snapshot, destinations, pipeline, operations, spillDir, online, transforms);
    }

    /** This configuration with {@code t} as its transforms (a reload builds them again from the YAML). */
    public EngineConfig withTransforms(Transforms t) {
        return new EngineConfig(name, source, snapshotMode, snapshot, destinations, pipeline, operations, spillDir, online, t);
    }

    public EngineConfig(String name, SourceConfig source, SnapshotMode snapshotMode, SnapshotRunner.Options snapshot,
                        List<DestinationConfig> destinations, Pipeline.Options pipeline, Operations operations, java.nio.file.Path spillDir) {
        this(name, source, snapshotMode, snapshot, destinations, pipeline, operations, spillDir,
                io.millrace.snapshot.online.OnlineSnapshotter.Options.defaults());
    }

    /**
     * How the engine is watched.
     *
     * @param monitorIntervalMillis how often the slot's position and retained WAL are sampled
     * @param retainedWalWarnBytes  retained WAL above which a warning is logged (and shown)
     * @param httpHost              where the status page, status API and metrics listen (loopback by default)
     * @param httpPort              their port; 0 = no HTTP endpoint
     * @param retry                 how {@code io.millrace.engine.Supervisor} restarts after a transient failure
     * @param controlToken          the bearer token control calls over HTTP must carry ({@code control_token_env} /
     *                              {@code control_token_file}); {@code Secret.NONE}: control calls are refused
     * @param health                the bounds of {@code /healthz} and {@code /readyz}
     * @param logFormat             how log lines are written ({@code log_format}; {@code MILLRACE_LOG_FORMAT} overrides it)
     */
    public record Operations(long monitorIntervalMillis, long retainedWalWarnBytes, String httpHost, int httpPort, Retry retry,
                             io.millrace.core.Secret controlToken, Health health, LogFormat logFormat) {
        public Operations(long monitorIntervalMillis, long retainedWalWarnBytes, String httpHost, int httpPort, Retry retry,
                          io.millrace.core.Secret controlToken) {
            this(monitorIntervalMillis, retainedWalWarnBytes, httpHost, httpPort, retry, controlToken, Health.defaults(), LogFormat.TEXT);
        }

        public Operations(long monitorIntervalMillis, long retainedWalWarnBytes, String httpHost, int httpPort, Retry retry) {
            this(monitorIntervalMillis, retainedWalWarnBytes, httpHost, httpPort, retry, io.millrace.core.Secret.NONE);
        }

        public Operations(long monitorIntervalMillis, long retainedWalWarnBytes, String httpHost, int httpPort) {
            this(monitorIntervalMillis, retainedWalWarnBytes, httpHost, httpPort, Retry.defaults());
        }

        public static Operations defaults() {
            return new Operations(5000, 1L << 30, "127.0.0.1", 0, Retry.defaults());
        }
    }

    /**
     * What the health endpoints for orchestrators hold to.
     *
     * @param readyMaxLagMillis  {@code /readyz} answers 503 while the lag in time exceeds this ({@code ready_max_lag_s}, default 60 s)
     * @param readyMaxLagBytes   ... or the lag in WAL bytes exceeds this ({@code ready_max_lag_mb}; default 0: no bound)
     * @param liveMaxStallMillis {@code /healthz} answers 503 when the engine has work (WAL to read, a snapshot to copy) and has made
     *                           no progress for this long ({@code live_max_stall_s}, default 600 s; 0: never)
     */
    public record Health(long readyMaxLagMillis, long readyMaxLagBytes, long liveMaxStallMillis) {
        public static Health defaults() {
            return new Health(60_000, 0, 600_000);
        }
    }

    /** How log lines are written: {@code text} (one readable line) or {@code json} (one JSON object per line). */
    public enum LogFormat { TEXT, JSON }

    /**
     * Automatic restarts after a transient failure ({@code operations.retry}): the n-th restart in a row waits
     * {@code min(max, initial * 2^(n-1))}, of which a random half to all (jitter).
     *
     * @param initialMillis the first wait ({@code initial_ms}, default 1000)
     * @param maxMillis     the longest wait ({@code max_ms}, default 60000)
     * @param attempts      restarts in a row before giving up while no attempt of this run has run for a minute ({@code attempts},
     *                      default 10: about 2.5 to 5 minutes at the default waits; a start that never worked, a wrong host
     *                      or port, fails instead of retrying for ever); 0 = no limit
     * @param attemptsOnceRunning restarts in a row before giving up once an attempt has ({@code attempts_once_running},
     *                      default 0 = no limit: a pipeline that ran waits out an outage of its source or a destination,
     *                      shown by /status and /readyz, instead of stopping after a few minutes while the slot keeps WAL)
     */
    public record Retry(long initialMillis, long maxMillis, int attempts, int attemptsOnceRunning) {
        public Retry(long initialMillis, long maxMillis, int attempts) {
            this(initialMillis, maxMillis, attempts, 0);
        }

        public static Retry defaults() {
            return new Retry(1000, 60_000, 10, 0);
        }
    }

    public enum SnapshotMode {
        /** Copy the tables, then stream (default). */
        INITIAL,
        /** Stream only, from the slot's position. */
        NEVER,
        /** Copy the tables and stop. */
        INITIAL_ONLY
    }

    public EngineConfig {
        destinations = List.copyOf(destinations);
        transforms = transforms == null ? Transforms.NONE : transforms;
    }
}
