package io.millrace.engine;

import io.millrace.core.schema.TableRef;
import io.millrace.snapshot.SnapshotRunner;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** Snapshot progress per table for the status page, passed on to the caller's listener. Any thread. */
final class SnapshotProgressTracker implements SnapshotRunner.Listener {
    /** What the status page shows of one table's copy. */
    record Row(long copied, long estimated, boolean done) {
    }

    private final SnapshotRunner.Listener next;
    /** [rows copied, rows estimated, done 0/1], each array guarded by itself. */
    private final Map<TableRef, long[]> tables = new ConcurrentHashMap<>();

    SnapshotProgressTracker(SnapshotRunner.Listener next) {
        this.next = next;
    }

    Set<TableRef> tables() {
        return tables.keySet();
    }

    /** The table's progress, or null when no copy of it started. */
    Row row(TableRef table) {
        long[] p = tables.get(table);
        if (p == null) {
            return null;
        }
        synchronized (p) {
            return new Row(p[0], p[1], p[2] == 1);
        }
    }

    @Override
    public void tableStarted(TableRef table, long estimatedRows) {
        tables.put(table, new long[] {0, estimatedRows, 0});
        next.tableStarted(table, estimatedRows);
    }

    @Override
    public void rowsCopied(TableRef table, long rows) {
        long[] p = tables.get(table);
        if (p != null) {
            synchronized (p) {
                p[0] += rows;
            }
        }
        next.rowsCopied(table, rows);
    }

    @Override
    public void tableDone(TableRef table, long rows) {
        long[] p = tables.get(table);
        if (p != null) {
            synchronized (p) {
                p[0] = rows;
                p[2] = 1;
            }
        }
        next.tableDone(table, rows);
    }
}
