package io.millrace.sink.kafka;

import io.millrace.core.change.ChangeEvent;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.schema.RelationInfo;
import io.millrace.testkit.Events;

import java.util.ArrayList;
import java.util.List;

/**
 * Run in a child JVM by {@link CrashIT}: writes batches forever to the Kafka at {@code args[0]}, batch
 * {@code b} inserting rows {@code (b * 1000 + i, b)} for i in 1..1000 with checkpoint LSN {@code b},
 * until killed. Prints {@code committed b} after each write returned.
 */
public final class CrashWriter {
    static final RelationInfo REL = Events.rel(200, "public.crash", 'd', "*id:20", "batch:20");

    static KafkaSinkConfig config(String servers) {
        return KafkaSinkConfig.of("crash", servers, "millrace.crash", new SourceMeta("crashsrc", "db"));
    }

    public static void main(String[] args) {
        try (KafkaSink sink = new KafkaSink(config(args[0]))) {
            long b = sink.open().map(c -> c.flushLsn().value()).orElse(0L);
            while (true) {
                b++;
                Events ev = Events.transaction(b);
                List<ChangeEvent> batch = new ArrayList<>();
                for (int i = 1; i <= 1000; i++) {
                    batch.add(ev.insertText(REL, b * 1000 + i, b));
                }
                sink.write(batch, Events.checkpoint("crash", b));
                System.out.println("committed " + b);
                System.out.flush();
            }
        }
    }
}
