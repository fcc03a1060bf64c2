package io.millrace.core.sink;

import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * How a table destination cuts a batch for set-wise applying, the same for every such destination (postgres, DuckDB):
 * by destination table, then into runs of one shape between truncates. Changes of different tables commute; within a
 * table, runs are applied in list order (INV: ORDER), and a run is reduced per key ({@link #keyed}) or applied in order
 * when the table has no key.
 */
public final class Runs {
    private Runs() {
    }

    /**
     * Whether changes of this relation are applied by key: it has a primary key or replica identity index. Under
     * REPLICA IDENTITY FULL pgoutput flags every column as key; the pipeline replaces those flags with the catalog's
     * primary key, and a relation still flagged on every column is treated as having no key (matched by its whole old
     * row).
     */
    public static boolean keyed(RelationInfo rel) {
        if (!rel.hasKey() || rel.replicaIdentity() == 'n') {
            return false;
        }
        return rel.replicaIdentity() != 'f' || rel.keyIndexes().length < rel.columnCount();
    }

    /** {@code events} by destination table ({@code targetOf}), tables in the order first seen, each table's in list order. */
    public static Map<TableRef, List<ChangeEvent>> byTarget(List<ChangeEvent> events, Function<ChangeEvent, TableRef> targetOf) {
        Map<TableRef, List<ChangeEvent>> byTable = new LinkedHashMap<>();
        for (ChangeEvent e : events) {
            byTable.computeIfAbsent(targetOf.apply(e), t -> new ArrayList<>()).add(e);
        }
        return byTable;
    }

    /**
     * One table's changes cut into runs, in order: a truncate alone, or consecutive changes of one shape (the same
     * relation, or one of the same shape) with no truncate among them.
     */
    public static List<List<ChangeEvent>> of(List<ChangeEvent> events) {
        List<List<ChangeEvent>> runs = new ArrayList<>();
        int i = 0;
        int n = events.size();
        while (i < n) {
            ChangeEvent first = events.get(i);
            RelationInfo rel = first.relation();
            int j = i + 1;
            if (first.op() != Op.TRUNCATE) {
                while (j < n) {
                    ChangeEvent e = events.get(j);
                    if (e.op() == Op.TRUNCATE || (e.relation() != rel && !e.relation().sameShape(rel))) {
                        break;
                    }
                    j++;
                }
            }
            runs.add(events.subList(i, j));
            i = j;
        }
        return runs;
    }
}
