package io.millrace.migrate;

import io.millrace.api.Millrace;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Partitioned tables, migrated whole: the target gets the same partition tree (partition keys, each partition's bounds,
 * a default partition, a partition partitioned again), the root's index on every partition and a partition's own index
 * and CHECK, each partition's own REPLICA IDENTITY FULL for a keyless one. The rows land in the same partitions on both
 * sides while a load writes to every partition and moves rows between them, and the cutover leaves the tables equal and
 * the sequence ahead. A keyless partitioned table with a partition that has no replica identity is refused with the fix,
 * since its UPDATEs would fail on the source once published.
 */
class MigratePartitionedIT extends TwoServers {
    private static final String[] SCHEMA = {
            "CREATE SCHEMA shop",
            "CREATE TABLE shop.customer (id int PRIMARY KEY, name text)",
            "INSERT INTO shop.customer SELECT g, 'c' || g FROM generate_series(1, 20) g",
            "CREATE TABLE shop.events (id bigserial, at date NOT NULL, customer int REFERENCES shop.customer, v text NOT NULL"
                    + " DEFAULT 'x' CHECK (v <> ''), PRIMARY KEY (id, at)) PARTITION BY RANGE (at)",
            "CREATE TABLE shop.events_2024 PARTITION OF shop.events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')",
            "CREATE TABLE shop.events_2025 PARTITION OF shop.events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01') PARTITION BY HASH (id)",
            "CREATE TABLE shop.events_2025_0 PARTITION OF shop.events_2025 FOR VALUES WITH (MODULUS 2, REMAINDER 0)",
            "CREATE TABLE shop.events_2025_1 PARTITION OF shop.events_2025 FOR VALUES WITH (MODULUS 2, REMAINDER 1)",
            "CREATE SCHEMA archive", // a partition in another schema
            "CREATE TABLE archive.events_2023 PARTITION OF shop.events FOR VALUES FROM ('2023-01-01') TO ('2024-01-01')",
            "CREATE TABLE shop.events_other PARTITION OF shop.events DEFAULT",
            "CREATE INDEX events_v ON shop.events (v)",
            "CREATE INDEX events_2024_at ON shop.events_2024 (at, v)",
            "ALTER TABLE shop.events_other ADD CONSTRAINT other_short CHECK (length(v) < 100)",
            "INSERT INTO shop.events (at, customer, v) SELECT date '2023-11-01' + (g % 900), 1 + g % 20, 'v' || g"
                    + " FROM generate_series(1, 3000) g",
            // keyless: followed by its replica identity, each partition's own
            "CREATE TABLE shop.readings (sensor int NOT NULL, at timestamptz NOT NULL, val float8) PARTITION BY LIST (sensor)",
            "ALTER TABLE shop.readings REPLICA IDENTITY FULL",
            "CREATE TABLE shop.readings_low PARTITION OF shop.readings FOR VALUES IN (1, 2)",
            "CREATE TABLE shop.readings_high PARTITION OF shop.readings FOR VALUES IN (3)",
            "ALTER TABLE shop.readings_high ADD CONSTRAINT high_at UNIQUE (at)", // a partition's own constraint
            "INSERT INTO shop.readings SELECT 1 + g % 3, timestamptz '2024-01-01' + g * interval '1 minute', g / 3.0"
                    + " FROM generate_series(1, 600) g",
    };

    /** Every partition of the shop schema: name, parent, bound, partition key, replica identity. */
    private static final String TREE = "SELECT string_agg(format('%s %s %s %s %s', c.relname, p.relname, pg_get_expr(c.relpartbound, c.oid),"
            + " CASE WHEN c.relkind = 'p' THEN pg_get_partkeydef(c.oid) END, c.relreplident), E'\\n' ORDER BY c.relname)"
            + " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_inherits h ON h.inhrelid = c.oid"
            + " LEFT JOIN pg_class p ON p.oid = h.inhparent WHERE n.nspname = 'shop' AND c.relkind IN ('r', 'p')";

