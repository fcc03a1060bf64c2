package io.millrace.engine.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import io.millrace.api.Millrace;
import io.millrace.api.PipelineSettings;
import io.millrace.api.SourceSettings;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
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
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * INV: ORDER — a destination receives transactions in commit order, and a transaction's changes in
 * WAL order. Four sessions race through short transactions; each first takes the next number from a
 * one-row table ({@code UPDATE seq SET v = v + 1 RETURNING v}), whose row lock makes commit order
 * equal number order, then inserts rows {@code (v, 1..n)} and sometimes updates or deletes an earlier
 * row. Every session records what its transaction did; the jsonl events must be exactly those
 * changes, transaction after transaction in number order, each transaction's changes in statement
 * order, positions strictly increasing and no transaction interleaved with another.
 *
 * <p>Meanwhile a fifth session writes large transactions into {@code bulk}, concurrently with the
 * others and (with {@code logical_decoding_work_mem} at its 64 kB minimum) streamed by the server
 * while in progress (pgoutput protocol v2+), one of them rolled back: they too must arrive whole,
 * in commit order, not interleaved, and the rolled-back one not at all.
 */
class OrderingIT {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int SESSIONS = 4;
    private static final int TX_PER_SESSION = 150;
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        E2e.init();
        pg = EmbeddedPg.builder().major(17).setting("logical_decoding_work_mem", "64kB").start();
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    @Test
    void transactionsArriveInCommitOrderAndChangesInWalOrder(@TempDir Path dir) throws Exception {
        pg.createDatabase("ord");
        pg.createDatabase("ord_dst");
        List<String> tables = List.of("public.seq", "public.log", "public.bulk");
        Path events = dir.resolve("events");
        // what each transaction did, by its number v: "table:op:v:i" in statement order
        Map<Long, List<String>> done = new ConcurrentHashMap<>();
        try (Connection s = pg.connect("ord"); Connection d = pg.connect("ord_dst")) {
            E2e.exec(s, "CREATE TABLE public.seq (id int PRIMARY KEY, v bigint NOT NULL)",
                    "CREATE TABLE public.log (v bigint, i int, note text, PRIMARY KEY (v, i))",
                    "CREATE TABLE public.bulk (k int, j int, pad text, PRIMARY KEY (k, j))",
                    "INSERT INTO public.seq VALUES (1, 0)");
            // small batches: transactions are cut across batches, and batches hold many transactions
            Millrace.Builder pipeline = E2e.pipeline(pg, "ord", "ord", tables, SourceSettings.BinaryMode.AUTO, "ord_dst", events)
                    .pipeline(PipelineSettings.builder().lingerMs(20).batchKb(8).memoryBudgetMb(4).build());
            try (RunningEngine engine = RunningEngine.start(pipeline)) {
                engine.awaitStreaming(WAIT);
                ExecutorService pool = Executors.newFixedThreadPool(SESSIONS + 1);
                List<Future<?>> futures = new ArrayList<>();
                for (int n = 0; n < SESSIONS; n++) {
                    long seed = 1000 + n;
                    futures.add(pool.submit(() -> {
                        session(seed, done);
                        return null;
                    }));
                }
                futures.add(pool.submit(() -> {
                    bulk();
                    return null;
                }));
                for (Future<?> f : futures) {
                    f.get();
                }
                pool.shutdown();
                // a last transaction of its own: once its event is written, every earlier one is
                long last;
                try (Statement st = s.createStatement(); ResultSet rs = st.executeQuery("UPDATE public.seq SET v = v + 1 RETURNING v")) {
                    rs.next();
                    last = rs.getLong(1);
                }
                done.put(last, List.of("seq:u:" + last));
                assertThat(last).isEqualTo(SESSIONS * TX_PER_SESSION + 1);

                List<JsonNode> all = E2e.awaitEvent(events, e -> E2e.isTable(e, "seq") && e.path("op").asText().equals("u")
                        && e.path("after").path("v").asLong() == last, "for the last transaction (v " + last + ")", WAIT);
                checkOrder(all, done);
                E2e.awaitSame(s, d, E2e.refs(tables), WAIT);
                // the large transactions did reach the engine as in-progress streams (else this test proves less)
                long streamed = 0;
                for (long until = System.nanoTime() + 10_000_000_000L; streamed == 0 && System.nanoTime() < until; Thread.sleep(200)) {
                    streamed = E2e.queryLong(s, "SELECT coalesce(sum(stream_txns), 0) FROM pg_stat_replication_slots WHERE slot_name = 'ord'");
                }
                assertThat(streamed).as("transactions the server streamed in progress (pg_stat_replication_slots.stream_txns)")
                        .isPositive();
            }
        }
    }

