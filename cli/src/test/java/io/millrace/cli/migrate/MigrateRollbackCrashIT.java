package io.millrace.cli.migrate;

import io.millrace.api.Millrace;
import io.millrace.migrate.Migration;
import io.millrace.migrate.MigrationState;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import static io.millrace.cli.migrate.MigrateCrashIT.ids;
import static io.millrace.cli.migrate.MigrateCrashIT.one;
import static io.millrace.cli.migrate.MigrateCrashIT.rows;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code millrace migrate rollback} halted (as by SIGKILL: {@code Runtime.halt}) at each of its named fault points, in a JVM
 * of its own, while {@code migrate reverse} streams the new primary's writes back and a writer commits multi-statement
 * transactions on the new primary: afterwards {@code status} names ROLLING_BACK and says which database is fenced, as
 * the servers do; then the rollback run again reaches ROLLED_BACK with every transaction whose COMMIT returned on the new
 * primary on the old one. At the last point the old primary is writable already and takes writes before the rollback
 * runs again: running it again must not set its sequences back under the values it handed out since.
 */
class MigrateRollbackCrashIT extends TwoServers {
    static int n;

    @TempDir
    static Path dir;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"migrate.rollback.rolling-back-recorded", "migrate.rollback.target-fenced",
            "migrate.rollback.marker-written", "migrate.rollback.source-opened"})
    void aRollbackHaltedAtEachStepIsFinishedByRunningItAgain(String point) throws Exception {
        String db = "rollback" + (++n);
        src.createDatabase(db);
        tgt.createDatabase(db);
        src.execute(db, "CREATE TABLE account (id serial PRIMARY KEY, balance int NOT NULL CHECK (balance >= 0))",
                "CREATE TABLE ledger (id bigserial PRIMARY KEY, account int NOT NULL REFERENCES account, amount int NOT NULL)",
                "INSERT INTO account (balance) SELECT 1000 FROM generate_series(1, 50)");
        Path cfg = MigrateCrashIT.config(dir, db, "public.account", "public.ledger");
        Migration m = MigrateCrashIT.migration(db, "public.account", "public.ledger");
        try (Millrace following = m.follow(Duration.ofSeconds(30))) {
            src.execute(db, "INSERT INTO ledger (account, amount) SELECT 1 + i % 50, 1 FROM generate_series(1, 500) i");
            m.cutover(1 << 20, Duration.ofSeconds(30), 0, true);
        }
        Set<Long> committed = ConcurrentHashMap.newKeySet();
        AtomicBoolean stopLoad = new AtomicBoolean();
        Set<Long> writtenOnTheOldPrimary = new HashSet<>();
        Thread load = new Thread(() -> MigrateCrashIT.write(tgt, db, committed, stopLoad), "rollback-load");
        try (Millrace back = m.reverse(Duration.ofSeconds(15))) {
            load.start();
            while (committed.size() < 100) {
                Thread.sleep(20);
            }
            MigrateCrashIT.haltedAt(point, dir.resolve(db + "-rollback.log"), "rollback", cfg.toString(), "--timeout-s", "30");

            Migration.MigrationStatus st = m.status();
            System.out.println(point + ": " + st.render().lines().findFirst().orElse(""));
            assertThat(st.state()).isEqualTo(MigrationState.ROLLING_BACK);
            assertThat(st.fenced()).as("status: the source's fence").isEqualTo(fenced(src, db))
                    .isEqualTo(!point.endsWith("source-opened"));
            assertThat(st.targetFenced()).as("status: the target's fence").isEqualTo(fenced(tgt, db))
                    .isEqualTo(!point.endsWith("rolling-back-recorded"));
            assertThat(st.render()).contains("a rollback was interrupted");
            if (point.endsWith("source-opened")) {
                // The application is back on the old primary before the rollback is run again.
                for (int i = 0; i < 3; i++) {
                    writtenOnTheOldPrimary.add(one(src, db, "INSERT INTO ledger (account, amount) VALUES (1, 1) RETURNING id"));
                }
            }
            m.rollback(Duration.ofSeconds(30));
            stopLoad.set(true);
            load.join(10_000);
            assertThat(m.status().state()).isEqualTo(MigrationState.ROLLED_BACK);
        } finally {
            stopLoad.set(true);
            load.join(10_000);
        }
        assertThat(m.status().fenced()).isFalse();
        assertThat(m.status().targetFenced()).isTrue();
        assertThat(committed).isNotEmpty();
        Set<Long> onTheOld = ids(src, db);
        assertThat(onTheOld).containsAll(committed);
        Set<Long> onTheNew = ids(tgt, db);
        onTheNew.addAll(writtenOnTheOldPrimary);
        assertThat(onTheOld).isEqualTo(onTheNew);
        assertThat(rows(src, db, "account")).isEqualTo(rows(tgt, db, "account"));
        // the old primary's next value was handed out by neither primary
        long next = one(src, db, "INSERT INTO ledger (account, amount) VALUES (1, 1) RETURNING id");
        assertThat(onTheOld).doesNotContain(next);
        assertThat(m.releaseReverse(Duration.ofSeconds(10))).isTrue();
    }

    private static boolean fenced(io.millrace.embedded.EmbeddedPg pg, String db) throws java.sql.SQLException {
        return one(pg, db, "SELECT count(*) FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase"
                + " WHERE d.datname = current_database() AND 'default_transaction_read_only=on' = ANY (s.setconfig)") == 1;
    }
}
