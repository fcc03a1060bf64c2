package io.millrace.connect;

import io.millrace.api.Status;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A task restarted before the worker closed its previous instance's plugin metrics (CI saw the task's start fail with
 * "Unknown metric ... millrace-lag-bytes" in ConnectClusterIT). Kafka's own plugin metrics on one registry, as the worker
 * gives each task instance its own on the worker's registry.
 */
class TaskMetricsTest {
    private static final Map<String, String> TAGS = Map.of("connector", "inventory", "task", "0");

    private static Status status(long lagBytes) {
        return new Status("inventory", "streaming", null, lagBytes, 0, 7, List.of(), null, lagBytes == 42 ? List.of(new Status.NotCaptured(
                "public.log", "it has no primary key", "ALTER TABLE public.log ADD PRIMARY KEY (...)")) : List.of());
    }

    @Test
    void aRestartedTaskAddsItsMetricsOnceThePreviousInstanceHasClosed() throws Exception {
        try (Metrics registry = new Metrics()) {
            PluginMetricsImpl previous = new PluginMetricsImpl(registry, TAGS);
            assertThat(new TaskMetrics(previous, () -> status(1)).addPending()).isZero();

            PluginMetricsImpl restarted = new PluginMetricsImpl(registry, TAGS);
            TaskMetrics metrics = new TaskMetrics(restarted, () -> status(42));
            assertThat(metrics.addPending()).as("held by the previous instance, and the start does not fail").isEqualTo(6);
            MetricName lag = restarted.metricName("millrace-lag-bytes", "", new java.util.LinkedHashMap<>());
            assertThat(registry.metric(lag).metricValue()).isEqualTo(1L);

            previous.close(); // the worker closes the previous instance
            assertThat(metrics.addPending()).isZero();
            assertThat(registry.metric(lag).metricValue()).isEqualTo(42L);
            assertThat(registry.metric(restarted.metricName("millrace-events-written", "", new java.util.LinkedHashMap<>()))
                    .metricValue()).isEqualTo(7L);
            assertThat(registry.metric(restarted.metricName("millrace-not-captured", "", new java.util.LinkedHashMap<>()))
                    .metricValue()).as("the table that needs attention").isEqualTo(1);

            restarted.close();
            assertThat(registry.metric(lag)).as("removed with the task's plugin metrics").isNull();
        }
    }
}
