package io.millrace.engine.snapshot;

import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The initial snapshot of tables of every shape, through the whole engine, into a postgres and a
 * jsonl destination: a million-row table, a table without a primary key (with duplicate rows), an
 * empty table, a partitioned table (three partitions, the root configured), TOASTed jsonb and text
 * (over 8 kB, incompressible, stored out of line), and a table of many column types.
 *
 * <p>Two readers and 64-page chunks, so the big tables are cut into many CTID ranges read in
 * parallel. INV: COVER — a chunk bound off by one page, or a last chunk closed above, loses or
 * doubles rows: the destination would differ from the source, and the jsonl files would not hold
 * exactly one {@code r} event per source row. INV: HANDOVER — a row inserted once streaming has begun
 * arrives once, as a {@code c} event after every {@code r}.
 */
class SnapshotIT {
    private static final Duration WAIT = Duration.ofSeconds(120);
    private static final int BIG_ROWS = 1_000_000;
    private static final List<String> TABLES = List.of("public.big", "public.nokey", "public.empty", "public.parted",
            "public.toasty", "public.typed");
    /** Tables with a primary key named id, an int. */
    private static final List<String> KEYED = List.of("public.big", "public.empty", "public.parted", "public.toasty", "public.typed");

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

    private static void createTables(Connection s) throws Exception {
        long t0 = System.nanoTime();
        E2e.exec(s,
                // ~150-byte rows; the key is added after the load (faster)
                "CREATE TABLE public.big (id bigint NOT NULL, grp int NOT NULL, amount numeric(12,2), created timestamptz NOT NULL,"
                        + " label text NOT NULL, note text)",
                "INSERT INTO public.big SELECT g, g % 1000, (g % 100000) / 100.0, timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second',"
                        + " 'label-' || g, md5(g::text) || md5((g * 7)::text) FROM generate_series(1, " + BIG_ROWS + ") g",
                "ALTER TABLE public.big ADD PRIMARY KEY (id)",

                // no key, REPLICA IDENTITY FULL; every row twice, and NULLs
                "CREATE TABLE public.nokey (a int, b text, c timestamptz)",
                "ALTER TABLE public.nokey REPLICA IDENTITY FULL",
                "INSERT INTO public.nokey SELECT g % 5000, CASE WHEN g % 11 = 0 THEN NULL ELSE 'v' || (g % 5000) END,"
                        + " timestamptz '2000-01-01 00:00:00+00' + (g % 5000) * interval '1 hour' FROM generate_series(1, 10000) g",

                "CREATE TABLE public.empty (id int PRIMARY KEY, v text)",

                "CREATE TABLE public.parted (id bigint NOT NULL, region text NOT NULL, v int, PRIMARY KEY (id)) PARTITION BY RANGE (id)",
                "CREATE TABLE public.parted_1 PARTITION OF public.parted FOR VALUES FROM (MINVALUE) TO (10001)",
                "CREATE TABLE public.parted_2 PARTITION OF public.parted FOR VALUES FROM (10001) TO (20001)",
                "CREATE TABLE public.parted_3 PARTITION OF public.parted FOR VALUES FROM (20001) TO (MAXVALUE)",
                "INSERT INTO public.parted SELECT g, 'r' || (g % 7), g * 3 FROM generate_series(1, 30000) g",

                // incompressible values over 8 kB (base64 of random bytes): TOASTed out of line, uncompressed
                "SELECT setseed(0.42)",
                "CREATE TABLE public.toasty (id int PRIMARY KEY, doc jsonb, body text)",
                "INSERT INTO public.toasty SELECT g, jsonb_build_object('id', g, 'blob', translate(encode(r1, 'base64'), E'\\n', ''),"
                        + " 'tags', jsonb_build_array('a', g, null)), translate(encode(r2, 'base64'), E'\\n', '')"
                        + " FROM generate_series(1, 40) g,"
                        + " LATERAL (SELECT decode(string_agg(lpad(to_hex((random() * 255)::int), 2, '0'), ''), 'hex') AS r1"
                        + "   FROM generate_series(1, 9000) i WHERE g > 0) x1,"
                        + " LATERAL (SELECT decode(string_agg(lpad(to_hex((random() * 255)::int), 2, '0'), ''), 'hex') AS r2"
                        + "   FROM generate_series(1, 9000) i WHERE g > 0) x2",

                "CREATE TYPE public.mood AS ENUM ('sad', 'ok', 'happy', 'it''s \"complicated\"')",
                "CREATE TABLE public.typed (id int PRIMARY KEY, n numeric, n2 numeric(20,5), ts timestamptz, ia int[], ta text[], u uuid,"
                        + " b bytea, m public.mood, iv interval, d date, f float8, bo bool)",
                "INSERT INTO public.typed SELECT g,"
                        + " CASE g % 6 WHEN 0 THEN 'NaN' WHEN 1 THEN '-0.000' WHEN 2 THEN '123456789012345678901234567890.123456789'"
                        + "   WHEN 3 THEN NULL WHEN 4 THEN 'Infinity' ELSE (g * 1.5)::text END::numeric,"
                        + " (g / 7.0)::numeric(20,5),"
                        + " CASE g % 5 WHEN 0 THEN 'infinity' WHEN 1 THEN '-infinity' WHEN 2 THEN NULL"
                        + "   ELSE (timestamptz '1999-12-31 23:59:59.999999+00' + g * interval '1 day 1.000001 second')::text END::timestamptz,"
                        + " CASE g % 4 WHEN 0 THEN '{}' WHEN 1 THEN NULL ELSE ARRAY[g, NULL, -g] END,"
                        + " CASE g % 3 WHEN 0 THEN ARRAY['a,b', 'q\"uote', 'back\\slash', NULL, '', 'NULL', 'tab\there', 'x' || g]"
                        + "   WHEN 1 THEN '{}' ELSE NULL END,"
                        + " CASE WHEN g % 9 = 0 THEN NULL ELSE md5(g::text)::uuid END,"
                        + " CASE g % 4 WHEN 0 THEN NULL WHEN 1 THEN '\\x'::bytea ELSE decode(md5(g::text), 'hex') || '\\x00ff0a5c'::bytea END,"
                        + " CASE WHEN g % 10 = 0 THEN NULL ELSE (enum_range(NULL::public.mood))[g % 4 + 1] END,"
                        + " CASE g % 4 WHEN 0 THEN NULL WHEN 1 THEN '-1 years -2 mons +3 days -04:05:06.789'"
                        + "   ELSE (g * interval '1 day 2 hours 3.5 seconds')::text END::interval,"
                        + " date '2000-02-29' + g,"
                        + " CASE g % 5 WHEN 0 THEN 'NaN' WHEN 1 THEN '-0' WHEN 2 THEN '1e-300' ELSE (g / 3.0)::text END::float8,"
                        + " CASE g % 3 WHEN 0 THEN NULL ELSE g % 2 = 0 END"
                        + " FROM generate_series(1, 3000) g",
                "ANALYZE");
        System.out.printf("SnapshotIT: source tables created in %.1f s%n", (System.nanoTime() - t0) / 1e9);
    }

