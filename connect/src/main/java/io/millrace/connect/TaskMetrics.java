package io.millrace.connect;

import io.millrace.api.Status;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Millrace's status as the task's plugin metrics (KIP-877), so that the worker's metrics reporters (JMX, ...) carry them
 * with the connector and task tags: {@code millrace-lag-bytes}, {@code millrace-lag-ms}, {@code millrace-events-written},
 * {@code millrace-durable-lsn}, {@code millrace-state} and {@code millrace-not-captured}. The worker removes them when
 * the task stops.
 *
 * <p>A task restarted fast (a failed start, a rebalance) can start before the worker has closed its previous instance's
 * plugin metrics, whose names are still in the worker's registry. A task's plugin metrics can neither see nor remove
 * another instance's, so such a metric is left to be added again on a later {@link #addPending()} (each poll), once the
 * previous instance is gone. A metric never fails the task.
 */
final class TaskMetrics {
    private static final Logger LOG = LoggerFactory.getLogger(TaskMetrics.class);

    private final PluginMetrics metrics;
    private final List<Pending> pending = new ArrayList<>();
    private boolean told;

    private record Pending(MetricName name, Gauge<?> gauge) {
    }

    TaskMetrics(PluginMetrics metrics, Supplier<Status> status) {
        this.metrics = metrics;
        if (metrics == null) {
            return;
        }
        gauge("millrace-lag-bytes", "bytes of WAL between the source's end and the durable position", status, Status::lagBytes);
        gauge("millrace-lag-ms", "time since the durable change was committed at the source, ms", status, Status::lagMillis);
        gauge("millrace-events-written", "changes handed to Connect and committed since the pipeline started", status,
                Status::eventsWritten);
        gauge("millrace-durable-lsn", "the position up to which the slot may be confirmed, as a number", status,
                s -> s.durable() == null ? 0L : s.durable().value());
        gauge("millrace-state", "the pipeline's state (snapshotting, streaming, ...)", status, Status::state);
        // Connect's REST status shows no warnings: a table the include list selects that cannot be captured (no key, as a
        // keyless table dropped and created again while streaming) was only a line in the worker's log (found by a user)
        gauge("millrace-not-captured", "tables the include list selects that are not captured, or whose UPDATEs fail on the source"
                + " (the worker's log names each with the fix)", status, s -> s.notCaptured().size());
    }

    private <T> void gauge(String name, String description, Supplier<Status> status, Function<Status, T> value) {
        Gauge<T> gauge = (config, now) -> value.apply(status.get());
        pending.add(new Pending(metrics.metricName(name, description, new LinkedHashMap<>()), gauge));
    }

    /** Adds the metrics not added yet; returns how many are still held by the task's previous instance. */
    int addPending() {
        if (pending.isEmpty()) {
            return 0;
        }
        for (var it = pending.iterator(); it.hasNext(); ) {
            Pending p = it.next();
            try {
                metrics.addMetric(p.name(), p.gauge());
                it.remove();
            } catch (IllegalArgumentException e) { // the worker's registry still holds the previous instance's
                if (!told) {
                    LOG.info("the task's metric {} is still held by its previous instance; it is added once that one has closed",
                            p.name().name());
                    told = true;
                }
            } catch (IllegalStateException e) { // this task's plugin metrics are closed: the task is stopping
                pending.clear();
                return 0;
            }
        }
        return pending.size();
    }
}
