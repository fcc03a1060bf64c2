package io.millrace.engine;

import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.Sink;
import io.millrace.engine.config.EngineConfig;

import java.util.List;

/** The sinks of a configuration's destinations, in its order, not yet opened, each behind the configuration's transforms. */
final class Destinations {
    private Destinations() {
    }

    static List<Sink> of(EngineConfig config) {
        // Every row reaches a destination through its transforms: snapshot, online snapshot and stream alike.
        return config.destinations().stream().map(DestinationConfig::newSink).map(config.transforms()::wrap).toList();
    }
}
