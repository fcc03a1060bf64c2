package io.millrace.core.sink;

import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.SchemaChange;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a table destination does at its first sight, after a restart, of a table it holds, in a shape the event trigger's
 * account says was reached by dropping and renaming columns ({@link SchemaChange#droppedColumns},
 * {@link SchemaChange#renamedColumns}): there is no shape before it in memory to follow, so when the destination's table
 * is still in the shape before the DDL (it has every column the account names before), the columns dropped go first (a
 * renamed one may take a dropped one's name), then the renames, through temporary names so that a swap or a chain ends
 * right; values kept. Without it a destination added the new name and dropped the old column with its values (found by a
 * user: a RENAME COLUMN as a table's first change after a restart). Shared by the postgres and DuckDB destinations,
 * which run the statements.
 *
 * @param drops   the columns to drop, in this order
 * @param steps   the renames to run, in this order, each {@code {from, to}} (temporary names between)
 * @param renamed old name → new name, for the log
 */
public record FirstSight(List<String> drops, List<String[]> steps, Map<String, String> renamed) {
    private static final String TEMPORARY = "millrace_renaming_";

    /** Whether {@code rel} carries an account of the trigger that names the columns before it (else nothing is known). */
    public static boolean told(RelationInfo rel) {
        SchemaChange d = rel.ddl();
        return d != null && d.exact() && d.before() != null && !d.renamedColumns().isEmpty();
    }

    /**
     * The trigger's account of column {@code name} of {@code rel} when the DDL it tells added it with a constant default
     * (PostgreSQL's "missing" value: the source's existing rows read it, not rewritten): a destination that adds the column
     * at its first sight of the table gives its rows that value, as when it follows the DDL while streaming. Null otherwise.
     */
    public static SchemaChange.Column constantDefault(RelationInfo rel, String name) {
        SchemaChange d = rel.ddl();
        if (d == null || !d.exact() || d.before() == null) {
            return null;
        }
        SchemaChange.Column c = d.column(name);
        return c != null && c.missing() && !d.before().containsKey(c.attnum()) ? c : null;
    }

    /**
     * The plan for a destination table with {@code columns}; null when it is not in the shape before the DDL, when a
     * column not {@code renamable} (DuckDB: a key column) is renamed, or when a new name is taken by a column the account
     * does not move (a user's): the destination's own checks then go on as before.
     *
     * @param droppable the columns the destination may drop (its own: tagged, and for DuckDB not in its key)
     */
    public static FirstSight of(RelationInfo rel, Set<String> columns, Set<String> droppable, Set<String> notRenamable) {
        if (!told(rel) || !columns.containsAll(rel.ddl().before().values())) {
            return null;
        }
        Map<String, String> renames = rel.ddl().renamedColumns();
        if (renames.keySet().stream().anyMatch(notRenamable::contains)) {
            return null;
        }
        List<String> drops = rel.ddl().droppedColumns().stream().filter(droppable::contains).toList();
        Set<String> left = new HashSet<>(columns);
        drops.forEach(left::remove);
        for (String to : renames.values()) {
            if (left.contains(to) && !renames.containsKey(to)) {
                return null;
            }
        }
        List<String[]> steps = new ArrayList<>();
        Map<String, String> temporary = new LinkedHashMap<>();
        for (String from : renames.keySet()) {
            String tmp = TEMPORARY + temporary.size();
            steps.add(new String[] {from, tmp});
            temporary.put(tmp, renames.get(from));
        }
        temporary.forEach((tmp, to) -> steps.add(new String[] {tmp, to}));
        return new FirstSight(drops, steps, renames);
    }
}
