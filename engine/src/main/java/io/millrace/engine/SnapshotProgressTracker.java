package io.millrace.engine;

import io.millrace.core.schema.TableRef;
import io.millrace.snapshot.SnapshotRunner;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Snapshot progress per table for the status page, passed on to the caller's listener.
 *
 * <p>Threads: the snapshot's readers and the online snapshot's report progress, the status page reads it; each table's
 * {@link Row} is immutable and replaced atomically ({@link ConcurrentHashMap#computeIfPresent}). Not stored: a restart
 * starts it again from the copies it resumes.
 */
final class SnapshotProgressTracker implements SnapshotRunner.Listener {
    /**
     * Where one table's copy is: {@code COPYING} from {@link #tableStarted} (the snapshot or online snapshot began it, a
     * restart resumed it) to {@code LANDED} at {@link #tableDone}; a copy started again (a new signal) goes back to
     * {@code COPYING} with its rows counted from 0.
     */
    enum Phase { COPYING, LANDED }

    /** What the status page shows of one table's copy. */
    record Row(long copied, long estimated, Phase phase) {
        boolean done() {
            return phase == Phase.LANDED;
        }
    }

    private final SnapshotRunner.Listener next;
    private final Map<TableRef, Row> tables = new ConcurrentHashMap<>();

    SnapshotProgressTracker(SnapshotRunner.Listener next) {
        this.next = next;
    }

    Set<TableRef> tables() {
        return tables.keySet();
    }

    /** The table's progress, or null when no copy of it started. */
    Row row(TableRef table) {
        return tables.get(table);
    }

    @Override
    public void tableStarted(TableRef table, long estimatedRows) {
        tables.put(table, new Row(0, estimatedRows, Phase.COPYING));
        next.tableStarted(table, estimatedRows);
    }

    @Override
    public void rowsCopied(TableRef table, long rows) {
        tables.computeIfPresent(table, (t, r) -> new Row(r.copied() + rows, r.estimated(), r.phase()));
        next.rowsCopied(table, rows);
    }

    @Override
    public void tableDone(TableRef table, long rows) {
        tables.computeIfPresent(table, (t, r) -> new Row(rows, r.estimated(), Phase.LANDED));
        next.tableDone(table, rows);
    }
}
