package io.millrace.cli.crash;

import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.verify.Verifier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The crash test of the streaming core: {@code millrace run} in its own JVM is killed with SIGKILL at
 * random moments under a sustained write load ({@link CrashWorkload}) and started again, {@value
 * #DEFAULT_KILLS} times by default; then it runs once more until the destinations have caught up and
 * is stopped with SIGTERM. Source and destination are two databases of one embedded PostgreSQL 17;
 * the pipeline has a postgres destination and a jsonl destination (1 MB files, so rotation is crossed
 * too), starts with an initial snapshot, and cuts batches small (64 kB, inside transactions at
 * 256 kB), so that 20 000-row transactions span many batches.
 *
 * <h2>Kills</h2>
 * Each kill comes a random 0.3–3 s (seeded {@link Random}; the seed is printed and can be set with
 * {@code -Dmillrace.crash.seed}, the number of kills with {@code -Dmillrace.crash.kills}) after a
 * starting moment:
 * <ul>
 *   <li>kill 1 is aimed at the initial snapshot: it comes as soon as the first snapshot rows have
 *       landed in the postgres destination (plus 0–0.1 s);</li>
 *   <li>odd kills count from the start of the JVM, so they land anywhere: JVM start, preflight, slot
 *       creation, a restarted snapshot, resume, streaming;</li>
 *   <li>even kills count from the moment the engine logs that it streams, so that half the kills hit
 *       the stream under load whatever the JVM's start-up time on a busy machine.</li>
 * </ul>
 * Random kills can land in a restarted snapshot too; after {@value #MAX_SNAPSHOT_KILLS} kills in
 * snapshots, a run whose snapshot has not landed yet is let finish it first and its delay counts from
 * there. Each kill must end the JVM with status 137 (128 + SIGKILL). Before
 * each restart the test waits until the server has noticed the dead walsender client (the slot is no
 * longer active), as a supervisor that restarts after a pause would.
 *
 * <h2>What must hold</h2>
 * <ul>
 *   <li><b>INV: DURABLE</b> — sampled every ~50 ms for the whole test ({@link DurableSampler}): the
 *       slot's {@code confirmed_flush_lsn}, read first, is at or before the flush LSN of the postgres
 *       checkpoint row and of the jsonl {@code checkpoint.json}, read after.</li>
 *   <li><b>INV: RESUME, exactly once</b> (postgres) — at the end every table of the destination equals
 *       the source row for row ({@link Verifier}), and {@code txlog}, where each source transaction
 *       inserted one row with a unique {@code tx_id}, holds no {@code tx_id} twice (also checked after
 *       every kill).</li>
 *   <li><b>INV: RESUME, at least once with recognisable repeats</b> (jsonl) — the files hold a
 *       snapshot part, then the stream. The snapshot part may hold rows of interrupted copies: each
 *       re-copy begins with a {@code t} event ({@code source.snapshot = "true"}) per table. In the stream,
 *       a repeat is an event whose position {@code (source.commit_lsn, source.ordinal)} is not after the
 *       highest position before it in the files: it must be an identical copy of an earlier event, and
 *       repeats may only come as the sink documents them (on open it cuts the newest file back to the
 *       checkpointed offset; only a crash inside a batch that rotated leaves events at the end of the
 *       full file that are written again at the start of the next): a run that starts on a file's first
 *       line and goes on without a gap up to the highest position seen (rules in {@link JsonlReplay}).
 *       Every other position appears once, in strictly increasing order.
 *       Replaying the files as a consumer would ({@link JsonlReplay}: repeats dropped) gives exactly the source tables,
 *       and every source {@code tx_id} is in a {@code c} event, or an {@code r} event of the last copy,
 *       exactly once. (One excused irregularity, a PostgreSQL limitation and not a crash effect: updates
 *       of rows that a copy missed because a TRUNCATE committed after the consistent point — see
 *       {@link JsonlReplay}.)</li>
 *   <li>After SIGTERM the engine exits with status 0 and leaves no bytes after the jsonl checkpoint.</li>
 * </ul>
 * With {@code -Dmillrace.crash.threaddump=true} a thread dump of the engine is taken before each kill
 * ({@code target/crash/engine-NN.threads.txt}).
 * A summary (kills per phase, events, repeats, the largest durable − confirmed gap) is printed; each
 * run's log is in {@code target/crash/engine-NN.log}.
 */
class CrashIT {
    static final int DEFAULT_KILLS = 14;
    static final int MAX_SNAPSHOT_KILLS = 2;
    static final String SRC = "crash_src";
    static final String DST = "crash_dst";
    static final String SLOT = "crash";
    static final String PG_DEST = "replica";
    static final String FILES_DEST = "files";
    private static final int SEED_ACCOUNTS = 20_000;
    private static final int SEED_LEDGER = 10_000;
    /** What the replication reader logs once it streams. */
    static final String STREAMING_LINE = "streaming from slot";

    private static EmbeddedPg pg;

    @BeforeAll
    static void startServer() {
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase(SRC);
        pg.createDatabase(DST);
    }

    @AfterAll
    static void stopServer() {
        if (pg != null) {
            pg.close();
        }
    }

    /** One kill: when, in which phase, and the exit status. */
    record Kill(int n, long afterMillis, String phase, boolean snapshotRunning, int exitCode) {
    }

    @Test
    void survivesRandomSigkillsUnderWriteLoad() throws Exception {
        long seed = Long.getLong("millrace.crash.seed", System.nanoTime());
        int kills = Integer.getInteger("millrace.crash.kills", DEFAULT_KILLS);
        System.out.printf("CrashIT: seed %d, %d kills (replay with -Dmillrace.crash.seed=%d -Dmillrace.crash.kills=%d)%n",
                seed, kills, seed, kills);
        long t0 = System.currentTimeMillis();
        Random rnd = new Random(seed);
        Path work = Path.of("target", "crash").toAbsolutePath();
        deleteTree(work);
        Path events = work.resolve("events");
        Files.createDirectories(events);
        Path config = work.resolve("config.yaml");
        Files.writeString(config, config(events), StandardCharsets.UTF_8);

        CrashWorkload load = new CrashWorkload(pg, SRC, seed * 31 + 7);
        load.createAndSeed(SEED_ACCOUNTS, SEED_LEDGER, 100);
        Thread loadThread = new Thread(load, "crash-load");
        DurableSampler sampler = new DurableSampler(pg, SRC, DST, SLOT, PG_DEST, events.resolve("checkpoint.json"));
        Thread samplerThread = new Thread(sampler, "crash-sampler");
        samplerThread.setDaemon(true);
        loadThread.start();
        samplerThread.start();

        List<Kill> done = new ArrayList<>();
        long maxIdleWait = 0;
        int finalExit;
        long catchUpMillis;
        EngineProcess engine = null;
        try (Connection src = pg.connect(SRC); Connection dst = pg.connect(DST)) {
            for (int i = 1; i <= kills; i++) {
                maxIdleWait = Math.max(maxIdleWait, awaitSlotIdle(src));
                int snapshotKills = (int) done.stream().filter(Kill::snapshotRunning).count();
                engine = EngineProcess.start(config, work.resolve(String.format("engine-%02d.log", i)));
                long delay;
                if (i == 1) {
                    awaitFirstSnapshotRows(engine, dst);
                    delay = engine.millisSinceStart() + rnd.nextInt(100);
                } else {
                    delay = 300 + rnd.nextInt(2700);
                    if (i % 2 == 0) {
                        awaitLog(engine, STREAMING_LINE, "streaming");
                        delay += engine.millisSinceStart();
                    } else if (snapshotKills >= MAX_SNAPSHOT_KILLS && !snapshotLanded(dst, events)) {
                        awaitSnapshotLanded(engine, dst, events);
                        delay += engine.millisSinceStart();
                    }
                }
                while (engine.millisSinceStart() < delay && engine.alive()) {
                    Thread.sleep(Math.max(1, Math.min(20, delay - engine.millisSinceStart())));
                }
                assertThat(engine.alive()).as("engine run %d ended by itself before the kill; log %s:%n%s", i, engine.log(),
                        engine.logTail(40)).isTrue();
                String phase = phase(engine.logText());
                if (Boolean.getBoolean("millrace.crash.threaddump")) {
                    engine.threadDump(); // diagnosis: what the engine was doing when it was killed
                }
                long at = engine.millisSinceStart();
                int code = engine.kill();
                assertThat(code).as("exit status of run %d after SIGKILL; log %s", i, engine.log())
                        .isEqualTo(EngineProcess.SIGKILL_EXIT);
                DurableSampler.Durable cp = DurableSampler.postgresCheckpoint(dst, PG_DEST);
                boolean snapshotRunning = cp == null || "RUNNING".equals(cp.snapshotState());
                done.add(new Kill(i, at, phase, snapshotRunning, code));
                System.out.printf("CrashIT: kill %2d after %5d ms in %-9s (postgres checkpoint: %s)%n", i, at, phase, cp);
                assertThat(duplicateTxIds(dst)).as("txlog tx_ids applied twice in the postgres destination after kill %d", i)
                        .isEmpty();
                assertThat(sampler.violations()).as("INV: DURABLE").isEmpty();
                load.throwIfFailed();
            }
            engine = null;
            load.stop();
            loadThread.join();
            load.throwIfFailed();

            // The last run: catch up, then stop it as an operator would.
            maxIdleWait = Math.max(maxIdleWait, awaitSlotIdle(src));
            long c0 = System.currentTimeMillis();
            engine = EngineProcess.start(config, work.resolve("engine-final.log"));
            awaitEqual(engine, src, dst);
            awaitJsonlCaughtUp(engine, dst, events);
            catchUpMillis = System.currentTimeMillis() - c0;
            finalExit = engine.terminate(60);
            EngineProcess last = engine;
            engine = null;

            sampler.stop();
            samplerThread.join(5_000);
            List<Verifier.TableResult> results = Verifier.compare(src, dst, CrashWorkload.TABLES, null);
            JsonlReplay replay = replay(src, events);
            // the postgres sink only warns when a keyless update/delete finds no row: after a crash that is a divergence
            List<String> unmatched = logLines(work, "matched no row");

            long kSnap = done.stream().filter(Kill::snapshotRunning).count();
            Map<String, Long> byPhase = new TreeMap<>();
            done.forEach(k -> byPhase.merge(k.phase(), 1L, Long::sum));
            System.out.printf("CrashIT summary: seed %d; %d kills (%s; %d with the snapshot not yet landed), all exit 137;"
                            + " final SIGTERM exit %d; %d source transactions (%d large, %d truncates); catch-up %d ms;"
                            + " slot idle wait max %d ms; postgres destination: %s, txlog tx_ids twice: %s, keyless changes that"
                            + " matched no row: %d;"
                            + " jsonl: %d events in %d files (%d snapshot incl. %d re-copy truncates, %d streamed, of which %d repeats"
                            + " in %d runs after a crash inside a rotating batch), out-of-order=%d, anomalies=%d, changes excused by"
                            + " a TRUNCATE during the copy=%d; DURABLE: %s; total %d s%n",
                    seed, done.size(), byPhase, kSnap, finalExit, load.committed(), load.bigCommitted(), load.truncates(),
                    catchUpMillis, maxIdleWait, results.stream().allMatch(Verifier.TableResult::equal) ? "equals the source"
                            : "DIFFERS", duplicateTxIds(dst), unmatched.size(), replay.events, replay.files, replay.snapshotEvents,
                    replay.snapshotTruncates, replay.streamEvents, replay.repeats, replay.repeatRuns, replay.regressions,
                    replay.anomalyCount, replay.excusedByTruncate, sampler.summary(), (System.currentTimeMillis() - t0) / 1000);

            // INV: DURABLE
            assertThat(sampler.errors()).as("sampler errors").isEmpty();
            assertThat(sampler.violations()).as("INV: DURABLE: confirmed_flush_lsn <= every durable checkpoint").isEmpty();
            assertThat(sampler.checked()).as("samples that checked INV: DURABLE").isGreaterThan(100);

            // INV: RESUME (postgres, exactly once)
            assertThat(results).as("destination equals source").allMatch(Verifier.TableResult::equal);
            assertThat(duplicateTxIds(dst)).as("txlog tx_ids applied twice in the postgres destination").isEmpty();
            assertThat(count(dst, "txlog")).isEqualTo(count(src, "txlog")).isEqualTo(load.committed() + 1);
            assertThat(unmatched).as("keyless updates/deletes that found no row in the postgres destination").isEmpty();

            // INV: RESUME (jsonl, at least once, repeats only as documented)
            assertJsonl(replay, src, events);

            assertThat(finalExit).as("exit status after SIGTERM (0: stopped on request, README 'Exit codes'); log %s:%n%s",
                    last.log(), last.logTail(10)).isEqualTo(0);
            assertThat(kSnap).as("kills during the initial snapshot").isGreaterThanOrEqualTo(1);
            assertThat(byPhase.getOrDefault("streaming", 0L)).as("kills while streaming").isGreaterThanOrEqualTo(kills / 4);

            // The sampler must see a violation when there is one: move the (idle) slot past the checkpoints.
            pg.execute(SRC, "INSERT INTO small VALUES (-1, 'after the test') ON CONFLICT DO NOTHING");
            pg.execute(SRC, "SELECT pg_replication_slot_advance('" + SLOT + "', pg_current_wal_lsn())");
            DurableSampler probe = new DurableSampler(pg, SRC, DST, SLOT, PG_DEST, events.resolve("checkpoint.json"));
            probe.stop();
            probe.sampleOnce();
            assertThat(probe.violations()).as("the sampler reports a slot advanced past the checkpoints").hasSize(1);
        } finally {
            if (engine != null) {
                engine.destroyQuietly();
            }
            load.stop();
            sampler.stop();
            loadThread.join(10_000);
        }
    }

    /** Lines of every engine log in {@code dir} that contain {@code text}, prefixed with the log's name. */
    static List<String> logLines(Path dir, String text) throws IOException {
        List<String> out = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (Path log : s.filter(p -> p.getFileName().toString().endsWith(".log")).sorted().toList()) {
                for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
                    if (line.contains(text)) {
                        out.add(log.getFileName() + ": " + line);
                    }
                }
            }
        }
        return out;
    }

    private static String config(Path events) {
        return String.join("\n",
                "name: crash",
                "source:",
                "  host: 127.0.0.1",
                "  port: " + pg.port(),
                "  database: " + SRC,
                "  user: postgres",
                "  slot: " + SLOT,
                "  publication: crash",
                "  tables: [" + String.join(", ", CrashWorkload.TABLES.stream().map(TableRef::toString).toList()) + "]",
                "  status_interval_ms: 1000",
                "snapshot:",
                "  mode: initial",
                "  readers: 2",
                "  chunk_pages: 128",
                "destinations:",
                "  - name: " + PG_DEST,
                "    type: postgres",
                "    host: 127.0.0.1",
                "    port: " + pg.port(),
                "    database: " + DST,
                "    user: postgres",
                "  - name: " + FILES_DEST,
                "    type: jsonl",
                "    directory: " + events,
                "    rotate_mb: 1",
                "pipeline:",
                "  memory_budget_mb: 4",
                "  batch_kb: 64",
                "  linger_ms: 50",
                "");
    }

    /** The last phase the engine's log shows it reached. */
    static String phase(String log) {
        if (log.contains("streaming from")) {
            return "streaming";
        }
        if (log.contains("snapshot of")) {
            return "snapshot";
        }
        return "startup";
    }

    /** Waits until no process streams from the slot (the server noticed the killed client); returns the wait. */
    static long awaitSlotIdle(Connection src) throws SQLException, InterruptedException {
        return awaitSlotIdle(src, SLOT);
    }

    /** Waits until no process streams from {@code slot}; returns the wait. */
    static long awaitSlotIdle(Connection src, String slot) throws SQLException, InterruptedException {
        long start = System.currentTimeMillis();
        while (true) {
            try (PreparedStatement ps = src.prepareStatement("SELECT active FROM pg_replication_slots WHERE slot_name = ?")) {
                ps.setString(1, slot);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next() || !rs.getBoolean(1)) {
                        return System.currentTimeMillis() - start;
                    }
                }
            }
            assertThat(System.currentTimeMillis() - start).as("slot '%s' still active 30 s after the kill", slot).isLessThan(30_000);
            Thread.sleep(10);
        }
    }

    static void awaitFirstSnapshotRows(EngineProcess engine, Connection dst) throws SQLException, InterruptedException {
        while (true) {
            DurableSampler.Durable cp = DurableSampler.postgresCheckpoint(dst, PG_DEST);
            if (cp != null && "RUNNING".equals(cp.snapshotState()) && hasRows(dst, "accounts")) {
                return;
            }
            assertThat(cp == null || "RUNNING".equals(cp.snapshotState()))
                    .as("the first snapshot landed before the test saw its first rows: seed more rows (SEED_ACCOUNTS)").isTrue();
            assertThat(engine.alive()).as("engine ended during its first start; log %s:%n%s", engine.log(), engine.logTail(40)).isTrue();
            assertThat(engine.millisSinceStart()).as("no snapshot rows after 60 s; log %s", engine.log()).isLessThan(60_000);
            Thread.sleep(5);
        }
    }

    /** Waits until the engine's log holds {@code line} (the engine must stay alive meanwhile). */
    static void awaitLog(EngineProcess engine, String line, String what) throws InterruptedException {
        while (!engine.logText().contains(line)) {
            assertThat(engine.alive()).as("engine ended before %s; log %s:%n%s", what, engine.log(), engine.logTail(40)).isTrue();
            assertThat(engine.millisSinceStart()).as("engine not %s after 120 s; log %s", what, engine.log()).isLessThan(120_000);
            Thread.sleep(20);
        }
    }

    static boolean snapshotLanded(Connection dst, Path events) throws SQLException, IOException {
        DurableSampler.Durable a = DurableSampler.postgresCheckpoint(dst, PG_DEST);
        DurableSampler.Durable b = DurableSampler.jsonlCheckpoint(events.resolve("checkpoint.json"));
        return a != null && b != null && "DONE".equals(a.snapshotState()) && "DONE".equals(b.snapshotState());
    }

    static void awaitSnapshotLanded(EngineProcess engine, Connection dst, Path events) throws Exception {
        while (!snapshotLanded(dst, events)) {
            assertThat(engine.alive()).as("engine ended during a snapshot; log %s:%n%s", engine.log(), engine.logTail(40)).isTrue();
            assertThat(engine.millisSinceStart()).as("snapshot not landed after 120 s; log %s", engine.log()).isLessThan(120_000);
            Thread.sleep(20);
        }
    }

    /**
     * Waits until the postgres destination equals the source. How long the last run takes depends on the backlog the
     * trials left (a 30-trial matrix replays minutes of DDL and 100,000-row transactions, CI's 10 trials about a minute),
     * so no fixed bound fits every length: it fails when the destination still differs and its checkpoint has not moved
     * for {@value #STALLED_MS} ms (stuck, not slow), and after {@value #CATCH_UP_MAX_MS} ms in any case.
     */
    static void awaitEqual(EngineProcess engine, Connection src, Connection dst) throws Exception {
        long start = System.currentTimeMillis();
        long moved = start;
        DurableSampler.Durable seen = null;
        List<Verifier.TableResult> last;
        do {
            assertThat(engine.alive()).as("the final run ended by itself; log %s:%n%s", engine.log(), engine.logTail(40)).isTrue();
            last = Verifier.compare(src, dst, CrashWorkload.TABLES, null);
            if (last.stream().allMatch(Verifier.TableResult::equal)) {
                return;
            }
            DurableSampler.Durable at = DurableSampler.postgresCheckpoint(dst, PG_DEST);
            if (at != null && !at.equals(seen)) {
                seen = at;
                moved = System.currentTimeMillis();
            }
            Thread.sleep(250);
        } while (System.currentTimeMillis() - moved < STALLED_MS && System.currentTimeMillis() - start < CATCH_UP_MAX_MS);
        throw new AssertionError(String.format("the postgres destination differs from the source %d s after the last start (its"
                + " checkpoint %s, last moved %d s ago): %s%nlog %s:%n%s", (System.currentTimeMillis() - start) / 1000, seen,
                (System.currentTimeMillis() - moved) / 1000, last, engine.log(), engine.logTail(30)));
    }

    static final long STALLED_MS = 120_000;
    static final long CATCH_UP_MAX_MS = 900_000;

    /** Waits until the jsonl checkpoint has reached the postgres one (both are written per batch, postgres first). */
    static void awaitJsonlCaughtUp(EngineProcess engine, Connection dst, Path events) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            DurableSampler.Durable a = DurableSampler.postgresCheckpoint(dst, PG_DEST);
            DurableSampler.Durable b = DurableSampler.jsonlCheckpoint(events.resolve("checkpoint.json"));
            if (a != null && b != null && b.flushLsn().compareTo(a.flushLsn()) >= 0) {
                return;
            }
            assertThat(System.currentTimeMillis()).as("jsonl checkpoint %s behind postgres %s; log %s", b, a, engine.log())
                    .isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    static boolean hasRows(Connection c, String table) throws SQLException {
        try (Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT to_regclass('public." + table + "') IS NOT NULL")) {
            rs.next();
            if (!rs.getBoolean(1)) {
                return false;
            }
        }
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT EXISTS (SELECT 1 FROM public." + table + ")")) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    static List<Long> duplicateTxIds(Connection c) throws SQLException {
        List<Long> out = new ArrayList<>();
        if (!hasRows(c, "txlog")) {
            return out;
        }
        try (Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT tx_id FROM public.txlog GROUP BY tx_id HAVING count(*) > 1 ORDER BY 1 LIMIT 20")) {
            while (rs.next()) {
                out.add(rs.getLong(1));
            }
        }
        return out;
    }

    static long count(Connection c, String table) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM public." + table)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static JsonlReplay replay(Connection src, Path events) throws SQLException, IOException {
        Map<String, JsonlReplay.TableShape> shapes = new LinkedHashMap<>();
        for (TableRef t : CrashWorkload.TABLES) {
            List<String> cols = new ArrayList<>();
            try (Statement s = src.createStatement(); ResultSet rs = s.executeQuery("SELECT * FROM " + t.sql() + " LIMIT 0")) {
                ResultSetMetaData md = rs.getMetaData();
                for (int i = 1; i <= md.getColumnCount(); i++) {
                    cols.add(md.getColumnName(i));
                }
            }
            boolean hasKey = t.table().equals("accounts") || t.table().equals("small");
            shapes.put(t.toString(), new JsonlReplay.TableShape(cols, hasKey ? 0 : -1));
        }
        JsonlReplay r = new JsonlReplay(shapes, t -> t.startsWith("d_")); // CrashWorkload's DDL tables
        r.readAll(events);
        r.finish();
        return r;
    }

    /** The rows of {@code t} as a multiset, each its columns' text in column order. */
    static Map<List<String>, Integer> rows(Connection src, TableRef t) throws SQLException {
        Map<List<String>, Integer> rows = new HashMap<>();
        try (Statement s = src.createStatement(); ResultSet rs = s.executeQuery("SELECT * FROM " + t.sql())) {
            int n = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                List<String> row = new ArrayList<>(n);
                for (int i = 1; i <= n; i++) {
                    row.add(rs.getString(i));
                }
                rows.merge(row, 1, Integer::sum);
            }
        }
        return rows;
    }

    static void assertJsonl(JsonlReplay r, Connection src, Path events) throws SQLException, IOException {
        assertThat(r.anomalies).as("jsonl anomalies (%d in all)", r.anomalyCount).isEmpty();
        assertThat(r.regressions).as("streamed positions out of order").isZero();
        assertThat(r.snapshotAfterStream).as("snapshot events after streamed ones").isZero();
        assertThat(r.unterminatedLines).as("torn last lines").isZero();
        assertThat(r.streamEvents).as("streamed events").isPositive();
        for (TableRef t : CrashWorkload.TABLES) {
            Map<List<String>, Integer> expected = rows(src, t);
            Map<List<String>, Integer> replayed = r.table(t.toString());
            if (!replayed.equals(expected)) {
                throw new AssertionError("replaying the jsonl files does not give " + t + ": " + difference(expected, replayed));
            }
        }
        // every source transaction is in the files: as a 'c' event (once), or as an 'r' event of the last copy
        Set<Long> source = new HashSet<>();
        try (Statement s = src.createStatement(); ResultSet rs = s.executeQuery("SELECT tx_id FROM public.txlog")) {
            while (rs.next()) {
                source.add(rs.getLong(1));
            }
        }
        List<Long> twice = r.txlogCreated.entrySet().stream().filter(e -> e.getValue() > 1).map(Map.Entry::getKey).limit(20).toList();
        assertThat(twice).as("txlog tx_ids in more than one 'c' event").isEmpty();
        Set<Long> seen = new HashSet<>(r.txlogCreated.keySet());
        seen.addAll(r.txlogRead);
        Set<Long> missing = new HashSet<>(source);
        missing.removeAll(seen);
        Set<Long> extra = new HashSet<>(seen);
        extra.removeAll(source);
        assertThat(missing).as("source transactions missing from the jsonl files").isEmpty();
        assertThat(extra).as("transactions in the jsonl files that the source does not have").isEmpty();
        Set<Long> both = new HashSet<>(r.txlogRead);
        both.retainAll(r.txlogCreated.keySet());
        assertThat(both).as("transactions both copied ('r') and streamed ('c')").isEmpty();

        // a clean stop leaves nothing after the checkpoint
        var state = DurableSampler.jsonlState(events.resolve("checkpoint.json"));
        List<Path> files = JsonlReplay.eventsFiles(events);
        Path newest = files.get(files.size() - 1);
        assertThat(state.get("events_file").asText()).isEqualTo(newest.getFileName().toString());
        assertThat(Files.size(newest)).as("size of %s vs the checkpointed offset", newest).isEqualTo(state.get("offset").asLong());
    }

    private static String difference(Map<List<String>, Integer> expected, Map<List<String>, Integer> actual) {
        List<String> out = new ArrayList<>();
        for (var e : expected.entrySet()) {
            int a = actual.getOrDefault(e.getKey(), 0);
            if (a != e.getValue() && out.size() < 10) {
                out.add("source has " + e.getValue() + "x, replay " + a + "x: " + abbreviate(e.getKey()));
            }
        }
        for (var e : actual.entrySet()) {
            if (!expected.containsKey(e.getKey()) && out.size() < 20) {
                out.add("replay has " + e.getValue() + "x, source 0x: " + abbreviate(e.getKey()));
            }
        }
        return "sizes " + expected.values().stream().mapToInt(Integer::intValue).sum() + " vs "
                + actual.values().stream().mapToInt(Integer::intValue).sum() + "\n  " + String.join("\n  ", out);
    }

    private static String abbreviate(List<String> row) {
        return row.stream().map(v -> v != null && v.length() > 40 ? v.substring(0, 40) + "...(" + v.length() + ")" : v).toList().toString();
    }

    static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(p)) {
            for (Path x : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(x);
            }
        }
    }
}
