package io.millrace.api;

import io.millrace.engine.config.EngineConfig;

/** Test support: the engine configuration a {@link Millrace.Builder} makes, for tests that drive an engine directly. */
public final class TestConfigs {
    private TestConfigs() {
    }

    /** What {@code builder.build()} would run, checked the same way. */
    public static EngineConfig of(Millrace.Builder builder) {
        return builder.config();
    }
}
