package io.millrace.migrate;

import io.millrace.api.Millrace;
import io.millrace.core.MillraceException;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A migration stopped and started again goes on from its recorded step: {@code follow} after a stop does not create the
 * schema again and catches up; a cutover interrupted with the source fenced (state FENCING) is finished by following
 * again and running the cutover again, with every write before the fence on the target.
 */
class MigrateResumeIT extends TwoServers {

    @Test
    void followsAgainAfterAStopAndFinishesAnInterruptedCutover() throws Exception {
        String db = "resume1";
        Migration m = shop(db);
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            assertThat(m.status().state()).isEqualTo(MigrationState.FOLLOWING);
        }
        src.execute(db, "INSERT INTO shop.customer (email) SELECT 'stopped' || i FROM generate_series(1, 100) i",
                "UPDATE shop.orders SET qty = qty + 1 WHERE id % 3 = 0");
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            awaitEqual(db, "shop.customer", "shop.orders");
            assertThat(m.status().steps()).hasSize(2); // SCHEMA_CREATED, FOLLOWING: nothing created twice
        }
        src.execute(db, "INSERT INTO shop.customer (email) VALUES ('before-the-fence')");
        // The target's checkpoints cannot be written (a lock readers pass): the marker never lands there, and the cutover
        // gives up with the source fenced. (With nothing following, a cutover now refuses before it fences.)
        try (Millrace following = m.follow(Duration.ofSeconds(30));
             java.sql.Connection lock = tgt.connect(db)) {
            lockCheckpoints(lock);
            assertThatThrownBy(() -> m.cutover(Long.MAX_VALUE, Duration.ofSeconds(2))).isInstanceOf(MillraceException.class)
                    .hasMessageContaining("state FENCING");
            lock.rollback();
        }
        assertThat(m.status().fenced()).isTrue();
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            Thread.sleep(1000);
            CutoverReport r = m.cutover(1 << 20, Duration.ofSeconds(30));
            System.out.println("resumed " + r.render());
            // The window counts from the first attempt's fence, not from the resumed run.
            assertThat(r.writeUnavailable()).isGreaterThan(Duration.ofSeconds(2));
        }
        Migration.MigrationStatus st = m.status();
        assertThat(st.state()).isEqualTo(MigrationState.CUT_OVER);
        assertThat(st.fenced()).isTrue();
        for (String t : MigrateCutoverIT.TABLES) {
            if (!t.equals("shop.ledger")) {
                assertThat(MigrateFollowIT.rows(tgt, db, t)).as(t).isEqualTo(MigrateFollowIT.rows(src, db, t));
            }
        }
        assertThat(Servers.count(tgt, db, "SELECT count(*) FROM shop.customer WHERE email = 'before-the-fence'")).isOne();
        src.execute("postgres", "ALTER DATABASE " + db + " RESET default_transaction_read_only");
    }

    private static void awaitEqual(String db, String... tables) throws Exception {
        long deadline = System.nanoTime() + 20_000_000_000L;
        for (String t : tables) {
            while (!MigrateFollowIT.rows(tgt, db, t).equals(MigrateFollowIT.rows(src, db, t))) {
                assertThat(System.nanoTime()).as(t + " caught up in time").isLessThan(deadline);
                Thread.sleep(100);
            }
        }
    }
}
