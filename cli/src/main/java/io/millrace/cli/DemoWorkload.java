package io.millrace.cli;

import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/** The demo's sample shop: schema, seed data and a mixed write load. */
final class DemoWorkload {
    static final List<TableRef> TABLES = List.of(new TableRef("public", "customers"), new TableRef("public", "products"),
            new TableRef("public", "orders"), new TableRef("public", "audit_log"));

    private final EmbeddedPg pg;
    private final String database;
    private final AtomicLong transactions = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    DemoWorkload(EmbeddedPg pg, String database) {
        this.pg = pg;
        this.database = database;
    }

    long transactions() {
        return transactions.get();
    }

    void throwIfFailed() {
        Throwable t = failure.get();
        if (t != null) {
            throw new IllegalStateException("the demo's write load failed: " + t.getMessage(), t);
        }
    }

    void createSchema(int orders) {
        pg.execute(database,
                "DROP TABLE IF EXISTS orders, products, customers, audit_log",
                "DROP TYPE IF EXISTS order_status",
                "CREATE TYPE order_status AS ENUM ('new', 'paid', 'shipped', 'cancelled')",
                "CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL, email text, country char(2),"
                        + " created_at timestamptz NOT NULL DEFAULT now(), tags text[])",
                "CREATE TABLE products (sku uuid PRIMARY KEY, title varchar(200) NOT NULL, price numeric(10,2),"
                        + " dims int[], attrs jsonb, description text)",
                "CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id int NOT NULL, sku uuid, qty int2, amount numeric(12,2),"
                        + " status order_status NOT NULL DEFAULT 'new', placed_at timestamptz NOT NULL DEFAULT now(), ship_by date, notes jsonb)",
                "CREATE TABLE audit_log (at timestamptz NOT NULL DEFAULT clock_timestamp(), actor text, action text, detail jsonb)",
                "ALTER TABLE audit_log REPLICA IDENTITY FULL",
                "INSERT INTO customers (name, email, country, tags) SELECT 'customer ' || i, 'c' || i || '@example.com',"
                        + " (ARRAY['DE','FR','US','JP','BR'])[1 + i % 5], ARRAY['tier' || (i % 3), 'since' || (2000 + i % 25)]"
                        + " FROM generate_series(1, " + Math.max(100, orders / 10) + ") i",
                // attrs and description are large and incompressible: stored out of line (TOAST)
                "INSERT INTO products (sku, title, price, dims, attrs, description) SELECT gen_random_uuid(), 'product ' || i,"
                        + " round((random() * 500)::numeric, 2), ARRAY[i % 50, i % 30, i % 20],"
                        + " jsonb_build_object('color', (ARRAY['red','green','blue'])[1 + i % 3], 'blob',"
                        + " (SELECT string_agg(md5(i::text || g::text), '') FROM generate_series(1, 80) g)),"
                        + " (SELECT string_agg(md5(g::text || i::text), ' ') FROM generate_series(1, 100) g)"
                        + " FROM generate_series(1, 200) i",
                "INSERT INTO orders (customer_id, sku, qty, amount, status, placed_at, ship_by, notes)"
                        + " SELECT 1 + i % " + Math.max(100, orders / 10) + ", (SELECT sku FROM products OFFSET i % 200 LIMIT 1),"
                        + " (1 + i % 5)::int2, round((random() * 1000)::numeric, 2), (ARRAY['new','paid','shipped']::order_status[])[1 + i % 3],"
                        + " now() - (i || ' minutes')::interval, current_date + i % 30, CASE WHEN i % 7 = 0 THEN"
                        + " jsonb_build_object('gift', true, 'message', 'happy birthday ' || i) END"
                        + " FROM generate_series(1, " + orders + ") i",
                "INSERT INTO audit_log (actor, action, detail) SELECT 'seed', 'create', jsonb_build_object('n', i) FROM generate_series(1, 500) i",
                "ANALYZE");
    }

    /** Runs transactions at {@code rate} per second until {@code endMillis}. */
    void run(int rate, long endMillis) {
        try (Connection c = pg.connect(database)) {
            c.setAutoCommit(false);
            long intervalNanos = 1_000_000_000L / Math.max(1, rate);
            long next = System.nanoTime();
            ThreadLocalRandom rnd = ThreadLocalRandom.current();
            while (System.currentTimeMillis() < endMillis) {
                oneTransaction(c, rnd);
                c.commit();
                transactions.incrementAndGet();
                next += intervalNanos;
                long sleep = next - System.nanoTime();
                if (sleep > 0) {
                    Thread.sleep(sleep / 1_000_000, (int) (sleep % 1_000_000));
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Throwable t) {
            failure.set(t);
        }
    }

    private static void oneTransaction(Connection c, ThreadLocalRandom rnd) throws SQLException {
        try (Statement s = c.createStatement()) {
            switch (rnd.nextInt(8)) {
                case 0, 1 -> {
                    s.executeUpdate("INSERT INTO orders (customer_id, sku, qty, amount, ship_by)"
                            + " SELECT id, (SELECT sku FROM products ORDER BY random() LIMIT 1), 1 + (random() * 4)::int2,"
                            + " round((random() * 1000)::numeric, 2), current_date + 3 FROM customers ORDER BY random() LIMIT 3");
                    s.executeUpdate("INSERT INTO audit_log (actor, action, detail) VALUES ('shop', 'order', '{\"lines\": 3}')");
                }
                case 2 -> s.executeUpdate("UPDATE orders SET status = 'shipped', notes = coalesce(notes, '{}') || '{\"tracked\": true}'"
                        + " WHERE id IN (SELECT id FROM orders WHERE status = 'paid' ORDER BY random() LIMIT 5)");
                case 3 -> s.executeUpdate("UPDATE orders SET status = 'paid' WHERE id IN (SELECT id FROM orders WHERE status = 'new'"
                        + " ORDER BY random() LIMIT 5)");
                case 4 -> // the TOASTed attrs and description stay untouched: pgoutput sends them as 'unchanged'
                        s.executeUpdate("UPDATE products SET price = round((price * 1.01)::numeric, 2)"
                                + " WHERE sku = (SELECT sku FROM products ORDER BY random() LIMIT 1)");
                case 5 -> {
                    s.executeUpdate("DELETE FROM orders WHERE id = (SELECT id FROM orders WHERE status = 'cancelled' LIMIT 1)");
                    s.executeUpdate("UPDATE orders SET status = 'cancelled' WHERE id = (SELECT id FROM orders ORDER BY random() LIMIT 1)");
                }
                case 6 -> {
                    try (PreparedStatement ps = c.prepareStatement("INSERT INTO customers (name, email, country, tags) VALUES (?, ?, ?, ?)")) {
                        int n = rnd.nextInt(1_000_000);
                        ps.setString(1, "new customer " + n + " \u00e9\u00e8 \"quoted\" 'x'\ttab");
                        ps.setString(2, "n" + n + "@example.com");
                        ps.setString(3, "NL");
                        ps.setArray(4, c.createArrayOf("text", new Object[] {"new", null, "with,comma"}));
                        ps.executeUpdate();
                    }
                    s.executeUpdate("UPDATE customers SET tags = array_append(tags, 'vip') WHERE id = (SELECT id FROM customers ORDER BY random() LIMIT 1)");
                }
                default -> s.executeUpdate("DELETE FROM audit_log WHERE ctid = (SELECT ctid FROM audit_log ORDER BY random() LIMIT 1)");
            }
        }
    }
}
