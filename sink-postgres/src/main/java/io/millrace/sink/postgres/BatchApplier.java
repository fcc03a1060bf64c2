package io.millrace.sink.postgres;

import io.millrace.core.MillraceException;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.change.SourceTables;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.DurableTables;
import io.millrace.core.sink.Keyless;
import io.millrace.core.sink.TableApplier;
import io.millrace.core.types.UnchangedToast;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Applies one batch of change events inside the caller's open transaction, set-wise.
 *
 * <p><b>Grouping.</b> The batch is split by destination table, keeping each table's events in their
 * order (INV: ORDER), and each table's events into runs that end at a truncate or a change of
 * relation shape. Events of different tables are applied table after table, not interleaved: the
 * tables Millrace creates have no foreign keys or triggers (a migration's target has the source's,
 * applied with {@code session_replication_role = replica}, so they do not fire) and the whole batch
 * commits at once, so the committed state is the same as applying them interleaved, with far fewer
 * statements. The exception is a TRUNCATE of several tables (one source statement, or a CASCADE):
 * PostgreSQL checks foreign keys on TRUNCATE whatever the role, so it is a barrier in the batch and
 * its tables are truncated by one statement ({@link TableApplier}).
 *
 * <p><b>Keyed runs</b> are reduced per key ({@link KeyedReduction}), COPYed into a temporary
 * staging table, completed from the destination where unchanged TOAST values must be kept, then
 * applied with one {@code DELETE ... USING} and one {@code INSERT ... ON CONFLICT DO UPDATE}.
 * <b>Runs without a key</b> COPY inserts straight into the table and apply updates and deletes in
 * order, each to one row matching the whole old image.
 *
 * <p>Owned by the sink's writer thread. After a rollback call {@link #rolledBack()}.
 */
final class BatchApplier extends TableApplier {
    private static final Logger LOG = LoggerFactory.getLogger(BatchApplier.class);

    private final Connection conn;
    private final CopyManager copy;
    /** host:port/database, for messages. */
    private final String where;
    private final TargetTables tables;
    /** Staging table per destination table, for its current shape; created ON COMMIT DELETE ROWS. */
    private final Map<TableRef, Stage> stages = new HashMap<>();
    private final Set<Stage> usedInTransaction = new HashSet<>();
    private int stageCounter;
    /**
     * Tables this session emptied (a copy opened again after an interrupted snapshot truncates them first): rows an online
     * copy reads go in directly, as into a table it created.
     */
    private final Set<TableRef> emptied = new HashSet<>();
    /** Tables where a direct COPY of inserts met keys already present; they are upserted from then on. */
    private final Set<TableRef> conflicted = new HashSet<>();
    /** Per destination table, the shape it was checked for and whether its keyed runs are COPYed in binary format. */
    private final Map<TableRef, Map.Entry<RelationInfo, Boolean>> binaryTables = new HashMap<>();
    /** Rows COPYed by keyed runs in binary and in text format, since this applier began (for tests and the debug log). */
    private long binaryChanges;
    private long textChanges;
    private static final String UNIQUE_VIOLATION = "23505";

    BatchApplier(Connection conn, String destination, String where, String targetSchema, boolean dropTables, boolean replicaRole)
            throws SQLException {
        super(destination, dropTables);
        this.conn = conn;
        this.where = where;
        this.copy = conn.unwrap(PGConnection.class).getCopyAPI();
        this.tables = new TargetTables(conn, destination, targetSchema, replicaRole);
    }

    /** Changes of keyed runs reduced for a COPY in binary format and in text format, since this applier began. */
    long[] copyFormats() {
        return new long[]{binaryChanges, textChanges};
    }

    /** After commit: staging tables are empty again (ON COMMIT DELETE ROWS). */
    void committed() {
        usedInTransaction.clear();
    }

    /** After rollback: DDL and staging tables of the transaction are gone. */
    void rolledBack() {
        emptied.clear(); // a TRUNCATE rolled back left the rows: no longer known empty
        binaryTables.clear();
        tables.forget();
        stages.clear();
        usedInTransaction.clear();
    }

    @Override
    protected void rename(SourceTables.Rename r) throws SQLException {
        binaryTables.clear();
        tables.rename(r);
    }

    @Override
    protected String message(SQLException e) {
        return Errors.message(e);
    }

