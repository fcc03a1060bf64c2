package io.millrace.engine.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import io.millrace.core.Lsn;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * INV: RESUME and INV: DURABLE, in process. The engine streams a steady write load, is stopped
 * ({@code engine.stop()}) while the load goes on, stays stopped a while, and is started again:
 * <ul>
 *   <li>the postgres destination equals the source;</li>
 *   <li>the jsonl files hold every committed change exactly once, in commit order (the stop was
 *       clean, so nothing is repeated), each position unique;</li>
 *   <li>at every sample, while running and while stopped, the slot's {@code confirmed_flush_lsn} is
 *       at most each destination's durable checkpoint {@code flush_lsn} (the slot is read first, then
 *       the checkpoints, which only grow: a violation seen is a real one).</li>
 * </ul>
 */
class ResumeIT {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        E2e.init();
        pg = EmbeddedPg.builder().major(17).start();
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    @Test
    void aStoppedEngineResumesWithEveryChangeExactlyOnceAndTheSlotNeverAhead(@TempDir Path dir) throws Exception {
        pg.createDatabase("resume");
        pg.createDatabase("resume_dst");
        List<String> tables = List.of("public.acct");
        Path events = dir.resolve("events");
        List<String> committed = Collections.synchronizedList(new ArrayList<>());
        try (Connection s = pg.connect("resume"); Connection d = pg.connect("resume_dst")) {
            E2e.exec(s, "CREATE TABLE public.acct (id int PRIMARY KEY, n int NOT NULL, note text)",
                    "INSERT INTO public.acct SELECT g, 0, 'snapshot' FROM generate_series(1, 50) g");
            String yaml = E2e.yaml(pg, "resume", "resume", tables, "auto", "resume_dst", events);

            AtomicBoolean running = new AtomicBoolean(true);
            AtomicReference<Throwable> failed = new AtomicReference<>();
            AtomicInteger samples = new AtomicInteger();
            AtomicInteger slotMoves = new AtomicInteger();
            Thread sampler = new Thread(() -> sample(running, failed, samples, slotMoves, events.resolve("checkpoint.json")), "e2e-sampler");
            AtomicBoolean writing = new AtomicBoolean(true);
            Thread writer = new Thread(() -> {
                try {
                    write(writing, committed);
                } catch (Throwable t) {
                    failed.compareAndSet(null, t);
                }
            }, "e2e-writer");

            RunningEngine first = RunningEngine.start(yaml, dir);
            first.awaitStreaming(WAIT);
            sampler.start();
            writer.start();
            Thread.sleep(3000);
            first.close(); // INV: RESUME — a clean stop, while the load goes on
            int atStop = committed.size();
            Thread.sleep(2000);
            assertThat(committed.size()).as("transactions committed while the engine was stopped").isGreaterThan(atStop);

            try (RunningEngine second = RunningEngine.start(yaml, dir)) {
                second.awaitStreaming(WAIT);
                Thread.sleep(2000);
                writing.set(false);
                writer.join(30_000);
                if (failed.get() != null) {
                    throw new AssertionError("writer or sampler failed", failed.get());
                }
                // a last transaction: once its event is written, every earlier one is
                E2e.exec(s, "INSERT INTO public.acct VALUES (999999, 0, 'last')");
                committed.add("c:999999");
                List<JsonNode> all = E2e.awaitEvent(events, e -> E2e.row(e).path("id").asInt() == 999999, "for the last insert", WAIT);
                E2e.awaitSame(s, d, E2e.refs(tables), WAIT);
                Thread.sleep(1500); // a few more samples once the slot has caught up
                running.set(false);
                sampler.join(10_000);
                if (failed.get() != null) {
                    throw new AssertionError("INV: DURABLE", failed.get());
                }
                checkExactlyOnce(all, committed);
            } finally {
                running.set(false);
                writing.set(false);
            }
            assertThat(samples.get()).as("samples of slot and checkpoints").isGreaterThan(20);
            assertThat(slotMoves.get()).as("times the slot's confirmed_flush_lsn was seen to advance").isGreaterThan(2);
        }
    }

