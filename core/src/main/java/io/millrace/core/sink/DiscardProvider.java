package io.millrace.core.sink;

import java.util.Set;

/**
 * The {@code discard} destination (alias {@code null}, which YAML needs quoted): a {@link NullSink}, for measuring
 * the engine without a destination's cost. It keeps no checkpoint across runs; never use it for real data.
 */
public final class DiscardProvider implements DestinationProvider {
    public static final String TYPE = "discard";

    @Override
    public String type() {
        return TYPE;
    }

    @Override
    public Set<String> aliases() {
        return Set.of("null");
    }

    @Override
    public DestinationConfig configure(String name, DestinationSettings settings, DestinationContext context) {
        settings.allow();
        return new Config(name);
    }

    /** A configured {@code discard} destination. */
    public record Config(String name) implements DestinationConfig {
        @Override
        public String type() {
            return TYPE;
        }

        @Override
        public Sink newSink() {
            return new NullSink(name);
        }
    }
}