    @Override
    protected TableRef targetOf(TableRef source) {
        return tables.targetOf(source);
    }

    @Override
    protected void ensure(TableRef target, RelationInfo rel) throws SQLException {
        tables.ensure(target, rel, holds(rel.oid()), this::reshapedSinceHeld, // asked at the table's first sight only
                io.millrace.core.sink.DurableTables.waitsForCopy(copying, rel));
    }

    @Override
    protected void truncate(TableRef target) throws SQLException {
        execute("TRUNCATE TABLE " + target.sql());
        emptied.add(target);
    }

    @Override
    protected void truncate(List<TableRef> targets) throws SQLException {
        execute("TRUNCATE TABLE " + targets.stream().map(TableRef::sql).collect(java.util.stream.Collectors.joining(", ")));
        emptied.addAll(targets);
    }

    @Override
    protected void drop(TableRef target) throws SQLException {
        execute("DROP TABLE IF EXISTS " + target.sql());
        tables.dropped(target);
        stages.remove(target);
        binaryTables.remove(target);
        LOG.info("destination '{}': dropped table {} (dropped in the source; drop_tables: true)", destination, target);
    }

    @Override
    protected RuntimeException failed(TableRef target, RelationInfo rel, List<ChangeEvent> run, SQLException e) {
        return Errors.apply(destination, where, target, rel.table(), run.get(0), e);
    }

    @Override
    protected RuntimeException failed(TableRef target, RelationInfo rel, List<ChangeEvent> run, RuntimeException e) {
        if (e instanceof MillraceException) {
            return e;
        }
        return new MillraceException(MillraceException.Kind.SINK, "destination '" + destination
                + "': could not apply changes to table " + target + " (source " + rel.table() + ", from "
                + run.get(0).position() + "): " + e, e);
    }

    // ---------------------------------------------------------------- keyed