    /** Rows by the partition that holds them: count and hash of each. */
    private static String byPartition(io.millrace.embedded.EmbeddedPg pg, String db, String table) throws Exception {
        return Servers.text(pg, db, "SELECT string_agg(format('%s %s %s', part, n, h), E'\\n' ORDER BY part) FROM (SELECT"
                + " r.tableoid::regclass::text AS part, count(*) AS n, md5(string_agg(md5(r::text), '' ORDER BY r::text)) AS h"
                + " FROM " + table + " r GROUP BY 1) s");
    }

    /** Database {@code db} on both servers, {@link #SCHEMA} and {@code more} on the source. */
    private static String database(String db, String... more) {
        src.createDatabase(db);
        tgt.createDatabase(db);
        src.execute(db, SCHEMA);
        src.execute(db, more);
        return db;
    }

    @Test
    void aPartitionedTableIsMigratedWithItsPartitionsUnderLoad() throws Exception {
        String db = database("part1", "ALTER TABLE shop.readings_high REPLICA IDENTITY FULL");
        Migration refused = Migration.of(Servers.source(src, db, "shop.*"), Servers.target(tgt, db));
        Plan plan = refused.plan();
        assertThat(plan.ok()).isFalse();
        assertThat(plan.render()).contains("shop.readings is partitioned, and its partition(s) shop.readings_low have no replica identity")
                .contains("ALTER TABLE \"shop\".\"readings_low\" REPLICA IDENTITY FULL;");
        src.execute(db, "ALTER TABLE shop.readings_low REPLICA IDENTITY FULL"); // the fix, as printed

        Migration m = Migration.of(Servers.source(src, db, "shop.*"), Servers.target(tgt, db));
        plan = m.plan();
        assertThat(plan.ok()).as(plan.render()).isTrue();
        assertThat(plan.render()).contains("shop.events (4 columns, partitioned by RANGE (at) into 6 partitions")
                .doesNotContain("events_2024 (");
        CutoverReport report;
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            assertThat(Servers.text(tgt, db, TREE)).isEqualTo(Servers.text(src, db, TREE));
            assertThat(Servers.text(tgt, db, MigrateFollowIT.INDEXES)).isEqualTo(Servers.text(src, db, MigrateFollowIT.INDEXES))
                    .contains("CREATE INDEX events_2024_at ON shop.events_2024").contains("events_2025_0_v_idx");
            assertThat(Servers.text(tgt, db, MigrateFollowIT.CONSTRAINTS)).isEqualTo(Servers.text(src, db, MigrateFollowIT.CONSTRAINTS))
                    .contains("events_other other_short CHECK").contains("readings_high high_at UNIQUE (at)");
            // A load on every partition: inserts into each range, rows moved to another partition, deletes; the keyless one too.
            for (int round = 0; round < 20; round++) {
                src.execute(db, "BEGIN",
                        "INSERT INTO shop.events (at, customer, v) SELECT date '2024-06-01' + (g * 37 % 700), 1 + g % 20, 'load'"
                                + " FROM generate_series(1, 30) g",
                        "UPDATE shop.events SET at = at + 400 WHERE id % 97 = " + round, // 2024 → 2025 → default
                        "DELETE FROM shop.events WHERE id % 101 = " + round,
                        "UPDATE shop.readings SET val = val + 1, sensor = 3 - sensor % 2 WHERE extract(minute FROM at)::int = " + round,
                        "COMMIT");
            }
            report = m.cutover(1 << 20, Duration.ofSeconds(30), 500, true);
        }
        assertThat(report.verified().equal()).as(report.render()).isTrue();
        for (String t : new String[] {"shop.events", "shop.readings", "shop.customer"}) {
            assertThat(byPartition(tgt, db, t)).as(t).isEqualTo(byPartition(src, db, t));
        }
        assertThat(byPartition(tgt, db, "shop.events")).contains("shop.events_2025_0").contains("shop.events_other")
                .contains("archive.events_2023");
        assertThat(Servers.count(tgt, db, "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid"
                + " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'shop' AND NOT (i.indisvalid AND i.indisready)")).isZero();
        long srcLast = Servers.count(src, db, "SELECT last_value FROM shop.events_id_seq");
        assertThat(Servers.count(tgt, db, "SELECT nextval('shop.events_id_seq')")).isGreaterThan(srcLast);
        // The target takes the application's writes, routed to its partitions.
        tgt.execute(db, "INSERT INTO shop.events (at, customer, v) VALUES ('2025-02-02', 1, 'after')",
                "UPDATE shop.readings SET val = 0 WHERE sensor = 3");
        // The way back: the new primary's writes to every partition, rows moved between partitions, reach the old one.
        try (Millrace back = m.reverse(Duration.ofSeconds(15))) {
            for (int round = 0; round < 10; round++) {
                tgt.execute(db, "BEGIN",
                        "INSERT INTO shop.events (at, customer, v) SELECT date '2023-06-01' + (g * 53 % 1000), 1 + g % 20, 'new'"
                                + " FROM generate_series(1, 20) g",
                        "UPDATE shop.events SET at = at + 400, v = 'moved' WHERE id % 89 = " + round,
                        "DELETE FROM shop.events WHERE id % 103 = " + round,
                        "UPDATE shop.readings SET val = val * 2, sensor = 3 - sensor % 2 WHERE extract(minute FROM at)::int = " + (round + 30),
                        "COMMIT");
            }
            m.rollback(Duration.ofSeconds(60));
        }
        assertThat(m.status().state()).isEqualTo(MigrationState.ROLLED_BACK);
        for (String t : new String[] {"shop.events", "shop.readings", "shop.customer"}) {
            assertThat(byPartition(src, db, t)).as("after the rollback: " + t).isEqualTo(byPartition(tgt, db, t));
        }
        assertThat(Servers.count(src, db, "SELECT count(*) FROM shop.events WHERE v IN ('new', 'moved')")).isGreaterThan(100);
    }

    /**
     * A partition created on the source while following (monthly partitions): the target has no partition for its rows.
     * What happens is stated in docs/MIGRATE.md and checked here: the follow stops on the first such row, naming the table
     * and the fix, nothing after it is applied; once the partition is made on the target too, a new follow goes on from
     * there, and the tables end equal.
     */
    @Test
    void aPartitionCreatedOnTheSourceWhileFollowingIsNamedAndTheFollowGoesOnOnceItExistsOnTheTarget() throws Exception {
        String db = database("part2", "ALTER TABLE shop.readings_low REPLICA IDENTITY FULL",
                "ALTER TABLE shop.readings_high REPLICA IDENTITY FULL");
        Migration m = Migration.of(Servers.source(src, db, "shop.*"), Servers.target(tgt, db));
        String newPartition = "CREATE TABLE shop.readings_four PARTITION OF shop.readings FOR VALUES IN (4)";
        Throwable stopped;
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            src.execute(db, newPartition, "ALTER TABLE shop.readings_four REPLICA IDENTITY FULL",
                    "INSERT INTO shop.readings VALUES (4, now(), -1), (1, now(), -2)");
            stopped = org.assertj.core.api.Assertions.catchThrowable(() -> following.await(Duration.ofSeconds(30)));
        }
        assertThat(stopped).as("the follow stops").isInstanceOf(io.millrace.core.MillraceException.class)
                .hasMessageContaining("table shop.readings").hasMessageContaining("no partition of relation \"readings\" found for row")
                .hasMessageContaining("(sensor) = (4)")
                .hasMessageContaining("Fix: create the partition these rows belong to on the destination too");
        assertThat(Servers.count(tgt, db, "SELECT count(*) FROM shop.readings WHERE val < 0")).as("nothing of its transaction applied").isZero();
        tgt.execute(db, newPartition, "ALTER TABLE shop.readings_four REPLICA IDENTITY FULL"); // the fix
        try (Millrace following = Migration.of(Servers.source(src, db, "shop.*"), Servers.target(tgt, db)).follow(Duration.ofSeconds(30))) {
            src.execute(db, "UPDATE shop.readings SET val = val + 10 WHERE sensor = 4");
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!byPartition(tgt, db, "shop.readings").equals(byPartition(src, db, "shop.readings")) && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertThat(byPartition(tgt, db, "shop.readings")).isEqualTo(byPartition(src, db, "shop.readings")).contains("shop.readings_four 1");
        }
    }
}
