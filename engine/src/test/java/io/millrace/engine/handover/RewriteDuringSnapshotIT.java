package io.millrace.engine.handover;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.RunningEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * INV: HANDOVER — a table rewritten (ALTER TABLE ... TYPE) after the slot's consistent point but
 * before a snapshot reader reaches it would be read from its new file, where the snapshot sees no
 * row: the copy would silently miss them, and no change event would bring them back. The reader
 * notices the rewrite and the snapshot starts again on a new slot.
 */
class RewriteDuringSnapshotIT {
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase("rw");
        pg.createDatabase("rw_dst");
        pg.execute("rw", "CREATE TABLE a_big (id int PRIMARY KEY, v text)",
                "INSERT INTO a_big SELECT g, repeat('x', 200) FROM generate_series(1, 400000) g",
                "CREATE TABLE b_small (id int PRIMARY KEY, n int)", "INSERT INTO b_small SELECT g, g FROM generate_series(1, 1000) g");
    }

    @AfterAll
    static void stop() {
        pg.close();
    }

    @Test
    void aTableRewrittenWhileTheSnapshotStartsIsCopiedAgainNotLost(@TempDir Path dir) throws Exception {
        Logger engineLog = (Logger) LoggerFactory.getLogger(Engine.class);
        ListAppender<ILoggingEvent> log = new ListAppender<>();
        log.start();
        engineLog.addAppender(log);
        String yaml = String.join("\n",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: rw, user: postgres, slot: rw, publication: rw,",
                "         tables: [public.a_big, public.b_small]}",
                "snapshot: {readers: 1}",
                "destinations:",
                "  - {name: replica, type: postgres, host: 127.0.0.1, port: " + pg.port() + ", database: rw_dst, user: postgres}",
                "");
        try (RunningEngine e = RunningEngine.start(yaml, dir); Connection src = pg.connect("rw"); Connection dst = pg.connect("rw_dst")) {
            long deadline = System.currentTimeMillis() + 60_000;
            while (e.engine().state() != Engine.State.SNAPSHOTTING && System.currentTimeMillis() < deadline) {
                Thread.sleep(5);
            }
            // The one reader is busy with a_big; b_small is rewritten before it gets there.
            pg.execute("rw", "ALTER TABLE b_small ALTER COLUMN n TYPE bigint");
            e.awaitStreaming(Duration.ofSeconds(120));
            RunningEngine.awaitEqual(src, dst, List.of(new TableRef("public", "a_big"), new TableRef("public", "b_small")), null,
                    Duration.ofSeconds(60));
            // Copied in its new shape: the snapshot started again reads the table's columns again (it kept the int4 it
            // read first, which text values hid and binary COPY refused: "invalid int4 binary value (8 bytes...)").
            try (var st = dst.createStatement(); var rs = st.executeQuery("SELECT data_type FROM information_schema.columns"
                    + " WHERE table_schema = 'public' AND table_name = 'b_small' AND column_name = 'n'")) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString(1)).isEqualTo("bigint");
            }
        } finally {
            engineLog.detachAppender(log);
        }
        assertThat(log.list.stream().map(ILoggingEvent::getFormattedMessage))
                .anySatisfy(m -> assertThat(m).contains("b_small was truncated or rewritten after the snapshot began")
                        .contains("starting the snapshot again on a new slot"));
    }
}