    @Override
    protected void applyKeyed(TableRef target, RelationInfo rel, List<ChangeEvent> run) throws SQLException {
        long t0 = System.nanoTime();
        KeyedReduction red = new KeyedReduction(rel, target, run.size(), binary(target, rel));
        if (red.binary()) {
            binaryChanges += run.size();
        } else {
            textChanges += run.size();
        }
        for (ChangeEvent e : run) {
            red.add(e);
        }
        long t1 = System.nanoTime();
        if (red.rows().isEmpty()) {
            return;
        }
        // An online copy's rows go straight in only into a table this session created or emptied: into one holding rows, a
        // direct COPY would meet the keys it holds and leave a unique-violation ERROR in the server's log before the
        // upsert (a DBA saw them at every ATTACH PARTITION copied online, found by the production-server walk).
        boolean direct = red.insertsOnly() && !conflicted.contains(target) && (!red.readWhileStreaming()
                || tables.createdHere(target) || emptied.contains(target));
        if (direct && copyDirectly(target, rel, red)) {
            if (LOG.isDebugEnabled()) {
                LOG.debug("destination '{}': {} insert(s) into {} copied directly; ms: reduce {}, copy {}", destination,
                        red.events(), target, (t1 - t0) / 1_000_000, (System.nanoTime() - t1) / 1_000_000);
            }
            return;
        }
        Stage stage = stage(target, rel);
        if (!usedInTransaction.add(stage)) {
            execute("TRUNCATE TABLE " + stage.name);
        }
        int n = rel.columnCount();
        int[] keyIdx = rel.keyIndexes();
        int[] keyPos = new int[n];
        java.util.Arrays.fill(keyPos, -1);
        for (int j = 0; j < keyIdx.length; j++) {
            keyPos[keyIdx[j]] = j;
        }
        Map<String, Integer> maskIds = new LinkedHashMap<>();
        List<int[]> maskColumns = new ArrayList<>();
        List<Integer> maskCounts = new ArrayList<>();
        int deletes = 0;
        int upserts = 0;
        boolean binary = red.binary();
        CopyText out = new CopyText(copy.copyIn(stage.copySql + CopyText.option(binary)), binary);
        try {
            for (KeyedReduction.Row row : red.rows().values()) {
                out.startRow(n + 2 + keyIdx.length);
                if (row.delete) {
                    deletes++;
                    for (int i = 0; i < n; i++) {
                        if (keyPos[i] >= 0) {
                            out.value(row.vals[keyPos[i]]);
                        } else {
                            out.nul();
                        }
                    }
                    out.bool(true);
                    out.int4(0);
                    for (int j = 0; j < keyIdx.length; j++) {
                        out.nul();
                    }
                } else if (row.line != null) {
                    upserts++;
                    out.fields(row.line);
                    out.bool(false);
                    out.int4(0);
                    for (int j = 0; j < keyIdx.length; j++) {
                        out.nul();
                    }
                } else {
                    upserts++;
                    for (int i = 0; i < n; i++) {
                        Object v = row.vals[i];
                        if (v == null) {
                            out.nul();
                        } else {
                            out.value(v);
                        }
                    }
                    out.bool(false);
                    StringBuilder sig = new StringBuilder();
                    for (int i = 0; i < n; i++) {
                        if (row.vals[i] == null) {
                            sig.append(i).append(',');
                        }
                    }
                    Integer id = maskIds.get(sig.toString());
                    if (id == null) {
                        id = maskIds.size() + 1;
                        maskIds.put(sig.toString(), id);
                        List<Integer> cols = new ArrayList<>();
                        for (int i = 0; i < n; i++) {
                            if (row.vals[i] == null) {
                                cols.add(i);
                            }
                        }
                        maskColumns.add(cols.stream().mapToInt(Integer::intValue).toArray());
                        maskCounts.add(0);
                    }
                    maskCounts.set(id - 1, maskCounts.get(id - 1) + 1);
                    out.int4(id);
                    for (Object k : row.from) {
                        out.value(k);
                    }
                }
                out.endRow();
            }
            out.finish();
        } catch (SQLException | RuntimeException e) {
            out.cancel();
            throw e;
        }
        long t2 = System.nanoTime();
        // Unchanged TOAST values: take them from the destination rows as they were before this run,
        // before the run's deletes and upserts touch those rows.
        for (int m = 0; m < maskColumns.size(); m++) {
            StringBuilder sql = new StringBuilder("UPDATE ").append(stage.name).append(" s SET ");
            int[] cols = maskColumns.get(m);
            for (int c = 0; c < cols.length; c++) {
                sql.append(c == 0 ? "" : ", ").append('c').append(cols[c]).append(" = t.")
                        .append(Ident.quote(rel.column(cols[c]).name()));
            }
            sql.append(" FROM ").append(target.sql()).append(" t WHERE s._mr_mask = ").append(m + 1);
            for (int j = 0; j < keyIdx.length; j++) {
                sql.append(" AND t.").append(Ident.quote(rel.column(keyIdx[j]).name())).append(" = s.f").append(j).append(stage.casts[keyIdx[j]]);
            }
            int filled = executeUpdate(sql.toString());
            int expected = maskCounts.get(m);
            if (filled != expected && DurableTables.waitsForCopy(copying, rel)) {
                // Rows the online snapshot has not copied yet: their chunk brings them, newer than this update (a row the
                // update also moved to a new key is read again by that key: OnlineSnapshotter.moved).
                StringBuilder drop = new StringBuilder("DELETE FROM ").append(stage.name).append(" s WHERE s._mr_mask = ")
                        .append(m + 1).append(" AND NOT EXISTS (SELECT 1 FROM ").append(target.sql()).append(" t WHERE ");
                for (int j = 0; j < keyIdx.length; j++) {
                    drop.append(j == 0 ? "" : " AND ").append("t.").append(Ident.quote(rel.column(keyIdx[j]).name()))
                            .append(" = s.f").append(j).append(stage.casts[keyIdx[j]]);
                }
                int dropped = executeUpdate(drop.append(')').toString());
                upserts -= dropped;
                LOG.debug("destination '{}': {} update(s) of {} with unchanged TOAST values wait for the online snapshot"
                        + " to copy their rows", destination, dropped, target);
                filled += dropped;
            }
            if (filled != expected) {
                throw DurableTables.noRowToTakeFrom(destination, target, rel, expected - filled, columnNames(rel, cols));
            }
        }
        long t3 = System.nanoTime();
        if (deletes > 0) {
            executeUpdate(stage.deleteSql);
        }
        long t4 = System.nanoTime();
        if (upserts > 0) {
            executeUpdate(stage.upsertSql);
        }
        long t5 = System.nanoTime();
        if (LOG.isDebugEnabled()) {
            LOG.debug("destination '{}': {} change(s) to {} applied as {} upsert(s), {} delete(s); ms: reduce {},"
                    + " copy {}, toast {}, delete {}, upsert {}", destination, red.events(), target, upserts, deletes,
                    (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000, (t3 - t2) / 1_000_000, (t4 - t3) / 1_000_000,
                    (t5 - t4) / 1_000_000);
        }
    }

    /**
     * A run of new rows only: COPY them straight into the table, under a savepoint. When a key is
     * already there (unique violation) the savepoint is rolled back and the caller upserts through
     * the staging table instead; the table is then remembered so later runs go there first.
     */
    private boolean copyDirectly(TableRef target, RelationInfo rel, KeyedReduction red) throws SQLException {
        List<String> names = new ArrayList<>();
        for (ColumnInfo c : rel.columns()) {
            names.add(Ident.quote(c.name()));
        }
        execute("SAVEPOINT millrace_direct");
        CopyText out = new CopyText(copy.copyIn("COPY " + target.sql() + " (" + String.join(", ", names) + ") FROM STDIN"
                + CopyText.option(red.binary())), red.binary());
        try {
            for (KeyedReduction.Row row : red.rows().values()) {
                out.startRow(names.size());
                out.fields(row.line); // inserts only: every row is complete
                out.endRow();
            }
            out.finish();
        } catch (SQLException e) {
            out.cancel();
            if (!UNIQUE_VIOLATION.equals(e.getSQLState())) {
                throw e;
            }
            execute("ROLLBACK TO SAVEPOINT millrace_direct");
            execute("RELEASE SAVEPOINT millrace_direct");
            conflicted.add(target);
            LOG.debug("destination '{}': {} already holds some of the inserted keys; upserting instead", destination,
                    target);
            return false;
        } catch (RuntimeException e) {
            out.cancel();
            throw e;
        }
        execute("RELEASE SAVEPOINT millrace_direct");
        return true;
    }

    /**
     * Whether a keyed run of {@code rel} into {@code target} is COPYed in binary format: every column's codec writes its
     * send form, and the destination column of each has the source column's type (a binary value is read only by its
     * own type's receive function; the staging table's columns have those types too). Else text, which the server
     * casts to whatever a user gave the destination column.
     */
    private boolean binary(TableRef target, RelationInfo rel) throws SQLException {
        Map.Entry<RelationInfo, Boolean> known = binaryTables.get(target);
        if (known != null && (known.getKey() == rel || known.getKey().sameShape(rel))) {
            return known.getValue();
        }
        boolean ok = true;
        Map<String, Integer> want = new HashMap<>();
        for (int i = 0; i < rel.columnCount() && ok; i++) {
            ColumnInfo c = rel.column(i);
            ok = c.type() != null && rel.codec(i).encodesBinary();
            want.put(c.name(), ok ? c.type().oid() : 0);
        }
        if (ok) {
            try (PreparedStatement ps = conn.prepareStatement("SELECT attname, atttypid::int FROM pg_attribute WHERE attrelid = to_regclass(?)"
                    + " AND attnum > 0 AND NOT attisdropped")) {
                ps.setString(1, target.sql());
                int matched = 0;
                try (java.sql.ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        Integer oid = want.get(rs.getString(1));
                        if (oid != null) {
                            ok &= oid == rs.getInt(2);
                            matched++;
                        }
                    }
                }
                ok &= matched == want.size();
            }
        }
        binaryTables.put(target, Map.entry(rel, ok));
        LOG.debug("destination '{}': keyed changes to {} are copied in {} format", destination, target, ok ? "binary" : "text");
        return ok;
    }

