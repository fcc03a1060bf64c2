package io.millrace.engine;

import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.Sink;
import io.millrace.engine.config.EngineConfig;

import java.util.List;

/** The sinks of a configuration's destinations, in its order, not yet opened. */
final class Destinations {
    private Destinations() {
    }

    static List<Sink> of(EngineConfig config) {
        return config.destinations().stream().map(DestinationConfig::newSink).toList();
    }
}
