package io.millrace.sink.postgres;

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
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The destination tables: creates each on first sight from its {@link RelationInfo}, keeps an
 * existing one, and follows shape changes (columns added, dropped or retyped) with {@code ALTER TABLE}
 * inside the caller's transaction. What it knows of the destination catalog is a cache of the
 * current transaction's view: {@link #forget()} must be called after a rollback, because the DDL
 * it remembers was rolled back too. Owned by the sink's writer thread.
 */
final class TargetTables {
    private static final Logger LOG = LoggerFactory.getLogger(TargetTables.class);

    /** One destination table as this sink knows it. */
    static final class Table {
        TableRef target;
        TableRef source;
        /** The shape the destination table follows now (the last relation applied). */
        RelationInfo shape;
        /** Column names present in the destination table. */
        final Set<String> columns;
        /** Key columns known to carry a unique index in the destination; null when none verified. */
        Set<String> uniqueKey;

        Table(TableRef target, TableRef source, RelationInfo shape, Set<String> columns, Set<String> uniqueKey) {
            this.target = target;
            this.source = source;
            this.shape = shape;
            this.columns = columns;
            this.uniqueKey = uniqueKey;
        }
    }

    private final Connection conn;
    private final String destination;
    private final String targetSchema;
    /** Target table → the source table it receives. Configuration-level: survives rollbacks. */
    private final Map<TableRef, TableRef> owners = new HashMap<>();
    /** Current transaction's view; cleared by {@link #forget()}. */
    private final Map<TableRef, Table> tables = new HashMap<>();
    private final Set<String> schemas = new HashSet<>();

    /** Whether the sessions run with {@code session_replication_role = replica}: foreign keys do not fire then. */
    private final boolean replicaRole;

    TargetTables(Connection conn, String destination, String targetSchema, boolean replicaRole) {
        this.conn = conn;
        this.destination = destination;
        this.targetSchema = targetSchema;
        this.replicaRole = replicaRole;
    }

    static Set<String> keyNames(RelationInfo rel) {
        Set<String> names = new LinkedHashSet<>();
        for (int k : rel.keyIndexes()) {
            names.add(rel.column(k).name());
        }
        return names;
    }

