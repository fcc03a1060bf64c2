package io.millrace.core.sink;

import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.change.SourceTables;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;

import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;

/**
 * How a table destination applies a batch inside its transaction, the same for postgres and DuckDB: renames of source
 * tables followed first, then per destination table ({@link Runs#byTarget}) each run in order ({@link Runs#of}): a
 * truncate, a keyed run (reduced: {@link KeyedReducer}) or a keyless one ({@link Keyless}). A TRUNCATE of several
 * tables (one source message) cuts the batch in two (INV: ORDER across those tables): what comes before it, then its
 * tables truncated together ({@link #truncate(List)}), then what comes after it. A subclass is the database's part: its
 * tables, its DDL, how it loads a run.
 *
 * <p>Owned by the sink's writer thread.
 */
public abstract class TableApplier {
    /** The destination's name, for messages. */
    protected final String destination;
    /** Tables an online snapshot is copying during the batch being applied (see {@link #apply}). */
    protected Set<TableRef> copying = Set.of();

    /** The source tables this destination held before the batch being applied, by oid (see {@link #apply}). */
    private SortedMap<Integer, TableRef> held = new java.util.TreeMap<>();
    /** The shapes those tables were last written in here, by oid (see {@link #reshapedSinceHeld}). */
    private SortedMap<Integer, String> heldShapes = new java.util.TreeMap<>();

    /**
     * Whether this destination held a table for the source table of {@code oid} before the batch being applied: one it has
     * kept as that table's copy, so it may follow a change of the source table's key into it.
     */
    protected final boolean holds(int oid) {
        return held.containsKey(oid);
    }

    /** Whether a table dropped in the source is dropped here too (else the copy is kept). */
    protected final boolean dropTables;

    protected TableApplier(String destination) {
        this(destination, false);
    }

    /** @param dropTables whether a table dropped in the source (told by the DDL event trigger) is dropped here too */
    protected TableApplier(String destination, boolean dropTables) {
        this.destination = destination;
        this.dropTables = dropTables;
    }

    /**
     * @param copying tables ({@code schema.table} of the source) an online snapshot is copying: an update with
     *                unchanged TOAST values of a row they do not have yet is left to the chunk that copies the
     *                row (INV: WATERMARK keeps that chunk's row when it is newer than the update, else reads it
     *                again); see {@link DurableTables}
     * @param held    the source tables this destination held before the batch
     *                ({@link io.millrace.core.change.Checkpoint#tables()}): a table renamed in the source is renamed
     *                here before its changes are applied
     * @param shapes  the shapes the tables were last written in here ({@link io.millrace.core.change.Checkpoint#shapes()},
     *                the last durable checkpoint's): see {@link #reshapedSinceHeld}
     */
    public final void apply(List<ChangeEvent> events, Set<TableRef> copying, SortedMap<Integer, TableRef> held,
                            SortedMap<Integer, String> shapes) {
        this.heldShapes = shapes;
        apply(events, copying, held);
    }

    /**
     * Whether the source table of {@code rel} was last written here in another shape ({@link
     * io.millrace.core.change.Checkpoint#shapes}, given to {@link #apply(List, Set, SortedMap, SortedMap)}): it changed
     * where the stream does not show how (while Millrace was stopped). False when that is not known.
     */
    protected final boolean reshapedSinceHeld(io.millrace.core.schema.RelationInfo rel) {
        String fp = io.millrace.core.change.SourceShapes.written(heldShapes.get(rel.oid())); // also while a DDL waits for its description
        return fp != null && !fp.isEmpty() && io.millrace.core.change.SourceShapes.withheldColumns(fp) == null
                && !fp.equals(io.millrace.core.change.SourceShapes.fingerprint(rel)); // withheld: copied again whole, reconciling
    }

    /** As {@link #apply(List, Set, SortedMap, SortedMap)} without the shapes. */
    public final void apply(List<ChangeEvent> events, Set<TableRef> copying, SortedMap<Integer, TableRef> held) {
        this.copying = copying;
        this.held = held;
        SourceTables.Followed followed = SourceTables.follow(held, events);
        for (SourceTables.Rename r : followed.renames()) {
            try {
                rename(r);
            } catch (SQLException e) {
                throw r.failed(destination, message(e), e);
            }
        }
        // One TRUNCATE of several tables is a barrier: what comes before it is applied first, then its tables are
        // truncated together, as on the source (a destination with the source's foreign keys, like a migration's target,
        // refuses to truncate a referenced table alone), then what comes after it.
        int from = 0;
        for (int i = 0; i < events.size(); i++) {
            int end = truncateGroupEnd(events, i);
            if (end > i + 1) {
                applyByTable(events.subList(from, i), followed);
                truncateTogether(events.subList(i, end), followed);
                from = end;
                i = end - 1;
            }
        }
        applyByTable(events.subList(from, events.size()), followed);
    }

