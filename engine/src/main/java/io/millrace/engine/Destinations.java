package io.millrace.engine;

import io.millrace.core.sink.NullSink;
import io.millrace.core.sink.Sink;
import io.millrace.engine.config.EngineConfig;
import io.millrace.sink.duckdb.DuckDbSink;
import io.millrace.sink.jsonl.JsonlSink;
import io.millrace.sink.kafka.KafkaSink;
import io.millrace.sink.postgres.PostgresSink;

import java.util.ArrayList;
import java.util.List;

/** The sinks of a configuration's destinations, in its order, not yet opened. */
final class Destinations {
    private Destinations() {
    }

    static List<Sink> of(EngineConfig config) {
        List<Sink> sinks = new ArrayList<>();
        for (EngineConfig.Destination d : config.destinations()) {
            if (d instanceof EngineConfig.PostgresDestination p) {
                sinks.add(new PostgresSink(p.config()));
            } else if (d instanceof EngineConfig.JsonlDestination j) {
                sinks.add(new JsonlSink(j.config()));
            } else if (d instanceof EngineConfig.DuckDbDestination k) {
                sinks.add(new DuckDbSink(k.config()));
            } else if (d instanceof EngineConfig.KafkaDestination k) {
                sinks.add(new KafkaSink(k.config()));
            } else if (d instanceof EngineConfig.NullDestination n) {
                sinks.add(new NullSink(n.name()));
            }
        }
        return sinks;
    }
}
