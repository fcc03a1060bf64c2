package io.millrace.sink.duckdb;

import io.millrace.core.MillraceException;
import io.millrace.core.change.SourceTables;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.SchemaChange;
import io.millrace.core.sink.FirstSight;
import io.millrace.core.schema.ShapeChange;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.Runs;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The destination tables: creates each on first sight from its {@link RelationInfo} (primary key =
 * the relation's key columns), adds columns an existing table lacks, and follows shape changes inside the caller's
 * transaction: columns renamed, added, dropped, retyped ({@link ShapeChange}); a key column retyped or the key changed
 * rebuilds the table (DuckDB cannot alter either in place); a table renamed in the source is renamed. What it knows is the current
 * transaction's view: call {@link #forget()} after a rollback. Owned by the sink's writer thread.
 */
final class DuckTables {
    private static final Logger LOG = LoggerFactory.getLogger(DuckTables.class);

    private final Connection conn;
    private final String destination;
    private final String targetSchema;
    /** Target table → the shape it follows now. Cleared by {@link #forget()}. */
    private final Map<TableRef, RelationInfo> shapes = new HashMap<>();
    /** Tables whose rows the current transaction wrote (see {@link #changed}). */
    private final Set<TableRef> changed = new java.util.HashSet<>();
    /** Target table → its column names. Cleared by {@link #forget()}. */
    private final Map<TableRef, Set<String>> columns = new HashMap<>();
    /** Target table → the source table it receives. Configuration-level: survives rollbacks. */
    private final Map<TableRef, TableRef> owners = new HashMap<>();
    /** Tables in SQL with the file's catalog (DuckDB refuses schema.table where a catalog has the schema's name). */
    private final DuckNames names;
    /** A type as written → DuckDB's spelling of it. */
    private final Map<String, String> canonicalTypes = new HashMap<>();

    DuckTables(Connection conn, DuckNames names, String destination, String targetSchema) {
        this.conn = conn;
        this.names = names;
        this.destination = destination;
        this.targetSchema = targetSchema;
    }

    TableRef targetOf(TableRef source) {
        TableRef target = targetSchema == null ? source : new TableRef(targetSchema, source.table());
        TableRef owner = owners.putIfAbsent(target, source);
        if (owner != null && !owner.equals(source)) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + destination + "': source tables "
                    + owner + " and " + source + " would both be written to table " + target + " (schema = '"
                    + targetSchema + "'). Leave schema unset to keep each table's schema, or replicate only one.");
        }
        if (DuckDbSink.STATE_SCHEMA.equals(target.schema())) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + destination + "': source table "
                    + source + " would be written into schema '" + DuckDbSink.STATE_SCHEMA
                    + "', which holds Millrace's bookkeeping; set the destination's schema to another one");
        }
        return target;
    }

    /** The table was dropped here (its source table was dropped). */
    void dropped(TableRef target) {
        shapes.remove(target);
        columns.remove(target);
    }

    /**
     * Rows of {@code target} were written in the current transaction. DuckDB (1.4) then refuses at commit ("Attempting to
     * modify table … but another transaction has altered this table") an {@code ALTER TABLE} that adds, drops or retypes
     * a column of that table after an UPDATE or DELETE in the same transaction; a rename, and a table made anew, it takes.
     * Such a table follows a shape change by a rebuild.
     */
    void changed(TableRef target) {
        changed.add(target);
    }

    /** The transaction ended: no table is changed in the next one yet. */
    void transactionEnded() {
        changed.clear();
    }

    void forget() {
        changed.clear();
        shapes.clear();
        columns.clear();
    }

    /**
     * Makes the destination table match {@code rel}. A change the table cannot follow stops with the destination, the
     * table and the fix named.
     */
    /**
     * Whether the table {@link #ensure} is given is copied online during the batch (its checkpoint records the copy): a
     * rebuild may then leave out rows that cannot take a new key ({@link #rebuild}). Writer thread.
     */
    private boolean copiedNow;

    void ensure(TableRef target, RelationInfo rel, boolean held, boolean copied) {
        copiedNow = copied;
        RelationInfo known = shapes.get(target);
        try {
            if (known == null) {
                load(target, rel, held);
            } else if (known != rel && !known.sameShape(rel)) {
                follow(target, known, rel);
            }
        } catch (SQLException e) {
            throw new MillraceException(MillraceException.Kind.SINK, "destination '" + destination + "': table " + target
                    + " cannot follow source table " + rel.table() + " ("
                    + (known == null ? "its shape now" : ShapeChange.between(known, rel).describe()) + "): " + e.getMessage()
                    + ". Fix: change table " + target + " in " + "the DuckDB file to match by hand, or drop it there (Millrace creates"
                    + " it again), start again and copy it: millrace snapshot CONFIG --table " + rel.table(), e);
        }
        shapes.put(target, rel);
    }

    /**
     * Follows a source table renamed, or put aside because another table took its name ({@link SourceTables}): renames
     * the destination table inside the caller's transaction. DuckDB cannot move a table to another schema
     * ({@code SET SCHEMA}): such a rename copies the table into the new schema.
     */
    void rename(SourceTables.Rename r) throws SQLException {
        TableRef from = targetOf(r.from());
        TableRef to = targetOf(r.to());
        if (from.equals(to)) {
            return;
        }
        RelationInfo shape = shapes.remove(from);
        Set<String> cols = columns.remove(from);
        if (readColumns(from).isEmpty()) {
            LOG.info(r.nothing(destination, from));
            return;
        }
        if (!readColumns(to).isEmpty()) {
            throw r.occupied(destination, to);
        }
        if (from.schema().equals(to.schema())) {
            execute("ALTER TABLE " + names.of(from) + " RENAME TO " + Ident.quote(to.table()));
        } else {
            execute("CREATE SCHEMA IF NOT EXISTS " + Ident.quote(to.schema()));
            List<String> key = primaryKey(from);
            List<String> ours = tagged(from, readColumns(from));
            execute("CREATE TABLE " + names.of(to) + " AS SELECT * FROM " + names.of(from));
            tagAll(to, ours); // a table made from a query has no comments
            if (!key.isEmpty()) {
                execute("ALTER TABLE " + names.of(to) + " ADD PRIMARY KEY (" + quoteAll(key) + ")");
            }
            execute("DROP TABLE " + names.of(from));
        }
        if (shape != null) {
            shapes.put(to, shape);
            columns.put(to, cols);
        }
        if (r.aside()) {
            LOG.warn(r.done(destination, from, to));
        } else {
            LOG.info(r.done(destination, from, to));
        }
    }

    /**
     * The first sight of {@code target} in this run. {@code held}: this destination holds the table as the copy of
     * {@code rel}'s source table (its checkpoint lists it).
     */
    private void load(TableRef target, RelationInfo rel, boolean held) throws SQLException {
        Map<String, String> existing = readTypes(target);
        if (held) {
            renameAtFirstSight(target, rel, existing);
        }
        Set<String> cols = new LinkedHashSet<>(existing.keySet());
        if (cols.isEmpty()) {
            execute("CREATE SCHEMA IF NOT EXISTS " + Ident.quote(target.schema()));
            execute("CREATE TABLE " + names.of(target) + " (" + String.join(", ", definitions(rel)) + ")");
            rel.columns().forEach(c -> cols.add(c.name()));
            tagAll(target, cols);
            LOG.info("destination '{}': created table {} for {}", destination, target, rel.table());
            columns.put(target, cols);
            return;
        }
        columns.put(target, cols);
        // After a restart the first shape seen may already differ from the table (a retype while stopped, or one the
        // last run failed to follow): follow the types too, not only the names.
        List<String> retyped = new ArrayList<>();
        for (ColumnInfo c : rel.columns()) {
            String type = existing.get(c.name());
            if (type != null && !type.equals(canonical(DuckTypes.sqlType(c)))) {
                retyped.add(c.name());
            }
        }
        List<String> key = primaryKey(target);
        if (!retyped.isEmpty() && (retyped.stream().anyMatch(key::contains) || keyChanged(key, rel))) {
            rebuild(target, rel, ShapeChange.between(rel, rel), "column(s) " + retyped + " retyped: DuckDB cannot change a key in place");
            return;
        }
        if (Runs.keyed(rel) && !key.isEmpty() && keyChanged(key, rel)) {
            // the source's key changed while Millrace was stopped (or before the stream's position when it lags)
            rebuild(target, rel, ShapeChange.between(rel, rel), "primary key changed: DuckDB cannot change a key in place");
            return;
        }
        for (String name : retyped) {
            retype(target, rel.columns().stream().filter(c -> c.name().equals(name)).findFirst().orElseThrow());
        }
        for (ColumnInfo c : rel.columns()) {
            if (cols.add(c.name())) {
                SchemaChange.Column given = held ? io.millrace.core.sink.FirstSight.constantDefault(rel, c.name()) : null;
                if (given != null) {
                    addColumn(target, c, given.value()); // added while the DDL's account waited in the checkpoint: as when followed
                } else {
                    addColumn(target, c);
                }
            }
        }
        Set<String> extra = new LinkedHashSet<>(existing.keySet());
        rel.columns().forEach(c -> extra.remove(c.name()));
        if (held && !extra.isEmpty()) {
            // Columns this destination made as copies of source columns the source no longer has: dropped or renamed while
            // this destination's checkpoint was past the change's last relation (the shape before it is not known here,
            // after a restart). Their values are stale: dropped, as the follow of a known shape does. A column a user added
            // (no tag) stays. As the postgres destination does (TargetTables.load).
            for (String c : tagged(target, extra)) {
                if (key.contains(c)) {
                    continue; // DuckDB cannot drop a column of the primary key: left, and named below
                }
                execute("ALTER TABLE " + names.of(target) + " DROP COLUMN IF EXISTS " + Ident.quote(c));
                cols.remove(c);
                extra.remove(c);
                LOG.info("destination '{}': dropped column {}.{} (a copy of a source column that no longer reaches it from source table {}:"
                        + " dropped or renamed there, or left out by a transform)",
                        destination, target, c, rel.table());
            }
        }
        if (!extra.isEmpty()) {
            LOG.warn("destination '{}': table {} has columns the source {} lacks, left as they are: {}", destination, target,
                    rel.table(), extra);
        }
    }

    /**
     * The first sight after a restart of a table held here: its columns dropped and renamed as {@link FirstSight} plans
     * (as the postgres destination does), not when a key column is renamed: a changed key is rebuilt below.
     * {@code existing} (name → type, in column order) follows.
     */
    private void renameAtFirstSight(TableRef target, RelationInfo rel, Map<String, String> existing) throws SQLException {
        if (!FirstSight.told(rel)) {
            return;
        }
        Set<String> key = new LinkedHashSet<>(primaryKey(target));
        Set<String> droppable = new LinkedHashSet<>(tagged(target, existing.keySet()));
        droppable.removeAll(key); // DuckDB cannot drop a column of the primary key
        FirstSight f = FirstSight.of(rel, existing.keySet(), droppable, key);
        if (f == null) {
            return;
        }
        for (String gone : f.drops()) {
            execute("ALTER TABLE " + names.of(target) + " DROP COLUMN " + Ident.quote(gone));
            existing.remove(gone);
            LOG.info("destination '{}': dropped column {}.{} (dropped in the source, told by the event trigger)", destination, target, gone);
        }
        for (String[] step : f.steps()) {
            execute("ALTER TABLE " + names.of(target) + " RENAME COLUMN " + Ident.quote(step[0]) + " TO " + Ident.quote(step[1]));
        }
        f.renamed().forEach((from, to) -> LOG.info("destination '{}': renamed column {}.{} to {} (renamed in the source, told by the"
                + " event trigger)", destination, target, from, to));
        Map<String, String> next = new LinkedHashMap<>();
        existing.forEach((name, type) -> next.put(f.renamed().getOrDefault(name, name), type));
        existing.clear();
        existing.putAll(next); // in column order still
    }

    /** Follows a shape change between the last relation applied ({@code old}) and {@code rel}, keeping every value. */
    private void follow(TableRef target, RelationInfo old, RelationInfo rel) throws SQLException {
        Set<String> cols = columns.get(target);
        ShapeChange change = ShapeChange.between(old, rel);
        List<String> oldKey = new ArrayList<>();
        for (int k : old.keyIndexes()) {
            oldKey.add(change.renamedTo(old.column(k).name()));
        }
        boolean keyRetyped = change.retyped().stream().anyMatch(n -> oldKey.contains(n) || rel.columns().stream()
                .anyMatch(c -> c.key() && c.name().equals(n)));
        if (keyRetyped || (Runs.keyed(old) || Runs.keyed(rel)) && keyChanged(Runs.keyed(old) ? oldKey : List.of(), rel)) {
            // DuckDB cannot change a key column's type, nor the primary key, in place.
            rebuild(target, rel, change, (keyRetyped ? "key column(s) retyped" : "primary key changed") + ": DuckDB cannot change a key in place");
            return;
        }
        if (changed.contains(target) && (!change.added().isEmpty() || !change.dropped().isEmpty() || !change.retyped().isEmpty())) {
            rebuild(target, rel, change, "columns changed after rows were updated in the same transaction, which DuckDB cannot"
                    + " alter in place");
            return;
        }
        if (change.exact()) {
            dropColumns(target, cols, change.dropped()); // first: a column added or renamed may take a dropped one's name
        }
        for (Map.Entry<String, String> r : change.renamed().entrySet()) {
            if (cols.contains(r.getKey()) && !cols.contains(r.getValue())) {
                execute("ALTER TABLE " + names.of(target) + " RENAME COLUMN " + Ident.quote(r.getKey()) + " TO " + Ident.quote(r.getValue()));
                cols.remove(r.getKey());
                cols.add(r.getValue());
                LOG.info("destination '{}': renamed column {}.{} to {} (renamed in the source{})", destination, target, r.getKey(),
                        r.getValue(), change.exact() ? ", told by the event trigger" : "");
            }
        }
        for (ColumnInfo c : change.added()) {
            SchemaChange.Column given = change.exact() ? change.ddl().column(c.name()) : null;
            if (given != null && given.missing()) {
                if (cols.add(c.name())) {
                    addColumn(target, c, given.value());
                }
            } else if (cols.add(c.name())) {
                addColumn(target, c);
                LOG.info("destination '{}': column {}.{} was added in the source; the rows here hold NULL in it until they change,"
                        + " or until the engine copies the table again (it does, and logs it, when the source filled its existing rows)",
                        destination, target, c.name());
            }
        }
        if (!change.exact()) {
            dropColumns(target, cols, change.dropped()); // exact: dropped first, above (a name may have been taken again since)
        }
        for (String name : change.retyped()) {
            ColumnInfo c = rel.columns().stream().filter(x -> x.name().equals(name)).findFirst().orElseThrow();
            ColumnInfo o = old.columns().stream().filter(x -> change.renamedTo(x.name()).equals(name)).findFirst().orElseThrow();
            if (!DuckTypes.sqlType(o).equals(DuckTypes.sqlType(c))) {
                retype(target, c);
            }
        }
    }

    private void dropColumns(TableRef target, Set<String> cols, List<ColumnInfo> dropped) throws SQLException {
        for (ColumnInfo c : dropped) {
            if (cols.remove(c.name())) {
                execute("ALTER TABLE " + names.of(target) + " DROP COLUMN IF EXISTS " + Ident.quote(c.name()));
                LOG.info("destination '{}': dropped column {}.{} (dropped in the source)", destination, target, c.name());
            }
        }
    }

    /** Adds a column that the source added with a constant default: the rows already here take {@code value}, as there. */
    private void addColumn(TableRef target, ColumnInfo c, String value) throws SQLException {
        for (String sql : io.millrace.core.sink.AddColumn.sql(names.of(target), c.name(), DuckTypes.sqlType(c), value)) {
            execute(sql);
        }
        tagAll(target, List.of(c.name()));
        LOG.info("destination '{}': added column {}.{}{}", destination, target, c.name(),
                value == null ? "" : " (rows already here take the source's default " + value + ")");
    }


    private void retype(TableRef target, ColumnInfo c) throws SQLException {
        execute("ALTER TABLE " + names.of(target) + " ALTER COLUMN " + Ident.quote(c.name()) + " TYPE " + DuckTypes.sqlType(c));
        LOG.warn("destination '{}': column {}.{} is now {}", destination, target, c.name(), DuckTypes.sqlType(c));
    }

    /** Whether the table's primary key ({@code key}, in the new column names) is not the one {@code rel} needs. */
    private static boolean keyChanged(List<String> key, RelationInfo rel) {
        List<String> wanted = new ArrayList<>();
        if (Runs.keyed(rel)) {
            for (int k : rel.keyIndexes()) {
                wanted.add(rel.column(k).name());
            }
        }
        return !new java.util.HashSet<>(key).equals(new java.util.HashSet<>(wanted));
    }

    /**
     * Makes the table anew in {@code rel}'s shape, in the caller's transaction: a new table with the new types and
     * primary key, every row copied over (renamed columns by their old name, cast to the new type), the old table
     * dropped and the new one given its name.
     */
    private void rebuild(TableRef target, RelationInfo rel, ShapeChange change, String why) throws SQLException {
        Set<String> present = readTypes(target).keySet();
        TableRef tmp = new TableRef(target.schema(), target.table() + "__millrace_rebuild");
        execute("DROP TABLE IF EXISTS " + names.of(tmp));
        execute("CREATE TABLE " + names.of(tmp) + " (" + String.join(", ", definitions(rel)) + ")");
        tagAll(tmp, rel.columns().stream().map(ColumnInfo::name).toList()); // the comments go with the table's rename below
        Map<String, String> from = new LinkedHashMap<>();
        change.renamed().forEach((o, n) -> from.put(n, o));
        List<String> into = new ArrayList<>();
        List<String> values = new ArrayList<>();
        for (ColumnInfo c : rel.columns()) {
            String source = from.getOrDefault(c.name(), c.name());
            SchemaChange.Column given = change.exact() ? change.ddl().column(c.name()) : null;
            boolean added = change.exact() && change.added().contains(c);
            if (added && given != null && given.missing() && given.value() != null) {
                into.add(Ident.quote(c.name())); // a constant default: the rows already here take it, as in the source
                values.add("CAST(" + Ident.literal(given.value()) + " AS " + DuckTypes.sqlType(c) + ")");
            } else if (!added && present.contains(source)) {
                into.add(Ident.quote(c.name()));
                values.add("CAST(" + Ident.quote(source) + " AS " + DuckTypes.sqlType(c) + ")");
            }
        }
        List<String> key = new ArrayList<>();
        List<String> keyWithoutValues = new ArrayList<>();
        for (int k : Runs.keyed(rel) ? rel.keyIndexes() : new int[0]) {
            key.add(rel.column(k).name());
            if (!into.contains(Ident.quote(rel.column(k).name()))) {
                keyWithoutValues.add(rel.column(k).name());
            }
        }
        if (!keyWithoutValues.isEmpty() && copiedNow) {
            // a keyless table given a surrogate key (ADD COLUMN id bigserial PRIMARY KEY): the source filled it, so the engine
            // copies the table again, and the rows here, written before it had values, come back with their keys from that
            // copy (before, the rebuild failed on them: "NOT NULL constraint failed", at every start); without a copy recorded
            // with this batch, the INSERT below fails on them, loudly, as before
            LOG.warn("destination '{}': table {} takes the key ({}) of source table {}, whose column(s) {} the rows here have no"
                    + " value in: they are left out of the rebuilt table, and the engine's copy of the table brings them back with"
                    + " their keys", destination, target, String.join(", ", key), rel.table(), keyWithoutValues);
        } else if (!into.isEmpty()) {
            execute("INSERT INTO " + names.of(tmp) + " (" + String.join(", ", into) + ") SELECT " + String.join(", ", values)
                    + " FROM " + names.of(target));
        }
        execute("DROP TABLE " + names.of(target));
        execute("ALTER TABLE " + names.of(tmp) + " RENAME TO " + Ident.quote(target.table()));
        Set<String> cols = new LinkedHashSet<>();
        rel.columns().forEach(c -> cols.add(c.name()));
        columns.put(target, cols);
        LOG.warn("destination '{}': rebuilt table {} to follow source table {} ({}); every row was copied over", destination, target,
                rel.table(), why);
    }

    private static List<String> definitions(RelationInfo rel) {
        List<String> defs = new ArrayList<>();
        for (ColumnInfo c : rel.columns()) {
            defs.add(Ident.quote(c.name()) + " " + DuckTypes.sqlType(c));
        }
        if (Runs.keyed(rel)) {
            List<String> key = new ArrayList<>();
            for (int k : rel.keyIndexes()) {
                key.add(rel.column(k).name());
            }
            defs.add("PRIMARY KEY (" + quoteAll(key) + ")");
        }
        return defs;
    }

    private static String quoteAll(List<String> names) {
        return String.join(", ", names.stream().map(Ident::quote).toList());
    }

    /** DuckDB's own spelling of a type ({@code TIMESTAMPTZ} → {@code TIMESTAMP WITH TIME ZONE}), as duckdb_columns() shows it. */
    private String canonical(String type) throws SQLException {
        String c = canonicalTypes.get(type);
        if (c == null) {
            try (Statement s = conn.createStatement(); ResultSet rs = s.executeQuery("SELECT typeof(CAST(NULL AS " + type + "))")) {
                rs.next();
                c = rs.getString(1);
            }
            canonicalTypes.put(type, c);
        }
        return c;
    }

    private List<String> primaryKey(TableRef target) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("SELECT constraint_column_names FROM duckdb_constraints()"
                + " WHERE database_name = current_database() AND schema_name = ? AND table_name = ? AND constraint_type = 'PRIMARY KEY'")) {
            ps.setString(1, target.schema());
            ps.setString(2, target.table());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return List.of();
                }
                List<String> key = new ArrayList<>();
                for (Object o : (Object[]) rs.getArray(1).getArray()) {
                    key.add(String.valueOf(o));
                }
                return key;
            }
        }
    }

    private void addColumn(TableRef target, ColumnInfo c) throws SQLException {
        execute("ALTER TABLE " + names.of(target) + " ADD COLUMN IF NOT EXISTS " + Ident.quote(c.name()) + " "
                + DuckTypes.sqlType(c));
        tagAll(target, List.of(c.name()));
        LOG.info("destination '{}': added column {}.{}", destination, target, c.name());
    }

    /** What the comment of a column this destination made as the copy of a source column says (as the postgres destination's). */
    static final String SOURCE_COLUMN = "millrace: copy of a source column";

    /** Marks {@code columns} of {@code target} as this destination's copies of source columns (see {@link #load}). */
    private void tagAll(TableRef target, java.util.Collection<String> columns) throws SQLException {
        for (String c : columns) {
            execute("COMMENT ON COLUMN " + names.of(target) + "." + Ident.quote(c) + " IS " + Ident.literal(SOURCE_COLUMN));
        }
    }

    /** The columns of {@code among} that are tagged as copies of source columns ({@link #tagAll}). */
    private List<String> tagged(TableRef target, Set<String> among) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = conn.prepareStatement("SELECT column_name FROM duckdb_columns() WHERE database_name = current_database()"
                + " AND schema_name = ? AND table_name = ? AND comment = ? ORDER BY column_index")) {
            ps.setString(1, target.schema());
            ps.setString(2, target.table());
            ps.setString(3, SOURCE_COLUMN);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (among.contains(rs.getString(1))) {
                        out.add(rs.getString(1));
                    }
                }
            }
        }
        return out;
    }

    private Set<String> readColumns(TableRef target) throws SQLException {
        return readTypes(target).keySet();
    }

    /** The table's columns and their types, in order; empty when there is no such table. */
    private Map<String, String> readTypes(TableRef target) throws SQLException {
        Map<String, String> cols = new LinkedHashMap<>();
        try (PreparedStatement ps = conn.prepareStatement("SELECT column_name, data_type FROM duckdb_columns()"
                + " WHERE database_name = current_database() AND schema_name = ? AND table_name = ? ORDER BY column_index")) {
            ps.setString(1, target.schema());
            ps.setString(2, target.table());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    cols.put(rs.getString(1), rs.getString(2));
                }
            }
        }
        return cols;
    }

    private void execute(String sql) throws SQLException {
        try (Statement s = conn.createStatement()) {
            s.execute(sql);
        }
    }
}