    /**
     * The end (exclusive) of the TRUNCATE events of one source message that start at {@code i}: consecutive, of one
     * transaction, at one WAL position; {@code i} when there is none there.
     */
    private static int truncateGroupEnd(List<ChangeEvent> events, int i) {
        ChangeEvent first = events.get(i);
        if (first.op() != Op.TRUNCATE) {
            return i;
        }
        int end = i + 1;
        while (end < events.size() && events.get(end).op() == Op.TRUNCATE && events.get(end).xid() == first.xid()
                && java.util.Objects.equals(events.get(end).lsn(), first.lsn())) {
            end++;
        }
        return end;
    }

    /** The tables of one TRUNCATE message, truncated with one statement ({@link #truncate(List)}). */
    private void truncateTogether(List<ChangeEvent> group, SourceTables.Followed followed) {
        List<TableRef> targets = new java.util.ArrayList<>();
        for (ChangeEvent e : group) {
            RelationInfo rel = e.relation();
            TableRef target = targetOf(followed.name(rel));
            try {
                if (rel.ddl() != null && rel.ddl().dropped()) {
                    if (dropTables && held.containsKey(rel.oid())) {
                        drop(target);
                    }
                    continue;
                }
                ensure(target, rel);
            } catch (SQLException ex) {
                throw failed(target, rel, List.of(e), ex);
            }
            if (!targets.contains(target)) {
                targets.add(target);
            }
        }
        if (targets.isEmpty()) {
            return;
        }
        try {
            truncate(targets);
        } catch (SQLException ex) {
            throw failed(targets.get(0), group.get(0).relation(), group, ex);
        }
    }

    private void applyByTable(List<ChangeEvent> events, SourceTables.Followed followed) {
        Map<TableRef, List<ChangeEvent>> byTable = Runs.byTarget(events, e -> targetOf(followed.name(e.relation())));
        for (Map.Entry<TableRef, List<ChangeEvent>> t : byTable.entrySet()) {
            TableRef target = t.getKey();
            for (List<ChangeEvent> run : Runs.of(t.getValue())) {
                RelationInfo rel = run.get(0).relation();
                try {
                    if (run.get(0).op() == Op.TRUNCATE && rel.ddl() != null && rel.ddl().dropped()) {
                        // The source table was dropped (the event trigger's message, in order with the data). Only a
                        // table this destination holds for that source table (by oid) is dropped: never one it does not know.
                        if (dropTables && held.containsKey(rel.oid())) {
                            drop(target);
                        }
                        continue;
                    }
                    ensure(target, rel);
                    if (run.get(0).op() == Op.TRUNCATE) {
                        truncate(target);
                    } else if (Runs.keyed(rel)) {
                        applyKeyed(target, rel, run);
                    } else {
                        applyKeyless(target, rel, run);
                    }
                } catch (SQLException e) {
                    throw failed(target, rel, run, e);
                } catch (RuntimeException e) {
                    throw failed(target, rel, run, e);
                }
            }
        }
    }

    /** Renames the destination table of a source table renamed (see {@link SourceTables}). */
    protected abstract void rename(SourceTables.Rename r) throws SQLException;

    /** The destination table of a source table. */
    protected abstract TableRef targetOf(TableRef source);

    /** Makes the destination table match {@code rel}. */
    protected abstract void ensure(TableRef target, RelationInfo rel) throws SQLException;

    protected abstract void truncate(TableRef target) throws SQLException;

    /**
     * Truncates the tables of one TRUNCATE of several tables, together where the database can (a referenced table cannot
     * be truncated alone); by default one after the other.
     */
    protected void truncate(List<TableRef> targets) throws SQLException {
        for (TableRef t : targets) {
            truncate(t);
        }
    }

    /** Drops the destination table of a source table dropped (with {@code drop_tables}); by default nothing. */
    protected void drop(TableRef target) throws SQLException {
    }

    protected abstract void applyKeyed(TableRef target, RelationInfo rel, List<ChangeEvent> run) throws SQLException;

    protected abstract void applyKeyless(TableRef target, RelationInfo rel, List<ChangeEvent> run) throws SQLException;

    /** An error's message as this database words it, for messages. */
    protected String message(SQLException e) {
        return e.getMessage();
    }

    /** The error to throw when a run failed with {@code e}. */
    protected abstract RuntimeException failed(TableRef target, RelationInfo rel, List<ChangeEvent> run, SQLException e);

    /** The error to throw when a run failed with {@code e}; by default {@code e} itself. */
    protected RuntimeException failed(TableRef target, RelationInfo rel, List<ChangeEvent> run, RuntimeException e) {
        return e;
    }
}
