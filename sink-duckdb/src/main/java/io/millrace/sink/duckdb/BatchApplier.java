package io.millrace.sink.duckdb;

import io.millrace.core.MillraceException;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.change.SourceTables;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.DurableTables;
import io.millrace.core.sink.Keyless;
import io.millrace.core.sink.TableApplier;
import io.millrace.core.types.UnchangedToast;
import org.duckdb.DuckDBAppender;
import org.duckdb.DuckDBConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Applies one batch of change events inside the caller's open DuckDB transaction, set-wise.
 *
 * <p><b>Grouping.</b> Events are split by destination table, each table's events kept in order
 * (INV: ORDER), and into runs that end at a truncate or a change of relation shape. Tables are applied
 * one after another: they are independent and the batch commits at once, so the committed state is
 * the same as applying the events interleaved.
 *
 * <p><b>Keyed runs</b> are reduced per key ({@link Reduction}), loaded through DuckDB's Appender into a
 * staging table (simple types as their Java values, the rest as PostgreSQL text forms), then merged with one
 * {@code INSERT ... SELECT ... ON CONFLICT DO UPDATE} (casting each column, taking unchanged TOAST
 * values from the destination row as it was before the statement) and one {@code DELETE ... USING}.
 * Upserted and deleted keys are disjoint after the reduction, so the order of the two statements does
 * not matter; upserting first lets a changed key's new row read its unchanged values from the old row.
 *
 * <p><b>Runs without a key</b> append inserts through the staging table and apply each update or delete
 * to one row whose columns all equal the old image (DuckDB's {@code rowid}).
 *
 * <p>Staging tables are created in schema {@code millrace} inside the transaction and dropped before
 * it commits ({@link #dropStages()}). Owned by the sink's writer thread; after a rollback call
 * {@link #rolledBack()}.
 */
final class BatchApplier extends TableApplier {
    private static final Logger LOG = LoggerFactory.getLogger(BatchApplier.class);

    private final Connection conn;
    private final DuckDBConnection duck;
    private final DuckTables tables;
    /** Tables in SQL with the file's catalog. */
    private final DuckNames names;
    /** Staging tables created in the current transaction, per destination table. */
    private final Map<TableRef, Stage> stages = new HashMap<>();
    private int stageCounter;

    BatchApplier(Connection conn, String destination, String targetSchema, boolean dropTables) throws SQLException {
        super(destination, dropTables);
        this.conn = conn;
        this.duck = conn.unwrap(DuckDBConnection.class);
        this.names = DuckNames.of(conn);
        this.tables = new DuckTables(conn, names, destination, targetSchema);
    }


    /** After a rollback: DDL and staging tables of the transaction are gone. */
    void rolledBack() {
        tables.forget();
        stages.clear();
    }

    /** The batch's transaction is about to commit (or was rolled back): a new one starts with no table changed. */
    void ended() {
        tables.transactionEnded();
    }

    /** Drops this transaction's staging tables; call before the commit. */
    void dropStages() throws SQLException {
        for (Stage s : stages.values()) {
            execute("DROP TABLE IF EXISTS " + s.sql);
        }
        stages.clear();
    }

    @Override
    protected void rename(SourceTables.Rename r) throws SQLException {
        tables.rename(r);
    }

    @Override
    protected TableRef targetOf(TableRef source) {
        return tables.targetOf(source);
    }

    @Override
    protected void ensure(TableRef target, RelationInfo rel) {
        tables.ensure(target, rel, holds(rel.oid()), io.millrace.core.sink.DurableTables.waitsForCopy(copying, rel));
    }

    @Override
    protected void truncate(TableRef target) throws SQLException {
        tables.changed(target);
        execute("DELETE FROM " + names.of(target));
    }

    @Override
    protected void drop(TableRef target) throws SQLException {
        execute("DROP TABLE IF EXISTS " + names.of(target));
        tables.dropped(target); // its staging table, if any, is dropped before the commit as always
        LOG.info("destination '{}': dropped table {} (dropped in the source; drop_tables: true)", destination, target);
    }

    @Override
    protected RuntimeException failed(TableRef target, RelationInfo rel, List<ChangeEvent> run, SQLException e) {
        return new MillraceException(MillraceException.Kind.SINK, "destination '" + destination + "': could not"
                + " apply " + run.size() + " change(s) to table " + target + " (source " + rel.table() + "), the first at "
                + run.get(0).position() + ": " + e.getMessage() + (e.getMessage() != null && e.getMessage().contains("Out of Memory")
                ? " Fix (Millrace's settings, not DuckDB's SET statements above): raise this destination's memory_limit_mb (DuckDB's"
                + " memory beside the JVM's; 256 by default), or lower pipeline.memory_budget_mb, which bounds each batch" : ""), e);
    }

    // ---------------------------------------------------------------- keyed

    @Override
    protected void applyKeyed(TableRef target, RelationInfo rel, List<ChangeEvent> run) throws SQLException {
        tables.changed(target);
        long t0 = System.nanoTime();
        Reduction red = new Reduction(rel, target, run.size());
        for (ChangeEvent e : run) {
            red.add(e);
        }
        red.finish();
        Stage stage = stage(target, rel);
        int[] keyIdx = rel.keyIndexes();
        int n = rel.columnCount();
        long t1 = System.nanoTime();
        java.util.Set<String> masks = new java.util.HashSet<>(); // of the rows with unchanged TOAST values
        try (DuckDBAppender app = duck.createAppender(names.catalog(), DuckDbSink.STATE_SCHEMA, stage.name)) {
            Object[] keyOnly = new Object[n];
            for (Reduction.Row row : red.rows().values()) {
                Object[] vals = row.vals;
                if (row.delete) {
                    java.util.Arrays.fill(keyOnly, null);
                    for (int k = 0; k < keyIdx.length; k++) {
                        keyOnly[keyIdx[k]] = vals[k];
                    }
                    vals = keyOnly;
                }
                app.beginRow();
                for (int i = 0; i < n; i++) {
                    Object v = vals[i];
                    if (v == null || v == Reduction.UNCHANGED) {
                        app.appendNull();
                    } else {
                        DuckTypes.append(app, stage.kinds[i], stage.types[i], rel.codec(i), v);
                    }
                }
                app.append(row.delete);
                if (row.from == null) {
                    app.appendNull();
                    for (int k = 0; k < keyIdx.length; k++) {
                        app.appendNull();
                    }
                } else {
                    StringBuilder mask = new StringBuilder(n);
                    for (int i = 0; i < n; i++) {
                        mask.append(vals[i] == Reduction.UNCHANGED ? '1' : '0');
                    }
                    if (mask.indexOf("1") >= 0) {
                        masks.add(mask.toString());
                    }
                    app.append(mask.toString());
                    for (int k = 0; k < keyIdx.length; k++) {
                        DuckTypes.append(app, stage.kinds[keyIdx[k]], stage.types[keyIdx[k]], rel.codec(keyIdx[k]), row.from[k]);
                    }
                }
                app.endRow();
            }
        }
        long t2 = System.nanoTime();
        int upserts = red.rows().size() - red.deletes;
        if (red.partials > 0) {
            try (Statement s = conn.createStatement(); ResultSet rs = s.executeQuery(stage.missingFromSql)) {
                rs.next();
                long missing = rs.getLong(1);
                if (missing > 0 && DurableTables.waitsForCopy(copying, rel)) {
                    // Rows the online snapshot has not copied yet: their chunk brings them, newer than this update (a row the
                    // update also moved to a new key is read again by that key: OnlineSnapshotter.moved).
                    execute(stage.dropMissingSql);
                    LOG.debug("destination '{}': {} update(s) of {} with unchanged TOAST values wait for the online"
                            + " snapshot to copy their rows", destination, missing, target);
                    missing = 0;
                }
                if (missing > 0) {
                    throw DurableTables.noRowToTakeFrom(destination, target, rel, missing, null);
                }
            }
        }
        if (!masks.isEmpty()) {
            inPlace(stage, masks);
        }
        if (upserts > 0) {
            execute(red.partials > 0 ? stage.upsertToastSql : stage.upsertSql);
        }
        long t3 = System.nanoTime();
        if (red.deletes > 0) {
            execute(stage.deleteSql);
        }
        execute("DELETE FROM " + stage.sql);
        long t4 = System.nanoTime();
        if (LOG.isDebugEnabled()) {
            LOG.debug("destination '{}': {} change(s) to {} as {} upsert(s), {} delete(s); ms: reduce {}, append {},"
                    + " upsert {}, delete {}", destination, run.size(), target, upserts, red.deletes, (t1 - t0) / 1_000_000,
                    (t2 - t1) / 1_000_000, (t3 - t2) / 1_000_000, (t4 - t3) / 1_000_000);
        }
    }

    /**
     * The staged updates with unchanged TOAST values whose key stayed, applied in place: an UPDATE per mask of the columns
     * that changed, leaving the unchanged ones as they are; then taken out of the stage, so the upsert that follows has
     * only the others. The upsert wrote every column again, the unchanged values read back from the table: DuckDB holds
     * the updated strings in memory until a checkpoint, and a user's UPDATE of 100,000 rows changing one int column, with
     * a 4 KB text value left unchanged, failed at its first batch ("Out of Memory Error: failed to allocate data of size
     * 1.0 MiB (243.2 MiB/244.1 MiB used)") and at every start after. INV: BOUNDED.
     */
    private void inPlace(Stage stage, java.util.Set<String> masks) throws SQLException {
        for (String mask : masks) {
            String update = stage.updateInPlace(mask);
            if (update != null) {
                execute(update);
            }
        }
        execute(stage.dropInPlaceSql);
    }

    private Stage stage(TableRef target, RelationInfo rel) throws SQLException {
        Stage s = stages.get(target);
        if (s != null && (s.shape == rel || s.shape.sameShape(rel))) {
            return s;
        }
        if (s != null) {
            execute("DROP TABLE IF EXISTS " + s.sql);
        }
        s = new Stage("stage_" + (++stageCounter) + "_" + Long.toHexString(System.nanoTime()), target, rel, names);
        execute(s.createSql);
        stages.put(target, s);
        return s;
    }

    /** A staging table shaped like a relation: c0..cN-1, _mr_del, _mr_unch (mask), f0..fK-1 (old key); all text. */
    private static final class Stage {
        final String name;
        final String sql;
        final RelationInfo shape;
        /** Per column: how its values are staged ({@link DuckTypes#stageKind}). */
        final char[] kinds;
        /** Per column: its DuckDB type ({@link DuckTypes#sqlType}). */
        final String[] types;
        final String createSql;
        final String upsertSql;
        final String upsertToastSql;
        final String missingFromSql;
        final String dropMissingSql;
        final String deleteSql;
        final String insertSql;
        /** Deletes, of each row image staged k times, k rows equal to it (all columns, NULL equal to NULL). */
        final String keylessDeleteSql;
        /** Takes out of the stage the updates with unchanged TOAST values whose key stayed ({@link #updateInPlace}). */
        final String dropInPlaceSql;
        private final String targetSql;
        private final String[] names;
        private final java.util.Set<Integer> keys = new java.util.HashSet<>();
        /** The staged rows whose key stayed, joined with their row in the table ({@code o}). */
        private final String sameKeyJoin;
        private final Map<String, String> inPlace = new java.util.HashMap<>();

        /**
         * The UPDATE that applies, in place, the staged updates with unchanged TOAST values of {@code mask} ('1' per column
         * left unchanged) whose key stayed: the other columns set, the unchanged ones left; null when none is set.
         */
        String updateInPlace(String mask) {
            return inPlace.computeIfAbsent(mask, m -> {
                List<String> set = new ArrayList<>();
                for (int i = 0; i < names.length; i++) {
                    if (!keys.contains(i) && m.charAt(i) == '0') {
                        set.add(names[i] + " = " + DuckTypes.fromStage(types[i], "s.c" + i));
                    }
                }
                return set.isEmpty() ? null : "UPDATE " + targetSql + " AS o SET " + String.join(", ", set) + " FROM " + sql
                        + " s WHERE s._mr_unch = '" + m + "' AND NOT s._mr_del AND " + sameKeyJoin;
            });
        }

        Stage(String name, TableRef target, RelationInfo rel, DuckNames dn) {
            this.name = name;
            this.sql = dn.state(name);
            this.shape = rel;
            int n = rel.columnCount();
            int[] keyIdx = rel.keyIndexes();
            types = new String[n];
            names = new String[n];
            targetSql = dn.of(target);
            kinds = new char[n];
            List<String> defs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                types[i] = DuckTypes.sqlType(rel.column(i));
                kinds[i] = DuckTypes.stageKind(types[i]);
                names[i] = Ident.quote(rel.column(i).name());
                defs.add("c" + i + " " + DuckTypes.stageType(types[i]));
            }
            defs.add("_mr_del BOOLEAN");
            defs.add("_mr_unch VARCHAR");
            for (int k = 0; k < keyIdx.length; k++) {
                defs.add("f" + k + " " + DuckTypes.stageType(types[keyIdx[k]]));
            }
            createSql = "CREATE TABLE " + sql + " (" + String.join(", ", defs) + ")";

            List<String> plain = new ArrayList<>();
            List<String> toast = new ArrayList<>();
            List<String> set = new ArrayList<>();
            for (int k : keyIdx) {
                keys.add(k);
            }
            for (int i = 0; i < n; i++) {
                String cast = DuckTypes.fromStage(types[i], "s.c" + i);
                plain.add(cast);
                toast.add("CASE WHEN s._mr_unch IS NOT NULL AND substr(s._mr_unch, " + (i + 1) + ", 1) = '1' THEN o."
                        + names[i] + " ELSE " + cast + " END");
                if (!keys.contains(i)) {
                    set.add(names[i] + " = EXCLUDED." + names[i]);
                }
            }
            List<String> keyNames = new ArrayList<>();
            List<String> fromJoin = new ArrayList<>();
            List<String> delJoin = new ArrayList<>();
            List<String> semiJoin = new ArrayList<>();
            for (int k = 0; k < keyIdx.length; k++) {
                int i = keyIdx[k];
                keyNames.add(names[i]);
                fromJoin.add("o." + names[i] + " = " + DuckTypes.fromStage(types[i], "s.f" + k));
                semiJoin.add("o2." + names[i] + " = " + DuckTypes.fromStage(types[i], "s2.f" + k));
                delJoin.add("d." + names[i] + " = " + DuckTypes.fromStage(types[i], "s.c" + i));
            }
            String conflict = " ON CONFLICT (" + String.join(", ", keyNames) + ") DO "
                    + (set.isEmpty() ? "NOTHING" : "UPDATE SET " + String.join(", ", set));
            String cols = " (" + String.join(", ", names) + ")";
            upsertSql = "INSERT INTO " + dn.of(target) + cols + " SELECT " + String.join(", ", plain) + " FROM " + sql
                    + " s WHERE NOT s._mr_del" + conflict;
            // The old rows the unchanged TOAST values come from, read by a semi join with the staged keys: DuckDB builds the
            // hash table on the stage and probes the table. A LEFT JOIN of the whole table built it on the table instead,
            // every column of every row, at every batch (a user's 2M-row UPDATE applied at about 1,000 rows/s). Side by side
            // on a 2M-row table, batches of 21,846 updates: 46.6-73.0 s before, 1.6-3.0 s after (docs/BENCHMARKS.md).
            String old = "(SELECT * FROM " + dn.of(target) + " o2 WHERE EXISTS (SELECT 1 FROM " + sql + " s2 WHERE s2._mr_unch IS NOT NULL AND "
                    + String.join(" AND ", semiJoin) + "))";
            upsertToastSql = "INSERT INTO " + dn.of(target) + cols + " SELECT " + String.join(", ", toast) + " FROM " + sql
                    + " s LEFT JOIN " + old + " o ON s._mr_unch IS NOT NULL AND " + String.join(" AND ", fromJoin)
                    + " WHERE NOT s._mr_del" + conflict;
            missingFromSql = "SELECT count(*) FROM " + sql + " s WHERE s._mr_unch IS NOT NULL AND NOT s._mr_del AND NOT EXISTS"
                    + " (SELECT 1 FROM " + dn.of(target) + " o WHERE " + String.join(" AND ", fromJoin) + ")";
            dropMissingSql = "DELETE FROM " + sql + " s WHERE s._mr_unch IS NOT NULL AND NOT s._mr_del AND NOT EXISTS"
                    + " (SELECT 1 FROM " + dn.of(target) + " o WHERE " + String.join(" AND ", fromJoin) + ")";
            deleteSql = "DELETE FROM " + dn.of(target) + " d USING " + sql + " s WHERE s._mr_del AND "
                    + String.join(" AND ", delJoin);
            insertSql = "INSERT INTO " + dn.of(target) + cols + " SELECT " + String.join(", ", plain) + " FROM " + sql + " s";
            keylessDeleteSql = keylessDelete(dn.of(target), sql, names, types);
            List<String> same = new ArrayList<>();
            for (int k = 0; k < keyIdx.length; k++) {
                same.add("s.f" + k + " = s.c" + keyIdx[k]);
            }
            String sameKey = same.isEmpty() ? "false" : String.join(" AND ", same);
            sameKeyJoin = sameKey + (fromJoin.isEmpty() ? "" : " AND " + String.join(" AND ", fromJoin));
            dropInPlaceSql = "DELETE FROM " + sql + " s WHERE s._mr_unch LIKE '%1%' AND NOT s._mr_del AND " + sameKey;
        }
    }

    /**
     * The DELETE of a long keyless run's net effect ({@link Keyless#net}): the stage holds each row image to take away as
     * many times as it goes; the table's rows equal to one of them (a join with the stage's distinct images: DuckDB hashes
     * those and probes with the table) are numbered among their equals, and so are the stage's, and the n-th equal row
     * goes with the n-th staged copy. Not an EXISTS: DuckDB turned it into a join that first grouped every row of the table
     * (a 500,000-row keyless table's UPDATE ran out of the destination's 256 MB at its first batches, found by trying it).
     */
    private static String keylessDelete(String table, String stage, String[] names, String[] types) {
        List<String> held = new ArrayList<>();
        List<String> staged = new ArrayList<>();
        List<String> images = new ArrayList<>();
        List<String> matched = new ArrayList<>();
        List<String> join = new ArrayList<>();
        for (int i = 0; i < names.length; i++) {
            held.add("o." + names[i] + " AS v" + i);
            staged.add(DuckTypes.fromStage(types[i], "s.c" + i) + " AS v" + i);
            images.add(DuckTypes.fromStage(types[i], "s2.c" + i) + " AS w" + i);
            matched.add("o." + names[i] + " IS NOT DISTINCT FROM d.w" + i);
            join.add("x.v" + i + " IS NOT DISTINCT FROM y.v" + i);
        }
        String all = java.util.stream.IntStream.range(0, names.length).mapToObj(i -> "v" + i)
                .collect(java.util.stream.Collectors.joining(", "));
        return "DELETE FROM " + table + " WHERE rowid IN (SELECT x.r FROM (SELECT r, " + all + ", row_number() OVER (PARTITION BY "
                + all + ") AS k FROM (SELECT o.rowid AS r, " + String.join(", ", held) + " FROM " + table + " o JOIN (SELECT DISTINCT "
                + String.join(", ", images) + " FROM " + stage + " s2) d ON " + String.join(" AND ", matched) + ")) x JOIN (SELECT " + all
                + ", row_number() OVER (PARTITION BY " + all + ") AS k FROM (SELECT " + String.join(", ", staged) + " FROM " + stage
                + " s)) y ON " + String.join(" AND ", join) + " AND x.k = y.k)";
    }

    // ---------------------------------------------------------------- without key

    @Override
    protected void applyKeyless(TableRef target, RelationInfo rel, List<ChangeEvent> run) throws SQLException {
        tables.changed(target);
        Stage stage = stage(target, rel);
        Keyless.Net net = Keyless.net(target, rel, run);
        long missed = net == null ? applyInOrder(target, rel, run, stage) : applyNet(rel, net, stage);
        if (missed > 0) {
            LOG.warn(Keyless.missed(destination, missed, target, rel));
        }
    }

    /**
     * A long run of a table without a key by its net effect ({@link Keyless#net}): the rows it takes away staged (each as
     * many times as it goes) and deleted in one statement ({@link Stage#keylessDeleteSql}), so the table is read once per
     * run instead of once per change, then the rows it adds appended and inserted. Returns how many rows it
     * took away fewer than it should have.
     */
    private long applyNet(RelationInfo rel, Keyless.Net net, Stage stage) throws SQLException {
        long missed = 0;
        for (boolean removing : new boolean[]{true, false}) {
            List<Keyless.Counted> rows = removing ? net.removed() : net.added();
            if (rows.isEmpty()) {
                continue;
            }
            try (DuckDBAppender app = duck.createAppender(names.catalog(), DuckDbSink.STATE_SCHEMA, stage.name)) {
                for (Keyless.Counted c : rows) {
                    for (int k = 0; k < c.times(); k++) {
                        appendRow(app, stage, rel, c.values(), removing);
                    }
                }
            }
            long done;
            try (Statement s = conn.createStatement()) {
                done = s.executeUpdate(removing ? stage.keylessDeleteSql : stage.insertSql);
            }
            execute("DELETE FROM " + stage.sql);
            if (removing) {
                missed = net.removedRows() - done;
            }
        }
        return missed;
    }

    private static void appendRow(DuckDBAppender app, Stage stage, RelationInfo rel, Object[] values, boolean delete) throws SQLException {
        app.beginRow();
        for (int i = 0; i < values.length; i++) {
            if (values[i] == null) {
                app.appendNull();
            } else {
                DuckTypes.append(app, stage.kinds[i], stage.types[i], rel.codec(i), values[i]);
            }
        }
        app.append(delete);
        app.appendNull();
        for (int k = 0; k < rel.keyIndexes().length; k++) {
            app.appendNull();
        }
        app.endRow();
    }

    /** A run of a table without a key one change at a time, in order ({@link Keyless#sql}); returns how many matched no row. */
    private int applyInOrder(TableRef target, RelationInfo rel, List<ChangeEvent> run, Stage stage) throws SQLException {
        int n = rel.columnCount();
        int keys = rel.keyIndexes().length;
        String[] types = new String[n];
        for (int i = 0; i < n; i++) {
            types[i] = DuckTypes.sqlType(rel.column(i));
        }
        Keyless.Dialect dialect = keylessDialect(rel, types, names);
        Map<String, PreparedStatement> statements = new HashMap<>();
        DuckDBAppender app = null;
        int missed = 0;
        try {
            for (ChangeEvent e : run) {
                switch (e.op()) {
                    case CREATE, READ -> {
                        Object[] after = Keyless.image(e, rel, e.after(), "after");
                        if (app == null) {
                            app = duck.createAppender(names.catalog(), DuckDbSink.STATE_SCHEMA, stage.name);
                        }
                        app.beginRow();
                        for (int i = 0; i < n; i++) {
                            Object v = after[i];
                            if (v == UnchangedToast.INSTANCE) {
                                throw Keyless.unchangedInInsert(target, e);
                            }
                            if (v == null) {
                                app.appendNull();
                            } else {
                                DuckTypes.append(app, stage.kinds[i], stage.types[i], rel.codec(i), v);
                            }
                        }
                        app.append(false);
                        app.appendNull();
                        for (int k = 0; k < keys; k++) {
                            app.appendNull();
                        }
                        app.endRow();
                    }
                    case UPDATE, DELETE -> {
                        if (app != null) {
                            flushInserts(app, stage);
                            app = null;
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
                        int p = 1;
                        if (after != null) {
                            for (int i = 0; i < n; i++) {
                                if (after[i] != UnchangedToast.INSTANCE) {
                                    ps.setString(p++, after[i] == null ? null : DuckTypes.stagedText(stage.types[i], rel.codec(i), after[i]));
                                }
                            }
                        }
                        for (int i = 0; i < n; i++) {
                            if (before[i] != UnchangedToast.INSTANCE) {
                                ps.setString(p++, before[i] == null ? null : DuckTypes.stagedText(stage.types[i], rel.codec(i), before[i]));
                            }
                        }
                        if (ps.executeUpdate() == 0) {
                            missed++;
                        }
                    }
                    default -> throw new MillraceException(MillraceException.Kind.INTERNAL, "unexpected " + e.op()
                            + " in a run of " + target);
                }
            }
            if (app != null) {
                flushInserts(app, stage);
                app = null;
            }
        } finally {
            if (app != null) {
                app.close();
            }
            for (PreparedStatement ps : statements.values()) {
                ps.close();
            }
        }
        return missed;
    }

    private void flushInserts(DuckDBAppender app, Stage stage) throws SQLException {
        app.close();
        execute(stage.insertSql);
        execute("DELETE FROM " + stage.sql);
    }

    /** The keyless path's SQL here: rows by {@code rowid}, values read from text as the column's DuckDB type reads it. */
    private static Keyless.Dialect keylessDialect(RelationInfo rel, String[] types, DuckNames names) {
        return new Keyless.Dialect() {
            @Override
            public String table(TableRef table) {
                return names.of(table);
            }

            @Override
            public String rowId() {
                return "rowid";
            }

            @Override
            public String value(int i) {
                return DuckTypes.fromText(types[i], "CAST(? AS VARCHAR)");
            }

            @Override
            public String matches(int i) {
                return Ident.quote(rel.column(i).name()) + " IS NOT DISTINCT FROM " + DuckTypes.fromText(types[i], "CAST(? AS VARCHAR)");
            }
        };
    }

    private void execute(String sql) throws SQLException {
        try (Statement s = conn.createStatement()) {
            s.execute(sql);
        }
    }
}
