package io.millrace.migrate;

import io.millrace.api.Millrace;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The way back: {@code migrate cutover --reverse} makes a slot on the target at the fence, and {@code migrate reverse}
 * streams every write made on the new primary since then into the old one — those made before the reverse stream
 * started and those made while it runs, under a write load, into a fenced source, with GENERATED ALWAYS identity columns
 * and a keyless REPLICA IDENTITY FULL table; nothing flows forward again. And what refuses it, before anything is fenced.
 */
class MigrateReverseIT extends TwoServers {
    static final String[] TABLES = {"shop.customer", "shop.orders", "shop.invoice", "shop.ledger", "shop.notes"};
    static final String NOTES = "CREATE TABLE shop.notes (customer int, body text)";

    @Test
    void writesOnTheNewPrimaryReachTheOldOne() throws Exception {
        String db = "rev1";
        Migration m = shop(db, WriteLoad.LEDGER, NOTES, "ALTER TABLE shop.notes REPLICA IDENTITY FULL",
                "INSERT INTO shop.notes SELECT i, 'note ' || i FROM generate_series(1, 50) i");
        assertThatThrownBy(() -> m.reverse(Duration.ofSeconds(1))).isInstanceOf(MillraceException.class)
                .hasMessageContaining("the way back starts after 'millrace migrate cutover --reverse'");
        CutoverReport report;
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            try (WriteLoad load = new WriteLoad(src, db, 2, 2)) {
                load.awaitCommitted(300);
                report = m.cutover(1 << 20, Duration.ofSeconds(30), 0, true);
            }
            System.out.println(report.render());
            // The new primary takes writes at once, before the reverse stream runs: its slot holds them.
            tgt.execute(db, "INSERT INTO shop.customer (email) VALUES ('first@new')",
                    "INSERT INTO shop.orders (customer, qty, price) SELECT id, 2, 3.5 FROM shop.customer WHERE email = 'first@new'",
                    "UPDATE shop.customer SET score = 42 WHERE id = 7",
                    "DELETE FROM shop.invoice WHERE no = (SELECT min(no) FROM shop.invoice)",
                    "UPDATE shop.notes SET body = 'changed on the new primary' WHERE customer = 3",
                    "DELETE FROM shop.notes WHERE customer = 4");
        }
        assertThat(report.reverseSlot()).isEqualTo("mig_rev1_reverse");
        assertThat(Servers.text(tgt, db, "SELECT attidentity FROM pg_attribute WHERE attrelid = 'shop.orders'::regclass"
                + " AND attname = 'id'")).isEqualTo("a");
        // Cut over: the forward stream ended at the fence, so no forward lag (before, it grew with the source's WAL for ever);
        // the new primary's writes wait in the reverse slot, which nothing reads yet.
        Migration.MigrationStatus cut = m.status();
        assertThat(cut.lagBytes()).isEqualTo(-1);
        assertThat(cut.tables()).allSatisfy(t -> assertThat(t.lagBytes()).isEqualTo(-1));
        assertThat(cut.reverseRead()).isFalse();
        assertThat(cut.reverseLagBytes()).isPositive();
        assertThat(cut.render()).doesNotContain("bytes behind\n").contains("the way back: the source is " + cut.reverseLagBytes()
                + " bytes behind the target; nothing streams the target's writes to it now");
        try (Millrace back = m.reverse(Duration.ofSeconds(15))) {
            // The forward slot is gone: what the reverse stream writes into the source does not flow forward again.
            assertThat(Servers.count(src, db, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'mig_rev1'")).isZero();
            try (WriteLoad load = new WriteLoad(tgt, db, 2, 2)) {
                load.awaitCommitted(300);
            }
            tgt.execute(db, "UPDATE shop.orders SET qty = qty + 1 WHERE id = (SELECT max(id) FROM shop.orders)");
            awaitEqual(db, Duration.ofSeconds(60));
            assertThat(back.status().state()).isEqualTo("streaming");
            Migration.MigrationStatus following = m.status();
            assertThat(following.reverseRead()).isTrue();
            assertThat(following.reverseLagBytes()).isNotNegative().isLessThan(cut.reverseLagBytes() + (1 << 20));
            assertThat(following.render()).contains("'millrace migrate reverse' streams to it");
        }
        // Still fenced for the applications: the reverse stream's sessions alone write past the fence.
        assertThatThrownBy(() -> src.execute(db, "INSERT INTO shop.customer (email) VALUES ('late@old')"))
                .hasMessageContaining("read-only transaction");
        assertThat(Servers.count(src, db, "SELECT count(*) FROM shop.customer WHERE email = 'first@new'")).isOne();
        assertThat(Servers.count(src, db, "SELECT score FROM shop.customer WHERE id = 7")).isEqualTo(42);
    }

    /**
     * {@code migrate rollback} under a write load on the new primary: once it returns, the old primary holds every
     * transaction the new one committed (checked at once, not awaited), takes writes again with its sequences past the new
     * primary's, and the new primary is read-only; the reverse slot is dropped once the reverse stream stopped. A rollback
     * before the cutover, or a second one, is refused.
     */
    @Test
    void aRollbackMakesTheOldPrimaryThePrimaryAgainWithEveryWriteOfTheNewOne() throws Exception {
        String db = "rev3";
        Migration m = shop(db, WriteLoad.LEDGER, NOTES, "ALTER TABLE shop.notes REPLICA IDENTITY FULL",
                "INSERT INTO shop.notes SELECT i, 'note ' || i FROM generate_series(1, 50) i");
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            assertThatThrownBy(() -> m.rollback(Duration.ofSeconds(1))).isInstanceOf(MillraceException.class)
                    .hasMessageContaining("the migration is FOLLOWING").hasMessageContaining("'millrace migrate abort' does");
            try (WriteLoad load = new WriteLoad(src, db, 2, 2)) {
                load.awaitCommitted(200);
                m.cutover(1 << 20, Duration.ofSeconds(30), 0, true);
            }
        }
        // without the reverse stream running, nothing is fenced: both databases would be read-only
        assertThatThrownBy(() -> m.rollback(Duration.ofSeconds(2))).isInstanceOf(MillraceException.class)
                .hasMessageContaining("is 'millrace migrate reverse' running?").hasMessageContaining("nothing was fenced");
        assertThat(m.status().state()).isEqualTo(MigrationState.CUT_OVER);
        tgt.execute(db, "INSERT INTO shop.customer (email) VALUES ('still@new')"); // the new primary takes writes still
        // A column the new primary gained with a default: the rows the default filled are never streamed back, so the
        // rollback refuses, with nothing fenced, until the old primary has the column as the new one has it.
        tgt.execute(db, "ALTER TABLE shop.notes ADD COLUMN kind text NOT NULL DEFAULT 'plain'");
        assertThatThrownBy(() -> m.rollback(Duration.ofSeconds(2))).isInstanceOf(MillraceException.class)
                .hasMessageContaining("shop.notes.kind: target text DEFAULT 'plain'::text NOT NULL, missing on the source")
                .hasMessageContaining("Nothing was fenced");
        assertThat(m.status().state()).isEqualTo(MigrationState.CUT_OVER);
        assertThat(m.status().targetFenced()).isFalse();
        src.execute(db, "SET default_transaction_read_only = off", "ALTER TABLE shop.notes ADD COLUMN kind text NOT NULL DEFAULT 'plain'");
        RollbackReport report;
        WriteLoad load = new WriteLoad(tgt, db, 2, 2);
        try (Millrace back = m.reverse(Duration.ofSeconds(15))) {
            load.awaitCommitted(300);
            // a large transaction just before: the reverse stream is seconds behind when the rollback starts
            tgt.execute(db, "INSERT INTO shop.notes SELECT i, repeat('x', 100) FROM generate_series(1000, 200000) i");
            report = m.rollback(Duration.ofSeconds(60)); // under the load: the fence ends its sessions
            Migration.MigrationStatus back2 = m.status();
            assertThat(back2.state()).isEqualTo(MigrationState.ROLLED_BACK);
            assertThat(back2.lagBytes()).isEqualTo(-1); // neither way is followed now
            assertThat(back2.reverseLagBytes()).isEqualTo(-1);
            assertThat(back2.render()).doesNotContain("bytes behind").doesNotContain("the way back");
            // every transaction the new primary committed is on the old one now, with nothing awaited
            for (String t : TABLES) {
                assertThat(MigrateFollowIT.rows(src, db, t)).as(t).isEqualTo(MigrateFollowIT.rows(tgt, db, t));
            }
        } finally {
            load.close();
        }
        System.out.println(report.render());
        assertThat(load.committed).isNotEmpty();
        for (long id : load.committed) {
            assertThat(Servers.count(src, db, "SELECT count(*) FROM shop.ledger WHERE id = " + id)).as("ledger row " + id).isOne();
        }
        assertThat(report.sequences()).isPositive();
        assertThat(m.status().fenced()).isFalse();
        // the old primary takes writes again, its sequences past every value the new one handed out
        src.execute(db, "INSERT INTO shop.customer (email) VALUES ('back@old')");
        assertThat(Servers.count(src, db, "SELECT count(*) FROM shop.customer WHERE email = 'back@old' AND id > "
                + Servers.count(tgt, db, "SELECT max(id) FROM shop.customer"))).isOne();
        assertThatThrownBy(() -> tgt.execute(db, "INSERT INTO shop.customer (email) VALUES ('late@new')"))
                .hasMessageContaining("read-only transaction");
        assertThat(m.releaseReverse(Duration.ofSeconds(10))).isTrue();
        assertThat(Servers.count(tgt, db, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'mig_rev3_reverse'")).isZero();
        assertThatThrownBy(() -> m.rollback(Duration.ofSeconds(1))).isInstanceOf(MillraceException.class)
                .hasMessageContaining("rolled back already");
        assertThatThrownBy(m::abort).isInstanceOf(MillraceException.class).hasMessageContaining("the source is the primary again");

        // A second migration of the old primary, into a new database, goes back too: the first one's reverse checkpoint on
        // the source had named a slot that is gone, and the engine refused the new reverse slot as confirmed past it
        // ("start this one again with empty destinations": the old primary), found by a migrate user.
        tgt.createDatabase("rev3b");
        Migration again = Migration.of(Servers.source(src, db, "shop.*"), Servers.target(tgt, "rev3b"));
        try (Millrace following = again.follow(Duration.ofSeconds(30))) {
            // INV: IDENTITY — a reverse checkpoint of another slot (another migration's way back) is refused, kept, and
            // nothing is fenced; only one of this migration's slot is taken for an earlier attempt's and removed
            String setSlot = "UPDATE millrace.checkpoints SET checkpoint = jsonb_set(checkpoint, '{identity,slot}', '\"%s\"')"
                    + " WHERE destination = 'reverse'";
            src.execute(db, String.format(setSlot, "other_reverse"));
            assertThatThrownBy(() -> again.cutover(1 << 20, Duration.ofSeconds(30), 0, true)).isInstanceOf(MillraceException.class)
                    .hasMessageContaining("holds the checkpoint of another way back").hasMessageContaining("slot 'other_reverse'")
                    .hasMessageContaining("Nothing was fenced");
            assertThat(again.status().fenced()).isFalse();
            src.execute(db, String.format(setSlot, "mig_" + db + "_reverse"));
            again.cutover(1 << 20, Duration.ofSeconds(30), 0, true);
        }
        tgt.execute("rev3b", "INSERT INTO shop.customer (email) VALUES ('second@new')");
        try (Millrace back = again.reverse(Duration.ofSeconds(15))) {
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (Servers.count(src, db, "SELECT count(*) FROM shop.customer WHERE email = 'second@new'") == 0) {
                assertThat(back.status().lastError()).as("the second way back").isNull();
                assertThat(System.nanoTime()).as("the second migration's write reached the old primary").isLessThan(deadline);
                Thread.sleep(50);
            }
        }
    }

    @Test
    void aTargetThatCannotStreamBackIsRefusedBeforeTheFence() throws Exception {
        String db = "rev2";
        EmbeddedPg plain = EmbeddedPg.builder().setting("wal_level", "replica").start();
        try (plain) {
            src.createDatabase(db);
            plain.createDatabase(db);
            src.execute(db, MigrateFollowIT.SCHEMA);
            Migration m = Migration.of(Servers.source(src, db, "shop.*"), Servers.target(plain, db));
            try (Millrace following = m.follow(Duration.ofSeconds(30))) {
                assertThatThrownBy(() -> m.cutover(1 << 20, Duration.ofSeconds(30), 0, true))
                        .isInstanceOf(MillraceException.class)
                        .satisfies(e -> assertThat(((MillraceException) e).kind()).isEqualTo(Kind.SOURCE_SETUP))
                        .hasMessageContaining("the target's wal_level is 'replica'")
                        .hasMessageContaining("ALTER SYSTEM SET wal_level = logical")
                        .hasMessageContaining("Nothing was fenced");
                assertThat(m.status().fenced()).isFalse();
                assertThat(m.status().state()).isEqualTo(MigrationState.FOLLOWING);
                src.execute(db, "INSERT INTO shop.customer (email) VALUES ('still@writable')");
                // Without --reverse the cutover goes on; reverse then says why it cannot start.
                m.cutover(1 << 20, Duration.ofSeconds(30), 0, false);
            }
            assertThatThrownBy(() -> m.reverse(Duration.ofSeconds(5))).isInstanceOf(MillraceException.class)
                    .hasMessageContaining("the cutover ran without --reverse");
        }
    }

    private static void awaitEqual(String db, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            String diff = null;
            for (String t : TABLES) {
                String a = MigrateFollowIT.rows(tgt, db, t);
                String b = MigrateFollowIT.rows(src, db, t);
                if (!a.equals(b)) {
                    diff = t + ": target " + a + ", source " + b;
                    break;
                }
            }
            if (diff == null) {
                return;
            }
            assertThat(System.nanoTime()).as("old primary equal to the new one in time; " + diff).isLessThan(deadline);
            Thread.sleep(200);
        }
    }
}
