package io.millrace.core.schema;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * What changed between two shapes of one table, as two Relation messages show it: columns renamed, added, dropped
 * and retyped.
 *
 * <p>A Relation message has no attribute numbers, only the live columns' names, types and order (attribute order).
 * A rename is read where, between the same two columns kept by name, a column of one name gave way to one of another
 * name and the very same type ({@code ALTER TABLE … RENAME COLUMN} keeps the type, the position and every value); in
 * that gap, columns are paired in order while their types agree. Anything else of a new name is added, of an old name
 * dropped. This can misread a column dropped and another of the same type added at its place with no change of the
 * table in between: the engine checks each reading against the source catalog's attribute numbers and copies the
 * table again when it was wrong.
 *
 * @param renamed old name → new name, in column order
 * @param added   columns of the new shape that are new (not renamed)
 * @param dropped columns of the old shape that are gone (not renamed)
 * @param retyped names (new) of columns kept by name whose type or modifier changed
 * @param ddl     when not null, the change is exact: read by attribute numbers from the event trigger's messages
 *                ({@link SchemaChange}) that led to {@code after}, not guessed from the names and types
 *
 * <p>With the event trigger installed ({@code millrace setup}), the relation a Relation message gives after a DDL
 * carries the trigger's {@link SchemaChange} ({@link RelationInfo#ddl()}), and {@link #between} reads the change from it
 * (a column renamed is renamed even when its type changed too; a column dropped and another of the same type added in
 * its place is a drop and an add).
 */
public record ShapeChange(Map<String, String> renamed, List<ColumnInfo> added, List<ColumnInfo> dropped, List<String> retyped,
                          SchemaChange ddl) {

    public ShapeChange(Map<String, String> renamed, List<ColumnInfo> added, List<ColumnInfo> dropped, List<String> retyped) {
        this(renamed, added, dropped, retyped, null);
    }

    /** Whether the change was read from the event trigger's messages (exact), not guessed from two Relation messages. */
    public boolean exact() {
        return ddl != null;
    }

    public static ShapeChange between(RelationInfo before, RelationInfo after) {
        if (after.ddl() != null) {
            ShapeChange exact = after.ddl().exactly(before, after);
            if (exact != null) {
                return exact;
            }
        }
        Set<String> oldNames = before.columns().stream().map(ColumnInfo::name).collect(Collectors.toSet());
        Set<String> newNames = after.columns().stream().map(ColumnInfo::name).collect(Collectors.toSet());
        List<List<ColumnInfo>> oldGaps = gaps(before.columns(), newNames);
        List<List<ColumnInfo>> newGaps = gaps(after.columns(), oldNames);
        Map<String, String> renamed = new LinkedHashMap<>();
        List<ColumnInfo> added = new ArrayList<>();
        List<ColumnInfo> dropped = new ArrayList<>();
        for (int g = 0; g < Math.max(oldGaps.size(), newGaps.size()); g++) {
            List<ColumnInfo> o = g < oldGaps.size() ? oldGaps.get(g) : List.of();
            List<ColumnInfo> n = g < newGaps.size() ? newGaps.get(g) : List.of();
            int i = 0;
            while (i < o.size() && i < n.size() && sameType(o.get(i), n.get(i))) {
                renamed.put(o.get(i).name(), n.get(i).name());
                i++;
            }
            dropped.addAll(o.subList(i, o.size()));
            added.addAll(n.subList(Math.min(i, n.size()), n.size()));
        }
        List<String> retyped = new ArrayList<>();
        for (ColumnInfo c : after.columns()) {
            for (ColumnInfo old : before.columns()) {
                if (old.name().equals(c.name()) && !sameType(old, c)) {
                    retyped.add(c.name());
                }
            }
        }
        return new ShapeChange(renamed, List.copyOf(added), List.copyOf(dropped), List.copyOf(retyped));
    }

    /** The columns of {@code columns} not in {@code kept}, in runs between consecutive columns that are. */
    private static List<List<ColumnInfo>> gaps(List<ColumnInfo> columns, Set<String> kept) {
        List<List<ColumnInfo>> gaps = new ArrayList<>();
        List<ColumnInfo> run = new ArrayList<>();
        for (ColumnInfo c : columns) {
            if (kept.contains(c.name())) {
                gaps.add(run);
                run = new ArrayList<>();
            } else {
                run.add(c);
            }
        }
        gaps.add(run);
        return gaps;
    }

    static boolean sameType(ColumnInfo a, ColumnInfo b) {
        return a.type() != null && b.type() != null && a.type().oid() == b.type().oid() && a.typeMod() == b.typeMod();
    }

    /** The name {@code oldName} has in the new shape (itself when not renamed). */
    public String renamedTo(String oldName) {
        return renamed.getOrDefault(oldName, oldName);
    }

    /** For messages: {@code columns renamed a → b; added c; dropped d; retyped e}, or {@code no column changed}. */
    public String describe() {
        List<String> parts = new ArrayList<>();
        if (!renamed.isEmpty()) {
            parts.add("renamed " + renamed.entrySet().stream().map(e -> e.getKey() + " → " + e.getValue()).collect(Collectors.joining(", ")));
        }
        if (!added.isEmpty()) {
            parts.add("added " + added.stream().map(ColumnInfo::name).collect(Collectors.joining(", ")));
        }
        if (!dropped.isEmpty()) {
            parts.add("dropped " + dropped.stream().map(ColumnInfo::name).collect(Collectors.joining(", ")));
        }
        if (!retyped.isEmpty()) {
            parts.add("retyped " + String.join(", ", retyped));
        }
        return parts.isEmpty() ? "no column changed" : "columns " + String.join("; ", parts);
    }

    /** Whether nothing but the table's name (or nothing at all) changed. */
    public boolean columnsUnchanged() {
        return renamed.isEmpty() && added.isEmpty() && dropped.isEmpty() && retyped.isEmpty();
    }
}