    static final int BULK_TX = 6;
    static final int BULK_ROWS = 1500;

    /**
     * Large transactions (about 300 kB of WAL each, in statements of 100 rows, so that they overlap the
     * short ones); the one numbered 3 is rolled back.
     */
    private static void bulk() throws SQLException, InterruptedException {
        String pad = "x".repeat(150);
        try (Connection c = pg.connect("ord")) {
            c.setAutoCommit(false);
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO public.bulk SELECT ?, g, ? FROM generate_series(?, ?) g")) {
                for (int k = 1; k <= BULK_TX; k++) {
                    for (int from = 1; from <= BULK_ROWS; from += 100) {
                        ins.setInt(1, k);
                        ins.setString(2, pad);
                        ins.setInt(3, from);
                        ins.setInt(4, from + 99);
                        ins.executeUpdate();
                        Thread.sleep(2);
                    }
                    if (k == 3) {
                        c.rollback();
                    } else {
                        c.commit();
                    }
                }
            }
        }
    }

    /** One session: short transactions, each recorded in {@code done} under its number once committed. */
    private static void session(long seed, Map<Long, List<String>> done) throws SQLException {
        Random r = new Random(seed);
        try (Connection c = pg.connect("ord")) {
            c.setAutoCommit(false);
            try (PreparedStatement next = c.prepareStatement("UPDATE public.seq SET v = v + 1 WHERE id = 1 RETURNING v");
                 PreparedStatement ins = c.prepareStatement("INSERT INTO public.log (v, i, note) VALUES (?, ?, ?)");
                 PreparedStatement upd = c.prepareStatement("UPDATE public.log SET note = ? WHERE v = ? AND i = 1 RETURNING v, i");
                 PreparedStatement del = c.prepareStatement("DELETE FROM public.log WHERE v = ? AND i = 2 RETURNING v, i")) {
                for (int t = 0; t < TX_PER_SESSION; t++) {
                    List<String> did = new ArrayList<>();
                    long v;
                    try (ResultSet rs = next.executeQuery()) {
                        rs.next();
                        v = rs.getLong(1);
                    }
                    did.add("seq:u:" + v);
                    int rows = 1 + r.nextInt(5);
                    for (int i = 1; i <= rows; i++) {
                        ins.setLong(1, v);
                        ins.setInt(2, i);
                        ins.setString(3, "session " + seed + " tx " + t);
                        ins.executeUpdate();
                        did.add("log:c:" + v + ":" + i);
                    }
                    if (v > 1 && r.nextInt(3) == 0) {
                        upd.setString(1, "updated by " + v);
                        upd.setLong(2, 1 + r.nextInt((int) v - 1));
                        try (ResultSet rs = upd.executeQuery()) {
                            while (rs.next()) {
                                did.add("log:u:" + rs.getLong(1) + ":" + rs.getInt(2));
                            }
                        }
                    }
                    if (v > 1 && r.nextInt(4) == 0) {
                        del.setLong(1, 1 + r.nextInt((int) v - 1));
                        try (ResultSet rs = del.executeQuery()) {
                            while (rs.next()) {
                                did.add("log:d:" + rs.getLong(1) + ":" + rs.getInt(2));
                            }
                        }
                    }
                    c.commit();
                    done.put(v, did);
                }
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        }
    }

    private static void checkOrder(List<JsonNode> all, Map<Long, List<String>> done) {
        // expected: every transaction's changes, in number (= commit) order
        List<String> expected = new ArrayList<>();
        new TreeMap<>(done).values().forEach(expected::addAll);

        List<String> actual = new ArrayList<>();
        List<String> bulk = new ArrayList<>();
        E2e.Pos prev = null;
        Set<Long> closedTx = new HashSet<>();
        Long currentTx = null;
        long currentCommit = -1;
        for (JsonNode e : all) {
            String op = e.path("op").asText();
            if (op.equals("r")) {
                assertThat(actual).as("snapshot reads come before every streamed change").isEmpty();
                continue;
            }
            E2e.Pos pos = E2e.Pos.of(e);
            if (prev != null && pos.compareTo(prev) <= 0) {
                throw new AssertionError("INV: ORDER — position " + pos + " does not follow " + prev + " (event " + e + ")");
            }
            prev = pos;
            long tx = e.path("source").path("txId").asLong();
            if (currentTx == null || tx != currentTx) {
                if (currentTx != null) {
                    closedTx.add(currentTx);
                }
                if (closedTx.contains(tx)) {
                    throw new AssertionError("INV: ORDER — transaction " + tx + " resumes after another transaction began (event " + e + ")");
                }
                currentTx = tx;
                currentCommit = pos.commitLsn();
            } else if (pos.commitLsn() != currentCommit) {
                throw new AssertionError("transaction " + tx + " has two commit LSNs: " + currentCommit + " and " + pos.commitLsn());
            }
            String table = e.path("source").path("table").asText();
            JsonNode row = E2e.row(e);
            if (table.equals("bulk")) {
                bulk.add(tx + ":" + row.path("k").asInt() + ":" + row.path("j").asInt());
                continue;
            }
            actual.add(table.equals("seq") ? "seq:" + op + ":" + row.path("v").asLong()
                    : "log:" + op + ":" + row.path("v").asLong() + ":" + row.path("i").asInt());
        }
        if (!actual.equals(expected)) {
            int i = 0;
            while (i < Math.min(actual.size(), expected.size()) && actual.get(i).equals(expected.get(i))) {
                i++;
            }
            throw new AssertionError("INV: ORDER — the events differ from the committed changes in commit order at change #" + i
                    + ": expected " + expected.subList(i, Math.min(expected.size(), i + 8)) + " but got "
                    + actual.subList(i, Math.min(actual.size(), i + 8)) + " (" + expected.size() + " changes committed, "
                    + actual.size() + " events)");
        }
        assertThat(expected).as("some transactions update and some delete earlier rows")
                .anyMatch(x -> x.startsWith("log:u:")).anyMatch(x -> x.startsWith("log:d:"));

        // the large transactions: each whole and in statement order, the rolled-back one absent
        List<String> expectedBulk = new ArrayList<>();
        List<String> actualBulk = new ArrayList<>();
        for (String b : bulk) {
            String[] p = b.split(":");
            actualBulk.add(p[1] + ":" + p[2]);
        }
        for (int k = 1; k <= BULK_TX; k++) {
            for (int j = 1; j <= BULK_ROWS && k != 3; j++) {
                expectedBulk.add(k + ":" + j);
            }
        }
        if (!actualBulk.equals(expectedBulk)) {
            int i = 0;
            while (i < Math.min(actualBulk.size(), expectedBulk.size()) && actualBulk.get(i).equals(expectedBulk.get(i))) {
                i++;
            }
            throw new AssertionError("INV: ORDER — the large transactions' events differ from what was committed at change #" + i
                    + ": expected " + expectedBulk.subList(i, Math.min(expectedBulk.size(), i + 5)) + " but got "
                    + actualBulk.subList(i, Math.min(actualBulk.size(), i + 5)) + " (" + expectedBulk.size() + " rows committed, "
                    + actualBulk.size() + " events)");
        }
    }
}
