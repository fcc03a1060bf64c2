package io.millrace.engine.snapshot;

import com.fasterxml.jackson.databind.JsonNode;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.EngineStatus;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The snapshot modes: {@code never} (stream only), {@code initial_only} (copy, then stop by itself),
 * and an initial snapshot interrupted by a stop, which the next start does again from the beginning
 * (each table truncated in the destinations first, as a {@code t} event marked as snapshot).
 */
class SnapshotModesIT {
    private static final Duration WAIT = Duration.ofSeconds(120);
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

    /** Every event of the jsonl files, as "op table", counted. */
    private static Map<String, Long> opCounts(Path events) throws Exception {
        Map<String, Long> out = new TreeMap<>();
        Snap.scan(events, e -> out.merge(Snap.op(e) + " " + Snap.table(e), 1L, Long::sum));
        return out;
    }

    @Test
    void modeNeverCopiesNothingAndStreamsTheChangesAfterTheStart(@TempDir Path dir) throws Exception {
        pg.createDatabase("never");
        pg.createDatabase("never_dst");
        Path events = dir.resolve("events");
        List<String> tables = List.of("public.pre");
        try (Connection s = pg.connect("never"); Connection d = pg.connect("never_dst")) {
            E2e.exec(s, "CREATE TABLE public.pre (id int PRIMARY KEY, v text)",
                    "INSERT INTO public.pre SELECT g, 'before the start' FROM generate_series(1, 1000) g");
            try (Snap.Logs logs = new Snap.Logs();
                 RunningEngine e = RunningEngine.start(Snap.yaml(pg, "never", "never", tables, "never_dst", events, "never", 64), dir)) {
                e.awaitStreaming(WAIT);
                assertThat(logs.text()).doesNotContain("snapshot of ");
                E2e.exec(s, "INSERT INTO public.pre SELECT g, 'streamed' FROM generate_series(2001, 2010) g",
                        "UPDATE public.pre SET v = 'streamed, updated' WHERE id = 2003",
                        "DELETE FROM public.pre WHERE id = 2004",
                        "INSERT INTO public.pre VALUES (2011, 'last')");
                E2e.awaitRow(d, "SELECT count(*) FROM public.pre WHERE id = 2011", WAIT);
                assertThat(E2e.queryLong(d, "SELECT count(*) FROM public.pre WHERE id <= 1000")).as("rows from before the start").isZero();
                assertThat(E2e.queryString(d, "SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM public.pre"))
                        .isEqualTo(E2e.queryString(s, "SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM public.pre WHERE id > 2000"));
                E2e.awaitEvent(events, ev -> E2e.row(ev).path("id").asInt() == 2011, "for the last insert", WAIT);
            }
            assertThat(opCounts(events)).as("jsonl events: no 'r'").isEqualTo(Map.of("c public.pre", 11L, "u public.pre", 1L,
                    "d public.pre", 1L));
        }
    }

