package io.millrace.migrate;

import io.millrace.embedded.EmbeddedPg;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A write load on the {@code shop} schema of {@link MigrateFollowIT#SCHEMA}: each transaction inserts a customer (a serial
 * sequence), two orders referencing it (an identity column, a foreign key), an invoice (a sequence default, a foreign
 * key), updates an earlier order and writes a ledger row; the ledger ids of transactions whose COMMIT returned are kept,
 * so a test can check that none is missing on the target. Existing customers below id 1000 are never changed (a test
 * tampers with them on the target). A failure (the fence: a read-only session, a terminated connection) is counted and
 * the writer reconnects.
 */
final class WriteLoad implements AutoCloseable {
    static final String LEDGER = "CREATE TABLE shop.ledger (id bigserial PRIMARY KEY, writer int NOT NULL, customer int NOT NULL"
            + " REFERENCES shop.customer, at timestamptz NOT NULL DEFAULT clock_timestamp())";

    private final EmbeddedPg pg;
    private final String db;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final List<Thread> threads = new ArrayList<>();
    final Set<Long> committed = ConcurrentHashMap.newKeySet();
    final AtomicLong failures = new AtomicLong();
    /** Nanos of the last commit and the first failure after it, for the window the clients saw. */
    final AtomicLong lastCommitNanos = new AtomicLong();

    private final long pauseMillis;

    /** {@code writers} threads, each pausing {@code pauseMillis} after a commit. */
    WriteLoad(EmbeddedPg pg, String db, int writers, long pauseMillis) {
        this.pg = pg;
        this.pauseMillis = pauseMillis;
        this.db = db;
        for (int w = 0; w < writers; w++) {
            int id = w;
            Thread t = new Thread(() -> run(id), "write-load-" + w);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
    }

    private void run(int writer) {
        SplittableRandom rnd = new SplittableRandom(writer);
        while (!stop.get()) {
            try (Connection c = pg.connect(db)) {
                c.setAutoCommit(false);
                try (PreparedStatement cust = c.prepareStatement("INSERT INTO shop.customer (email) VALUES (?) RETURNING id");
                     PreparedStatement order = c.prepareStatement("INSERT INTO shop.orders (customer, qty, price) VALUES (?, ?, ?)"
                             + " RETURNING id");
                     PreparedStatement inv = c.prepareStatement("INSERT INTO shop.invoice (order_id, k1, k2) VALUES (?, ?, 'w')");
                     PreparedStatement upd = c.prepareStatement("UPDATE shop.orders SET qty = qty + 1 WHERE id = ?");
                     PreparedStatement led = c.prepareStatement("INSERT INTO shop.ledger (writer, customer) VALUES (?, ?) RETURNING id")) {
                    while (!stop.get()) {
                        long ledger;
                        try {
                            cust.setString(1, "w" + writer + "-" + System.nanoTime() + "@load");
                            int customer = one(cust);
                            order.setInt(1, customer);
                            order.setInt(2, 1 + rnd.nextInt(9));
                            order.setBigDecimal(3, java.math.BigDecimal.valueOf(rnd.nextInt(100000), 2));
                            long o1 = one(order);
                            one(order);
                            inv.setLong(1, o1);
                            inv.setInt(2, rnd.nextInt());
                            inv.executeUpdate();
                            upd.setLong(1, 1000 + 5L * rnd.nextInt(2000));
                            upd.executeUpdate();
                            led.setInt(1, writer);
                            led.setInt(2, customer);
                            ledger = one(led);
                            c.commit();
                        } catch (SQLException e) {
                            failures.incrementAndGet();
                            try {
                                c.rollback();
                            } catch (SQLException gone) {
                                break; // reconnect
                            }
                            Thread.sleep(5);
                            continue;
                        }
                        committed.add(ledger);
                        lastCommitNanos.set(System.nanoTime());
                        Thread.sleep(pauseMillis); // a steady load, not a flood that grows the tables without bound
                    }
                }
            } catch (SQLException e) {
                failures.incrementAndGet();
                sleep();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static void sleep() {
        try {
            Thread.sleep(20);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static int one(PreparedStatement ps) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        }
    }

    /** Waits until at least {@code n} transactions committed. */
    void awaitCommitted(int n) throws InterruptedException {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (committed.size() < n && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
    }

    @Override
    public void close() throws InterruptedException {
        stop.set(true);
        for (Thread t : threads) {
            t.join(10_000);
        }
    }
}
