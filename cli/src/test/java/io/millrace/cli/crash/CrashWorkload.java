package io.millrace.cli.crash;

import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The crash test's write load on the source, one transaction after another on one connection:
 * <ul>
 *   <li>{@code accounts} (primary key): inserts, updates, deletes, now and then a key change; 5% of
 *       the rows carry a large incompressible {@code payload} (TOASTed), which updates leave alone, so
 *       the stream sends it as "unchanged TOAST";</li>
 *   <li>{@code ledger} (no key, REPLICA IDENTITY FULL): inserts and deletes of single rows; rows are drawn
 *       from a small range, so identical rows exist and a delete must remove exactly one of them;</li>
 *   <li>{@code small} (primary key): upserts and deletes, and a {@code TRUNCATE} every few seconds;</li>
 *   <li>every {@link #BIG_EVERY_MS} a large transaction: 20 000 ledger inserts plus deletes, or an
 *       update of an eighth of {@code accounts}, so the pipeline cuts batches inside a transaction;</li>
 *   <li>every transaction inserts one row {@code (tx_id, kind)} into {@code txlog} (no key, insert only):
 *       the tx_ids are unique in the source, so a repeated tx_id in a destination is a transaction
 *       applied twice.</li>
 * </ul>
 * Choices come from a seeded {@link Random}; the interleaving with the engine's crashes does not.
 */
final class CrashWorkload implements Runnable {
    static final List<TableRef> TABLES = List.of(new TableRef("public", "accounts"), new TableRef("public", "ledger"),
            new TableRef("public", "txlog"), new TableRef("public", "small"));
    static final long BIG_EVERY_MS = 15_000;
    static final long TRUNCATE_EVERY_MS = 5_000;
    static final int BIG_ROWS = 20_000;

    private final EmbeddedPg pg;
    private final String database;
    private final Random rnd;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final AtomicLong committed = new AtomicLong();
    private final AtomicLong bigCommitted = new AtomicLong();
    private final AtomicLong truncates = new AtomicLong();
    private volatile boolean stop;
    private long nextTxId = 1;
    private long nextAccountId;
    private int bigRows = BIG_ROWS;
    private long bigEveryMs = BIG_EVERY_MS;
    private long truncateEveryMs = TRUNCATE_EVERY_MS;

    CrashWorkload(EmbeddedPg pg, String database, long seed) {
        this.pg = pg;
        this.database = database;
        this.rnd = new Random(seed);
    }

    /** Creates the tables and fills them (the initial snapshot copies this). */
    void createAndSeed(int accounts, int ledgerRows, int smallRows) {
        pg.execute(database,
                "CREATE TABLE accounts (id bigint PRIMARY KEY, owner text NOT NULL, balance bigint NOT NULL, payload text)",
                "CREATE TABLE ledger (k bigint, amount int, memo text)",
                "ALTER TABLE ledger REPLICA IDENTITY FULL",
                "CREATE TABLE txlog (tx_id bigint, note text)",
                "ALTER TABLE txlog REPLICA IDENTITY FULL", // no key: Millrace refuses it otherwise (the source's UPDATEs would fail)
                "CREATE TABLE small (id int PRIMARY KEY, v text)",
                // payload: 5% of rows, ~4 kB of md5 hex (barely compressible: stored out of line)
                "INSERT INTO accounts SELECT g, 'owner ' || g, g * 10, CASE WHEN g % 20 = 0 THEN"
                        + " (SELECT string_agg(md5(g::text || ':' || i), '') FROM generate_series(1, 130) i) END"
                        + " FROM generate_series(1, " + accounts + ") g",
                "INSERT INTO ledger SELECT g % 500, g % 7, 'seed ' || (g % 3) FROM generate_series(1, " + ledgerRows + ") g",
                "INSERT INTO small SELECT g, 'v' || g FROM generate_series(1, " + smallRows + ") g",
                "INSERT INTO txlog VALUES (0, 'seed')",
                "VACUUM ANALYZE");
        nextAccountId = accounts + 1L;
    }

    void stop() {
        stop = true;
    }

    /** Large transactions of {@code rows} ledger inserts every {@code everyMs} (defaults {@value #BIG_ROWS}, {@value #BIG_EVERY_MS}). */
    CrashWorkload big(int rows, long everyMs) {
        this.bigRows = rows;
        this.bigEveryMs = everyMs;
        return this;
    }

    /** A TRUNCATE of {@code small} every {@code everyMs} (default {@value #TRUNCATE_EVERY_MS}). */
    CrashWorkload truncateEvery(long everyMs) {
        this.truncateEveryMs = everyMs;
        return this;
    }

    long committed() {
        return committed.get();
    }

    long bigCommitted() {
        return bigCommitted.get();
    }

    long truncates() {
        return truncates.get();
    }

    void throwIfFailed() {
        Throwable t = failure.get();
        if (t != null) {
            throw new AssertionError("the write load failed: " + t, t);
        }
    }

    @Override
    public void run() {
        try (Connection c = pg.connect(database)) {
            c.setAutoCommit(false);
            long lastBig = System.currentTimeMillis();
            long lastTruncate = lastBig;
            boolean bigLedger = true;
            while (!stop) {
                long now = System.currentTimeMillis();
                String kind;
                if (now - lastBig >= bigEveryMs) {
                    kind = bigLedger ? bigLedger(c) : bigAccounts(c);
                    bigLedger = !bigLedger;
                    lastBig = now;
                } else if (now - lastTruncate >= truncateEveryMs) {
                    kind = truncateSmall(c);
                    lastTruncate = now;
                } else if (rnd.nextInt(100) < 55) {
                    kind = keyed(c);
                } else {
                    kind = ledger(c);
                }
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO txlog VALUES (?, ?)")) {
                    ps.setLong(1, nextTxId);
                    ps.setString(2, kind);
                    ps.executeUpdate();
                }
                c.commit();
                nextTxId++;
                committed.incrementAndGet();
                if (kind.startsWith("big")) {
                    bigCommitted.incrementAndGet();
                }
                Thread.sleep(5 + rnd.nextInt(20));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Throwable t) {
            failure.set(t);
        }
    }

    private String keyed(Connection c) throws SQLException {
        try (PreparedStatement ins = c.prepareStatement("INSERT INTO accounts VALUES (?, ?, ?, ?)");
             PreparedStatement upd = c.prepareStatement("UPDATE accounts SET balance = balance + ?,"
                     + " owner = CASE WHEN ? THEN owner || '+' ELSE owner END WHERE id = ?");
             PreparedStatement del = c.prepareStatement("DELETE FROM accounts WHERE id = ?");
             PreparedStatement rekey = c.prepareStatement("UPDATE accounts SET id = ? WHERE id = ?");
             PreparedStatement upsert = c.prepareStatement("INSERT INTO small VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v");
             PreparedStatement smallDel = c.prepareStatement("DELETE FROM small WHERE id = ?")) {
            for (int i = 0, n = 1 + rnd.nextInt(3); i < n; i++) {
                long id = nextAccountId++;
                ins.setLong(1, id);
                ins.setString(2, owner(id));
                ins.setLong(3, rnd.nextInt(1_000_000));
                ins.setString(4, rnd.nextInt(20) == 0 ? randomText(4000) : rnd.nextBoolean() ? null : "p" + id);
                ins.executeUpdate();
            }
            for (int i = 0, n = 1 + rnd.nextInt(3); i < n; i++) {
                upd.setLong(1, rnd.nextInt(1000) - 500);
                upd.setBoolean(2, rnd.nextInt(10) == 0);
                upd.setLong(3, 1 + (long) rnd.nextInt((int) nextAccountId));
                upd.executeUpdate();
            }
            if (rnd.nextInt(10) < 3) {
                del.setLong(1, 1 + (long) rnd.nextInt((int) nextAccountId));
                del.executeUpdate();
            }
            if (rnd.nextInt(100) == 0) {
                rekey.setLong(1, nextAccountId++);
                rekey.setLong(2, 1 + (long) rnd.nextInt((int) nextAccountId - 1));
                rekey.executeUpdate();
            }
            if (rnd.nextInt(10) < 3) {
                upsert.setInt(1, 1 + rnd.nextInt(200));
                upsert.setString(2, "v" + rnd.nextInt(1000));
                upsert.executeUpdate();
            }
            if (rnd.nextInt(10) == 0) {
                smallDel.setInt(1, 1 + rnd.nextInt(200));
                smallDel.executeUpdate();
            }
        }
        return "keyed";
    }

    private String ledger(Connection c) throws SQLException {
        try (PreparedStatement ins = c.prepareStatement("INSERT INTO ledger VALUES (?, ?, ?)");
             PreparedStatement del = c.prepareStatement("DELETE FROM ledger WHERE ctid = (SELECT ctid FROM ledger WHERE k = ? LIMIT 1)")) {
            for (int i = 0, n = 1 + rnd.nextInt(4); i < n; i++) {
                ins.setLong(1, rnd.nextInt(500));
                ins.setInt(2, rnd.nextInt(7));
                ins.setString(3, rnd.nextInt(50) == 0 ? null : "m " + rnd.nextInt(3));
                ins.executeUpdate();
            }
            if (rnd.nextInt(10) < 4) {
                del.setLong(1, rnd.nextInt(500));
                del.executeUpdate();
            }
        }
        return "ledger";
    }

    private String bigLedger(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.executeUpdate("INSERT INTO ledger SELECT (g * 7919) % 500, g % 7, 'bulk ' || (g % 3) FROM generate_series(1, "
                    + bigRows + ") g");
            // deletes of rows that have identical twins: each must remove exactly one
            s.executeUpdate("DELETE FROM ledger WHERE ctid IN (SELECT ctid FROM ledger WHERE k = " + rnd.nextInt(500)
                    + " LIMIT 200)");
        }
        return "big-ledger";
    }

    private String bigAccounts(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.executeUpdate("UPDATE accounts SET balance = balance + 1 WHERE id % 8 = " + rnd.nextInt(8));
        }
        return "big-accounts";
    }

    private String truncateSmall(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("TRUNCATE small");
            s.executeUpdate("INSERT INTO small SELECT g, 'after truncate ' || g FROM generate_series(1, " + (1 + rnd.nextInt(20)) + ") g");
        }
        truncates.incrementAndGet();
        return "truncate";
    }

    /** Owner names, some with characters that text COPY and JSON must escape. */
    private String owner(long id) {
        return switch (rnd.nextInt(8)) {
            case 0 -> "owner " + id + " tab\there";
            case 1 -> "owner " + id + " back\\slash \"quoted\"";
            case 2 -> "owner " + id + " line\nbreak";
            case 3 -> "Ünïcödé " + id + " \u2603";
            default -> "owner " + id;
        };
    }

    private String randomText(int length) {
        StringBuilder sb = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            sb.append((char) ('!' + rnd.nextInt(90)));
        }
        return sb.toString();
    }
}