    @Test
    void modeInitialOnlyCopiesTheTablesAndStopsByItself(@TempDir Path dir) throws Exception {
        pg.createDatabase("only");
        pg.createDatabase("only_dst");
        Path events = dir.resolve("events");
        List<String> tables = List.of("public.keyed", "public.keyless");
        try (Connection s = pg.connect("only"); Connection d = pg.connect("only_dst")) {
            E2e.exec(s, "CREATE TABLE public.keyed (id int PRIMARY KEY, v text, n numeric)",
                    "INSERT INTO public.keyed SELECT g, repeat('x', g % 200), g / 3.0 FROM generate_series(1, 20000) g",
                    "CREATE TABLE public.keyless (a int, b text)",
                    "ALTER TABLE public.keyless REPLICA IDENTITY FULL",
                    "INSERT INTO public.keyless SELECT g % 100, 'dup' FROM generate_series(1, 3000) g");
            String yaml = Snap.yaml(pg, "only", "only", tables, "only_dst", events, "initial_only", 64);
            try (Snap.Logs logs = new Snap.Logs()) {
                RunningEngine e = RunningEngine.start(yaml, dir);
                List<Engine.State> seen = new ArrayList<>();
                Thread watcher = new Thread(() -> {
                    while (true) {
                        Engine.State st = e.engine().state();
                        if (seen.isEmpty() || seen.get(seen.size() - 1) != st) {
                            seen.add(st);
                        }
                        if (st == Engine.State.STOPPED || st == Engine.State.FAILED) {
                            return;
                        }
                        Thread.onSpinWait();
                    }
                }, "state-watcher");
                watcher.setDaemon(true);
                watcher.start();
                Throwable error = e.awaitEnd(WAIT);
                watcher.join(5000);
                assertThat(error).as("the engine's error").isNull();
                assertThat(e.engine().state()).isEqualTo(Engine.State.STOPPED);
                assertThat(seen).as("states seen").doesNotContain(Engine.State.STREAMING).contains(Engine.State.SNAPSHOTTING);
                assertThat(logs.text()).contains("snapshot mode initial_only: the copy landed; stopping").doesNotContain("streaming from");
            }
            E2e.awaitSame(s, d, E2e.refs(tables), Duration.ZERO);
            assertThat(opCounts(events)).isEqualTo(Map.of("r public.keyed", 20000L, "r public.keyless", 3000L));
            // the slot is kept, inactive, for a streaming start that may follow
            assertThat(E2e.queryLong(s, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'only' AND NOT active")).isEqualTo(1);

            // and a later start in mode initial streams from where the copy was taken: a change made since arrives once
            E2e.exec(s, "UPDATE public.keyed SET v = 'changed after the copy' WHERE id = 7",
                    "INSERT INTO public.keyed VALUES (0, 'last', 0)");
            try (RunningEngine e = RunningEngine.start(yaml.replace("mode: initial_only", "mode: initial"), dir)) {
                e.awaitStreaming(WAIT);
                E2e.awaitRow(d, "SELECT count(*) FROM public.keyed WHERE id = 0", WAIT);
                E2e.awaitSame(s, d, E2e.refs(tables), WAIT);
                E2e.awaitEvent(events, ev -> E2e.row(ev).path("id").asInt() == 0 && Snap.op(ev).equals("c"), "for the last insert", WAIT);
            }
            assertThat(opCounts(events)).isEqualTo(Map.of("r public.keyed", 20000L, "r public.keyless", 3000L, "u public.keyed", 1L,
                    "c public.keyed", 1L));
        }
    }

    /**
     * INV: NO-SILENT-ERROR — a destination that fails while the snapshot readers are handing it rows
     * stops the engine with the destination's error (Kind.SINK, naming the table and the constraint),
     * not with the readers' "pipeline stopping" that follows from it.
     */
    @Test
    void aDestinationFailingDuringTheSnapshotStopsTheEngineWithItsOwnError(@TempDir Path dir) throws Exception {
        pg.createDatabase("sinkfail");
        pg.createDatabase("sinkfail_dst");
        try (Connection s = pg.connect("sinkfail"); Connection d = pg.connect("sinkfail_dst")) {
            E2e.exec(s, "CREATE TABLE public.big (id int PRIMARY KEY, v text, pad text)",
                    "INSERT INTO public.big SELECT g, 'v', repeat(md5(g::text), 3) FROM generate_series(1, 200000) g");
            String yaml = Snap.yaml(pg, "sinkfail", "sinkfail", List.of("public.big"), "sinkfail_dst", dir.resolve("events"), "initial", 64);
            RunningEngine e = RunningEngine.start(yaml, dir);
            E2e.awaitRow(d, "SELECT count(*) FROM public.big", WAIT); // the copy is landing
            assertThat(e.engine().state()).isEqualTo(Engine.State.SNAPSHOTTING);
            // from now on every row the destination is given violates a constraint
            E2e.exec(d, "ALTER TABLE public.big ADD CONSTRAINT refuse_more CHECK (id < 0) NOT VALID");
            Throwable t = e.awaitEnd(WAIT);
            System.out.println("SnapshotModesIT: a destination failing during the snapshot ended run() with " + t);
            assertThat(t).as("what run() threw").isInstanceOf(io.millrace.core.MillraceException.class);
            assertThat(((io.millrace.core.MillraceException) t).kind()).isEqualTo(io.millrace.core.MillraceException.Kind.SINK);
            assertThat(t.getMessage()).contains("replica").contains("refuse_more");
            assertThat(e.engine().state()).isEqualTo(Engine.State.FAILED);
            assertThat(E2e.queryLong(d, "SELECT count(*) FROM public.big")).as("rows that landed: the copy was cut short").isLessThan(200000);
        }
    }

    /**
     * An interrupted snapshot whose unfinished table has no key cannot be continued online (chunks are cut in key
     * order): it starts over on a new slot, each table truncated in the destinations first. (With keys, the landed
     * tables stay and the rest is copied online: {@code online/InterruptedSnapshotIT}.)
     */
    @Test
    void anInterruptedSnapshotOfAKeylessTableStartsOverTruncatingTheDestinationsFirst(@TempDir Path dir) throws Exception {
        int rows = 200_000;
        pg.createDatabase("restart");
        pg.createDatabase("restart_dst");
        Path events = dir.resolve("events");
        List<String> tables = List.of("public.big", "public.small");
        try (Connection s = pg.connect("restart"); Connection d = pg.connect("restart_dst")) {
            E2e.exec(s, "CREATE TABLE public.big (id int NOT NULL, v text, pad text)",
                    "INSERT INTO public.big SELECT g, 'first', repeat(md5(g::text), 3) FROM generate_series(1, " + rows + ") g",
                    "ALTER TABLE public.big REPLICA IDENTITY FULL", // no key: it cannot be copied online
                    "CREATE TABLE public.small (id int PRIMARY KEY, v text)",
                    "INSERT INTO public.small SELECT g, 'first' FROM generate_series(1, 100) g");
            String yaml = Snap.yaml(pg, "restart", "restart", tables, "restart_dst", events, "initial", 64);

            // first start: stopped in the middle of the copy
            RunningEngine first = RunningEngine.start(yaml, dir);
            long deadline = System.nanoTime() + WAIT.toNanos();
            long copied = 0;
            while (copied < rows / 10) {
                if (first.engine().state() == Engine.State.SNAPSHOTTING) {
                    copied = first.engine().status().tables().stream().filter(t -> t.table().equals("public.big"))
                            .mapToLong(EngineStatus.Table::rowsCopied).sum();
                }
                assertThat(first.engine().state()).as("state while waiting for the copy").isIn(Engine.State.CREATED,
                        Engine.State.STARTING, Engine.State.SNAPSHOTTING);
                assertThat(System.nanoTime()).as("time waiting for the copy to begin").isLessThan(deadline);
                Thread.sleep(5);
            }
            first.engine().stop();
            Throwable stopped = first.awaitEnd(WAIT);
            Engine.State stoppedState = first.engine().state();
            System.out.println("SnapshotModesIT: stopped during the snapshot after " + copied + " rows; run() ended with " + stopped
                    + ", state " + stoppedState);
            long partial = E2e.queryLong(d, "SELECT CASE WHEN to_regclass('public.big') IS NULL THEN 0 ELSE"
                    + " (SELECT count(*) FROM public.big) END");
            assertThat(partial).as("rows of public.big in the destination after the stop").isLessThan(rows);

            // changes while stopped: the new copy must show them, and nothing of the old one may stay
            E2e.exec(s, "DELETE FROM public.big WHERE id % 10 = 0",
                    "UPDATE public.big SET v = 'second' WHERE id % 10 = 1",
                    "INSERT INTO public.big SELECT g, 'second', NULL FROM generate_series(" + (rows + 1) + ", " + (rows + 1000) + ") g",
                    "UPDATE public.small SET v = 'second'");
            long bigRows = E2e.queryLong(s, "SELECT count(*) FROM public.big");
            BitSet bigKeys = Snap.ids(s, "SELECT id FROM public.big");

            try (Snap.Logs logs = new Snap.Logs(); RunningEngine second = RunningEngine.start(yaml, dir)) {
                second.awaitStreaming(WAIT);
                String restart = logs.find("the initial snapshot was interrupted before it landed; restarting it from the beginning");
                assertThat(restart).as("the restart's log line in:\n" + logs.text()).isNotNull().startsWith("WARN");
                E2e.exec(s, "INSERT INTO public.small VALUES (0, 'last')");
                E2e.awaitRow(d, "SELECT count(*) FROM public.small WHERE id = 0", WAIT);
                E2e.awaitSame(s, d, E2e.refs(tables), WAIT);
                E2e.awaitEvent(events, ev -> E2e.row(ev).path("id").asInt() == 0 && Snap.op(ev).equals("c"), "for the last insert", WAIT);
            }

            // jsonl: a 't' (source.snapshot "true") per table, then exactly the new copy's rows
            Map<String, Integer> truncates = new HashMap<>();
            Map<String, Long> readsAfter = new TreeMap<>();
            Map<String, Long> readsBefore = new TreeMap<>();
            BitSet keysAfter = new BitSet();
            List<String> streamed = new ArrayList<>();
            Snap.scan(events, ev -> {
                String t = Snap.table(ev);
                switch (Snap.op(ev)) {
                    case "t" -> {
                        assertThat(ev.path("source").path("snapshot").asText()).as("source.snapshot of " + ev).isEqualTo("true");
                        assertThat(streamed).as("streamed events before the truncate").isEmpty();
                        truncates.merge(t, 1, Integer::sum);
                    }
                    case "r" -> {
                        if (truncates.containsKey(t)) {
                            readsAfter.merge(t, 1L, Long::sum);
                            if (t.equals("public.big")) {
                                int id = ev.path("after").path("id").asInt();
                                if (keysAfter.get(id)) {
                                    throw new AssertionError("jsonl: id " + id + " of public.big copied twice after the truncate");
                                }
                                keysAfter.set(id);
                            }
                        } else {
                            readsBefore.merge(t, 1L, Long::sum);
                        }
                    }
                    default -> streamed.add(Snap.op(ev) + " " + t + " " + E2e.row(ev).path("id").asText());
                }
            });
            System.out.println("SnapshotModesIT: jsonl 'r' events before the truncate " + readsBefore + ", after it " + readsAfter);
            assertThat(truncates).as("truncate events per table").isEqualTo(Map.of("public.big", 1, "public.small", 1));
            assertThat(readsAfter).isEqualTo(Map.of("public.big", bigRows, "public.small", 100L));
            assertThat(keysAfter.equals(bigKeys)).as("keys of public.big copied after the truncate: " + Snap.difference(bigKeys, keysAfter))
                    .isTrue();
            assertThat(streamed).containsExactly("c public.small 0");

            // Engine.stop() "makes run() return after the last durable checkpoint" (its javadoc; 'millrace run' exits 0,
            // "stopped on request"): a stop during the snapshot is a stop, not a failure
            assertThat(stopped).as("what run() threw after stop() during the snapshot").isNull();
            assertThat(stoppedState).as("state after stop() during the snapshot").isEqualTo(Engine.State.STOPPED);
        }
    }
}
