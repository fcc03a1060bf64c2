package io.millrace.core.schema;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.MillraceException;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A schema change of one table exactly as Millrace's event trigger on the source told it: a transactional logical
 * message ({@code pg_logical_emit_message(true, 'millrace.ddl', json)}) written by {@code ddl_command_end} and
 * {@code sql_drop} in the DDL's own transaction, so the stream carries it in order with the data (see
 * {@code io.millrace.source.DdlTrigger}).
 *
 * <p>Columns are identified by attribute number, which PostgreSQL never reuses within a table: a column keeps it
 * through {@code RENAME COLUMN} and {@code ALTER COLUMN … TYPE}; a dropped column's number is gone; an added column gets
 * a new one. The trigger keeps, in an unlogged table of its own, the names each table's columns had after the last DDL
 * it saw, so a message also says what each column was called before ({@link #before}); when it does not know (a table
 * it had not seen since it was installed, or after a crash of the source emptied that table), {@link #before} is null
 * and the destinations read the change from the Relation messages as without the trigger.
 *
 * @param command  the command tag ({@code ALTER TABLE}, {@code DROP TABLE}, {@code CREATE TABLE}, …)
 * @param oid      the table's oid
 * @param table    the table's name after the change (for a drop: its name when dropped)
 * @param oldTable the table's name before the change, or null when unknown
 * @param before   attribute number → column name before the change, or null when unknown
 * @param columns  the live columns after the change, in attribute order (empty for a drop)
 * @param dropped  whether the table was dropped
 * @param ddl      the statement that made the change, as the client sent it
 * @param exact    true when the event trigger told it; false for one read from two Relation messages
 *                 ({@link #guessed}): no DDL, no command, attribute numbers by position, renames as {@link ShapeChange}
 *                 reads them
 * @param key      the table's key after the change, as the catalog had it in the DDL's transaction (its primary key, or
 *                 its {@code REPLICA IDENTITY USING INDEX} index), in index order; empty when it has none; null when not
 *                 told (a trigger installed by a Millrace before 0.1, or a change {@link #guessed}). The stream's key of a
 *                 {@code REPLICA IDENTITY FULL} table, whose Relation messages flag every column (RelationKeys)
 * @param rewritten the DDL's transaction rewrote the table's rows (PostgreSQL's {@code table_rewrite} event: a column
 *                 retyped, also to its own type with a USING expression; added with a volatile default or as an identity),
 *                 so their values may have changed without change events; false when not (or not told: a trigger installed
 *                 by an older Millrace)
 */
public record SchemaChange(String command, int oid, TableRef table, TableRef oldTable, Map<Integer, String> before,
                           List<Column> columns, boolean dropped, String ddl, boolean exact, List<String> key, boolean rewritten) {

    /** The logical message prefix of the event trigger's messages. */
    public static final String PREFIX = "millrace.ddl";

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * A column after the change.
     *
     * @param attnum   its attribute number
     * @param name     its name
     * @param type     its type as {@code format_type} prints it ({@code character varying(10)})
     * @param notNull  declared NOT NULL
     * @param missing  whether rows written before it was added take a constant value ({@code ADD COLUMN … DEFAULT} with
     *                 a non-volatile default: PostgreSQL stores that value once and does not rewrite the rows)
     * @param value    that value in its text form ({@code null} for NULL), when {@code missing}
     */
    public record Column(int attnum, String name, String type, boolean notNull, boolean missing, String value) {
    }

    public SchemaChange {
        before = before == null ? null : Collections.unmodifiableMap(new LinkedHashMap<>(before));
        columns = List.copyOf(columns);
        key = key == null ? null : List.copyOf(key);
    }

    /** Reads a message's content; a message this version cannot read is a DECODE error naming it. */
    public static SchemaChange parse(byte[] content) {
        try {
            JsonNode n = JSON.readTree(content);
            Map<Integer, String> before = null;
            if (n.path("before").isObject()) {
                before = new LinkedHashMap<>();
                for (var it = n.get("before").fields(); it.hasNext(); ) {
                    var e = it.next();
                    before.put(Integer.parseInt(e.getKey()), e.getValue().asText());
                }
            }
            List<Column> columns = new ArrayList<>();
            for (JsonNode c : n.path("columns")) {
                JsonNode v = c.path("value");
                columns.add(new Column(c.path("attnum").asInt(), c.path("name").asText(), c.path("type").asText(),
                        c.path("not_null").asBoolean(), c.path("missing").asBoolean(), v.isNull() || v.isMissingNode() ? null : v.asText()));
            }
            List<String> key = null;
            if (n.has("key")) {
                key = new ArrayList<>();
                for (JsonNode k : n.path("key")) {
                    key.add(k.asText());
                }
            }
            TableRef oldTable = n.path("old_table").isTextual() ? new TableRef(n.path("old_schema").asText(), n.path("old_table").asText()) : null;
            return new SchemaChange(n.path("command").asText(), (int) n.path("oid").asLong(),
                    new TableRef(n.path("schema").asText(), n.path("table").asText()), oldTable, before, columns,
                    n.path("dropped").asBoolean(), n.path("ddl").asText(null), true, key, n.path("rewritten").asBoolean(false));
        } catch (IOException | RuntimeException e) {
            throw new MillraceException(MillraceException.Kind.DECODE, "cannot read a '" + PREFIX + "' logical message of the event"
                    + " trigger (" + e.getMessage() + "): " + new String(content, java.nio.charset.StandardCharsets.UTF_8), e);
        }
    }

    /**
     * This change in the form of the event trigger's message, which {@link #parse} reads back equal (its statement text cut
     * to {@value #MAX_KEPT_DDL} characters): kept in a checkpoint while the table has had no Relation message since
     * ({@code SourceShapes#pendingDdl}).
     */
    public byte[] toJson() {
        com.fasterxml.jackson.databind.node.ObjectNode n = JSON.createObjectNode();
        n.put("command", command).put("oid", Integer.toUnsignedLong(oid)).put("schema", table.schema()).put("table", table.table());
        if (oldTable != null) {
            n.put("old_schema", oldTable.schema()).put("old_table", oldTable.table());
        }
        if (before != null) {
            com.fasterxml.jackson.databind.node.ObjectNode b = n.putObject("before");
            before.forEach((attnum, name) -> b.put(Integer.toString(attnum), name));
        }
        com.fasterxml.jackson.databind.node.ArrayNode cols = n.putArray("columns");
        for (Column c : columns) {
            com.fasterxml.jackson.databind.node.ObjectNode o = cols.addObject().put("attnum", c.attnum()).put("name", c.name())
                    .put("type", c.type()).put("not_null", c.notNull()).put("missing", c.missing());
            if (c.value() != null) {
                o.put("value", c.value());
            }
        }
        n.put("dropped", dropped);
        if (ddl != null) {
            n.put("ddl", ddl.length() <= MAX_KEPT_DDL ? ddl : ddl.substring(0, MAX_KEPT_DDL) + "\n-- (more DDL left out)");
        }
        if (key != null) {
            key.forEach(n.putArray("key")::add);
        }
        n.put("rewritten", rewritten);
        try {
            return JSON.writeValueAsBytes(n);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** INV: BOUNDED — a checkpoint keeps at most this much of a pending DDL's statement per captured table. */
    static final int MAX_KEPT_DDL = 4096;

    /** This change, its rewrite told already ({@link #rewritten} false). */
    public SchemaChange withoutRewrite() {
        return rewritten ? new SchemaChange(command, oid, table, oldTable, before, columns, dropped, ddl, exact, key, false) : this;
    }

    /** The change this one and then {@code next} (of the same table) make together. */
    public SchemaChange then(SchemaChange next) {
        return new SchemaChange(next.command, next.oid, next.table, oldTable, before == null || next.before == null ? null : before,
                next.columns, next.dropped, ddl == null ? next.ddl : next.ddl == null || sameQuery(ddl, next.ddl) ? ddl : joined(ddl, next.ddl),
                exact && next.exact,
                next.key != null ? next.key : key, rewritten || next.rewritten);
    }

    /**
     * Whether {@code next} is the statement {@code ddl} ends with: the DDLs of one query string of several statements each
     * carry the whole string ({@code current_query()}), which a user's event then held three times over.
     */
    private static boolean sameQuery(String ddl, String next) {
        return ddl.equals(next) || ddl.endsWith(";\n" + next);
    }

    /** Both statements' text, at most {@value #MAX_JOINED_DDL} characters of it (INV: BOUNDED: a table changed again and again). */
    private static String joined(String first, String next) {
        String both = first + ";\n" + next;
        return both.length() <= MAX_JOINED_DDL ? both : both.substring(0, MAX_JOINED_DDL) + "\n-- (more DDL left out)";
    }

    static final int MAX_JOINED_DDL = 1 << 16;

    /**
     * A table's change as two Relation messages show it (no event trigger): the columns of {@code after} numbered by
     * position, each under the name it had in {@code before} as {@link ShapeChange} reads it. Not {@link #exact}: never
     * used to follow a shape, only to announce it (schema-change events).
     */
    public static SchemaChange guessed(RelationInfo before, RelationInfo after) {
        ShapeChange change = ShapeChange.between(before, after);
        Map<String, String> oldName = new LinkedHashMap<>();
        change.renamed().forEach((o, n) -> oldName.put(n, o));
        java.util.Set<String> was = new java.util.HashSet<>();
        before.columns().forEach(c -> was.add(c.name()));
        Map<Integer, String> names = new LinkedHashMap<>();
        List<Column> columns = new ArrayList<>();
        for (int i = 0; i < after.columnCount(); i++) {
            ColumnInfo c = after.column(i);
            String old = oldName.getOrDefault(c.name(), was.contains(c.name()) ? c.name() : null);
            if (old != null) {
                names.put(i + 1, old);
            }
            columns.add(new Column(i + 1, c.name(), c.type() == null ? "unknown" : c.type().name(), false, false, null));
        }
        return new SchemaChange(null, after.oid(), after.table(), before.table(), names, columns, false, null, false, null, false);
    }

    /**
     * The names, before this change, of the columns it dropped (their attribute numbers gone), and with {@link
     * #renamedColumns} (old name → new name of each live column whose attribute number was kept and whose name changed,
     * in attribute order): what a destination that meets the table for the first time since a restart, still in the
     * shape {@link #before} names, does to reach this one. Empty when the names before are not known ({@link #before}
     * null) or for a drop of the table.
     */
    public java.util.List<String> droppedColumns() {
        if (before == null || dropped) {
            return java.util.List.of();
        }
        java.util.List<String> out = new java.util.ArrayList<>();
        before.forEach((attnum, name) -> {
            if (column(attnum) == null) {
                out.add(name);
            }
        });
        return out;
    }

    /**
     * Old name → new name of each live column this change renamed (see {@link #droppedColumns}); empty when the names
     * before are not known.
     */
    public Map<String, String> renamedColumns() {
        if (before == null || dropped) {
            return Map.of();
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (Column c : columns) {
            String was = before.get(c.attnum());
            if (was != null && !was.equals(c.name())) {
                out.put(was, c.name());
            }
        }
        return out;
    }

    /** The column of attribute number {@code attnum} after the change, or null. */
    public Column column(int attnum) {
        for (Column c : columns) {
            if (c.attnum() == attnum) {
                return c;
            }
        }
        return null;
    }

    /** The column named {@code name} after the change, or null. */
    public Column column(String name) {
        for (Column c : columns) {
            if (c.name().equals(name)) {
                return c;
            }
        }
        return null;
    }

    /**
     * The exact change from {@code from} to {@code to} (whose shape this message led to), or null when this message does not
     * describe it: the old names are unknown, or a column of either shape is not one the message names (the destination
     * held an older shape than the one this change started from).
     */
    ShapeChange exactly(RelationInfo from, RelationInfo to) {
        if (before == null || dropped) {
            return null;
        }
        Map<String, Integer> was = new LinkedHashMap<>();
        before.forEach((attnum, name) -> was.put(name, attnum));
        Map<Integer, ColumnInfo> old = new LinkedHashMap<>();
        for (ColumnInfo c : from.columns()) {
            Integer a = was.get(c.name());
            if (a == null) {
                return null;
            }
            old.put(a, c);
        }
        Map<String, String> renamed = new LinkedHashMap<>();
        List<ColumnInfo> added = new ArrayList<>();
        List<String> retyped = new ArrayList<>();
        java.util.Set<Integer> kept = new java.util.HashSet<>();
        for (ColumnInfo c : to.columns()) {
            Column now = column(c.name());
            if (now == null) {
                return null;
            }
            ColumnInfo o = old.get(now.attnum());
            if (o == null) {
                added.add(c);
                continue;
            }
            kept.add(now.attnum());
            if (!o.name().equals(c.name())) {
                renamed.put(o.name(), c.name());
            }
            if (!ShapeChange.sameType(o, c)) {
                retyped.add(c.name());
            }
        }
        List<ColumnInfo> droppedColumns = new ArrayList<>();
        old.forEach((attnum, c) -> {
            if (!kept.contains(attnum)) {
                droppedColumns.add(c);
            }
        });
        return new ShapeChange(renamed, List.copyOf(added), List.copyOf(droppedColumns), List.copyOf(retyped), this);
    }
}
