package io.millrace.engine;

import io.millrace.core.Lsn;
import io.millrace.engine.config.EngineConfig;
import io.millrace.source.PgConnections;
import io.millrace.source.SlotManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.util.function.Consumer;

/**
 * Samples the source's WAL position and the slot (confirmed position, retained WAL) on a timer, for
 * the status page and metrics, and warns when the slot retains more WAL than the configured
 * threshold; then runs the engine's {@link Check} (the source catalog's DDL, {@link SourceWatch}). Runs on its own daemon thread with its own connection; a failed sample is logged and
 * retried at the next tick (monitoring never stops the pipeline).
 */
final class SlotMonitor {
    private static final Logger LOG = LoggerFactory.getLogger(SlotMonitor.class);

    /** One sample. {@code confirmedLsn} is null while the slot does not exist. */
    record Sample(Lsn serverLsn, Lsn confirmedLsn, long retainedBytes, long atMillis) {
    }

    private SlotMonitor() {
    }

    /** Something more to look at on each tick, with the monitor's connection (a failure is logged, never fatal). */
    @FunctionalInterface
    interface Check {
        void run(Connection c) throws Exception;
    }

    static Thread start(PgConnections conns, String slot, EngineConfig.Operations ops, Consumer<Sample> out, Check check) {
        Thread t = new Thread(() -> loop(conns, slot, ops, out, check), "millrace-slot-monitor");
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static void loop(PgConnections conns, String slot, EngineConfig.Operations ops, Consumer<Sample> out, Check check) {
        boolean warned = false;
        Connection c = null; // the primary's: the checks read its catalog and may write (a table joining the publication)
        Connection at = null; // the slot's server: the primary, or the standby with source.capture_from: standby
        try {
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    if (c == null || c.isClosed()) {
                        c = conns.open();
                    }
                    if (at == null || at.isClosed()) {
                        at = conns.config().fromStandby() ? conns.openCapture() : c;
                    }
                    Sample s = sample(at, slot);
                    out.accept(s);
                    if (s.retainedBytes() >= ops.retainedWalWarnBytes() && !warned) {
                        LOG.warn("slot '{}' retains {} MiB of WAL on the source (warning threshold {} MiB): the destination is behind,"
                                        + " or the engine was stopped for long. Retained WAL fills the source's disk; if this pipeline is"
                                        + " abandoned, drop the slot: SELECT pg_drop_replication_slot('{}')", slot, s.retainedBytes() >> 20,
                                ops.retainedWalWarnBytes() >> 20, slot);
                        warned = true;
                    } else if (s.retainedBytes() < ops.retainedWalWarnBytes() / 2) {
                        warned = false;
                    }
                    check.run(c);
                } catch (Exception e) {
                    LOG.debug("slot monitor sample failed: {}", e.getMessage());
                    close(at);
                    close(c);
                    c = null;
                    at = null;
                }
                Thread.sleep(ops.monitorIntervalMillis());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            close(at);
            close(c);
        }
    }

    private static void close(Connection c) {
        try {
            if (c != null) {
                c.close();
            }
        } catch (Exception ignored) {
            // reconnect next time, or closing
        }
    }

    static Sample sample(Connection c, String slot) throws Exception {
        SlotManager.Retention r = SlotManager.retention(c, slot);
        return new Sample(r.serverLsn(), r.confirmed(), r.retainedBytes(), System.currentTimeMillis());
    }
}
