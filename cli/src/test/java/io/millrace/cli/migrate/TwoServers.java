package io.millrace.cli.migrate;

import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** A source and a target server (the default major) for a test class of {@code millrace migrate}. */
abstract class TwoServers {
    static EmbeddedPg src;
    static EmbeddedPg tgt;

    @BeforeAll
    static void startServers() {
        src = EmbeddedPg.start();
        tgt = EmbeddedPg.start();
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
