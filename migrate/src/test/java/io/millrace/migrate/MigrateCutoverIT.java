package io.millrace.migrate;

import io.millrace.api.Millrace;
import io.millrace.core.MillraceException;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code migrate cutover} under a write load (own load generator: multi-statement transactions, sequences, identity,
 * foreign keys): afterwards every table is equal (row hashes), every target sequence is past the source's, indexes and
 * constraints are valid, identity columns are ALWAYS again, no transaction whose COMMIT returned before the fence is
 * missing, the source refuses writes and the state says CUT_OVER. And an interrupted cutover leaves a named state that
 * {@code migrate abort} undoes, unfencing the source.
 */
class MigrateCutoverIT extends TwoServers {
    static final String[] TABLES = {"shop.customer", "shop.orders", "shop.invoice", "shop.ledger"};

    @Test
    void cutsOverUnderLoadWithNothingLostAndSequencesAhead() throws Exception {
        String db = "cut1";
        Migration m = shop(db, WriteLoad.LEDGER, "CREATE SEQUENCE shop.countdown INCREMENT -5 START -10",
                "CREATE TABLE shop.ticket (id bigint PRIMARY KEY DEFAULT nextval('shop.countdown'), note text)",
                "ALTER SEQUENCE shop.countdown OWNED BY shop.ticket.id",
                "INSERT INTO shop.ticket (note) SELECT 'before' FROM generate_series(1, 20)");
        CutoverReport report;
        WriteLoad load;
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            load = new WriteLoad(src, db, 3, 1);
            try (load) {
                load.awaitCommitted(1500);
                report = m.cutover(1 << 20, Duration.ofSeconds(30), 500);
                System.out.println(report.render() + "transactions committed by the load: " + load.committed.size()
                        + ", failed (fence): " + load.failures.get());
                Thread.sleep(300); // the writers keep trying against the fenced source
            }
            assertThat(load.failures.get()).isPositive();
        }
        assertThat(report.writeUnavailable()).isLessThan(Duration.ofSeconds(5));
        assertThat(report.verified().equal()).isTrue(); // compared with the source fenced, inside the window
        assertThat(report.verified().rechecked()).isZero(); // nothing in flux once fenced
        assertThat(report.sessionsEnded()).isGreaterThanOrEqualTo(3);
        for (String t : TABLES) {
            assertThat(MigrateFollowIT.rows(tgt, db, t)).as(t).isEqualTo(MigrateFollowIT.rows(src, db, t));
        }
        // INV: FENCE — every transaction whose COMMIT returned is on the target.
        Set<Long> onTarget = new HashSet<>();
        try (Connection c = tgt.connect(db); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT id FROM shop.ledger")) {
            while (rs.next()) {
                onTarget.add(rs.getLong(1));
            }
        }
        assertThat(onTarget).containsAll(load.committed);
        // Sequences past the source's last value: the next value on the target is new.
        for (String seq : new String[] {"shop.customer_id_seq", "shop.orders_id_seq", "shop.invoice_no", "shop.ledger_id_seq"}) {
            long srcLast = Servers.count(src, db, "SELECT last_value FROM " + seq);
            long next = Servers.count(tgt, db, "SELECT nextval('" + seq + "')");
            assertThat(next).as(seq).isGreaterThan(srcLast);
        }
        // A sequence counting down is past the source's when it is below it.
        long srcLast = Servers.count(src, db, "SELECT last_value FROM shop.countdown");
        assertThat(Servers.count(tgt, db, "SELECT nextval('shop.countdown')")).as("shop.countdown").isLessThan(srcLast);
        assertThat(Servers.count(tgt, db, "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid"
                + " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'shop' AND NOT (i.indisvalid AND i.indisready)")).isZero();
        assertThat(Servers.count(tgt, db, "SELECT count(*) FROM pg_constraint k JOIN pg_namespace n ON n.oid = k.connamespace"
                + " WHERE n.nspname = 'shop' AND NOT k.convalidated")).isZero();
        assertThat(Servers.count(tgt, db, "SELECT count(*) FROM pg_constraint k JOIN pg_namespace n ON n.oid = k.connamespace"
                + " WHERE n.nspname = 'shop' AND k.contype = 'f'")).isEqualTo(3);
        assertThat(Servers.text(tgt, db, "SELECT attidentity FROM pg_attribute WHERE attrelid = 'shop.orders'::regclass"
                + " AND attname = 'id'")).isEqualTo("a");
        // The target takes the application's writes: identity and sequences go on from past the source's values.
        tgt.execute(db, "INSERT INTO shop.customer (email) VALUES ('after@cutover')",
                "INSERT INTO shop.orders (customer, qty, price) SELECT id, 1, 1 FROM shop.customer WHERE email = 'after@cutover'");
        // The source is fenced: a new session cannot write.
        assertThatThrownBy(() -> src.execute(db, "INSERT INTO shop.customer (email) VALUES ('late@source')"))
                .hasMessageContaining("read-only transaction");
        Migration.MigrationStatus st = m.status();
        assertThat(st.state()).isEqualTo(MigrationState.CUT_OVER);
        assertThat(st.fenced()).isTrue();
        assertThat(st.steps()).hasSize(5).anyMatch(s -> s.contains("CUT_OVER: fence ") && s.contains("write-unavailable"));
        // The follower ended without dropping the slot (as a 'migrate run' killed in the cutover's moment does): status names
        // the WAL it keeps on the old primary and the statement that drops it (before, it said nothing of it).
        assertThat(st.leftSlotBytes()).isNotNegative();
        assertThat(st.render()).contains("the source still holds slot 'mig_" + db + "'").contains("pg_drop_replication_slot('mig_" + db + "')");
        assertThatThrownBy(m::abort).isInstanceOf(MillraceException.class).hasMessageContaining("cut over");
        src.execute("postgres", "ALTER DATABASE " + db + " RESET default_transaction_read_only");
    }

    /**
     * A table without a key cannot be compared in chunks while rows are in flux; with the source fenced and the target past
     * the marker nothing is, so the cutover compares it as a whole, and a difference (a row lost on the target) stops it
     * fenced; 'verify --repair' in state FENCED copies the table again whole, and the cutover finishes.
     */
    @Test
    void aTableWithoutAKeyIsComparedWholeWithTheSourceFencedAndRepairedWhole() throws Exception {
        String db = "cut7";
        Migration m = shop(db, "CREATE TABLE shop.audit (at int, what text)", "ALTER TABLE shop.audit REPLICA IDENTITY FULL",
                "INSERT INTO shop.audit SELECT g, 'row ' || g FROM generate_series(1, 2500) g", "INSERT INTO shop.audit VALUES (1, 'row 1')");
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            assertThat(m.verify(false, 500).render()).contains("not compared: shop.audit (no primary key");
            src.execute(db, "INSERT INTO shop.audit VALUES (9999, 'after the copy')");
            tgt.execute(db, "SET session_replication_role = replica; DELETE FROM shop.audit WHERE ctid = (SELECT min(ctid) FROM shop.audit"
                    + " WHERE at = 1)"); // one of the two equal rows: only a multiset comparison sees it
            assertThatThrownBy(() -> m.cutover(1 << 20, Duration.ofSeconds(30), 500)).isInstanceOf(MillraceException.class)
                    .satisfies(e -> assertThat(((MillraceException) e).kind().exitCode()).isEqualTo(12))
                    .hasMessageContaining("shop.audit (no key, compared whole): its rows differ, source 2502 row(s), target 2501")
                    .hasMessageContaining("source stays fenced (state FENCED)");
            // run again without --verify, it does not go past what the comparison found (it made the target the primary)
            assertThatThrownBy(() -> m.cutover(1 << 20, Duration.ofSeconds(30))).hasMessageContaining("found rows that differ")
                    .hasMessageContaining("shop.audit (1 chunk(s))").hasMessageContaining("the source stays fenced");
            VerifyReport repaired = m.verify(true, 500);
            assertThat(repaired.render()).contains("shop.audit (no key, compared whole)").contains("repaired: copied again whole");
            assertThat(repaired.equal()).isTrue();
            CutoverReport r = m.cutover(1 << 20, Duration.ofSeconds(30), 500);
            assertThat(r.verified().divergent()).isEmpty();
        }
        assertThat(m.status().state()).isEqualTo(MigrationState.CUT_OVER);
        assertThat(MigrateFollowIT.rows(tgt, db, "shop.audit")).isEqualTo(MigrateFollowIT.rows(src, db, "shop.audit"));
        src.execute("postgres", "ALTER DATABASE " + db + " RESET default_transaction_read_only");
    }

    @Test
    void aCutoverWithVerifyStopsFencedOnADifferenceAndFinishesOnceRepaired() throws Exception {
        String db = "cut3";
        Migration m = shop(db);
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            tgt.execute(db, "SET session_replication_role = replica; UPDATE shop.orders SET qty = 99 WHERE id = 1500");
            assertThatThrownBy(() -> m.cutover(1 << 20, Duration.ofSeconds(30), 500)).isInstanceOf(MillraceException.class)
                    .satisfies(e -> assertThat(((MillraceException) e).kind().exitCode()).isEqualTo(12))
                    .hasMessageContaining("shop.orders key range").hasMessageContaining("e.g. 1500")
                    .hasMessageContaining("source stays fenced (state FENCED)");
            assertThat(m.status().state()).isEqualTo(MigrationState.FENCED);
            assertThatThrownBy(() -> m.cutover(1 << 20, Duration.ofSeconds(30))).hasMessageContaining("found rows that differ")
                    .hasMessageContaining("shop.orders (1 chunk(s))").hasMessageContaining("the source stays fenced");
            assertThat(m.status().state()).isEqualTo(MigrationState.FENCED);
            assertThat(m.verify(true, 500).equal()).isTrue();
            CutoverReport r = m.cutover(1 << 20, Duration.ofSeconds(30), 500);
            assertThat(r.verified().divergent()).isEmpty();
        }
        assertThat(m.status().state()).isEqualTo(MigrationState.CUT_OVER);
        assertThat(MigrateFollowIT.rows(tgt, db, "shop.orders")).isEqualTo(MigrateFollowIT.rows(src, db, "shop.orders"));
        src.execute("postgres", "ALTER DATABASE " + db + " RESET default_transaction_read_only");
    }

    /**
     * The cutover's comparison hashes only the chunks written since the last full pass (on either side): a change the
     * stream carried is compared and equal, the rest is not hashed; and a row deleted or changed on the target behind
     * Millrace's back after the pass is found. Without the record of the pass every chunk would be hashed (unchanged 0).
     */
    @Test
    void theCutoverComparesTheChunksWrittenSinceTheLastPass() throws Exception {
        String db = "cut5";
        Migration m = shop(db, "CREATE TABLE shop.audit (at timestamptz, what text)", "ALTER TABLE shop.audit REPLICA IDENTITY FULL",
                "INSERT INTO shop.audit VALUES (now(), 'a'), (now(), 'b')");
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            assertThat(m.verify(false, 100).equal()).isTrue();
            src.execute(db, "UPDATE shop.customer SET score = 1 WHERE id = 250");
            CutoverReport r = m.cutover(1 << 20, Duration.ofSeconds(30), 100);
            System.out.println(r.render());
            assertThat(r.verified().divergent()).isEmpty();
            assertThat(r.verified().rechecked()).isZero();
            assertThat(r.verified().unchanged()).isEqualTo(r.verified().chunks() - 2); // the customer chunk of id 250, shop.audit
            assertThat(r.verified().rows()).isEqualTo(500 + 2000 + 100 + 2);
            // a table without a key is compared as a whole, the source fenced (a user read 'verified' and took every table
            // for compared while it was left out): one more chunk, its 2 rows
            assertThat(r.render()).doesNotContain("not compared");
        }
        src.execute("postgres", "ALTER DATABASE " + db + " RESET default_transaction_read_only");

        String db2 = "cut6";
        Migration m2 = shop(db2);
        try (Millrace following = m2.follow(Duration.ofSeconds(30))) {
            assertThat(m2.verify(false, 100).equal()).isTrue();
            tgt.execute(db2, "SET session_replication_role = replica; DELETE FROM shop.orders WHERE id = 9000;"
                    + " UPDATE shop.orders SET qty = 77 WHERE id = 8000");
            assertThatThrownBy(() -> m2.cutover(1 << 20, Duration.ofSeconds(30), 100)).isInstanceOf(MillraceException.class)
                    .satisfies(e -> assertThat(((MillraceException) e).kind().exitCode()).isEqualTo(12))
                    .hasMessageContaining("2 chunk(s) differ").hasMessageContaining("e.g. 9000").hasMessageContaining("e.g. 8000");
            m2.abort();
        }
    }

    /**
     * A cutover with nothing following the source ('millrace migrate run' stopped) is refused with nothing fenced: the
     * fence marker could not reach the target. Before, the source was fenced, read-only for the whole timeout (300 s by
     * default) and then until an abort, for nothing (found by a user moving a database).
     */
    @Test
    void aCutoverWithNothingFollowingIsRefusedWithNothingFenced() throws Exception {
        String db = "cut8";
        Migration m = shop(db);
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            assertThat(m.status().state()).isEqualTo(MigrationState.FOLLOWING);
        }
        assertThatThrownBy(() -> m.cutover(Long.MAX_VALUE, Duration.ofSeconds(2))).isInstanceOf(MillraceException.class)
                .hasMessageContaining("nothing reads the source's slot").hasMessageContaining("nothing was fenced");
        assertThat(m.status().state()).isEqualTo(MigrationState.FOLLOWING);
        assertThat(m.status().fenced()).isFalse();
        src.execute(db, "INSERT INTO shop.customer (email) VALUES ('x@not-fenced')");
    }

    @Test
    void anInterruptedCutoverIsNamedAndAbortUnfencesTheSource() throws Exception {
        String db = "cut2";
        Migration m = shop(db);
        try (Millrace following = m.follow(Duration.ofSeconds(30));
             java.sql.Connection lock = tgt.connect(db)) {
            assertThat(m.status().state()).isEqualTo(MigrationState.FOLLOWING);
            assertThat(m.verify(false, 100).equal()).isTrue();
            assertThat(m.status().tables()).anyMatch(t -> t.verifiedAt() != null);
            // The target's checkpoints cannot be written (a lock readers pass): the fence marker never lands there, so the
            // cutover gives up, fenced, and says so.
            lockCheckpoints(lock);
            assertThatThrownBy(() -> m.cutover(Long.MAX_VALUE, Duration.ofSeconds(3))).isInstanceOf(MillraceException.class)
                    .hasMessageContaining("the source stays fenced (state FENCING)").hasMessageContaining("migrate abort");
            lock.rollback();
        }
        Migration.MigrationStatus st = m.status();
        assertThat(st.state()).isEqualTo(MigrationState.FENCING);
        assertThat(st.fenced()).isTrue();
        assertThat(st.render()).contains("source FENCED").contains("'millrace migrate abort' unfences the source");
        assertThatThrownBy(() -> src.execute(db, "INSERT INTO shop.customer (email) VALUES ('x@fenced')"))
                .hasMessageContaining("read-only transaction");

        Migration.MigrationStatus aborted = m.abort();
        assertThat(aborted.state()).isEqualTo(MigrationState.ABORTED);
        assertThat(aborted.fenced()).isFalse();
        assertThat(Servers.count(src, db, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'mig_" + db + "'")).isZero();
        src.execute(db, "INSERT INTO shop.customer (email) VALUES ('x@unfenced')");

        // Started again, the target's tables dropped as abort says: a new copy (a migrate user's run stopped on the aborted
        // attempt's checkpoint, "replication slot ... does not exist, but the destinations hold checkpoints").
        tgt.execute(db, "DROP SCHEMA shop CASCADE");
        try (Millrace again = m.follow(Duration.ofSeconds(30))) {
            assertThat(m.status().state()).isEqualTo(MigrationState.FOLLOWING);
            assertThat(Servers.count(tgt, db, "SELECT count(*) FROM shop.customer WHERE email = 'x@unfenced'")).isEqualTo(1);
            assertThat(again.status().state()).isNotNull();
            // the new copy is not verified: the aborted attempt's passes are forgotten (status showed them, as if it were)
            assertThat(m.status().tables()).allMatch(t -> t.verifiedAt() == null);
        }
    }

    /**
     * While a cutover waits for its fence marker (the target's checkpoints locked here, as a slow target would), status
     * says it runs, not that it was interrupted, and an abort or a second cutover is refused with nothing changed: before,
     * status invited the abort, which lifted the source's fence under the cutover, and the cutover then went on to cut
     * over with the application writing to the source. Once the marker lands, the cutover finishes.
     */
    @Test
    void aCutoverUnderWayIsNamedAndNeitherAnAbortNorASecondCutoverRunsBesideIt() throws Exception {
        String db = "cut9";
        Migration m = shop(db);
        try (Millrace following = m.follow(Duration.ofSeconds(30));
             java.sql.Connection lock = tgt.connect(db)) {
            lockCheckpoints(lock);
            java.util.concurrent.CompletableFuture<CutoverReport> cut = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return m.cutover(Long.MAX_VALUE, Duration.ofSeconds(90));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (m.status().state() != MigrationState.FENCING) {
                assertThat(cut).as("the cutover waits").isNotDone();
                assertThat(System.nanoTime()).as("the cutover fences").isLessThan(deadline);
                Thread.sleep(50);
            }
            Migration.MigrationStatus st = m.status();
            assertThat(st.running()).isPositive();
            assertThat(st.render()).contains("a cutover (or an abort) runs now").doesNotContain("interrupted");
            assertThatThrownBy(m::abort).isInstanceOf(MillraceException.class)
                    .hasMessageContaining("migrate abort: a cutover, rollback or abort of this migration is running now");
            assertThatThrownBy(() -> m.cutover(Long.MAX_VALUE, Duration.ofSeconds(2))).isInstanceOf(MillraceException.class)
                    .hasMessageStartingWith("migrate cutover: a cutover, rollback or abort of this migration is running now")
                    .hasMessageContaining("pg_terminate_backend(" + st.running() + ")").hasMessageNotContaining("migrate abort");
            assertThat(m.status().fenced()).as("the source stays fenced").isTrue();
            assertThat(m.status().state()).isEqualTo(MigrationState.FENCING);
            lock.rollback();
            CutoverReport r = cut.get(90, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(r.render()).isNotEmpty();
            assertThat(m.status().state()).isEqualTo(MigrationState.CUT_OVER);
            assertThat(m.status().running()).isZero();
        }
    }

    /**
     * A failure after the fence (here a target sequence's bounds are narrower than the source's, so setting it past the
     * source fails; a renamed one would be refused before the fence, its column default differing) says that the source is
     * fenced and how to finish or undo it; the state says FENCED and abort unfences. Before, the error was the server's
     * message alone ("relation ... does not exist") with the source left read-only.
     */
    @Test
    void aFailureAfterTheFenceSaysTheSourceIsFenced() throws Exception {
        String db = "cut4";
        Migration m = shop(db);
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            tgt.execute(db, "ALTER SEQUENCE shop.invoice_no MAXVALUE 8");
            assertThatThrownBy(() -> m.cutover(1 << 20, Duration.ofSeconds(30))).isInstanceOf(MillraceException.class)
                    .hasMessageContaining("invoice_no").hasMessageContaining("fenced")
                    .hasMessageContaining("'millrace migrate abort' to unfence");
            assertThat(m.status().state()).isEqualTo(MigrationState.FENCED);
            assertThat(m.status().fenced()).isTrue();
        }
        assertThat(m.abort().fenced()).isFalse();
        src.execute(db, "INSERT INTO shop.customer (email) VALUES ('x@after-abort')");
    }

    /**
     * A source made read-only by something other than this migration (an earlier migration's cutover, a DBA) while it
     * follows: abort leaves it read-only (before, abort lifted any fence: a user made an old primary writable again, after
     * its cutover to another server, by aborting a new migration from it — two primaries), and the plan of a new attempt
     * names it (before, it said ready, and run created the target's schema, then stopped on CREATE PUBLICATION).
     */
    @Test
    void aSourceReadOnlyByAnotherHandStaysSoAfterAbortAndThePlanNamesIt() throws Exception {
        String db = "cut_ro";
        Migration m = shop(db);
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            src.execute(db, "ALTER DATABASE " + db + " SET default_transaction_read_only = true"); // another cutover's fence, say, in a DBA's spelling
            assertThat(m.status().render()).contains("this migration did not fence it");
        }
        Migration.MigrationStatus aborted = m.abort();
        assertThat(aborted.state()).isEqualTo(MigrationState.ABORTED);
        assertThat(aborted.fenced()).as("still read-only").isTrue();
        assertThat(aborted.steps().get(aborted.steps().size() - 1)).contains("this migration did not fence it: left read-only");
        assertThatThrownBy(() -> src.execute(db, "INSERT INTO shop.customer (email) VALUES ('x@after-abort')"))
                .hasMessageContaining("read-only transaction");
        assertThat(m.plan().problems()).anySatisfy(x -> {
            assertThat(x.kind()).isEqualTo(MillraceException.Kind.SOURCE_SETUP);
            assertThat(x.message()).contains("is read-only (default_transaction_read_only = on");
            assertThat(x.fix()).contains("ALTER DATABASE \"cut_ro\" RESET default_transaction_read_only");
        });
        src.execute("postgres", "ALTER DATABASE " + db + " RESET default_transaction_read_only");
    }
}
