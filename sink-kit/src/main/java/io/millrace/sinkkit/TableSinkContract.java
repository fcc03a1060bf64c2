package io.millrace.sinkkit;

import io.millrace.core.MillraceException;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.OnlineTask;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.ShapeChange;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.Sink;
import io.millrace.core.types.UnchangedToast;
import io.millrace.testkit.Events;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;

import static io.millrace.testkit.Events.TOAST;
import static io.millrace.testkit.Events.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The {@link SinkContract} for a destination that holds tables (a row per key): what it holds is compared with the
 * rows the written changes leave, applied once each in list order. An update's {@link UnchangedToast} value keeps the
 * stored one; a shape change renames, adds (NULL in older rows) and drops columns as {@link ShapeChange} reads it.
 */
public abstract class TableSinkContract extends SinkContract {
    private long keylessRows;

    /**
     * The rows {@code destination} holds for the source table {@code table}, each as column name → the value's text
     * ({@code toString()} of what JDBC's {@code getString} gives; SQL NULL as {@code null}), in any order; only the
     * table's own columns. Empty when the destination has no such table.
     */
    protected abstract List<Map<String, String>> rows(String destination, TableRef table);

    /** The rows {@code sql} selects through {@code connection}, as {@link #rows(String, TableRef)} gives them. */
    protected static List<Map<String, String>> query(Connection connection, String sql) throws SQLException {
        List<Map<String, String>> out = new ArrayList<>();
        try (Statement s = connection.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            ResultSetMetaData md = rs.getMetaData();
            while (rs.next()) {
                Map<String, String> row = new HashMap<>();
                for (int i = 1; i <= md.getColumnCount(); i++) {
                    row.put(md.getColumnName(i), rs.getString(i));
                }
                out.add(row);
            }
        }
        return out;
    }

    /**
     * The unchanged-TOAST rule where the destination has no row to take the values from: the write fails and the
     * checkpoint stays where it was (the destination no longer matches the source), unless an online snapshot copies
     * the table during the batch (the copying rule): then the update waits for the copy, whose chunk brings the row.
     */
    @Test
    void unchangedToastOfARowNotHeldFailsUnlessTheTableIsBeingCopied() {
        String destination = "ct_toast_missing";
        RelationInfo t = table("toast_missing");
        Events ev = new Events();
        Checkpoint first;
        try (Sink sink = newSink(destination)) {
            sink.open();
            ChangeEvent held = ev.insert(t, row(1, "a", 1));
            first = ev.checkpoint(destination);
            sink.write(List.of(held), first);
            ChangeEvent lost = ev.update(t, row(2, TOAST, 5));
            Checkpoint after = ev.checkpoint(destination);
            assertThatThrownBy(() -> sink.write(List.of(lost), after)).isInstanceOf(MillraceException.class)
                    .hasMessageContaining("no row to take them from");
        }
        Checkpoint copying;
        try (Sink sink = newSink(destination)) {
            assertThat(sink.open()).as("the checkpoint after the failed write").contains(first);
            ChangeEvent waits = ev.update(t, row(3, TOAST, 7));
            copying = ev.checkpoint(destination).withOnline(List.of(OnlineTask.whole(t)));
            sink.write(List.of(waits), copying);
        }
        try (Sink sink = newSink(destination)) {
            assertThat(sink.open()).contains(copying);
        }
        assertThat(rows(destination, t.table())).containsExactly(Map.of("id", "1", "name", "a", "qty", "1"));
    }

    @Override
    protected void assertHolds(String destination, List<ChangeEvent> written, Repeats repeats) {
        Map<Integer, RelationInfo> shapes = new LinkedHashMap<>();
        Map<Integer, Map<String, Map<String, String>>> tables = new HashMap<>();
        Map<Integer, Set<TableRef>> names = new HashMap<>();
        for (ChangeEvent e : written) {
            RelationInfo rel = e.relation();
            Map<String, Map<String, String>> rows = tables.computeIfAbsent(rel.oid(), k -> new LinkedHashMap<>());
            RelationInfo before = shapes.put(rel.oid(), rel);
            names.computeIfAbsent(rel.oid(), k -> new HashSet<>()).add(rel.table());
            if (before != null && !before.sameShape(rel)) {
                reshape(rows, ShapeChange.between(before, rel));
            }
            switch (e.op()) {
                case CREATE, READ -> rows.put(key(rel, e.after()), values(rel, e.after(), null));
                case UPDATE -> {
                    Map<String, String> old = rows.remove(key(rel, e.before() != null ? e.before() : e.after()));
                    rows.put(key(rel, e.after()), values(rel, e.after(), old));
                }
                case DELETE -> rows.remove(key(rel, e.before()));
                case TRUNCATE -> rows.clear();
                default -> throw new IllegalArgumentException("op " + e.op());
            }
        }
        for (Map.Entry<Integer, RelationInfo> s : shapes.entrySet()) {
            List<Map<String, String>> expected = new ArrayList<>(tables.get(s.getKey()).values());
            assertThat(rows(destination, s.getValue().table())).as("destination %s, %s", destination, s.getValue().table())
                    .containsExactlyInAnyOrderElementsOf(expected);
            for (TableRef old : names.getOrDefault(s.getKey(), Set.of())) {
                if (!old.equals(s.getValue().table())) {
                    assertThat(rows(destination, old)).as("destination %s: %s was renamed to %s", destination, old,
                            s.getValue().table()).isEmpty();
                }
            }
        }
    }

    private static void reshape(Map<String, Map<String, String>> rows, ShapeChange change) {
        for (Map.Entry<String, Map<String, String>> r : rows.entrySet()) {
            Map<String, String> next = new HashMap<>();
            r.getValue().forEach((column, value) -> {
                if (change.dropped().stream().noneMatch(c -> c.name().equals(column))) {
                    next.put(change.renamedTo(column), value);
                }
            });
            change.added().forEach(c -> next.put(c.name(), null));
            r.setValue(next);
        }
    }

    private String key(RelationInfo rel, Object[] image) {
        if (!rel.hasKey()) {
            return "row " + (keylessRows++); // a table without a key takes inserts only here: each is a row of its own
        }
        StringJoiner j = new StringJoiner("|");
        for (int k : rel.keyIndexes()) {
            j.add(String.valueOf(image[k]));
        }
        return j.toString();
    }

    /** The row {@code image} makes, an unchanged TOAST value taken from {@code old}. */
    private static Map<String, String> values(RelationInfo rel, Object[] image, Map<String, String> old) {
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i < rel.columnCount(); i++) {
            String name = rel.column(i).name();
            Object v = image[i];
            if (v == UnchangedToast.INSTANCE) {
                assertThat(old).as("an unchanged TOAST value of a row the destination holds").isNotNull();
                out.put(name, old.get(name));
            } else {
                out.put(name, v == null ? null : v.toString());
            }
        }
        return out;
    }
}