    @Test
    void everyTableIsCopiedOnceAndStreamingTakesOverAfterIt(@TempDir Path dir) throws Exception {
        pg.createDatabase("snap");
        pg.createDatabase("snap_dst");
        Path events = dir.resolve("events");
        try (Connection s = pg.connect("snap"); Connection d = pg.connect("snap_dst")) {
            createTables(s);
            // the TOASTed values really are out of line and uncompressed (else this test would not test TOAST)
            assertThat(E2e.queryLong(s, "SELECT count(*) FROM public.toasty WHERE pg_column_size(body) > 8192"
                    + " AND pg_column_compression(body) IS NULL AND pg_column_size(doc) > 8192 AND pg_column_compression(doc) IS NULL"))
                    .isEqualTo(40);
            String toast = E2e.queryString(s, "SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 'public.toasty'::regclass");
            assertThat(E2e.queryLong(s, "SELECT count(DISTINCT chunk_id) FROM " + toast)).as("values stored in " + toast).isEqualTo(80);
            assertThat(E2e.queryLong(s, "SELECT pg_relation_size('public.big') / 8192")).as("pages of public.big").isGreaterThan(64 * 50);

            Map<String, Long> rowsAtSnapshot = new LinkedHashMap<>();
            for (String t : TABLES) {
                rowsAtSnapshot.put(t, E2e.queryLong(s, "SELECT count(*) FROM " + t));
            }
            Map<String, BitSet> keysAtSnapshot = new LinkedHashMap<>();
            for (String t : KEYED) {
                keysAtSnapshot.put(t, Snap.ids(s, "SELECT id FROM " + t));
            }
            long total = rowsAtSnapshot.values().stream().mapToLong(Long::longValue).sum();

            String yaml = Snap.yaml(pg, "snap", "snap", TABLES, "snap_dst", events, "initial", 64);
            try (Snap.Logs logs = new Snap.Logs()) {
                long t0 = System.nanoTime();
                try (RunningEngine e = RunningEngine.start(yaml, dir)) {
                    e.awaitStreaming(WAIT);
                    double secs = (System.nanoTime() - t0) / 1e9;
                    System.out.printf("SnapshotIT: %d rows in %d tables copied into both destinations in %.1f s: %.0f rows/s"
                                    + " (engine start to streaming, 2 readers, 64-page chunks)%n", total, TABLES.size(), secs, total / secs);
                    String done = logs.find("snapshot done:");
                    System.out.println("SnapshotIT: engine log: " + done);

                    // INV: COVER is exercised only if the tables were really cut: one chunk for each small table,
                    // many for public.big (its pages / 64)
                    Matcher m = Pattern.compile("snapshot of (\\d+) tables in (\\d+) chunks").matcher(logs.text());
                    assertThat(m.find()).as("the planner's log line in:\n" + logs.text()).isTrue();
                    assertThat(Integer.parseInt(m.group(2))).as("chunks").isGreaterThan(50);

                    // streaming after the handover: one insert per table (the last one marks the end)
                    E2e.exec(s, "INSERT INTO public.nokey VALUES (-1, 'streamed', now())",
                            "INSERT INTO public.empty VALUES (1, 'streamed')",
                            "INSERT INTO public.parted VALUES (25000000, 'streamed', -1)",
                            "INSERT INTO public.toasty SELECT 1000, doc, body || 'x' FROM public.toasty WHERE id = 1",
                            "INSERT INTO public.typed (id, n, m) VALUES (100000, 1.5, 'happy')",
                            "INSERT INTO public.big (id, grp, created, label) VALUES (" + (BIG_ROWS + 1) + ", 0, now(), 'streamed')");
                    long c0 = System.nanoTime();
                    E2e.awaitRow(d, "SELECT count(*) FROM public.big WHERE id = " + (BIG_ROWS + 1), WAIT);
                    System.out.printf("SnapshotIT: streamed rows arrived after %.1f s%n", (System.nanoTime() - c0) / 1e9);
                }
            }

            // The engine has stopped: both destinations are final. The postgres one is compared with the source on
            // its own thread (PostgreSQL's work) while the jsonl files are read here (the test's).
            AtomicReference<Throwable> pgFailed = new AtomicReference<>();
            Thread pgCheck = new Thread(() -> {
                try {
                    long v0 = System.nanoTime();
                    E2e.exec(s, "SET work_mem = '256MB'"); // the Verifier's sort of row digests, in memory
                    E2e.exec(d, "SET work_mem = '256MB'");
                    RunningEngine.awaitEqual(s, d, E2e.refs(List.of("public.big")), null, Duration.ZERO);
                    long v1 = System.nanoTime();
                    List<TableRef> others = E2e.refs(TABLES.subList(1, TABLES.size()));
                    RunningEngine.awaitEqual(s, d, others, null, Duration.ZERO);
                    long v2 = System.nanoTime();
                    for (TableRef t : others) {
                        E2e.assertColumnsEqual(s, d, t); // names table, row and column on a difference
                    }
                    System.out.printf("SnapshotIT: postgres destination verified: public.big %.1f s, the others %.1f s, column by"
                            + " column %.1f s%n", (v1 - v0) / 1e9, (v2 - v1) / 1e9, (System.nanoTime() - v2) / 1e9);
                } catch (Throwable t) {
                    pgFailed.set(t);
                }
            }, "snapshot-it-verify");
            pgCheck.start();

            try {
                // the jsonl destination: exactly one 'r' per source row, keys as in the source; then the streamed rows
                long j0 = System.nanoTime();
                Map<String, long[]> reads = new TreeMap<>();
                Map<String, BitSet> readKeys = new TreeMap<>();
                Map<String, Integer> creates = new TreeMap<>();
                long[] order = new long[3]; // events, first streamed event's index, 'r' events after it
                order[1] = -1;
                Snap.scanBrief(events, ev -> {
                    String t = ev.table();
                    if (ev.op().equals("r")) {
                        if (!"true".equals(ev.snapshot())) {
                            throw new AssertionError("an 'r' event of " + t + " not marked source.snapshot \"true\": " + ev);
                        }
                        reads.computeIfAbsent(t, k -> new long[1])[0]++;
                        if (KEYED.contains(t)) {
                            if (ev.id() == null) {
                                throw new AssertionError("an 'r' event of " + t + " without a numeric after.id: " + ev);
                            }
                            readKeys.computeIfAbsent(t, k -> new BitSet()).set(Math.toIntExact(ev.id()));
                        }
                        if (order[1] >= 0) {
                            order[2]++;
                        }
                    } else {
                        assertThat(ev.op()).as("event " + ev).isEqualTo("c");
                        creates.merge(t, 1, Integer::sum);
                        if (order[1] < 0) {
                            order[1] = order[0];
                        }
                    }
                    order[0]++;
                });
                System.out.printf("SnapshotIT: %d jsonl events checked in %.1f s%n", order[0], (System.nanoTime() - j0) / 1e9);
                Map<String, Long> readCounts = new TreeMap<>();
                reads.forEach((t, n) -> readCounts.put(t, n[0]));
                Map<String, Long> expected = new TreeMap<>(rowsAtSnapshot);
                expected.remove("public.empty");
                assertThat(readCounts).as("'r' events per table (INV: COVER: one per source row)").isEqualTo(expected);
                for (String t : KEYED) {
                    BitSet want = keysAtSnapshot.get(t);
                    BitSet got = readKeys.getOrDefault(t, new BitSet());
                    assertThat(got.equals(want)).as("keys of the 'r' events of " + t + ": " + Snap.difference(want, got)).isTrue();
                }
                assertThat(order[2]).as("'r' events after the first streamed event").isZero();
                Map<String, Integer> wantCreates = new TreeMap<>();
                TABLES.forEach(t -> wantCreates.put(t, 1));
                assertThat(creates).as("streamed inserts after the snapshot (INV: HANDOVER)").isEqualTo(wantCreates);
            } finally {
                pgCheck.join();
            }
            if (pgFailed.get() != null) {
                throw new AssertionError("postgres destination: " + pgFailed.get().getMessage(), pgFailed.get());
            }
        }
    }
}