    /** The destination table of a source table; fails when two source tables would share one. */
    TableRef targetOf(TableRef source) {
        TableRef target = targetSchema == null ? source : new TableRef(targetSchema, source.table());
        TableRef owner = owners.putIfAbsent(target, source);
        if (owner != null && !owner.equals(source)) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + destination + "': source tables "
                    + owner + " and " + source + " would both be written to table " + target
                    + " (targetSchema = '" + targetSchema + "'). Leave targetSchema unset to keep each table's"
                    + " schema, or replicate only one of them.");
        }
        return target;
    }

    /**
     * Follows a source table renamed, or put aside because another table took its name ({@link SourceTables}): renames
     * the destination table, inside the caller's transaction. A destination without that table has nothing to rename; a
     * destination that has a table of the new name already (one Millrace holds for no source table) stops with the fix.
     */
    void rename(SourceTables.Rename r) throws SQLException {
        TableRef from = targetOf(r.from());
        TableRef to = targetOf(r.to());
        if (from.equals(to)) {
            return;
        }
        Table t = tables.remove(from);
        if (regclass(from) == null) {
            LOG.info(r.nothing(destination, from));
            return;
        }
        if (regclass(to) != null) {
            throw r.occupied(destination, to);
        }
        ensureSchema(to.schema());
        TableRef at = from;
        if (!from.schema().equals(to.schema())) {
            execute("ALTER TABLE " + from.sql() + " SET SCHEMA " + Ident.quote(to.schema()));
            at = new TableRef(to.schema(), from.table());
        }
        if (!at.table().equals(to.table())) {
            execute("ALTER TABLE " + at.sql() + " RENAME TO " + Ident.quote(to.table()));
        }
        if (t != null) {
            t.target = to;
            t.source = r.to();
            tables.put(to, t);
        }
        if (r.aside()) {
            LOG.warn(r.done(destination, from, to));
        } else {
            LOG.info(r.done(destination, from, to));
        }
    }

    /**
     * Whether the table {@link #ensure} is given is copied online during the batch (its checkpoint records the copy):
     * rows here that cannot take a new key may then make way for it ({@link #withoutValuesOfAddedKey}). Writer thread.
     */
    private boolean copiedNow;

    /** The table was dropped here (its source table was dropped). */
    void dropped(TableRef target) {
        tables.remove(target);
    }

    /** Forgets what was learnt in a transaction that rolled back. */
    void forget() {
        tables.clear();
        schemas.clear();
        created.clear(); // a CREATE rolled back, or a table written since: no longer known empty
    }

    /** Tables this session created (empty then: rows copied into them meet no key but the stream's). */
    private final Set<TableRef> created = new java.util.HashSet<>();

    /** Whether this session created {@code target}. */
    boolean createdHere(TableRef target) {
        return created.contains(target);
    }

    /**
     * Makes the destination table match {@code rel}: creates it, or adds the columns it lacks, or
     * follows a shape change since the last relation seen. Runs inside the caller's transaction.
     */
    Table ensure(TableRef target, RelationInfo rel, boolean held, java.util.function.Predicate<RelationInfo> reshaped, boolean copied)
            throws SQLException {
        copiedNow = copied;
        Table t = tables.get(target);
        if (t == null) {
            t = load(target, rel, held, reshaped.test(rel));
            tables.put(target, t);
        } else if (t.shape != rel && !t.shape.sameShape(rel)) {
            try {
                follow(t, rel);
            } catch (SQLException e) {
                throw new MillraceException(MillraceException.Kind.SINK, "destination '" + destination + "': table " + target
                        + " cannot follow source table " + rel.table() + " (" + ShapeChange.between(t.shape, rel).describe() + "): "
                        + Errors.message(e) + ". Fix: change table " + target.sql() + " to match by hand, or drop it (Millrace"
                        + " creates it again), start again and copy it: millrace snapshot CONFIG --table " + rel.table(), e);
            }
        }
        t.shape = rel;
        return t;
    }

    /**
     * @param held     whether this destination holds the table as the copy of {@code rel}'s source table (its checkpoint
     *                 lists it): then its primary key follows the source's key when that changed while Millrace was stopped
     * @param reshaped whether the source table was last written here in another shape ({@link
     *                 io.millrace.core.sink.TableApplier#reshapedSinceHeld}): then the columns this destination made follow
     *                 the source's types ({@link #retypeHeld})
     */
    private Table load(TableRef target, RelationInfo rel, boolean held, boolean reshaped) throws SQLException {
        ensureSchema(target.schema());
        Integer oid = regclass(target);
        boolean keyed = Runs.keyed(rel);
        if (oid == null) {
            List<String> defs = new ArrayList<>();
            Set<String> columns = new LinkedHashSet<>();
            for (ColumnInfo c : rel.columns()) {
                defs.add(Ident.quote(c.name()) + " " + TypeMapping.sqlType(c));
                columns.add(c.name());
            }
            if (keyed) {
                defs.add("PRIMARY KEY (" + quoteAll(keyNames(rel)) + ")");
            }
            execute("CREATE TABLE " + target.sql() + " (" + String.join(", ", defs) + ")");
            created.add(target);
            List<String> tags = new ArrayList<>();
            for (String c : columns) {
                tags.add(tagSql(target, c));
            }
            execute(String.join("; ", tags)); // one round trip
            LOG.info("destination '{}': created table {} for {}", destination, target, rel.table());
            return new Table(target, rel.table(), rel, columns, keyed ? keyNames(rel) : null);
        }
        refuseForeignKeys(target, oid);
        Set<String> columns = readColumns(oid);
        if (held) {
            renameAtFirstSight(target, oid, rel, columns);
        }
        for (ColumnInfo c : rel.columns()) {
            if (!columns.contains(c.name())) {
                SchemaChange.Column given = held ? io.millrace.core.sink.FirstSight.constantDefault(rel, c.name()) : null;
                if (given != null) {
                    addColumn(target, c, given.value()); // added while the DDL's account waited in the checkpoint: as when followed
                } else {
                    addColumn(target, c);
                }
                columns.add(c.name());
            }
        }
        Set<String> extra = new LinkedHashSet<>(columns);
        rel.columns().forEach(c -> extra.remove(c.name()));
        if (held && !extra.isEmpty()) {
            // Columns this destination made as copies of source columns the source no longer has: it dropped or renamed
            // them while this destination's checkpoint was past the change's last relation (its shape before the change
            // is not known here, after a restart). Their values are stale: dropped, as the follow of a known shape does.
            // A column a user added (no tag) stays. Found by CrashMatrixIT (a rename across kills left the old column).
            for (String c : taggedOf(oid, extra)) {
                execute("ALTER TABLE " + target.sql() + " DROP COLUMN IF EXISTS " + Ident.quote(c));
                columns.remove(c);
                extra.remove(c);
                LOG.info("destination '{}': dropped column {}.{} (a copy of a source column that no longer reaches it from source table {}:"
                        + " dropped or renamed there, or left out by a transform)",
                        destination, target, c, rel.table());
            }
        }
        if (!extra.isEmpty()) {
            // a generated column computes itself (millrace migrate makes the source's on the target; pgoutput does not send
            // them before PostgreSQL 18): no warning at every start for it (found by a user)
            extra.removeAll(generatedOf(oid));
        }
        if (!extra.isEmpty()) {
            LOG.warn("destination '{}': table {} has columns the source {} lacks, left as they are: {}", destination,
                    target, rel.table(), extra);
        }
        if (held && reshaped) {
            retypeHeld(target, rel, oid, columns);
        }
        Table t = new Table(target, rel.table(), rel, columns, null);
        if (keyed && !hasUniqueIndex(t, oid, keyNames(rel))) {
            if (held) {
                rekey(t, oid, null, keyNames(rel), true);
            } else {
                verifyKey(t, oid, keyNames(rel));
            }
        }
        return t;
    }

    /** The first sight after a restart of a table held here: its columns dropped and renamed as {@link FirstSight} plans. */
    private void renameAtFirstSight(TableRef target, int oid, RelationInfo rel, Set<String> columns) throws SQLException {
        if (!FirstSight.told(rel)) {
            return;
        }
        FirstSight f = FirstSight.of(rel, columns, new HashSet<>(taggedOf(oid, columns)), Set.of()); // a user's column: never dropped
        if (f == null) {
            return;
        }
        for (String gone : f.drops()) {
            execute("ALTER TABLE " + target.sql() + " DROP COLUMN " + Ident.quote(gone));
            columns.remove(gone);
            LOG.info("destination '{}': dropped column {}.{} (dropped in the source, told by the event trigger)", destination, target, gone);
        }
        for (String[] step : f.steps()) {
            execute("ALTER TABLE " + target.sql() + " RENAME COLUMN " + Ident.quote(step[0]) + " TO " + Ident.quote(step[1]));
        }
        f.renamed().forEach((from, to) -> {
            columns.remove(from);
            LOG.info("destination '{}': renamed column {}.{} to {} (renamed in the source, told by the event trigger)", destination,
                    target, from, to);
        });
        columns.addAll(f.renamed().values());
    }

    /**
     * The first sight after a restart of a table this destination holds, whose source table was last written here in
     * another shape: a column this destination made (tagged, {@link #tag}) whose type here is not what the source's type
     * now maps to was retyped in the source while Millrace was stopped (the stream shows the new shape only, and its values
     * would not fit: 'invalid input syntax for type integer', the engine stopped for good). Retyped here with a plain
     * cast, as {@link #follow} does; the engine copies the table again (its checkpoint's shape differs too), which brings
     * the values a USING expression gave. A column not tagged (a table a user or {@code millrace migrate} made, with exact
     * types of its own) and a table whose source shape did not change (a type a user changed here on purpose) are left
     * alone. Both types are compared as the server describes a column of each (name, precision, scale), so a typmod counts
     * ({@code varchar(20)} → {@code varchar(50)}).
     */
    private void retypeHeld(TableRef target, RelationInfo rel, int oid, Set<String> columns) throws SQLException {
        Set<String> ours = new HashSet<>(taggedOf(oid, columns));
        List<ColumnInfo> kept = rel.columns().stream().filter(c -> ours.contains(c.name())).toList();
        if (kept.isEmpty()) {
            return;
        }
        List<String> wanted = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (ColumnInfo c : kept) {
            wanted.add("NULL::" + TypeMapping.sqlType(c));
            names.add(Ident.quote(c.name()));
        }
        List<String> have = described("SELECT " + String.join(", ", names) + " FROM " + target.sql() + " LIMIT 0");
        List<String> want = described("SELECT " + String.join(", ", wanted));
        for (int i = 0; i < kept.size(); i++) {
            if (have.get(i).equals(want.get(i))) {
                continue;
            }
            String col = Ident.quote(kept.get(i).name());
            String type = TypeMapping.sqlType(kept.get(i));
            try {
                execute("ALTER TABLE " + target.sql() + " ALTER COLUMN " + col + " TYPE " + type + " USING " + col + "::" + type);
            } catch (SQLException e) {
                throw new MillraceException(MillraceException.Kind.SINK, "destination '" + destination + "': column " + target + "."
                        + kept.get(i).name() + " is " + have.get(i) + " here, and source table " + rel.table() + " made it " + type
                        + " while Millrace was stopped; its values here do not cast: " + Errors.message(e) + ". Fix: change the"
                        + " column by hand (ALTER TABLE " + target.sql() + " ALTER COLUMN " + col + " TYPE " + type + " USING ...),"
                        + " or drop the table (Millrace creates it again), then start again", e);
            }
            LOG.warn("destination '{}': column {}.{} is now {} (retyped in the source while Millrace was stopped); the table is"
                    + " copied again for the values the source rewrote", destination, target, kept.get(i).name(), type);
        }
    }

    /** Each result column of {@code select} as the server describes it: type name, precision, scale. */
    private List<String> described(String select) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(select)) {
            java.sql.ResultSetMetaData md = rs.getMetaData();
            for (int i = 1; i <= md.getColumnCount(); i++) {
                out.add(md.getColumnTypeName(i) + "(" + md.getPrecision(i) + "," + md.getScale(i) + ")");
            }
        }
        return out;
    }

    /**
     * Follows a shape change between the last relation applied and {@code rel}. With the event trigger the change is
     * exact ({@link ShapeChange#exact}): columns dropped go first (a column added or renamed may take a dropped one's
     * name), then renames, adds (a constant default given to the rows already here, as the source did) and retypes.
     */
    private void follow(Table t, RelationInfo rel) throws SQLException {
        ShapeChange change = ShapeChange.between(t.shape, rel);
        List<ColumnInfo> oldColumns = new java.util.ArrayList<>();
        for (ColumnInfo old : change.exact() ? List.<ColumnInfo>of() : t.shape.columns()) {
            oldColumns.add(old);
        }
        if (change.exact()) {
            for (ColumnInfo old : t.shape.columns()) {
                if (change.dropped().contains(old)) {
                    dropColumn(t, old.name());
                } else {
                    oldColumns.add(old);
                }
            }
        }
        oldColumns = renames(t, oldColumns, change);
        Map<String, ColumnInfo> before = new java.util.HashMap<>();
        oldColumns.forEach(c -> before.put(c.name(), c));
        Map<String, ColumnInfo> after = byName(rel);
        for (ColumnInfo c : rel.columns()) {
            ColumnInfo old = before.get(c.name());
            if (old == null) {
                SchemaChange.Column given = change.exact() ? change.ddl().column(c.name()) : null;
                if (given != null && given.missing()) {
                    if (t.columns.add(c.name())) {
                        addColumn(t.target, c, given.value());
                    }
                } else if (t.columns.add(c.name())) {
                    addColumn(t.target, c);
                    // Not a warning: when the source filled the existing rows (a default) the engine copies the table again,
                    // and says so in its own log; otherwise NULL is what the source's old rows hold too.
                    LOG.info("destination '{}': column {}.{} was added in the source; the rows here hold NULL in it until they change,"
                            + " or until the engine copies the table again (it does, and logs it, when the source filled its existing"
                            + " rows)", destination, t.target, c.name());
                }
            } else if (!TypeMapping.sqlType(old).equals(TypeMapping.sqlType(c)) && t.columns.contains(c.name())) {
                String type = TypeMapping.sqlType(c);
                execute("ALTER TABLE " + t.target.sql() + " ALTER COLUMN " + Ident.quote(c.name()) + " TYPE " + type
                        + " USING " + Ident.quote(c.name()) + "::" + type);
                LOG.info("destination '{}': column {}.{} is now {} (cast from its old type); values the source rewrote with a USING"
                        + " expression come with the engine's copy of the table again (it copies a table whose column was retyped, and"
                        + " logs it)", destination, t.target, c.name(), type);
            }
        }
        for (ColumnInfo old : oldColumns) {
            if (!after.containsKey(old.name()) && t.columns.contains(old.name())) {
                dropColumn(t, old.name());
            }
        }
        if (Runs.keyed(rel) && !keyNames(rel).equals(t.uniqueKey)) {
            withoutValuesOfAddedKey(t, rel, before.keySet());
            Integer oid = regclass(t.target);
            if (!hasUniqueIndex(t, oid, keyNames(rel))) {
                rekey(t, oid, Runs.keyed(t.shape) ? renamedKey(t.shape, change) : null, keyNames(rel), false);
            }
        } else if (!Runs.keyed(rel) && Runs.keyed(t.shape)) {
            unkey(t, renamedKey(t.shape, change));
        }
    }

    /** A primary key: its constraint's name and columns. */
    private record PrimaryKey(String name, Set<String> columns) {
    }

    /** The primary key of the table of {@code oid} here, or null. */
    private PrimaryKey primaryKey(Integer oid) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("SELECT c.conname::text, array_agg(a.attname::text) FROM pg_constraint c"
                + " JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)"
                + " WHERE c.conrelid = ? AND c.contype = 'p' GROUP BY c.conname")) {
            ps.setInt(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? new PrimaryKey(rs.getString(1), new HashSet<>(List.of((String[]) rs.getArray(2).getArray()))) : null;
            }
        }
    }

    /**
     * The source table lost its key (its primary key dropped: REPLICA IDENTITY FULL, or none, now): this table's primary
     * key goes too when it is the source's previous key, inside the batch's transaction, since the source may now hold
     * rows it refused before (a user's duplicate id, legal in the source since, stopped the pipeline at every start with
     * "duplicate key value violates unique constraint"). A primary key of other columns is the user's: left as it is.
     */
    private void unkey(Table t, Set<String> oldKey) throws SQLException {
        PrimaryKey pk = primaryKey(regclass(t.target));
        if (pk == null || !pk.columns().equals(new HashSet<>(oldKey))) {
            return;
        }
        execute("ALTER TABLE " + t.target.sql() + " DROP CONSTRAINT " + Ident.quote(pk.name()));
        t.uniqueKey = null;
        LOG.info("destination '{}': table {} has no primary key now (was ({})), as source table {} has none", destination, t.target,
                String.join(", ", pk.columns()), t.source);
    }

    /**
     * A key made of a column added in this change (a keyless table given a surrogate key: {@code ADD COLUMN id bigserial
     * PRIMARY KEY}): the source filled the column in every row (a key needs values), so the engine copies the table again
     * ({@code OnlineControls}: a column added with a value for the existing rows). The rows here were written before it
     * had values, hold NULL in it, and cannot take the key: they are deleted, in the batch's transaction, and come back
     * with their keys from that copy — only when the batch's checkpoint records that copy ({@link #copiedNow}), never
     * otherwise. Before, ADD PRIMARY KEY failed on them at every start (a user's exit 10).
     */
    private void withoutValuesOfAddedKey(Table t, RelationInfo rel, Set<String> existing) throws SQLException {
        List<String> added = keyNames(rel).stream().filter(k -> !existing.contains(k) && t.columns.contains(k)).toList();
        if (added.isEmpty() || !copiedNow) {
            return; // no copy of the table recorded with this batch (PostgreSQL 13, or none planned): ADD PRIMARY KEY fails, loudly
        }
        try (Statement s = conn.createStatement()) {
            int gone = s.executeUpdate("DELETE FROM " + t.target.sql() + " WHERE " + String.join(" OR ", added.stream()
                    .map(k -> Ident.quote(k) + " IS NULL").toList()));
            if (gone > 0) {
                LOG.warn("destination '{}': table {} takes the key ({}) of source table {}, which the source filled as it added {}:"
                        + " the {} row(s) here written before had no value in it and were taken out; the engine's copy of the table"
                        + " brings them back with their keys", destination, t.target, String.join(", ", keyNames(rel)), t.source,
                        added.size() == 1 ? "it" : "them", gone);
            }
        }
    }

    /** The key columns of {@code shape} under the names {@code change} gives them. */
    private static Set<String> renamedKey(RelationInfo shape, ShapeChange change) {
        Set<String> key = new LinkedHashSet<>();
        keyNames(shape).forEach(k -> key.add(change.renamedTo(k)));
        return key;
    }

    /**
     * The source table's key changed (its primary key, or REPLICA IDENTITY USING INDEX) and no unique index here has the new
     * one. When this table's primary key is the source's previous key (or it has none and the source had none: a key
     * added), the primary key moves to the new key, as in the source, inside the batch's transaction: the rows here are
     * the source's up to this change, so they fit it. A primary key of other columns is the user's: left alone, and the
     * engine stops naming the fix (verifyKey). {@code held}: the first sight of a table this destination holds for the
     * source table after a restart, whose old key is not known here: its primary key, whatever it is, follows.
     */
    private void rekey(Table t, Integer oid, Set<String> oldKey, Set<String> key, boolean held) throws SQLException {
        PrimaryKey found = primaryKey(oid);
        String pkName = found == null ? null : found.name();
        Set<String> pk = found == null ? null : found.columns();
        // no primary key: the source had none, or it went with a key column dropped, there and here (dropColumn)
        boolean ours = held || (pk == null ? oldKey == null || !t.columns.containsAll(oldKey) : oldKey != null && pk.equals(new HashSet<>(oldKey)));
        if (!ours) {
            verifyKey(t, oid, key); // throws: no unique index on the new key, and the primary key here is not the old one
            return;
        }
        execute("ALTER TABLE " + t.target.sql() + (pkName == null ? "" : " DROP CONSTRAINT " + Ident.quote(pkName) + ",")
                + " ADD PRIMARY KEY (" + quoteAll(key) + ")");
        t.uniqueKey = key;
        LOG.info("destination '{}': primary key of {} is now ({}){}, as the key of source table {}", destination, t.target,
                String.join(", ", key), pk == null ? "" : " (was (" + String.join(", ", pk) + "))", t.source);
    }

    private void dropColumn(Table t, String name) throws SQLException {
        if (!t.columns.remove(name)) {
            return;
        }
        execute("ALTER TABLE " + t.target.sql() + " DROP COLUMN IF EXISTS " + Ident.quote(name));
        LOG.info("destination '{}': dropped column {}.{} (dropped in the source)", destination, t.target, name);
        if (t.uniqueKey != null && t.uniqueKey.contains(name)) {
            t.uniqueKey = null; // its index went with it
        }
    }

    /**
     * Columns renamed in the source ({@link ShapeChange}) are renamed here, which keeps the values of rows that do not
     * change afterwards. Returns {@code columns} (of the old shape) under their new names.
     */
    private List<ColumnInfo> renames(Table t, List<ColumnInfo> columns, ShapeChange change) throws SQLException {
        List<ColumnInfo> out = new java.util.ArrayList<>();
        for (ColumnInfo a : columns) {
            String to = change.renamedTo(a.name());
            if (!to.equals(a.name()) && t.columns.contains(a.name()) && !t.columns.contains(to)) {
                execute("ALTER TABLE " + t.target.sql() + " RENAME COLUMN " + Ident.quote(a.name()) + " TO " + Ident.quote(to));
                t.columns.remove(a.name());
                t.columns.add(to);
                if (t.uniqueKey != null && t.uniqueKey.contains(a.name())) {
                    Set<String> key = new LinkedHashSet<>();
                    t.uniqueKey.forEach(k -> key.add(k.equals(a.name()) ? to : k));
                    t.uniqueKey = key; // the index follows the column
                }
                LOG.info("destination '{}': renamed column {}.{} to {} (renamed in the source{})", destination, t.target, a.name(), to,
                        change.exact() ? ", told by the event trigger" : "");
            }
            out.add(to.equals(a.name()) ? a : new ColumnInfo(to, a.type(), a.typeMod(), a.key()));
        }
        return out;
    }

    /** Adds a column that the source added with a constant default: the rows already here take {@code value}, as there. */
    private void addColumn(TableRef target, ColumnInfo c, String value) throws SQLException {
        for (String sql : io.millrace.core.sink.AddColumn.sql(target, c.name(), TypeMapping.sqlType(c), value)) {
            execute(sql);
        }
        tag(target, c.name());
        LOG.info("destination '{}': added column {}.{}{}", destination, target, c.name(),
                value == null ? "" : " (rows already here take the source's default " + value + ")");
    }


    private void addColumn(TableRef target, ColumnInfo c) throws SQLException {
        execute("ALTER TABLE " + target.sql() + " ADD COLUMN IF NOT EXISTS " + Ident.quote(c.name()) + " "
                + TypeMapping.sqlType(c));
        tag(target, c.name());
        LOG.info("destination '{}': added column {}.{}", destination, target, c.name());
    }

    /** ON CONFLICT (key) needs a unique index on exactly the key columns. */
    private void verifyKey(Table t, Integer oid, Set<String> key) throws SQLException {
        if (!hasUniqueIndex(t, oid, key)) {
            throw new MillraceException(MillraceException.Kind.SINK, "destination '" + destination + "': table " + t.target
                    + " has no primary key or unique index on (" + String.join(", ", key) + "), the key of source table "
                    + t.source + ", so changes cannot be applied by key. Fix: ALTER TABLE " + t.target.sql()
                    + " ADD PRIMARY KEY (" + quoteAll(key) + "), or drop the table and let Millrace create it.");
        }
    }

    /** Whether a unique index on exactly {@code key} exists here; if so, {@code t} applies by it from now on. */
    private boolean hasUniqueIndex(Table t, Integer oid, Set<String> key) throws SQLException {
        String sql = "SELECT array_agg(a.attname::text) FROM pg_index i"
                + " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)"
                + " WHERE i.indrelid = ? AND i.indisunique AND i.indimmediate AND i.indpred IS NULL"
                + " AND i.indexprs IS NULL GROUP BY i.indexrelid";
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setInt(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Set<String> cols = new HashSet<>(List.of((String[]) rs.getArray(1).getArray()));
                    if (cols.equals(key)) {
                        t.uniqueKey = key;
                        return true;
                    }
                }
            }
        }
        return false;
    }

    private void ensureSchema(String schema) throws SQLException {
        if (schemas.contains(schema)) {
            return;
        }
        // Look first: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on the database even when it exists.
        try (PreparedStatement ps = conn.prepareStatement("SELECT 1 FROM pg_namespace WHERE nspname = ?")) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    execute("CREATE SCHEMA IF NOT EXISTS " + Ident.quote(schema));
                    LOG.info("destination '{}': created schema {}", destination, schema);
                }
            }
        }
        schemas.add(schema);
    }

    private Integer regclass(TableRef table) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("SELECT to_regclass(?)::oid::int")) {
            ps.setString(1, table.sql());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                int oid = rs.getInt(1);
                return rs.wasNull() ? null : oid;
            }
        }
    }

    /** What the comment of a column this destination made as the copy of a source column says. */
    static final String SOURCE_COLUMN = "millrace: copy of a source column";

    /** Marks {@code column} as this destination's copy of a source column (see {@link #load}). */
    private void tag(TableRef target, String column) throws SQLException {
        execute(tagSql(target, column));
    }

    private static String tagSql(TableRef target, String column) {
        return "COMMENT ON COLUMN " + target.sql() + "." + Ident.quote(column) + " IS " + Ident.literal(SOURCE_COLUMN);
    }

    /** The columns of {@code names} that are tagged as copies of source columns ({@link #tag}). */
    private List<String> taggedOf(int oid, Set<String> names) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = conn.prepareStatement("SELECT attname FROM pg_attribute WHERE attrelid = ? AND attnum > 0"
                + " AND NOT attisdropped AND col_description(attrelid, attnum) = ? ORDER BY attnum")) {
            ps.setInt(1, oid);
            ps.setString(2, SOURCE_COLUMN);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (names.contains(rs.getString(1))) {
                        out.add(rs.getString(1));
                    }
                }
            }
        }
        return out;
    }

    /**
     * Refuses a foreign key between {@code target} and another table this destination writes, unless the sessions run
     * with {@code session_replication_role = replica}. A batch is applied table by table and tables are copied in
     * parallel ({@link BatchApplier}), so such a key fails on rows the source committed together (a child before its
     * parent) and would stop the pipeline at some later change (a user's destination schema made by {@code pg_dump
     * --schema-only} did: exit 10 on an ordinary transaction). Said at the table's first sight instead, with the fix. A
     * key to a table Millrace does not write (a lookup table of the destination's own) is the user's affair, and a key
     * of a table to itself holds within one statement.
     */
    private void refuseForeignKeys(TableRef target, int oid) throws SQLException {
        if (replicaRole) {
            return;
        }
        try (PreparedStatement ps = conn.prepareStatement("SELECT k.conname, k.conrelid = ?, n.nspname, c.relname FROM pg_constraint k"
                + " JOIN pg_class c ON c.oid = CASE WHEN k.conrelid = ? THEN k.confrelid ELSE k.conrelid END"
                + " JOIN pg_namespace n ON n.oid = c.relnamespace"
                + " WHERE k.contype = 'f'" + (conn.getMetaData().getDatabaseMajorVersion() < 11 ? "" : " AND k.conparentid = 0")
                + " AND (k.conrelid = ? OR k.confrelid = ?) AND k.conrelid <> k.confrelid"
                + " ORDER BY 1")) {
            for (int i = 1; i <= 4; i++) {
                ps.setInt(i, oid);
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    TableRef other = new TableRef(rs.getString(3), rs.getString(4));
                    if (!owners.containsKey(other)) {
                        continue;
                    }
                    TableRef child = rs.getBoolean(2) ? target : other;
                    throw new MillraceException(MillraceException.Kind.TARGET_SETUP, "destination '" + destination + "': "
                            + (rs.getBoolean(2) ? "table " + target + " has foreign key " + rs.getString(1) + " referencing "
                            + other : "table " + other + " has foreign key " + rs.getString(1) + " referencing " + target)
                            + ", and this destination writes both. " + FOREIGN_KEY_FIX + " (ALTER TABLE " + child.sql()
                            + " DROP CONSTRAINT " + Ident.quote(rs.getString(1)) + "); then start again");
                }
            }
        }
    }

    /** Why a foreign key between tables Millrace writes fails, and the fix. */
    static final String FOREIGN_KEY_FIX = "Millrace applies a batch table by table and copies tables in parallel, so such a key"
            + " fails on rows the source committed together (a child before its parent). Fix: set 'session_replication_role:"
            + " replica' on this destination (foreign keys and triggers then do not fire for replicated rows, as on a"
            + " logical-replication subscriber; it takes a superuser, or on PostgreSQL 15+ GRANT SET ON PARAMETER"
            + " session_replication_role TO the destination's user), or drop the foreign key on the destination";

    /** The generated columns of the table of {@code oid}. */
    private Set<String> generatedOf(int oid) throws SQLException {
        Set<String> out = new LinkedHashSet<>();
        if (conn.getMetaData().getDatabaseMajorVersion() < 12) {
            return out; // no generated columns before PostgreSQL 12
        }
        try (PreparedStatement ps = conn.prepareStatement("SELECT attname FROM pg_attribute WHERE attrelid = ? AND attnum > 0"
                + " AND NOT attisdropped AND attgenerated <> ''")) {
            ps.setInt(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
        }
        return out;
    }

    private Set<String> readColumns(int oid) throws SQLException {
        Set<String> columns = new LinkedHashSet<>();
        try (PreparedStatement ps = conn.prepareStatement("SELECT attname FROM pg_attribute WHERE attrelid = ?"
                + " AND attnum > 0 AND NOT attisdropped ORDER BY attnum")) {
            ps.setInt(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    columns.add(rs.getString(1));
                }
            }
        }
        return columns;
    }

    private void execute(String sql) throws SQLException {
        try (Statement s = conn.createStatement()) {
            s.execute(sql);
        }
    }

    private static Map<String, ColumnInfo> byName(RelationInfo rel) {
        Map<String, ColumnInfo> m = new LinkedHashMap<>();
        rel.columns().forEach(c -> m.put(c.name(), c));
        return m;
    }

    static String quoteAll(Iterable<String> names) {
        List<String> q = new ArrayList<>();
        names.forEach(n -> q.add(Ident.quote(n)));
        return String.join(", ", q);
    }
}
