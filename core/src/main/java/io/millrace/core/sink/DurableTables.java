package io.millrace.core.sink;

import io.millrace.core.MillraceException;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;

import java.util.Collections;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;

/**
 * What a table destination's last durable checkpoint says that its next batch needs, and the rules that follow from it:
 * <ul>
 *   <li>the source tables it holds ({@link Checkpoint#tables()}), which a rename in the batch moves
 *       ({@link io.millrace.core.change.SourceTables#follow});</li>
 *   <li><b>the copying rule</b>: a table an online snapshot copies before the batch, after it, or both
 *       ({@link Checkpoint#copying()}) may lack rows that a later chunk brings, so an update of such a row is no error;</li>
 *   <li><b>the unchanged-TOAST rule</b>: an update carrying {@link io.millrace.core.types.UnchangedToast} values keeps
 *       the destination's values; when the destination has no row to take them from (and the copying rule does not
 *       apply), the destination no longer matches the source: {@link #noRowToTakeFrom}.</li>
 * </ul>
 * Owned by the writer thread; {@link #held()} may be read by any.
 */
public final class DurableTables {
    private Set<TableRef> copying = Set.of();
    /** Replaced whole, never changed in place: other threads may read it ({@link KeyedSink#keysIn(int, TableRef, java.util.List,
     * io.millrace.core.change.OnlineTask.KeyRange, int)}). */
    private volatile SortedMap<Integer, TableRef> held = Collections.emptySortedMap();
    /** The shapes the held tables were last written in ({@link Checkpoint#shapes}); replaced whole. */
    private volatile SortedMap<Integer, String> shapes = Collections.emptySortedMap();

    /** The checkpoint {@code open()} read (if any) or a batch committed with is durable now. */
    public void durable(Optional<Checkpoint> checkpoint) {
        copying = checkpoint.map(Checkpoint::copying).orElse(Set.of());
        held = checkpoint.map(Checkpoint::tables).orElse(Collections.emptySortedMap());
        shapes = checkpoint.map(Checkpoint::shapes).orElse(Collections.emptySortedMap());
    }

    /** {@link #durable(Optional)} of a checkpoint committed with a batch. */
    public void durable(Checkpoint checkpoint) {
        durable(Optional.of(checkpoint));
    }

    /** The source tables held as of the last durable checkpoint (by oid; any thread). */
    public SortedMap<Integer, TableRef> held() {
        return held;
    }

    /** The shapes the held tables were last written in, as of the last durable checkpoint (by oid; any thread). */
    public SortedMap<Integer, String> shapes() {
        return shapes;
    }

    /** The tables (of the source) copied online during the batch that ends at {@code next}. */
    public Set<TableRef> copyingUntil(Checkpoint next) {
        Set<TableRef> during = new HashSet<>(copying);
        during.addAll(next.copying());
        return during;
    }

    /** Whether updates of {@code rel}'s rows the destination lacks wait for the online copy (the copying rule). */
    public static boolean waitsForCopy(Set<TableRef> copying, RelationInfo rel) {
        return copying.contains(rel.sourceTable()); // the source's name: a transform may rename the table
    }

    /**
     * The error when {@code rows} updated rows of {@code target} keep unchanged TOAST values (of {@code columns}, when
     * known) and the destination has no row to take them from.
     */
    public static MillraceException noRowToTakeFrom(String destination, TableRef target, RelationInfo rel, long rows, String columns) {
        return new MillraceException(MillraceException.Kind.SINK, "destination '" + destination + "': table " + target + ": "
                + rows + " updated row(s) keep unchanged TOAST values" + (columns == null ? "" : " of columns " + columns)
                + ", but the destination has no row to take them from. The destination no longer matches the source;"
                + " re-snapshot table " + rel.table() + ".");
    }
}
