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
 *       applied twice;</li>
 *   <li>with {@link #ddl}: tables {@code d_<n>} ({@value #DDL_PATTERN} in source.tables) and, every few seconds once
 *       {@link #allowDdl() allowed}, one DDL statement on them: a table created (also by {@code CREATE TABLE AS}, also
 *       under the name of one dropped before), renamed, a column renamed, the key retyped int → bigint, a table dropped.
 *       Each DDL but a drop is followed by an insert in the same transaction, so the destinations see the new shape
 *       (they follow a rename at the table's next change); inserts, updates and deletes of them come with the other
 *       small transactions.</li>
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
    static final String DDL_PATTERN = "public.d_*";
    /** A DDL statement every this many ms (0: none), once {@link #allowDdl()} was called. */
    private long ddlEveryMs;
    private volatile boolean ddlAllowed;
    private final AtomicLong ddls = new AtomicLong();
    /** The d_ tables of the source, by name: [value column's name, key type]. Load thread only. */
    private final java.util.TreeMap<String, String[]> ddlTables = new java.util.TreeMap<>();
    private final List<String> dropped = new java.util.ArrayList<>();
    private int nextDdlTable = 1;
    private int nextColumn = 1;
    private long nextDdlId = 1_000;

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

    /** Creates tables {@code d_1}, {@code d_2} and, once {@link #allowDdl()} is called, runs DDL on d_ tables every {@code everyMs}. */
    CrashWorkload ddl(long everyMs) {
        this.ddlEveryMs = everyMs;
        try (Connection c = pg.connect(database)) {
            for (int i = 0; i < 2; i++) {
                createDdlTable(c, false);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return this;
    }

    /** DDL may start (not during the initial snapshot: a table rewritten under it makes it start over). */
    void allowDdl() {
        ddlAllowed = true;
    }

    long ddls() {
        return ddls.get();
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
            long lastDdl = lastBig;
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
                } else if (ddlEveryMs > 0 && ddlAllowed && now - lastDdl >= ddlEveryMs) {
                    kind = ddlStatement(c);
                    lastDdl = now;
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
        if (!ddlTables.isEmpty() && rnd.nextInt(10) < 4) {
            ddlRows(c);
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

    // ---------------------------------------------------------------- DDL

    private String ddlStatement(Connection c) throws SQLException {
        List<String> names = List.copyOf(ddlTables.keySet());
        String t = names.isEmpty() ? null : names.get(rnd.nextInt(names.size()));
        int pick = t == null ? 0 : ddlTables.size() >= 4 ? 1 + rnd.nextInt(4) : rnd.nextInt(5); // 0: create, at most 4 tables
        String kind;
        try (Statement s = c.createStatement()) {
            switch (pick) {
                case 1 -> {
                    String to = "d_" + nextDdlTable++;
                    s.execute("ALTER TABLE " + t + " RENAME TO " + to);
                    ddlTables.put(to, ddlTables.remove(t));
                    insertDdlRow(c, to);
                    kind = "ddl rename table " + t + " to " + to;
                }
                case 2 -> {
                    String[] shape = ddlTables.get(t);
                    String to = "v" + nextColumn++;
                    s.execute("ALTER TABLE " + t + " RENAME COLUMN " + shape[0] + " TO " + to);
                    shape[0] = to;
                    insertDdlRow(c, t);
                    kind = "ddl rename column of " + t;
                }
                case 3 -> {
                    String[] shape = ddlTables.get(t);
                    if (shape[1].equals("int")) {
                        s.execute("ALTER TABLE " + t + " ALTER COLUMN id TYPE bigint");
                        shape[1] = "bigint";
                    }
                    insertDdlRow(c, t);
                    kind = "ddl retype key of " + t;
                }
                case 4 -> {
                    if (ddlTables.size() > 1) {
                        s.execute("DROP TABLE " + t);
                        ddlTables.remove(t);
                        dropped.add(t);
                        kind = "ddl drop " + t;
                    } else {
                        kind = "ddl create " + createDdlTable(c, true);
                    }
                }
                default -> kind = "ddl create " + createDdlTable(c, true);
            }
        }
        ddls.incrementAndGet();
        return kind;
    }

    /** A new d_ table with rows: by CREATE TABLE or CREATE TABLE AS, now and then under the name of one dropped before. */
    private String createDdlTable(Connection c, boolean mayReuse) throws SQLException {
        String name = mayReuse && !dropped.isEmpty() && rnd.nextInt(3) == 0 ? dropped.remove(rnd.nextInt(dropped.size()))
                : "d_" + nextDdlTable++;
        long from = nextDdlId;
        nextDdlId += 20;
        try (Statement s = c.createStatement()) {
            if (rnd.nextBoolean()) {
                s.execute("CREATE TABLE " + name + " (id int PRIMARY KEY, v text, n int)");
                s.execute("INSERT INTO " + name + " SELECT g, 'v' || g, g FROM generate_series(" + from + ", " + (from + 19) + ") g");
            } else {
                s.execute("CREATE TABLE " + name + " AS SELECT g::int AS id, 'v' || g AS v, g::int AS n FROM generate_series(" + from
                        + ", " + (from + 19) + ") g");
                s.execute("ALTER TABLE " + name + " ADD PRIMARY KEY (id)");
            }
        }
        ddlTables.put(name, new String[] {"v", "int"});
        return name;
    }

    private void insertDdlRow(Connection c, String table) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " VALUES (?, ?, ?)")) {
            ps.setLong(1, nextDdlId++ + (ddlTables.get(table)[1].equals("bigint") ? 3_000_000_000L : 0)); // past int, once retyped
            ps.setString(2, "after ddl");
            ps.setInt(3, rnd.nextInt(1000));
            ps.executeUpdate();
        }
    }

    /** An insert, update or delete in one of the d_ tables. */
    private void ddlRows(Connection c) throws SQLException {
        List<String> names = List.copyOf(ddlTables.keySet());
        String t = names.get(rnd.nextInt(names.size()));
        String v = ddlTables.get(t)[0];
        switch (rnd.nextInt(3)) {
            case 0 -> insertDdlRow(c, t);
            case 1 -> {
                try (Statement s = c.createStatement()) {
                    s.executeUpdate("UPDATE " + t + " SET " + v + " = " + v + " || '+', n = n + 1 WHERE id = (SELECT min(id) FROM " + t
                            + " WHERE n % 3 = " + rnd.nextInt(3) + ")");
                }
            }
            default -> {
                try (Statement s = c.createStatement()) {
                    s.executeUpdate("DELETE FROM " + t + " WHERE id = (SELECT max(id) FROM " + t + " WHERE n % 5 = " + rnd.nextInt(5) + ")");
                }
            }
        }
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
