package io.millrace.migrate;

import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** A source and a target server for the test class; each test makes its own pair of databases on them. */
abstract class TwoServers {
    static EmbeddedPg src;
    static EmbeddedPg tgt;

    @BeforeAll
    static void startServers() {
        src = EmbeddedPg.builder().major(Integer.getInteger("millrace.migrate.source.major", EmbeddedPg.DEFAULT_MAJOR)).start();
        tgt = EmbeddedPg.builder().major(Integer.getInteger("millrace.migrate.target.major", EmbeddedPg.DEFAULT_MAJOR)).start();
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
    static void stopServers() {
        if (src != null) {
            src.close();
        }
        if (tgt != null) {
            tgt.close();
        }
    }
}
