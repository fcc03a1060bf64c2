package io.millrace.migrate;

import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * A source and a target server for the test class ({@link #sourceMajor()} and {@link #targetMajor()}, the default major
 * unless a subclass says otherwise); each test makes its own pair of databases on them.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class TwoServers {
    static EmbeddedPg src;
    static EmbeddedPg tgt;

    int sourceMajor() {
        return EmbeddedPg.DEFAULT_MAJOR;
    }

    int targetMajor() {
        return EmbeddedPg.DEFAULT_MAJOR;
    }

    @BeforeAll
    void startServers() {
        src = EmbeddedPg.builder().major(sourceMajor()).start();
        tgt = EmbeddedPg.builder().major(targetMajor()).start();
    }

    /** Database {@code db} on both servers, the shop schema of {@link MigrateFollowIT#SCHEMA} (and {@code extra}) on the source. */
    static Migration shop(String db, String... extra) {
        src.createDatabase(db);
        tgt.createDatabase(db);
        src.execute(db, MigrateFollowIT.SCHEMA);
        if (extra.length > 0) {
            src.execute(db, extra);
        }
        return Migration.of(Servers.source(src, db, "shop.*"), Servers.target(tgt, db));
    }

    @AfterAll
    void stopServers() {
        if (src != null) {
            src.close();
        }
        if (tgt != null) {
            tgt.close();
        }
    }

    /**
     * Locks the target's checkpoints table on {@code lock} (in its own transaction) in a mode readers pass: the sink can
     * write no checkpoint, so a fence marker never lands there while the lock is held.
     */
    static void lockCheckpoints(java.sql.Connection lock) throws java.sql.SQLException {
        try (java.sql.Statement s = lock.createStatement()) {
            String checkpoints;
            try (java.sql.ResultSet rs = s.executeQuery("SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n"
                    + " ON n.oid = c.relnamespace WHERE c.relname = 'checkpoints'")) {
                rs.next();
                checkpoints = rs.getString(1);
            }
            lock.setAutoCommit(false);
            s.execute("LOCK TABLE " + checkpoints + " IN SHARE MODE");
        }
    }
}
