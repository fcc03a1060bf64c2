package io.millrace.engine.online;

import io.millrace.embedded.EmbeddedPg;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Seeded sessions writing to tables {@code (id int PRIMARY KEY, v int NOT NULL, note text)} until
 * closed: inserts, updates, deletes, key changes and small multi-statement transactions, each session
 * on one table (session {@code s} writes to {@code tables[s % tables.length]}). Non-negative keys
 * below {@code 2 * keySpace} only, so a test can use negative keys as markers.
 */
final class Writers implements AutoCloseable {
    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicReference<Throwable> error = new AtomicReference<>();
    private final List<Thread> threads = new ArrayList<>();
    private final AtomicLong ops = new AtomicLong();

    Writers(EmbeddedPg pg, String db, List<String> tables, long seed, int sessions, int keySpace, long pauseMillis) {
        for (int s = 0; s < sessions; s++) {
            Random rnd = new Random(seed * 31 + s);
            String table = tables.get(s % tables.size());
            Thread t = new Thread(() -> {
                try (Connection c = pg.connect(db); Statement st = c.createStatement()) {
                    while (!stop.get()) {
                        int id = rnd.nextInt(keySpace);
                        int op = rnd.nextInt(10);
                        try {
                            if (op < 3) {
                                st.execute("INSERT INTO " + table + " VALUES (" + id + ", " + rnd.nextInt(1000) + ", 'new') ON CONFLICT (id) DO"
                                        + " UPDATE SET v = EXCLUDED.v + 1");
                            } else if (op < 6) {
                                st.execute("UPDATE " + table + " SET v = v + 1, note = 'upd' WHERE id = " + id);
                            } else if (op < 8) {
                                st.execute("DELETE FROM " + table + " WHERE id = " + id);
                            } else if (op < 9) {
                                st.execute("UPDATE " + table + " SET id = " + (keySpace + rnd.nextInt(keySpace)) + " WHERE id = " + id);
                            } else {
                                c.setAutoCommit(false);
                                st.execute("UPDATE " + table + " SET v = v - 1 WHERE id BETWEEN " + id + " AND " + (id + 20));
                                st.execute("DELETE FROM " + table + " WHERE id = " + (id + 21));
                                c.commit();
                                c.setAutoCommit(true);
                            }
                            ops.incrementAndGet();
                        } catch (SQLException e) {
                            if (!c.getAutoCommit()) {
                                c.rollback();
                                c.setAutoCommit(true);
                            }
                            if (!"23505".equals(e.getSQLState()) && !"40P01".equals(e.getSQLState())) {
                                throw e; // a key change onto an existing key, or a deadlock between sessions: expected
                            }
                        }
                        if (pauseMillis > 0) {
                            Thread.sleep(pauseMillis);
                        }
                    }
                } catch (Throwable e) {
                    error.compareAndSet(null, e);
                }
            }, "writer-" + s);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
    }

    long ops() {
        return ops.get();
    }

    @Override
    public void close() throws InterruptedException {
        stop.set(true);
        for (Thread t : threads) {
            t.join();
        }
        if (error.get() != null) {
            throw new AssertionError("writers failed", error.get());
        }
    }
}