    /** Short transactions (insert, update, delete), each recorded as "op:id" once committed. */
    private static void write(AtomicBoolean writing, List<String> committed) throws SQLException, InterruptedException {
        Random r = new Random(7);
        int next = 1000;
        List<Integer> live = new ArrayList<>();
        for (int i = 1; i <= 50; i++) {
            live.add(i);
        }
        try (Connection c = pg.connect("resume")) {
            c.setAutoCommit(false);
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO public.acct VALUES (?, 0, 'streamed')");
                 PreparedStatement upd = c.prepareStatement("UPDATE public.acct SET n = n + 1 WHERE id = ?");
                 PreparedStatement del = c.prepareStatement("DELETE FROM public.acct WHERE id = ?")) {
                while (writing.get()) {
                    List<String> did = new ArrayList<>();
                    int id = next++;
                    ins.setInt(1, id);
                    ins.executeUpdate();
                    did.add("c:" + id);
                    int u = live.get(r.nextInt(live.size()));
                    upd.setInt(1, u);
                    upd.executeUpdate();
                    did.add("u:" + u);
                    live.add(id);
                    if (r.nextInt(3) == 0) {
                        int x = live.remove(r.nextInt(live.size()));
                        del.setInt(1, x);
                        del.executeUpdate();
                        did.add("d:" + x);
                    }
                    c.commit();
                    committed.addAll(did);
                    Thread.sleep(5);
                }
            }
        }
    }

    /** INV: DURABLE — slot first, then the checkpoints: slot ≤ each destination's flush_lsn. */
    private static void sample(AtomicBoolean running, AtomicReference<Throwable> failed, AtomicInteger samples, AtomicInteger slotMoves,
                               Path jsonlState) {
        Lsn lastSlot = null;
        try (Connection s = pg.connect("resume"); Connection d = pg.connect("resume_dst")) {
            while (running.get()) {
                String slotText = E2e.queryString(s, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'resume'");
                String pgCp = E2e.queryString(d, "SELECT checkpoint->>'flush_lsn' FROM millrace.checkpoints WHERE destination = 'replica'");
                String fileCp = Files.exists(jsonlState) ? E2e.JSON.readTree(Files.readString(jsonlState)).path("checkpoint").path("flush_lsn")
                        .asText(null) : null;
                if (slotText != null && pgCp != null && fileCp != null) {
                    Lsn slot = Lsn.parse(slotText);
                    if (slot.compareTo(Lsn.parse(pgCp)) > 0) {
                        throw new AssertionError("INV: DURABLE — slot confirmed_flush_lsn " + slot + " is past the postgres destination's"
                                + " checkpoint flush_lsn " + pgCp);
                    }
                    if (slot.compareTo(Lsn.parse(fileCp)) > 0) {
                        throw new AssertionError("INV: DURABLE — slot confirmed_flush_lsn " + slot + " is past the jsonl destination's"
                                + " checkpoint flush_lsn " + fileCp);
                    }
                    if (lastSlot != null && slot.compareTo(lastSlot) > 0) {
                        slotMoves.incrementAndGet();
                    }
                    lastSlot = slot;
                    samples.incrementAndGet();
                }
                Thread.sleep(20);
            }
        } catch (Throwable t) {
            failed.compareAndSet(null, t);
        }
    }

    /** Every committed change exactly once, in commit order, after the snapshot reads; positions unique. */
    private static void checkExactlyOnce(List<JsonNode> all, List<String> committed) {
        List<String> actual = new ArrayList<>();
        Set<E2e.Pos> positions = new HashSet<>();
        int reads = 0;
        for (JsonNode e : all) {
            String op = e.path("op").asText();
            if (op.equals("r")) {
                reads++;
                continue;
            }
            E2e.Pos p = E2e.Pos.of(e);
            if (!positions.add(p)) {
                throw new AssertionError("INV: RESUME — position " + p + " written twice after a clean stop: " + e);
            }
            actual.add(op + ":" + E2e.row(e).path("id").asInt());
        }
        assertThat(reads).as("snapshot reads").isEqualTo(50);
        List<String> expected = new ArrayList<>(committed);
        if (!actual.equals(expected)) {
            int i = 0;
            while (i < Math.min(actual.size(), expected.size()) && actual.get(i).equals(expected.get(i))) {
                i++;
            }
            throw new AssertionError("INV: RESUME — the events differ from the committed changes at change #" + i + ": expected "
                    + expected.subList(i, Math.min(expected.size(), i + 8)) + " but got " + actual.subList(i, Math.min(actual.size(), i + 8))
                    + " (" + expected.size() + " changes committed, " + actual.size() + " events)");
        }
    }
}