    private Stage stage(TableRef target, RelationInfo rel) throws SQLException {
        Stage s = stages.get(target);
        if (s != null && (s.shape == rel || s.shape.sameShape(rel))) {
            return s;
        }
        if (s != null) {
            execute("DROP TABLE IF EXISTS " + s.name);
            usedInTransaction.remove(s);
        }
        s = new Stage("millrace_stage_" + (++stageCounter), target, rel, casts(target, rel));
        execute(s.createSql);
        stages.put(target, s);
        return s;
    }

    /**
     * For each column of {@code rel}, the cast its staged value needs to become the destination column's value, or "":
     * a column the staging table holds as text (an enum, a domain, a composite, their arrays: TypeMapping) whose
     * destination column is not a string type — one made with the source's own types, as {@code millrace migrate} makes
     * them or a user does. Without it, PostgreSQL has no assignment cast (a migrate user's first UPDATE: "column "mood"
     * is of type mood but expression is of type text"). A string column takes text as it is, never truncated by a cast.
     */
    private String[] casts(TableRef target, RelationInfo rel) throws SQLException {
        String[] casts = new String[rel.columnCount()];
        java.util.Arrays.fill(casts, "");
        Map<String, String> types = new HashMap<>();
        try (PreparedStatement ps = conn.prepareStatement("SELECT a.attname, format_type(a.atttypid, a.atttypmod)"
                + " FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A'"
                + " WHERE a.attrelid = to_regclass(?) AND a.attnum > 0 AND NOT a.attisdropped AND coalesce(e.typcategory, t.typcategory) <> 'S'")) {
            ps.setString(1, target.sql());
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    types.put(rs.getString(1), rs.getString(2));
                }
            }
        }
        for (int i = 0; i < casts.length; i++) {
            String staged = TypeMapping.sqlType(rel.column(i));
            String type = types.get(rel.column(i).name());
            if (type != null && (staged.equals("text") || staged.equals("text[]")) && !type.equals(staged)) {
                casts[i] = "::" + type;
            }
        }
        return casts;
    }

    /** A temporary table shaped like a relation: c0..cN-1, _mr_del, _mr_mask, f0..fK-1 (old key). */
    private static final class Stage {
        final String name;
        final RelationInfo shape;
        final String createSql;
        final String copySql;
        final String deleteSql;
        final String upsertSql;
        /** The cast each staged column needs to compare with, or become, the destination column ({@link #casts}). */
        final String[] casts;

        Stage(String name, TableRef target, RelationInfo rel, String[] casts) {
            this.casts = casts;
            this.name = name;
            this.shape = rel;
            int n = rel.columnCount();
            int[] keyIdx = rel.keyIndexes();
            List<String> defs = new ArrayList<>();
            List<String> cols = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                defs.add("c" + i + " " + TypeMapping.sqlType(rel.column(i)));
                cols.add("c" + i);
            }
            defs.add("_mr_del boolean NOT NULL");
            defs.add("_mr_mask int NOT NULL");
            cols.add("_mr_del");
            cols.add("_mr_mask");
            for (int j = 0; j < keyIdx.length; j++) {
                defs.add("f" + j + " " + TypeMapping.sqlType(rel.column(keyIdx[j])));
                cols.add("f" + j);
            }
            createSql = "CREATE TEMPORARY TABLE " + name + " (" + String.join(", ", defs) + ") ON COMMIT DELETE ROWS";
            copySql = "COPY " + name + " (" + String.join(", ", cols) + ") FROM STDIN";

            StringBuilder del = new StringBuilder("DELETE FROM ").append(target.sql()).append(" t USING ").append(name)
                    .append(" s WHERE s._mr_del");
            for (int k : keyIdx) {
                del.append(" AND t.").append(Ident.quote(rel.column(k).name())).append(" = s.c").append(k).append(casts[k]);
            }
            deleteSql = del.toString();

            List<String> names = new ArrayList<>();
            List<String> sel = new ArrayList<>();
            List<String> set = new ArrayList<>();
            List<String> key = new ArrayList<>();
            Set<Integer> keySet = new HashSet<>();
            for (int k : keyIdx) {
                keySet.add(k);
                key.add(Ident.quote(rel.column(k).name()));
            }
            for (int i = 0; i < n; i++) {
                String q = Ident.quote(rel.column(i).name());
                names.add(q);
                sel.add("c" + i + casts[i]);
                if (!keySet.contains(i)) {
                    set.add(q + " = EXCLUDED." + q);
                }
            }
            // OVERRIDING SYSTEM VALUE: a GENERATED ALWAYS identity column of an existing table takes the source's value (as
            // COPY does); PostgreSQL ignores the clause for a table without one.
            upsertSql = "INSERT INTO " + target.sql() + " (" + String.join(", ", names) + ") OVERRIDING SYSTEM VALUE SELECT "
                    + String.join(", ", sel) + " FROM " + name + " WHERE NOT _mr_del ON CONFLICT ("
                    + String.join(", ", key) + ") DO " + (set.isEmpty() ? "NOTHING" : "UPDATE SET " + String.join(", ", set));
        }
    }

    // ---------------------------------------------------------------- without key

    /**
     * Source types (by oid) whose values the keyless DELETE hashes ({@code hash_record}): built-in types with a hash
     * function whose equal values have equal hashes, so a row the text would match is never left out by its hash.
     * bool, bytea, name, int8, int2, int4, text, oid, float4, float8, inet, bpchar, varchar, date, time, timestamp,
     * timestamptz, interval, numeric, uuid, jsonb.
     */
    private static final Set<Integer> HASHED_TYPES = Set.of(16, 17, 19, 20, 21, 23, 25, 26, 700, 701, 869, 1042, 1043, 1082, 1083,
            1114, 1184, 1186, 1700, 2950, 3802);

    @Override
    protected void applyKeyless(TableRef target, RelationInfo rel, List<ChangeEvent> run) throws SQLException {
        Keyless.Net net = Keyless.net(target, rel, run);
        long missed = net == null ? applyInOrder(target, rel, run) : applyNet(target, rel, net);
        if (missed > 0) {
            LOG.warn(Keyless.missed(destination, missed, target, rel));
        }
    }

    private static String keylessCopySql(TableRef target, RelationInfo rel) {
        List<String> names = new ArrayList<>();
        for (ColumnInfo c : rel.columns()) {
            names.add(Ident.quote(c.name()));
        }
        return "COPY " + target.sql() + " (" + String.join(", ", names) + ") FROM STDIN";
    }

    /**
     * A long run of a table without a key by its net effect ({@link Keyless#net}): the rows it takes away loaded into a
     * temporary table (their text and count) and deleted in one statement that reads the table once, then the rows it
     * adds copied in. The DELETE is a hash join on each row's text (as {@link #keylessDialect}'s match: by the text form, NULL
     * included: a row value's text tells NULL from an empty string), taking as many equal rows as the count.
     * Returns how many rows it took away fewer than it should have.
     */
    private long applyNet(TableRef target, RelationInfo rel, Keyless.Net net) throws SQLException {
        long missed = net.removed().isEmpty() ? 0 : takeAway(target, rel, net);
        if (!net.added().isEmpty()) {
            CopyText out = new CopyText(copy.copyIn(keylessCopySql(target, rel)));
            try {
                for (Keyless.Counted c : net.added()) {
                    for (int k = 0; k < c.times(); k++) {
                        textRow(out, rel, c.values());
                    }
                }
                out.finish();
            } catch (SQLException | RuntimeException e) {
                out.cancel();
                throw e;
            }
        }
        return missed;
    }

    /** The DELETE of {@link #applyNet}; returns how many rows it took away fewer than it should have. */
    private long takeAway(TableRef target, RelationInfo rel, Keyless.Net net) throws SQLException {
        int n = rel.columnCount();
        String gone = "millrace_gone_" + n;
        List<String> defs = new ArrayList<>();
        List<String> staged = new ArrayList<>();
        List<String> held = new ArrayList<>();
        List<String> hashedHeld = new ArrayList<>();
        List<String> hashedStaged = new ArrayList<>();
        boolean typed = conn.getMetaData().getDatabaseMajorVersion() >= 14 && binary(target, rel); // hash_record, the source's types
        for (int i = 0; i < n; i++) {
            String type = TypeMapping.sqlType(rel.column(i));
            defs.add("c" + i + " text");
            staged.add("CAST(CAST(c" + i + " AS " + type + ") AS text)");
            held.add("x." + Ident.quote(rel.column(i).name()) + "::text");
            if (typed && HASHED_TYPES.contains(rel.column(i).type().oid())) {
                hashedHeld.add("x." + Ident.quote(rel.column(i).name()));
                hashedStaged.add("CAST(c" + i + " AS " + type + ")");
            }
        }
        // The join: by a hash of the typed values where the table's columns have the source's types (equal values hash
        // alike, and only those rows have their text made and compared: NULL equal to NULL, identity by the text), else by
        // the text alone, made for every row of the table: about 2.4 µs a row against 0.4 (EXPLAIN ANALYZE, 500,000 rows).
        boolean hashed = !hashedHeld.isEmpty();
        String rowText = "ROW(" + String.join(", ", held) + ")::text";
        String on = hashed ? "hash_record(ROW(" + String.join(", ", hashedHeld) + ")) = d.h AND " + rowText + " IS NOT DISTINCT FROM d.r"
                : rowText + " = d.r";
        String h = hashed ? ", hash_record(ROW(" + String.join(", ", hashedStaged) + ")) AS h" : "";
        execute("CREATE TEMPORARY TABLE IF NOT EXISTS " + gone + " (n int, " + String.join(", ", defs) + ") ON COMMIT DELETE ROWS");
        CopyText out = new CopyText(copy.copyIn("COPY " + gone + " FROM STDIN"));
        try {
            for (Keyless.Counted c : net.removed()) {
                out.field(Integer.toString(c.times()));
                textRow(out, rel, c.values());
            }
            out.finish();
        } catch (SQLException | RuntimeException e) {
            out.cancel();
            throw e;
        }
        String table = target.sql();
        // Without JIT: the planner's row estimates for the text join are far too high, and compiling it took 1.4 s of a
        // 4.6 s DELETE on a 500,000-row table (EXPLAIN ANALYZE); for this statement only, the session's setting after it.
        String jit = queryString("SELECT current_setting('jit', true)"); // null before PostgreSQL 11, which has no JIT
        if (jit != null) {
            execute("SET LOCAL jit = off");
        }
        long deleted = executeUpdate("DELETE FROM " + table + " t USING (SELECT o, c FROM (SELECT x.tableoid AS o, x.ctid AS c,"
                + " d.n, row_number() OVER (PARTITION BY d.r) AS k FROM " + table + " x JOIN (SELECT ROW(" + String.join(", ", staged)
                + ")::text AS r" + h + ", sum(n) AS n FROM " + gone + " GROUP BY " + (hashed ? "1, 2" : "1") + ") d ON " + on + ") m"
                + " WHERE k <= n) g WHERE t.tableoid = g.o AND t.ctid = g.c");
        if (jit != null) {
            try (PreparedStatement ps = conn.prepareStatement("SELECT set_config('jit', ?, true)")) {
                ps.setString(1, jit);
                ps.execute();
            }
        }
        execute("TRUNCATE " + gone);
        return net.removedRows() - deleted;
    }

    private static void textRow(CopyText out, RelationInfo rel, Object[] values) throws SQLException {
        for (int i = 0; i < values.length; i++) {
            Object v = values[i];
            out.field(v == null ? CopyText.NULL : CopyText.escape(rel.codec(i).toPgText(v)));
        }
        out.endRow();
    }

    /** A run of a table without a key one change at a time, in order ({@link Keyless#sql}); returns how many matched no row. */
    private int applyInOrder(TableRef target, RelationInfo rel, List<ChangeEvent> run) throws SQLException {
        int n = rel.columnCount();
        String copySql = keylessCopySql(target, rel);
        Map<String, PreparedStatement> statements = new HashMap<>();
        Keyless.Dialect dialect = keylessDialect(rel);
        CopyText out = null;
        PreparedStatement batch = null;
        int batched = 0;
        int missed = 0;
        try {
            for (ChangeEvent e : run) {
                switch (e.op()) {
                    case CREATE, READ -> {
                        if (batch != null) {
                            missed += unmatched(batch.executeBatch());
                            batch = null;
                            batched = 0;
                        }
                        if (out == null) {
                            out = new CopyText(copy.copyIn(copySql));
                        }
                        Object[] after = Keyless.image(e, rel, e.after(), "after");
                        for (int i = 0; i < n; i++) {
                            Object v = after[i];
                            if (v == UnchangedToast.INSTANCE) {
                                throw Keyless.unchangedInInsert(target, e);
                            }
                            out.field(v == null ? CopyText.NULL : CopyText.escape(rel.codec(i).toPgText(v)));
                        }
                        out.endRow();
                    }
                    case UPDATE, DELETE -> {
                        if (out != null) {
                            out.finish();
                            out = null;
                        }
                        Object[] before = e.before();
                        if (before == null) {
                            throw Keyless.noOldRow(target, rel, e);
                        }
                        Keyless.image(e, rel, before, "before");
                        Object[] after = e.op() == Op.UPDATE ? Keyless.image(e, rel, e.after(), "after") : null;
                        String sql = Keyless.sql(target, rel, before, after, dialect);
                        PreparedStatement ps = statements.get(sql);
                        if (ps == null) {
                            ps = conn.prepareStatement(sql);
                            statements.put(sql, ps);
                        }
                        if (batch != null && batch != ps) {
                            missed += unmatched(batch.executeBatch());
                            batched = 0;
                        }
                        batch = ps;
                        int p = 1;
                        if (after != null) {
                            for (int i = 0; i < n; i++) {
                                if (after[i] != UnchangedToast.INSTANCE) {
                                    bind(ps, p++, rel, i, after[i]);
                                }
                            }
                        }
                        for (int i = 0; i < n; i++) {
                            if (before[i] != UnchangedToast.INSTANCE) {
                                bind(ps, p++, rel, i, before[i]);
                            }
                        }
                        ps.addBatch();
                        if (++batched >= 1000) {
                            missed += unmatched(ps.executeBatch());
                            batched = 0;
                        }
                    }
                    default -> throw new MillraceException(MillraceException.Kind.INTERNAL, "unexpected " + e.op()
                            + " in a run of " + target);
                }
            }
            if (out != null) {
                out.finish();
                out = null;
            }
            if (batch != null) {
                missed += unmatched(batch.executeBatch());
            }
        } catch (SQLException | RuntimeException e) {
            if (out != null) {
                out.cancel();
            }
            throw e;
        } finally {
            for (PreparedStatement ps : statements.values()) {
                ps.close();
            }
        }
        return missed;
    }

    /**
     * The keyless path's SQL here: rows by {@code (tableoid, ctid)}, values cast from text to the column's type. A
     * {@code ctid} alone names a row in each partition of a partitioned table (planned as a TID scan of each partition,
     * filtered by {@code tableoid}).
     */
    private static Keyless.Dialect keylessDialect(RelationInfo rel) {
        String[] types = new String[rel.columnCount()];
        for (int i = 0; i < types.length; i++) {
            types[i] = TypeMapping.sqlType(rel.column(i));
        }
        return new Keyless.Dialect() {
            @Override
            public String rowId() {
                return "tableoid, ctid";
            }

            @Override
            public String value(int i) {
                return "CAST(? AS " + types[i] + ")";
            }

            /**
             * By the text form, not by '=': equality is coarser than identity for some types (0 = -0, 1.0 = 1.00,
             * '1 day' = '24:00:00', jsonb 1.0 = 1.00), and the row to change must be the one the source changed, not a
             * look-alike (SchemaChangeIT.keylessRowsThatAreEqualButNotTheSameValue). The same destination type and
             * session settings give identical values the same text.
             */
            @Override
            public String matches(int i) {
                return Ident.quote(rel.column(i).name()) + "::text IS NOT DISTINCT FROM CAST(CAST(? AS " + types[i] + ") AS text)";
            }
        };
    }

    private static void bind(PreparedStatement ps, int p, RelationInfo rel, int i, Object v) throws SQLException {
        if (v == null) {
            ps.setNull(p, Types.VARCHAR);
        } else {
            ps.setString(p, rel.codec(i).toPgText(v));
        }
    }

    private static int unmatched(int[] counts) {
        int missed = 0;
        for (int c : counts) {
            if (c == 0) {
                missed++;
            }
        }
        return missed;
    }

    // ---------------------------------------------------------------- helpers

    private void execute(String sql) throws SQLException {
        try (Statement s = conn.createStatement()) {
            s.execute(sql);
        }
    }

    private String queryString(String sql) throws SQLException {
        try (Statement s = conn.createStatement(); java.sql.ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    private int executeUpdate(String sql) throws SQLException {
        try (Statement s = conn.createStatement()) {
            return s.executeUpdate(sql);
        }
    }

    private static String columnNames(RelationInfo rel, int[] cols) {
        List<String> names = new ArrayList<>();
        for (int c : cols) {
            names.add(rel.column(c).name());
        }
        return names.toString();
    }
}
