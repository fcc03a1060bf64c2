package io.millrace.api;

import io.millrace.core.event.SourceMeta;
import io.millrace.core.sink.Sink;
import io.millrace.sinkkit.EventSinkContract;
import io.millrace.sinkkit.Recorded;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The change consumer (at least once, its checkpoint in a file) passes the sink contract kit: a destination's data is
 * the JSON of the changes its callback accepted, kept across the sinks the kit opens under one name.
 */
class ChangeConsumerContractTest extends EventSinkContract {
    private static final SourceMeta META = new SourceMeta("contract", "app");
    @TempDir
    static Path dir;
    private final Map<String, List<String>> received = new ConcurrentHashMap<>();

    @Override
    protected Sink newSink(String destination) {
        List<String> data = received.computeIfAbsent(destination, d -> java.util.Collections.synchronizedList(new ArrayList<>()));
        return new ConsumerSink.AtLeastOnce(destination, META, batch -> batch.forEach(c -> data.add(c.json())),
                dir.resolve(destination + "-checkpoint.json"));
    }

    @Override
    protected List<Recorded> recorded(String destination) {
        return received.getOrDefault(destination, List.of()).stream().map(Recorded::fromEnvelope).toList();
    }
}
