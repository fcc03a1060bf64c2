package io.millrace.cli;

import io.millrace.core.schema.TableRef;
import io.millrace.snapshot.SnapshotRunner;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

import java.io.PrintStream;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Snapshot progress in the terminal: one progress bar over all tables (rows copied of the
 * estimate, rate, ETA; the tables being copied as its message), and a line per table as it lands.
 * Without a terminal (logs, CI) only the per-table lines are printed. Called from snapshot reader
 * threads.
 */
final class ProgressDisplay implements SnapshotRunner.Listener {
    private final PrintStream out;
    private final boolean terminal;
    private final Map<TableRef, Long> started = new ConcurrentHashMap<>();
    /** When each table's first rows were handed on: its copy's own start (tables are all planned at the snapshot's). */
    private final Map<TableRef, Long> firstRows = new ConcurrentHashMap<>();
    private final Set<TableRef> copying = ConcurrentHashMap.newKeySet();
    private final AtomicLong estimated = new AtomicLong();
    private final AtomicLong done = new AtomicLong();
    private volatile ProgressBar bar;

    ProgressDisplay(PrintStream out) {
        this(out, System.console() != null);
    }

    ProgressDisplay(PrintStream out, boolean terminal) {
        this.out = out;
        this.terminal = terminal;
    }

    @Override
    public void tableStarted(TableRef table, long estimatedRows) {
        started.put(table, System.nanoTime());
        firstRows.remove(table); // a table copied again (online) is timed from its new copy's first rows
        estimated.addAndGet(Math.max(0, estimatedRows));
        ProgressBar b = bar();
        if (b != null) {
            b.maxHint(Math.max(1, estimated.get()));
        }
    }

    private synchronized ProgressBar bar() {
        if (!terminal) {
            return null;
        }
        if (bar == null) {
            bar = new ProgressBarBuilder().setTaskName("snapshot").setInitialMax(Math.max(1, estimated.get()))
                    .setStyle(ProgressBarStyle.ASCII).setUnit(" rows", 1).showSpeed().setUpdateIntervalMillis(250)
                    .setMaxRenderedLength(110).setConsumer(new me.tongfei.progressbar.ConsoleProgressBarConsumer(out))
                    .setSpeedUnit(java.time.temporal.ChronoUnit.SECONDS).build();
        }
        return bar;
    }

    @Override
    public void rowsCopied(TableRef table, long rows) {
        firstRows.putIfAbsent(table, System.nanoTime());
        copying.add(table);
        ProgressBar b = bar();
        if (b != null) {
            b.stepBy(rows);
            if (b.getCurrent() > b.getMax()) {
                b.maxHint(b.getCurrent());
            }
            b.setExtraMessage(" " + String.join(", ", copying.stream().map(TableRef::toString).sorted().toList()));
        }
    }

    @Override
    public void tableDone(TableRef table, long rows) {
        copying.remove(table);
        long now = System.nanoTime();
        double at = Duration.ofNanos(now - started.getOrDefault(table, now)).toMillis() / 1000.0;
        double copied = Duration.ofNanos(now - firstRows.getOrDefault(table, now)).toMillis() / 1000.0;
        // The rate over the table's own copy, from its first rows handed on: since the snapshot's start, a small table
        // copied after a big one read '10 rows copied in 12.2 s (1 rows/s)' (found by a user). Under a second, no rate.
        String line = String.format("  snapshot     %-24s %9d rows, landed at %.1f s%s", table, rows, at,
                copied < 1 ? "" : String.format(" (%d rows/s over its %.1f s)", Math.round(rows / copied), copied));
        ProgressBar b = bar;
        if (b != null) {
            synchronized (this) {
                out.print("\r" + " ".repeat(110) + "\r");
                out.println(line);
                if (done.incrementAndGet() == started.size()) {
                    b.close();
                    bar = null;
                }
            }
        } else {
            done.incrementAndGet();
            out.println(line);
        }
    }
}
