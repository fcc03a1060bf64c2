package io.millrace.ops;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.millrace.engine.Engine;
import io.millrace.engine.EngineStatus;
import io.millrace.engine.EngineView;
import io.millrace.pipeline.PipelineStats;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The engine's figures as Prometheus metrics (Micrometer): events per table, snapshot progress,
 * lag in bytes and time, retained WAL, in-flight bytes against the budget, and the
 * commit-to-durable latency distribution. Names start with {@code millrace_}. No label or value
 * ever holds a secret (the source is named by host, port and database only).
 */
public final class EngineMetrics {
    private final EngineView engine;
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final Set<String> tables = ConcurrentHashMap.newKeySet();
    private final Timer latency;
    private volatile EngineStatus last;
    private volatile PipelineStats hooked;

    public EngineMetrics(Engine engine) {
        this(EngineView.of(engine));
    }

    public EngineMetrics(EngineView engine) {
        this.engine = engine;
        String pipeline = engine.config().name();
        registry.config().commonTags("pipeline", pipeline);
        latency = Timer.builder("millrace_commit_to_durable").description("time from the source commit to durable in every destination")
                .publishPercentiles(0.5, 0.99).publishPercentileHistogram().register(registry);
        Gauge.builder("millrace_lag_bytes", this, m -> m.status().lagBytes()).description("WAL between the source's position and the durable position")
                .baseUnit("bytes").register(registry);
        Gauge.builder("millrace_lag_seconds", this, m -> m.status().lagMillis() / 1000.0)
                .description("commit-to-durable latency of the newest durable change").register(registry);
        Gauge.builder("millrace_retained_wal_bytes", this, m -> m.status().retainedWalBytes())
                .description("WAL the slot holds on the source").baseUnit("bytes").register(registry);
        Gauge.builder("millrace_inflight_bytes", this, m -> m.status().budgetUsed())
                .description("bytes between the reader and durable").baseUnit("bytes").register(registry);
        Gauge.builder("millrace_budget_bytes", this, m -> m.status().budgetLimit())
                .description("the configured in-flight budget").baseUnit("bytes").register(registry);
        Gauge.builder("millrace_events_written", this, m -> m.status().eventsWritten())
                .description("change events delivered (snapshot rows included)").register(registry);
        Gauge.builder("millrace_up", this, m -> "streaming".equals(m.status().state()) || "snapshotting".equals(m.status().state()) ? 1 : 0)
                .description("1 while the engine snapshots or streams").register(registry);
        Gauge.builder("millrace_values_binary", this, m -> m.status().values() == null ? Double.NaN
                        : "binary".equals(m.status().values().mode()) ? 1 : 0)
                .description("1 when the stream reads values in binary, 0 when in text (the status's values.text_reason says why)")
                .register(registry);
        FunctionCounter.builder("millrace_errors", this, m -> m.status().lastError() == null ? 0 : 1)
                .description("errors that stopped the engine").register(registry);
        Gauge.builder("millrace_tables_not_captured", this, m -> m.status().notCaptured().size())
                .description("tables source.tables selects that are not captured, or whose UPDATEs fail on the source (the status's"
                        + " not_captured names each with the fix)").register(registry);
        Gauge.builder("millrace_online_snapshots", this, m -> m.status().online() == null ? 0 : m.status().online().tasks().size())
                .description("online snapshots under way").register(registry);
        FunctionCounter.builder("millrace_online_snapshot_chunks", this, m -> m.status().online() == null ? 0 : m.status().online().chunksRead())
                .description("online snapshot chunks read").register(registry);
        Gauge.builder("millrace_online_snapshot_buffered_rows_peak", this,
                        m -> m.status().online() == null ? 0 : m.status().online().peakBufferedRows())
                .description("the most online snapshot rows held in memory at once").register(registry);
        FunctionCounter.builder("millrace_slot_lost", this, m -> m.status().slotLost() == null ? 0 : m.status().slotLost().count())
                .description("times this pipeline's slot was lost (invalidated or dropped) and replaced (source.on_slot_lost: resnapshot)")
                .register(registry);
        Gauge.builder("millrace_slot_lost_reconciling_tables", this,
                        m -> m.status().slotLost() == null ? 0 : m.status().slotLost().reconciling().size())
                .description("tables the re-copy after a lost slot has not landed yet").register(registry);
        FunctionCounter.builder("millrace_slot_lost_rows_deleted", this,
                        m -> m.status().slotLost() == null ? 0 : m.status().slotLost().rowsDeleted())
                .description("rows deleted in the destinations since start because the re-copy after a lost slot no longer found them")
                .register(registry);
    }

    /** The status, refreshed at most every 100 ms (one scrape reads many gauges). */
    EngineStatus status() {
        EngineStatus s = last;
        if (s == null || System.nanoTime() - statusAt > 100_000_000L) {
            s = engine.status();
            last = s;
            statusAt = System.nanoTime();
        }
        return s;
    }

    private volatile long statusAt;

    /** Registers meters for tables seen since the last scrape; hooks the latency listener. */
    private void refresh() {
        PipelineStats st = engine.stats();
        if (st != null && hooked != st) {
            st.listener((events, micros) -> latency.record(micros, TimeUnit.MICROSECONDS));
            hooked = st;
        }
        for (EngineStatus.Table t : status().tables()) {
            if (tables.add(t.table())) {
                String name = t.table();
                FunctionCounter.builder("millrace_table_events", this, m -> table(m, name, 0))
                        .description("streamed changes delivered").tag("table", name).register(registry);
                FunctionCounter.builder("millrace_snapshot_rows", this, m -> table(m, name, 1))
                        .description("snapshot rows copied").tag("table", name).register(registry);
                Gauge.builder("millrace_snapshot_rows_estimated", this, m -> table(m, name, 2))
                        .description("the table's estimated rows when its snapshot started").tag("table", name).register(registry);
            }
        }
    }

    private static double table(EngineMetrics m, String name, int what) {
        for (EngineStatus.Table t : m.status().tables()) {
            if (t.table().equals(name)) {
                return switch (what) {
                    case 0 -> t.events();
                    case 1 -> t.rowsCopied();
                    default -> t.rowsEstimated();
                };
            }
        }
        return 0;
    }

    /** The Prometheus text exposition. */
    public String scrape() {
        refresh();
        return registry.scrape();
    }

    /** Hook the latency listener early (before the first scrape). */
    public void attach() {
        refresh();
    }

}
