package io.millrace.cli;

import io.millrace.core.schema.TableRef;
import io.millrace.snapshot.SnapshotRunner;

import java.io.PrintStream;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Prints snapshot progress per table: rows copied of the estimate, and when a table lands. */
final class ProgressDisplay implements SnapshotRunner.Listener {
    private final PrintStream out;
    private final Map<TableRef, Long> estimates = new ConcurrentHashMap<>();
    private final Map<TableRef, Long> started = new ConcurrentHashMap<>();

    ProgressDisplay(PrintStream out) {
        this.out = out;
    }

    @Override
    public void tableStarted(TableRef table, long estimatedRows) {
        estimates.put(table, estimatedRows);
        started.put(table, System.nanoTime());
    }

    @Override
    public void tableDone(TableRef table, long rows) {
        double secs = (System.nanoTime() - started.getOrDefault(table, System.nanoTime())) / 1e9;
        out.printf("  snapshot     %-24s %9d rows copied in %.1f s (%d rows/s)%n", table, rows, secs,
                Math.round(rows / Math.max(secs, 1e-3)));
    }
}
