package io.millrace.engine.config;

import io.millrace.api.OperationsSettings;
import io.millrace.api.PipelineSettings;
import io.millrace.api.SnapshotSettings;
import io.millrace.api.SourceSettings;
import io.millrace.core.sink.DestinationConfig;
import io.millrace.pipeline.Pipeline;
import io.millrace.snapshot.SnapshotRunner;
import io.millrace.snapshot.online.KeysetChunker;
import io.millrace.snapshot.online.OnlineSnapshotter;
import io.millrace.source.SourceConfig;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The engine's configuration made from the checked settings of {@code io.millrace.api} (built by the builder, or by
 * {@link ConfigLoader} through it): the one place the public settings become the modules' option records.
 */
public final class EngineConfigs {
    private EngineConfigs() {
    }

    /**
     * The whole configuration; checks that there is at least one destination and that their names are unique.
     *
     * @param name the pipeline's logical name ({@code name:})
     */
    public static EngineConfig of(String name, SourceSettings source, SnapshotSettings snapshot, PipelineSettings pipeline,
                                  OperationsSettings operations, List<DestinationConfig> destinations) {
        requireDestinations(destinations.size());
        Set<String> names = new HashSet<>();
        for (int i = 0; i < destinations.size(); i++) {
            String d = destinations.get(i).name();
            if (!names.add(d)) {
                throw Limit.error("destinations[" + i + "].name", "'" + d + "' is used by two destinations; names must be unique"
                        + " (a destination without a name is named after its type): give each destination its own name");
            }
        }
        SourceConfig src = source(source);
        // by default one folder per slot and source: pipelines of two servers with the same slot name (staging, production)
        // on one machine each have their own (Spill holds it while it runs, and refuses a folder another pipeline holds)
        Path spill = pipeline.spillDir() != null ? pipeline.spillDir()
                : Path.of(System.getProperty("java.io.tmpdir"), "millrace-spill-" + src.slot() + "-" + Integer.toHexString(src.where().hashCode()));
        return new EngineConfig(name, src, EngineConfig.SnapshotMode.valueOf(snapshot.mode().name()), initial(snapshot, src), destinations,
                pipeline(pipeline), operations(operations), spill, online(snapshot, src));
    }

    /** Refuses a pipeline without a destination. */
    public static void requireDestinations(int count) {
        if (count == 0) {
            throw Limit.error("destinations", "is required: a list with at least one destination, e.g.\n"
                    + "destinations:\n  - name: files\n    type: jsonl\n    directory: ./out");
        }
    }

    public static SourceConfig source(SourceSettings s) {
        Map<String, String> jdbc = new LinkedHashMap<>();
        if (s.sslMode() != null) {
            jdbc.put("sslmode", s.sslMode());
        }
        if (s.sslRootCert() != null) {
            jdbc.put("sslrootcert", s.sslRootCert().toString());
        }
        // A regular source connection (catalog, snapshot reads, slot monitor, key lookups) that receives nothing for
        // this long is given up as a lost connection, and the supervisor reconnects; the replication connection has its
        // own receive timeout. Without it a connection blackholed by the network waits for TCP keepalive (hours).
        if (s.socketTimeoutS() > 0) {
            jdbc.put("socketTimeout", Integer.toString(s.socketTimeoutS()));
        }
        return new SourceConfig(s.host(), s.port(), s.database(), s.user(), s.password(), s.slot(), s.publication(), s.tables(),
                s.excludeTables(), s.createPublication(), SourceConfig.BinaryMode.valueOf(s.binary().name()),
                Duration.ofMillis(s.statusIntervalMs()), jdbc, SourceConfig.OnSlotLost.valueOf(s.onSlotLost().name()),
                Duration.ofSeconds(s.newTablesPollS()), s.hosts().stream().map(EngineConfigs::hostPort).toList(), s.failover(),
                s.captureFrom() == SourceSettings.CaptureFrom.STANDBY);
    }

    /** {@code host:port} or {@code [v6]:port}, as {@link SourceSettings#hosts()} gives them (checked there). */
    private static SourceConfig.HostPort hostPort(String h) {
        int colon = h.lastIndexOf(':');
        String host = h.substring(0, colon);
        if (host.startsWith("[")) {
            host = host.substring(1, host.length() - 1);
        }
        return new SourceConfig.HostPort(host, Integer.parseInt(h.substring(colon + 1)));
    }

    /** Snapshots read COPY in binary where the types allow (CopyRows), unless source.binary is off. */
    private static boolean binaryCopy(SourceConfig src) {
        return src.binary() != SourceConfig.BinaryMode.OFF;
    }

    private static SnapshotRunner.Options initial(SnapshotSettings s, SourceConfig src) {
        return new SnapshotRunner.Options(s.readers(), s.chunkPages(), SnapshotRunner.Options.defaults().batchBytes(), binaryCopy(src));
    }

    private static OnlineSnapshotter.Options online(SnapshotSettings s, SourceConfig src) {
        return new OnlineSnapshotter.Options(s.onlineReaders(), new KeysetChunker.Sizing(s.chunkRows(), s.minChunkRows(), s.maxChunkRows(),
                s.targetChunkMs() * 1_000_000L, (long) s.maxChunkMb() << 20), s.signalTable(), binaryCopy(src));
    }

    private static Pipeline.Options pipeline(PipelineSettings p) {
        long budget = (long) p.memoryBudgetMb() << 20;
        long batch = (long) p.batchKb() << 10;
        return new Pipeline.Options(budget, batch, Math.min(budget / 2, batch * 4), p.lingerMs(), p.decoders(), p.decodeChunkRows());
    }

    private static EngineConfig.Operations operations(OperationsSettings o) {
        return new EngineConfig.Operations(o.monitorIntervalMs(), (long) o.retainedWalWarnMb() << 20, o.httpHost(), o.httpPort(),
                new EngineConfig.Retry(o.retryInitialMs(), o.retryMaxMs(), o.retryAttempts(), o.retryAttemptsOnceRunning()), o.controlToken(),
                new EngineConfig.Health(o.readyMaxLagS() * 1000L, (long) o.readyMaxLagMb() << 20, o.liveMaxStallS() * 1000L),
                EngineConfig.LogFormat.valueOf(o.logFormat().name()));
    }
}
