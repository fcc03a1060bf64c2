package io.millrace.engine.snapshot;

import com.fasterxml.jackson.databind.JsonNode;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * INV: HANDOVER — three sessions insert, update and delete at random (seeded, the seed printed) during
 * the whole snapshot of a 300,000-row table: from before the slot is created until a few seconds
 * after streaming began. Each change must come from exactly one path — the copy (as of the slot's
 * consistent point) or the stream (after it):
 * <ul>
 *   <li>the postgres destination equals the source;</li>
 *   <li>the jsonl events, replayed per key in file order, give the source's final rows, and the
 *       replay is strict: an {@code r} or {@code c} for a key that is already there is a change
 *       doubled at the boundary, a {@code u} or {@code d} for a key that is not there is a change
 *       lost (a postgres destination's upsert would hide the first; this does not);</li>
 *   <li>every {@code r} comes before the first streamed event, and streamed positions increase.</li>
 * </ul>
 */
class SnapshotHandoverIT {
    private static final Duration WAIT = Duration.ofSeconds(120);
    private static final int ROWS = 300_000;
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        Snap.init();
        pg = EmbeddedPg.builder().major(17).start();
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    @Test
    void changesDuringTheSnapshotAreNeitherLostNorDoubled(@TempDir Path dir) throws Exception {
        long seed = Long.getLong("seed", System.nanoTime());
        System.out.println("SnapshotHandoverIT: seed " + seed + " (repeat with -Dseed=" + seed + ")");
        pg.createDatabase("hand");
        pg.createDatabase("hand_dst");
        Path events = dir.resolve("events");
        List<String> tables = List.of("public.hand");
        try (Connection s = pg.connect("hand"); Connection d = pg.connect("hand_dst")) {
            E2e.exec(s, "CREATE TABLE public.hand (id bigint NOT NULL, v int NOT NULL, s text NOT NULL, pad text)",
                    "INSERT INTO public.hand SELECT g, 0, 'initial', repeat(md5(g::text), 3) FROM generate_series(1, " + ROWS + ") g",
                    "ALTER TABLE public.hand ADD PRIMARY KEY (id)",
                    "ANALYZE public.hand");

            AtomicReference<Engine> engine = new AtomicReference<>();
            AtomicBoolean writing = new AtomicBoolean(true);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            AtomicLong nextId = new AtomicLong(ROWS + 1);
            Map<String, AtomicLong> commitsByPhase = new HashMap<>();
            for (String p : List.of("before", "STARTING", "SNAPSHOTTING", "STREAMING", "other")) {
                commitsByPhase.put(p, new AtomicLong());
            }
            List<Thread> sessions = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                Random r = new Random(seed + i);
                Thread t = new Thread(() -> {
                    try {
                        load(r, writing, nextId, engine, commitsByPhase);
                    } catch (Throwable x) {
                        failed.compareAndSet(null, x);
                    }
                }, "handover-load-" + i);
                t.setDaemon(true);
                sessions.add(t);
            }
            sessions.forEach(Thread::start);
            Thread.sleep(500);

            String yaml = Snap.yaml(pg, "hand", "hand", tables, "hand_dst", events, "initial", 64);
            try (RunningEngine e = RunningEngine.start(yaml, dir)) {
                engine.set(e.engine());
                long t0 = System.nanoTime();
                e.awaitStreaming(WAIT);
                System.out.printf("SnapshotHandoverIT: snapshot under load took %.1f s%n", (System.nanoTime() - t0) / 1e9);
                Thread.sleep(3000);
                writing.set(false);
                for (Thread t : sessions) {
                    t.join(30_000);
                }
                if (failed.get() != null) {
                    throw new AssertionError("a load session failed", failed.get());
                }
                System.out.println("SnapshotHandoverIT: transactions committed by phase " + commitsByPhase);
                assertThat(commitsByPhase.get("before").get()).as("commits before the engine started").isPositive();
                assertThat(commitsByPhase.get("SNAPSHOTTING").get()).as("commits while the snapshot ran").isPositive();
                assertThat(commitsByPhase.get("STREAMING").get()).as("commits after streaming began").isPositive();

                E2e.exec(s, "INSERT INTO public.hand VALUES (0, 0, 'last', NULL)"); // the end mark (ids start at 1)
                long v0 = System.nanoTime();
                E2e.awaitRow(d, "SELECT count(*) FROM public.hand WHERE id = 0", WAIT);
                long v1 = System.nanoTime();
                E2e.exec(s, "SET work_mem = '128MB'"); // the Verifier's sort of row digests, in memory
                E2e.exec(d, "SET work_mem = '128MB'");
                RunningEngine.awaitEqual(s, d, E2e.refs(tables), null, WAIT);
                System.out.printf("SnapshotHandoverIT: caught up in %.1f s, postgres destination verified in %.1f s%n", (v1 - v0) / 1e9,
                        (System.nanoTime() - v1) / 1e9);

                // the jsonl events, replayed strictly, until the end mark
                Replay replay = new Replay();
                Snap.Tail tail = new Snap.Tail(events);
                long r0 = System.nanoTime();
                long deadline = r0 + WAIT.toNanos();
                while (!replay.rows.containsKey(0L)) {
                    tail.poll(replay::apply);
                    if (System.nanoTime() > deadline) {
                        throw new AssertionError("jsonl: no event for the end mark after " + WAIT + " (" + replay.events + " events)");
                    }
                    Thread.sleep(50);
                }
                System.out.printf("SnapshotHandoverIT: jsonl replayed in %.1f s%n", (System.nanoTime() - r0) / 1e9);
                System.out.println("SnapshotHandoverIT: jsonl events " + replay.counts + ", " + replay.rows.size() + " rows after replay");
                assertThat(replay.counts.get("r")).as("'r' events: the table's rows at the consistent point").isGreaterThan(ROWS / 2);
                Map<Long, String> source = sourceRows(s);
                assertThat(replay.rows.size()).as("rows after replaying the jsonl events").isEqualTo(source.size());
                for (Map.Entry<Long, String> row : source.entrySet()) {
                    String got = replay.rows.get(row.getKey());
                    if (!row.getValue().equals(got)) {
                        throw new AssertionError("jsonl replay: row id " + row.getKey() + " is " + got + " but the source has "
                                + row.getValue() + replay.history(row.getKey()));
                    }
                }
            } finally {
                writing.set(false);
            }
        }
    }

    /** Short transactions of 1 to 3 random statements, counted by the engine's state when they committed. */
    private static void load(Random r, AtomicBoolean writing, AtomicLong nextId, AtomicReference<Engine> engine,
                             Map<String, AtomicLong> commits) throws SQLException, InterruptedException {
        try (Connection c = pg.connect("hand")) {
            c.setAutoCommit(false);
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO public.hand VALUES (?, ?, ?, ?)");
                 PreparedStatement upd = c.prepareStatement("UPDATE public.hand SET v = v + 1, s = ? WHERE id = ?");
                 PreparedStatement del = c.prepareStatement("DELETE FROM public.hand WHERE id = ?")) {
                while (writing.get()) {
                    int statements = 1 + r.nextInt(3);
                    try {
                        for (int k = 0; k < statements; k++) {
                            int what = r.nextInt(100);
                            long max = nextId.get();
                            if (what < 30) {
                                long id = nextId.getAndIncrement();
                                ins.setLong(1, id);
                                ins.setInt(2, r.nextInt(1000));
                                ins.setString(3, "ins " + r.nextInt());
                                ins.setString(4, r.nextBoolean() ? null : "p" + id);
                                ins.executeUpdate();
                            } else if (what < 75) {
                                upd.setString(1, "upd " + r.nextInt());
                                upd.setLong(2, 1 + (long) (r.nextDouble() * (max - 1)));
                                upd.executeUpdate();
                            } else {
                                del.setLong(1, 1 + (long) (r.nextDouble() * (max - 1)));
                                del.executeUpdate();
                            }
                        }
                        c.commit();
                        Engine e = engine.get();
                        String phase = e == null ? "before" : e.state().name();
                        commits.getOrDefault(phase, commits.get("other")).incrementAndGet();
                    } catch (SQLException x) {
                        c.rollback();
                        if (!"40P01".equals(x.getSQLState())) { // deadlocks between the sessions are expected
                            throw x;
                        }
                    }
                    Thread.sleep(1);
                }
            }
        }
    }

    /** The source's rows as the jsonl replay renders them: id → "v|s|pad". */
    private static Map<Long, String> sourceRows(Connection c) throws SQLException {
        Map<Long, String> out = new HashMap<>();
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT id, v, s, pad FROM public.hand")) {
            while (rs.next()) {
                out.put(rs.getLong(1), rs.getInt(2) + "|" + rs.getString(3) + "|" + rs.getString(4));
            }
        }
        return out;
    }

    /** Replays events per key, strictly (see the class comment); keeps each key's ops for messages. */
    private static final class Replay {
        final Map<Long, String> rows = new HashMap<>();
        final Map<String, Long> counts = new java.util.TreeMap<>();
        final Map<Long, StringBuilder> ops = new HashMap<>();
        long events;
        E2e.Pos last;

        void apply(JsonNode e) {
            events++;
            String op = Snap.op(e);
            counts.merge(op, 1L, Long::sum);
            JsonNode after = e.path("after");
            JsonNode before = e.path("before");
            long id = (op.equals("d") ? before : after).path("id").asLong(Long.MIN_VALUE);
            if (id == Long.MIN_VALUE) {
                throw new AssertionError("jsonl: event without an id: " + E2e.shorten(e.toString()));
            }
            ops.computeIfAbsent(id, k -> new StringBuilder()).append(op);
            if (op.equals("r")) {
                if (last != null) {
                    throw new AssertionError("jsonl: 'r' event for id " + id + " after a streamed event at " + last);
                }
            } else {
                E2e.Pos p = E2e.Pos.of(e);
                if (last != null && p.compareTo(last) <= 0) {
                    throw new AssertionError("jsonl: position " + p + " of id " + id + " not after " + last + " (INV: ORDER)");
                }
                last = p;
            }
            switch (op) {
                case "r", "c" -> {
                    if (rows.put(id, image(after)) != null) {
                        throw new AssertionError("INV: HANDOVER: '" + op + "' for id " + id + " that is already there: doubled" + history(id));
                    }
                }
                case "u" -> {
                    if (!before.isNull() && before.path("id").asLong() != id) {
                        throw new AssertionError("jsonl: unexpected key change " + E2e.shorten(e.toString()));
                    }
                    if (rows.put(id, image(after)) == null) {
                        throw new AssertionError("INV: HANDOVER: update of id " + id + " that is not there: its insert was lost" + history(id));
                    }
                }
                case "d" -> {
                    if (rows.remove(id) == null) {
                        throw new AssertionError("INV: HANDOVER: delete of id " + id + " that is not there: its insert was lost, or the"
                                + " delete doubled" + history(id));
                    }
                }
                default -> throw new AssertionError("jsonl: unexpected op '" + op + "': " + E2e.shorten(e.toString()));
            }
        }

        String history(long id) {
            StringBuilder b = ops.get(id);
            return " (events of id " + id + " in order: " + (b == null ? "none" : b) + ")";
        }

        private static String image(JsonNode after) {
            JsonNode pad = after.path("pad");
            return after.path("v").asInt() + "|" + after.path("s").asText() + "|" + (pad.isNull() ? "null" : pad.asText());
        }
    }
}
