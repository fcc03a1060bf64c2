package io.millrace.api;

import io.millrace.core.change.Checkpoint;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.sink.Sink;
import io.millrace.sinkkit.EventSinkContract;
import io.millrace.sinkkit.Recorded;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The transactional consumer (exactly once, its checkpoint stored with its data) passes the sink contract kit: its
 * store keeps the JSON of the changes it accepted and the checkpoint, replaced together as a transaction would.
 */
class TransactionalConsumerContractTest extends EventSinkContract {
    private static final SourceMeta META = new SourceMeta("contract", "app");
    private final Map<String, Stored> stores = new ConcurrentHashMap<>();

    /** One committed state of a destination: the data and the checkpoint. */
    private record Stored(List<String> events, Checkpoint checkpoint) {
    }

    @Override
    protected Sink newSink(String destination) {
        return new ConsumerSink.Transactional(destination, META, new TransactionalConsumer() {
            @Override
            public Optional<Checkpoint> open() {
                Stored s = stores.get(destination);
                return s == null ? Optional.empty() : Optional.of(s.checkpoint());
            }

            @Override
            public void accept(List<Change> batch, Checkpoint checkpoint) {
                Stored s = stores.get(destination);
                List<String> events = new ArrayList<>(s == null ? List.of() : s.events());
                batch.forEach(c -> events.add(c.json()));
                stores.put(destination, new Stored(List.copyOf(events), checkpoint)); // the commit: both or neither
            }
        });
    }

    @Override
    protected List<Recorded> recorded(String destination) {
        Stored s = stores.get(destination);
        return s == null ? List.of() : s.events().stream().map(Recorded::fromEnvelope).toList();
    }
}
