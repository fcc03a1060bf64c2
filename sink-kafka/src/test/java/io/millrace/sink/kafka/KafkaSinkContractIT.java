package io.millrace.sink.kafka;

import io.millrace.core.fault.FaultPoint;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.sink.Sink;
import io.millrace.sink.kafka.testing.KafkaBroker;
import io.millrace.sinkkit.EventSinkContract;
import io.millrace.sinkkit.Recorded;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.util.ArrayList;
import java.util.List;

/**
 * The kafka destination passes the sink contract kit (exactly once), against the in-JVM KRaft broker: a destination
 * is a topic prefix and a transactional id of its own; what it holds is what a {@code read_committed} consumer reads.
 */
class KafkaSinkContractIT extends EventSinkContract {
    private static KafkaBroker kafka;

    @BeforeAll
    static void start() throws Exception {
        kafka = KafkaBroker.start();
    }

    @AfterAll
    static void stop() throws Exception {
        if (kafka != null) {
            kafka.close();
        }
    }

    @Override
    protected Sink newSink(String destination) {
        return new KafkaSink(KafkaSinkConfig.of(destination, kafka.bootstrapServers(), "millrace." + destination,
                new SourceMeta(destination, "app")));
    }

    @Override
    protected List<FaultPoint> faultPoints() {
        return List.of(FaultPoint.SINK_KAFKA_BEFORE_COMMIT, FaultPoint.SINK_KAFKA_AFTER_COMMIT);
    }

    /**
     * The committed records of the destination's topics ({@code <destination>.<schema>.<table>}), tombstones left out, and
     * not its schema-change topic ({@code <destination>.schema_changes}: no change events).
     */
    @Override
    protected List<Recorded> recorded(String destination) {
        List<Recorded> out = new ArrayList<>();
        try {
            for (String topic : kafka.topics().stream().filter(t -> t.startsWith(destination + ".")
                    && !t.equals(destination + ".schema_changes")).sorted().toList()) {
                for (ConsumerRecord<String, String> r : kafka.readCommitted(topic)) {
                    if (r.value() != null) {
                        out.add(Recorded.fromEnvelope(r.value()));
                    }
                }
            }
        } catch (Exception e) {
            throw new IllegalStateException("cannot read the topics of " + destination, e);
        }
        return out;
    }
}
