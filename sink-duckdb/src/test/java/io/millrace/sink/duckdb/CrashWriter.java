package io.millrace.sink.duckdb;

import io.millrace.core.change.ChangeEvent;
import io.millrace.core.schema.RelationInfo;
import io.millrace.testkit.Events;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Run in a child JVM by {@link CrashIT}: writes batches forever, batch {@code b} inserting rows
 * {@code (b * 1000 + i, b)} and upserting row 0 to {@code b}, with checkpoint LSN {@code b}, until killed.
 */
public final class CrashWriter {
    static final RelationInfo REL = Events.rel(200, "public.crash", 'd', "*id:20", "batch:20");

    public static void main(String[] args) {
        Path file = Path.of(args[0]);
        try (DuckDbSink sink = new DuckDbSink(new DuckDbSinkConfig("crash", file, null))) {
            long b = sink.open().map(c -> c.flushLsn().value()).orElse(0L);
            while (true) {
                b++;
                Events ev = Events.transaction(b);
                List<ChangeEvent> batch = new ArrayList<>();
                for (int i = 1; i <= 1000; i++) {
                    batch.add(ev.insertText(REL, b * 1000 + i, b));
                }
                batch.add(ev.insertText(REL, 0, b));
                sink.write(batch, Events.checkpoint("crash", b));
                System.out.println("committed " + b);
                System.out.flush();
            }
        }
    }
}
