package io.millrace.migrate;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.Ident;
import io.millrace.migrate.SourceCatalog.Column;
import io.millrace.migrate.SourceCatalog.Table;
import io.millrace.migrate.VerifyReport.Divergence;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * Online verification by keyset chunks.
 *
 * <p><b>Position.</b> A pass reads the source in one REPEATABLE READ transaction whose first statement reads
 * {@code pg_current_wal_insert_lsn()}: the snapshot is taken as that statement starts, so every transaction it sees
 * committed before that position {@code P}. The target is read once its durable checkpoint (the sink's
 * {@code flush_lsn}, read in the same target snapshot as the rows) is at or past {@code P}: it then holds everything
 * the source snapshot holds, plus whatever committed after {@code P}. So a chunk can differ only because it really
 * diverged or because it changed after {@code P} ("in flux").
 *
 * <p><b>Re-check.</b> A chunk that differs is compared again row by row, in new rounds (a new source snapshot, the target
 * caught up past it again); a key is divergent only when it differs in every round. A key the load keeps changing
 * converges as soon as one round finds it equal; and a round does not count a key that changed on the source while it
 * ran (its row version, {@code xmin}, read again after the target, is not the one compared), so a row changed faster than
 * the target applies is in flux, not divergent. INV: COVER — chunks tile the key space (first open below, last open
 * above), so every row is in exactly one chunk.
 *
 * <p><b>Repair.</b> A divergent chunk is copied again while the target follows: in one target transaction with
 * {@code session_replication_role = replica}, the table is locked against the sink's writes (SHARE ROW EXCLUSIVE), the
 * chunk's rows are read from the source as committed now, the target's rows of that key range are deleted and the
 * source's inserted. A change committed after the read reaches the target after the lock is released, and a change
 * committed before it but not yet applied carries a row no newer than the one copied; the stream's later changes
 * bring it forward, so nothing is lost. A row the repair would delete on the target without bringing it from the source's
 * range, while the source still has it, means the two servers order the key differently: that range is not repaired
 * ({@link #stillOnTheSource}).
 *
 * <p>Threads: one caller at a time.
 */
final class Verifier {
    private static final Logger LOG = LoggerFactory.getLogger(Verifier.class);

    /** One chunk: key bounds as text, {@code null} for open (below / above). Covers {@code lo < key <= hi}. */
    record Chunk(List<String> lo, List<String> hi) {
    }

    /** The oldest transaction the current snapshot may not see (epoch-extended): every older row version was in it. */
    private static final String HORIZON = "SELECT txid_snapshot_xmin(txid_current_snapshot())";

    private final Endpoints ends;
    private final PassStore passes;
    private final int chunkRows;
    private final int rounds;
    private final Duration catchUpTimeout;

    Verifier(Endpoints ends, int chunkRows, int rounds, Duration catchUpTimeout) {
        this.ends = ends;
        this.passes = new PassStore(ends.target.stateSchema());
        this.chunkRows = chunkRows;
        this.rounds = rounds;
        this.catchUpTimeout = catchUpTimeout;
    }

    /** What a comparison found so far. */
    private static final class Tally {
        final List<Divergence> divergent = new ArrayList<>();
        final List<String> skipped = new ArrayList<>();
        long chunks;
        long rows;
        long rechecked;
        long unchanged;

        /** Compares {@code c} again row by row; a divergence when keys still differ. */
        void recheck(Verifier v, Connection src, Connection tgt, Table t, Chunk c) throws SQLException, InterruptedException {
            recheck(v, src, tgt, t, List.of(c));
        }

        /**
         * Compares {@code chunks} again row by row, {@link #RECHECK_ROWS} rows' worth of chunks at a time (one source snapshot
         * and one wait for the target per group: one chunk at a time, a verify under pgbench at 500 transactions/s took
         * 274 s for 500,000 rows, 483 of its 501 chunks re-checked one by one); a divergence for each whose keys still differ.
         */
        void recheck(Verifier v, Connection src, Connection tgt, Table t, List<Chunk> chunks) throws SQLException, InterruptedException {
            int group = Math.max(1, RECHECK_ROWS / v.chunkRows);
            for (int from = 0; from < chunks.size(); from += group) {
                List<Chunk> some = chunks.subList(from, Math.min(chunks.size(), from + group));
                rechecked += some.size();
                Map<Chunk, Set<String>> found = v.recheck(src, tgt, t, some);
                for (Chunk c : some) {
                    Set<String> keys = found.get(c);
                    if (!keys.isEmpty()) {
                        divergent.add(new Divergence(t.ref().toString(), c.lo(), c.hi(), keys.size(),
                                List.copyOf(keys).subList(0, Math.min(10, keys.size())), false));
                    }
                }
            }
        }
    }

    /** About how many rows a group of re-checked chunks holds (their rows' hashes are held in memory: INV: BOUNDED). */
    private static final int RECHECK_ROWS = 20_000;

    /**
     * A full pass of {@code tables}, recorded (each table's chunks and horizons) for {@link #sinceLastPass}; with
     * {@code repair}, divergent chunks are copied again.
     */
    VerifyReport run(List<Table> tables, boolean repair) throws SQLException, InterruptedException {
        return run(tables, repair, false);
    }

    /**
     * As {@link #run(List, boolean)}; {@code fenced}: the source is fenced and the target holds every change before the
     * fence (state FENCED, a cutover stopped on a difference), so nothing is in flux: a table without a key is compared as
     * a whole, and with {@code repair} copied again whole when it differs.
     */
    VerifyReport run(List<Table> asRead, boolean repair, boolean fenced) throws SQLException, InterruptedException {
        long started = System.nanoTime();
        Tally tally = new Tally();
        List<Divergence> divergent;
        List<ColumnDrift.Drift> drift;
        try (Connection src = ends.source(); Connection tgt = ends.target(false)) {
            List<Table> tables = KeyOrder.bytewise(src, tgt, asRead);
            drift = ColumnDrift.find(src, tgt, tables);
            if (repair && !drift.isEmpty()) {
                try (Connection rt = ends.target(true)) {
                    LOG.info("verify: column definitions made the source's on the target: {}", ColumnDrift.repair(rt, drift));
                }
            }
            for (Table t : tables) {
                if (!t.hasKey() && fenced) {
                    whole(src, tgt, t, tally);
                    continue;
                }
                if (!t.hasKey()) {
                    tally.skipped.add(t.ref() + " (no primary key: compared as a whole by 'millrace migrate cutover --verify', with"
                            + " the source fenced)");
                    continue;
                }
                if (!repair && drift.stream().anyMatch(d -> d.table().equals(t.ref()))) {
                    tally.skipped.add(t.ref() + " (its column definitions differ: 'millrace migrate verify --repair' makes them the"
                            + " source's, then compares and repairs its rows)");
                    continue;
                }
                fullPass(src, tgt, t, tally);
            }
            divergent = tally.divergent;
            if (repair && !divergent.isEmpty()) {
                List<Divergence> repaired = new ArrayList<>();
                try (Connection rt = ends.target(true)) {
                    for (Divergence d : divergent) {
                        Table t = tables.stream().filter(x -> x.ref().toString().equals(d.table())).findFirst().orElseThrow();
                        if (!t.hasKey()) {
                            copyWhole(src, rt, t); // fenced: the source's rows are final, and the target holds no change to come
                            passes.repaired(tgt, d.table(), new Chunk(null, null));
                            repaired.add(new Divergence(d.table(), null, null, d.keys(), d.sample(), true));
                            continue;
                        }
                        copyChunk(src, rt, t, new Chunk(d.from(), d.to()));
                        passes.repaired(tgt, d.table(), new Chunk(d.from(), d.to()));
                        repaired.add(new Divergence(d.table(), d.from(), d.to(), d.keys(), d.sample(), true));
                    }
                }
                divergent = repaired;
            }
            if (repair && !drift.isEmpty()) {
                try (Connection rt = ends.target(true)) {
                    ColumnDrift.notNulls(rt, drift); // once the rows are equal: the rows that kept NULL have the source's values
                }
            }
        }
        return new VerifyReport(tally.chunks, tally.rows, tally.rechecked, divergent, tally.skipped,
                Duration.ofNanos(System.nanoTime() - started), 0, drift.stream().map(Object::toString).toList(),
                repair && !drift.isEmpty());
    }

    /** One table's pass, its re-checks, and the record of it (a chunk that differed at first is recorded as such). */
    private void fullPass(Connection src, Connection tgt, Table t, Tally tally) throws SQLException, InterruptedException {
        Pass p = pass(src, tgt, t);
        tally.chunks += p.chunks.size();
        tally.rows += p.rows;
        tally.recheck(this, src, tgt, t, p.differing);
        long[] rows = new long[p.chunks.size()];
        for (int i = 0; i < rows.length; i++) {
            Chunk c = p.chunks.get(i);
            boolean divergent = tally.divergent.stream().anyMatch(d -> d.table().equals(t.ref().toString())
                    && Objects.equals(d.from(), c.lo()) && Objects.equals(d.to(), c.hi()));
            rows[i] = divergent ? PassStore.DIVERGENT : p.differing.contains(c) ? PassStore.DIFFERED : p.counts.get(i);
        }
        passes.save(tgt, t.ref().toString(), new PassStore.Pass(p.sourceHorizon, p.targetHorizon[0], p.chunks, rows, null));
    }

    /** Beyond this many transactions a recorded horizon is not trusted (32-bit xid comparisons by age). */
    private static final long HORIZON_AGE_LIMIT = 1_000_000_000L;

    /**
     * The cutover's comparison, with the source fenced and the target past the fence marker (nothing in flux): each
     * table's chunks as its last full pass recorded them ({@link PassStore}); a chunk whose rows no transaction has
     * written since on either side, and that holds the recorded number of rows on both, is equal still and not hashed;
     * the others are compared, row by row where they differ. A table without a recorded pass gets a full one.
     */
    VerifyReport sinceLastPass(List<Table> asRead) throws SQLException, InterruptedException {
        long started = System.nanoTime();
        Tally tally = new Tally();
        try (Connection src = ends.source(); Connection tgt = ends.target(false)) {
            for (Table t : KeyOrder.bytewise(src, tgt, asRead)) {
                if (!t.hasKey()) {
                    whole(src, tgt, t, tally); // nothing in flux: a table without a key is compared as a whole
                    continue;
                }
                PassStore.Pass rec = passes.load(tgt, t.ref().toString());
                if (rec == null || tooOld(src, rec.sourceHorizon()) || tooOld(tgt, rec.targetHorizon())) {
                    fullPass(src, tgt, t, tally);
                    continue;
                }
                int compared = 0;
                for (int i = 0; i < rec.chunks().size(); i++) {
                    Chunk c = rec.chunks().get(i);
                    long[] s = written(src, t, c, rec.sourceHorizon());
                    long[] d = written(tgt, t, c, rec.targetHorizon());
                    tally.chunks++;
                    tally.rows += s[0];
                    long was = rec.rows()[i];
                    if (was >= 0 && s[0] == was && d[0] == was && s[1] == 0 && d[1] == 0) {
                        tally.unchanged++; // INV: COVER — every row is in one recorded chunk, and none of them changed
                        continue;
                    }
                    compared++;
                    if (!java.util.Arrays.equals(hash(src, t, c), hash(tgt, t, c))) {
                        tally.recheck(this, src, tgt, t, c);
                    }
                }
                LOG.info("verify {} since its last pass: {} chunk(s), {} compared (changed since), the rest unchanged", t.ref(),
                        rec.chunks().size(), compared);
            }
            // recorded, so that a cutover run again without --verify does not go past what this one found
            for (Divergence d : tally.divergent) {
                passes.divergent(tgt, d.table(), new Chunk(d.from(), d.to()));
            }
        }
        return new VerifyReport(tally.chunks, tally.rows, tally.rechecked, tally.divergent, tally.skipped,
                Duration.ofNanos(System.nanoTime() - started), tally.unchanged, List.of(), false);
    }

    private static boolean tooOld(Connection c, long horizon) throws SQLException {
        return Long.parseLong(Planner.one(c, "SELECT age(" + Ident.literal(Long.toString(horizon % (1L << 32))) + "::xid)"))
                > HORIZON_AGE_LIMIT;
    }

    /**
     * {@code [rows, rows written at or after horizon]} of a chunk: a row version whose {@code xmin} is not older than the
     * horizon may have been written after the pass read the chunk.
     */
    private static long[] written(Connection c, Table t, Chunk ch, long horizon) throws SQLException {
        String sql = "SELECT count(*), count(*) FILTER (WHERE age(r.xmin) <= age(CAST(? AS xid))) FROM " + t.ref().sql() + " r"
                + where(t, ch, "r");
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, Long.toString(horizon % (1L << 32)));
            bindRange(ps, ch, 2);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new long[] {rs.getLong(1), rs.getLong(2)};
            }
        }
    }

    /** The chunks of one pass, each one's source row count, those that differed, and each side's horizon. */
    private record Pass(List<Chunk> chunks, List<Long> counts, long rows, List<Chunk> differing, long sourceHorizon,
                        long[] targetHorizon) {
    }

    private Pass pass(Connection src, Connection tgt, Table t) throws SQLException, InterruptedException {
        List<Chunk> chunks = new ArrayList<>();
        List<String[]> srcHashes = new ArrayList<>();
        Lsn p;
        long rows = 0;
        long sourceHorizon;
        src.setAutoCommit(false);
        try (Statement s = src.createStatement()) {
            s.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
            p = lsn(src, "SELECT pg_current_wal_insert_lsn()");
            sourceHorizon = Long.parseLong(Planner.one(src, HORIZON)); // the snapshot's: its first statement took it
            List<String> lo = null;
            while (true) {
                List<String> hi = boundary(src, t, lo);
                Chunk c = new Chunk(lo, hi);
                chunks.add(c);
                srcHashes.add(hash(src, t, c));
                rows += Long.parseLong(srcHashes.get(srcHashes.size() - 1)[0]);
                if (hi == null) {
                    break;
                }
                lo = hi;
            }
        } finally {
            src.commit();
            src.setAutoCommit(true);
        }
        List<Chunk> differing = new ArrayList<>();
        long[] targetHorizon = new long[1];
        inTargetSnapshotPast(tgt, p, () -> {
            targetHorizon[0] = Long.parseLong(Planner.one(tgt, HORIZON));
            for (int i = 0; i < chunks.size(); i++) {
                if (!java.util.Arrays.equals(srcHashes.get(i), hash(tgt, t, chunks.get(i)))) {
                    differing.add(chunks.get(i));
                }
            }
        });
        LOG.info("verify {}: {} chunk(s), {} row(s) at source position {}, {} differing", t.ref(), chunks.size(), rows, p, differing.size());
        List<Long> counts = srcHashes.stream().map(h -> Long.parseLong(h[0])).toList();
        return new Pass(chunks, counts, rows, differing, sourceHorizon, targetHorizon);
    }

    /**
     * For each of {@code chunks}, the keys that differ in every one of {@link #rounds} rounds (empty: equal, or in flux);
     * each round reads them all in one source snapshot and one target snapshot.
     */
    private Map<Chunk, Set<String>> recheck(Connection src, Connection tgt, Table t, List<Chunk> chunks)
            throws SQLException, InterruptedException {
        Map<Chunk, Set<String>> suspects = new LinkedHashMap<>();
        List<Chunk> open = new ArrayList<>(chunks);
        for (int r = 0; r < rounds && !open.isEmpty(); r++) {
            if (r > 0) {
                Thread.sleep(200);
            }
            Map<Chunk, Map<String, String>> s = new LinkedHashMap<>();
            Map<Chunk, Map<String, String>> versions = new LinkedHashMap<>();
            Lsn p;
            src.setAutoCommit(false);
            try (Statement st = src.createStatement()) {
                st.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
                p = lsn(src, "SELECT pg_current_wal_insert_lsn()");
                for (Chunk c : open) {
                    s.put(c, rowHashes(src, t, c));
                    versions.put(c, rowVersions(src, t, c));
                }
            } finally {
                src.commit();
                src.setAutoCommit(true);
            }
            Map<Chunk, Map<String, String>> target = new LinkedHashMap<>();
            inTargetSnapshotPast(tgt, p, () -> {
                for (Chunk c : open) {
                    target.put(c, rowHashes(tgt, t, c));
                }
            });
            for (Chunk c : open) {
                Set<String> differ = differing(s.get(c), target.get(c), versions.get(c), rowVersions(src, t, c));
                Set<String> had = suspects.get(c);
                if (had == null) {
                    suspects.put(c, differ);
                } else {
                    had.retainAll(differ);
                }
            }
            open.removeIf(c -> suspects.get(c).isEmpty()); // in flux: it changed after the snapshot, and one round found it equal
        }
        return suspects;
    }

    /**
     * The keys whose row differs between the source's hashes {@code s} and the target's, leaving out those written in flux.
     * The target was read at a checkpoint F at or past the source snapshot's position P; the source's row versions read
     * after it ({@code now}) are at a position past F. A key whose version changed (or that appeared or went) since P was
     * written between the two snapshots: this round cannot tell whether it differs, so it is no evidence. A key whose
     * version is the same has had one value from P through F, which the target must hold.
     */
    private static Set<String> differing(Map<String, String> s, Map<String, String> target, Map<String, String> versions,
                                         Map<String, String> now) {
        Set<String> differ = new TreeSet<>();
        for (Map.Entry<String, String> e : s.entrySet()) {
            if (!Objects.equals(e.getValue(), target.get(e.getKey()))) {
                differ.add(e.getKey());
            }
        }
        for (String k : target.keySet()) {
            if (!s.containsKey(k)) {
                differ.add(k);
            }
        }
        differ.removeIf(k -> !Objects.equals(versions.get(k), now.get(k)));
        return differ;
    }

    private interface SqlWork {
        void run() throws SQLException;
    }

    /** Runs {@code work} in a target REPEATABLE READ transaction whose checkpoint is at or past {@code p}. */
    private void inTargetSnapshotPast(Connection tgt, Lsn p, SqlWork work) throws SQLException, InterruptedException {
        long deadline = System.nanoTime() + catchUpTimeout.toNanos();
        while (true) {
            tgt.setAutoCommit(false);
            try (Statement s = tgt.createStatement()) {
                s.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
                String at = ends.targetFlushLsn(tgt);
                if (at != null && !p.isAfter(Lsn.parse(at))) {
                    work.run();
                    return;
                }
            } finally {
                tgt.commit();
                tgt.setAutoCommit(true);
            }
            if (System.nanoTime() > deadline) {
                try (Connection src = ends.source()) {
                    if (!followed(src)) {
                        throw notFollowing();
                    }
                }
                throw new MillraceException(Kind.SINK, "verify: the target's checkpoint (destination '" + ends.target.name()
                        + "') did not reach source position " + p + " within " + catchUpTimeout.toSeconds() + " s. Is the"
                        + " migration following ('millrace migrate run')?");
            }
            Thread.sleep(50);
        }
    }

    private static Lsn lsn(Connection c, String sql) throws SQLException {
        return Lsn.parse(Planner.one(c, sql));
    }

    /** The upper bound of the chunk after {@code lo}, or null when it is the last (open above). */
    private List<String> boundary(Connection c, Table t, List<String> lo) throws SQLException {
        // Ordered by the qualified columns: a bare name would order by the output column, the key's text.
        StringBuilder sql = new StringBuilder("SELECT ");
        for (int i = 0; i < t.key().size(); i++) {
            sql.append(i == 0 ? "" : ", ").append("r.").append(Ident.quote(t.key().get(i))).append("::text");
        }
        sql.append(" FROM ").append(t.ref().sql()).append(" r").append(where(t, new Chunk(lo, null), "r"))
                .append(" ORDER BY ").append(keyOf(t, "r")).append(" OFFSET ").append(chunkRows - 1).append(" LIMIT 1");
        try (PreparedStatement ps = c.prepareStatement(sql.toString())) {
            if (lo != null) {
                bind(ps, 1, lo);
            }
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null; // INV: COVER — the last chunk is open above
                }
                List<String> hi = new ArrayList<>();
                for (int i = 1; i <= t.key().size(); i++) {
                    hi.add(rs.getString(i));
                }
                return hi;
            }
        }
    }

    /**
     * Compares a table without a key as a whole — its row count and the sums of its rows' md5 halves (each half a
     * 64-bit number): equal multisets of rows give equal sums, in one pass with no sort and no value that grows with the
     * table (a {@code string_agg} of the hashes stops at PostgreSQL's 1 GB per value, about 33M rows) — when nothing is
     * in flux (the source fenced, the target past the fence marker). A difference is one {@link Divergence#whole}
     * naming both counts.
     */
    private static void whole(Connection src, Connection tgt, Table t, Tally tally) throws SQLException {
        String sql = "SELECT count(*), coalesce(sum(('x' || substr(h, 1, 16))::bit(64)::bigint::numeric), 0)::text || '/'"
                + " || coalesce(sum(('x' || substr(h, 17, 16))::bit(64)::bigint::numeric), 0)::text"
                + " FROM (SELECT md5(r::text) AS h FROM " + t.ref().sql() + " r) x";
        String[] a = row(src, sql);
        String[] b = row(tgt, sql);
        tally.chunks++;
        tally.rows += Long.parseLong(a[0]);
        if (!java.util.Arrays.equals(a, b)) {
            tally.divergent.add(Divergence.whole(t.ref().toString(), Long.parseLong(a[0]), Long.parseLong(b[0]), false));
        }
    }

    private static String[] row(Connection c, String sql) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return new String[] {rs.getString(1), rs.getString(2)};
        }
    }

    /** {@code [row count, md5 of the rows' md5s in key order]} of a chunk. */
    private static String[] hash(Connection c, Table t, Chunk ch) throws SQLException {
        String sql = "SELECT count(*), md5(string_agg(md5(r::text), '' ORDER BY " + keyOf(t, "r") + ")) FROM " + t.ref().sql()
                + " r" + where(t, ch, "r");
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bindRange(ps, ch);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new String[] {rs.getString(1), rs.getString(2)};
            }
        }
    }

    /** Key text → the row version's {@code xmin}, for one chunk: a new version of a row has the writer's xid. */
    private static Map<String, String> rowVersions(Connection c, Table t, Chunk ch) throws SQLException {
        return byKey(c, t, ch, "r.xmin::text");
    }

    /** Key text → md5 of the row, for one chunk. */
    private static Map<String, String> rowHashes(Connection c, Table t, Chunk ch) throws SQLException {
        return byKey(c, t, ch, "md5(r::text)");
    }

    /** Key text (the columns' text joined by commas, as re-checks name keys) → {@code value} of the row, in key order. */
    private static Map<String, String> byKey(Connection c, Table t, Chunk ch, String value) throws SQLException {
        StringBuilder key = new StringBuilder();
        for (int i = 0; i < t.key().size(); i++) {
            key.append(i == 0 ? "" : " || ',' || ").append("r.").append(Ident.quote(t.key().get(i))).append("::text");
        }
        Map<String, String> out = new LinkedHashMap<>();
        String sql = "SELECT " + key + ", " + value + " FROM " + t.ref().sql() + " r" + where(t, ch, "r") + " ORDER BY " + keyOf(t, "r");
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bindRange(ps, ch);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getString(1), rs.getString(2));
                }
            }
        }
        return out;
    }

    /** Copies a chunk from the source (as committed now) into the target, under a lock against the sink's writes. */
    /** An INSERT of one row of {@code t} given as its row text ({@code r::text} on the source), generated columns left out. */
    private static String insertRowText(Table t) {
        List<String> cols = new ArrayList<>();
        for (Column c : t.columns()) {
            if (c.generated().isEmpty()) {
                cols.add(c.name());
            }
        }
        StringBuilder fields = new StringBuilder();
        for (String c : cols) {
            fields.append(fields.length() == 0 ? "" : ", ").append("(x.v).").append(Ident.quote(c));
        }
        return "INSERT INTO " + t.ref().sql() + " (" + SourceCatalog.quoteAll(cols) + ") OVERRIDING SYSTEM VALUE SELECT "
                + fields + " FROM (SELECT CAST(? AS " + t.ref().sql() + ") AS v) x";
    }

    /**
     * Replaces every row of {@code t} (a table without a key) on the target by the source's, in one target transaction,
     * reading the source through a cursor in batches (INV: BOUNDED: one batch of rows in memory). Only with the source
     * fenced and the target past the fence marker: no change of the table is in the stream still to be applied.
     */
    private static void copyWhole(Connection src, Connection tgt, Table t) throws SQLException {
        String insert = insertRowText(t);
        boolean srcAuto = src.getAutoCommit();
        tgt.setAutoCommit(false);
        src.setAutoCommit(false); // a cursor: pgjdbc fetches fetchSize rows at a time only inside a transaction
        try (Statement s = tgt.createStatement()) {
            s.execute("LOCK TABLE " + t.ref().sql() + " IN SHARE ROW EXCLUSIVE MODE");
            int deleted = s.executeUpdate("DELETE FROM " + t.ref().sql());
            long copied = 0;
            try (Statement read = src.createStatement(); PreparedStatement ps = tgt.prepareStatement(insert)) {
                read.setFetchSize(WHOLE_BATCH);
                try (ResultSet rs = read.executeQuery("SELECT r::text FROM " + t.ref().sql() + " r")) {
                    while (rs.next()) {
                        ps.setString(1, rs.getString(1));
                        ps.addBatch();
                        if (++copied % WHOLE_BATCH == 0) {
                            ps.executeBatch();
                        }
                    }
                }
                ps.executeBatch();
            }
            tgt.commit();
            LOG.info("verify --repair {} (no key, the source fenced): copied again whole ({} row(s) replaced by {})", t.ref(), deleted,
                    copied);
        } catch (SQLException | RuntimeException | Error e) { // setAutoCommit(true) below would commit a half-done copy
            tgt.rollback();
            throw e;
        } finally {
            tgt.setAutoCommit(true);
            src.rollback();
            src.setAutoCommit(srcAuto);
        }
    }

    /** Whether a process reads the migration's slot: the target follows the source (else it cannot catch up to a pass). */
    private boolean followed(Connection src) throws SQLException {
        try (PreparedStatement ps = src.prepareStatement("SELECT active FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, ends.source.slot());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    /**
     * The target did not catch up and nothing reads the slot: said as such, exit 2 (found by a user: exit 10, the code of a
     * destination that failed to write, with a question).
     */
    private MillraceException notFollowing() {
        return new MillraceException(Kind.CONFIG, "migrate verify: nothing reads the source's slot '" + ends.source.slot() + "', so the"
                + " target does not follow and cannot be compared online. Fix: start 'millrace migrate run' (it goes on from where"
                + " it stopped), then verify again");
    }

    private static final int WHOLE_BATCH = 1000;

    private static void copyChunk(Connection src, Connection tgt, Table t, Chunk ch) throws SQLException {
        String insert = insertRowText(t);
        tgt.setAutoCommit(false);
        try (Statement s = tgt.createStatement()) {
            s.execute("LOCK TABLE " + t.ref().sql() + " IN SHARE ROW EXCLUSIVE MODE"); // the sink waits: nothing applied in between
            List<String> rows = new ArrayList<>();
            Set<String> keys = new java.util.HashSet<>();
            String key = "ROW(" + keyOf(t, "r") + ")::text";
            try (PreparedStatement ps = src.prepareStatement("SELECT r::text, " + key + " FROM " + t.ref().sql() + " r" + where(t, ch, "r"))) {
                bindRange(ps, ch);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        rows.add(rs.getString(1));
                        keys.add(rs.getString(2));
                    }
                }
            }
            int deleted = 0;
            List<String[]> gone = new ArrayList<>(); // deleted on the target, not in the source's range: each key column as text
            StringBuilder each = new StringBuilder();
            for (String k : t.key()) {
                each.append(", r.").append(Ident.quote(k)).append("::text");
            }
            try (PreparedStatement ps = tgt.prepareStatement("DELETE FROM " + t.ref().sql() + " r" + where(t, ch, "r") + " RETURNING "
                    + key + each)) {
                bindRange(ps, ch);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        deleted++;
                        if (!keys.contains(rs.getString(1))) {
                            String[] k = new String[t.key().size()];
                            for (int i = 0; i < k.length; i++) {
                                k[i] = rs.getString(i + 2);
                            }
                            gone.add(k);
                        }
                    }
                }
            }
            stillOnTheSource(src, t, ch, key, gone);
            try (PreparedStatement ps = tgt.prepareStatement(insert)) {
                for (String r : rows) {
                    ps.setString(1, r);
                    ps.addBatch();
                }
                ps.executeBatch();
            }
            tgt.commit();
            LOG.info("verify --repair {}: key range {} .. {} copied again ({} row(s) replaced by {})", t.ref(), bound(ch.lo()),
                    bound(ch.hi()), deleted, rows.size());
        } catch (SQLException | RuntimeException | Error e) { // setAutoCommit(true) below would commit a half-done copy
            tgt.rollback();
            throw e;
        } finally {
            tgt.setAutoCommit(true);
        }
    }

    /**
     * INV: COVER — ranges tile the key space under one order; a row the repair deleted on the target and did not bring
     * from the source's range must then be gone from the source too. When the two servers order the key differently (an enum
     * whose labels are in another order; a text key under another collation is compared in byte order, {@link KeyOrder}), a
     * key range holds other rows on each side, and the repair would delete
     * rows of the target that the source still has and that belong to another range there (found by a user: 'verify
     * --repair' left 500 rows of 4,000, reporting every chunk repaired). Such a range is not repaired: the transaction
     * rolls back, and the error names the keys and why.
     */
    private static void stillOnTheSource(Connection src, Table t, Chunk ch, String key, List<String[]> gone) throws SQLException {
        if (gone.isEmpty()) {
            return;
        }
        // looked up by the key, as the source's types, so that its primary key's index finds them (the sink waits meanwhile)
        List<String> cols = new ArrayList<>();
        List<String> as = new ArrayList<>();
        List<String> arrays = new ArrayList<>();
        for (int i = 0; i < t.key().size(); i++) {
            String k = t.key().get(i);
            String type = t.columns().stream().filter(c -> c.name().equals(k)).findFirst().orElseThrow().type();
            cols.add("r." + Ident.quote(k));
            as.add("u.k" + i + "::" + type);
            arrays.add("?::text[]");
        }
        List<String> kept = new ArrayList<>();
        try (PreparedStatement ps = src.prepareStatement("SELECT " + key + " FROM " + t.ref().sql() + " r JOIN unnest("
                + String.join(", ", arrays) + ") AS u(" + String.join(", ", java.util.stream.IntStream.range(0, t.key().size())
                .mapToObj(i -> "k" + i).toList()) + ") ON (" + String.join(", ", cols) + ") = (" + String.join(", ", as) + ")")) {
            for (int i = 0; i < t.key().size(); i++) {
                int col = i;
                ps.setArray(i + 1, src.createArrayOf("text", gone.stream().map(k -> k[col]).toArray()));
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next() && kept.size() < 10) {
                    kept.add(rs.getString(1));
                }
            }
        }
        if (!kept.isEmpty()) {
            throw new MillraceException(Kind.TARGET_SETUP, "verify --repair " + t.ref() + ": key range " + bound(ch.lo()) + " .. "
                    + bound(ch.hi()) + " holds other rows on the target than on the source, rows the source has in another range"
                    + " (" + String.join(", ", kept) + (gone.size() > kept.size() ? ", ..." : "") + "): the two servers order the key "
                    + t.key() + " differently, so no range of it can be compared or copied again; nothing was changed in this range."
                    + " Fix: make the target order the key as the source does — an enum's labels in the source's order (a label the"
                    + " target has elsewhere cannot be moved: create the type anew in the source's order and change the column to it,"
                    + " ALTER TABLE ... ALTER COLUMN ... TYPE <new> USING <column>::text::<new>), a text key under the source's"
                    + " collation and collation library version — then verify again");
        }
    }

    private static String keyOf(Table t, String alias) {
        List<String> k = new ArrayList<>();
        for (String c : t.key()) {
            // INV: COVER — a key the servers collate differently is ordered alike on both in byte order (KeyOrder)
            k.add(alias + "." + Ident.quote(c) + (t.bytewiseKey().contains(c) ? " COLLATE \"C\"" : ""));
        }
        return String.join(", ", k);
    }

    private static String params(Table t) {
        List<String> p = new ArrayList<>();
        for (String type : t.keyTypes()) {
            p.add("CAST(? AS " + type + ")");
        }
        return String.join(", ", p);
    }

    private static String where(Table t, Chunk ch, String alias) {
        List<String> w = new ArrayList<>();
        if (ch.lo() != null) {
            w.add("(" + keyOf(t, alias) + ") > (" + params(t) + ")");
        }
        if (ch.hi() != null) {
            w.add("(" + keyOf(t, alias) + ") <= (" + params(t) + ")");
        }
        return w.isEmpty() ? "" : " WHERE " + String.join(" AND ", w);
    }

    private static void bindRange(PreparedStatement ps, Chunk ch) throws SQLException {
        bindRange(ps, ch, 1);
    }

    private static void bindRange(PreparedStatement ps, Chunk ch, int from) throws SQLException {
        int i = from;
        if (ch.lo() != null) {
            i = bind(ps, i, ch.lo());
        }
        if (ch.hi() != null) {
            bind(ps, i, ch.hi());
        }
    }

    private static int bind(PreparedStatement ps, int at, List<String> values) throws SQLException {
        for (String v : values) {
            ps.setString(at++, v);
        }
        return at;
    }

    /** A bound for people: {@code (a, b)}, or {@code null} for open. */
    static String bound(List<String> values) {
        return values == null ? null : "(" + String.join(", ", values) + ")";
    }
}
