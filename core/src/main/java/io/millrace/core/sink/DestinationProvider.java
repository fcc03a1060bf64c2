package io.millrace.core.sink;

import java.util.Set;

/**
 * A kind of destination, discovered with {@link java.util.ServiceLoader}: a jar lists its implementation in
 * {@code META-INF/services/io.millrace.core.sink.DestinationProvider}, and the configuration then accepts its
 * {@link #type()} under {@code destinations: - type: ...}.
 *
 * <p>Implementations have a public no-argument constructor and keep no state.
 */
public interface DestinationProvider {

    /** The value of {@code type:} this provider reads, e.g. {@code postgres}; lower case, unique on the class path. */
    String type();

    /** Other accepted spellings of {@link #type()} (none by default). */
    default Set<String> aliases() {
        return Set.of();
    }

    /**
     * Reads and validates one destination's settings. Every key read through {@code settings} is known; after this
     * returns the loader rejects any other key, naming it and the nearest known one. A bad value is
     * {@link DestinationSettings#error(String, String)}, which names the key: never a silent default.
     *
     * @param name the destination's name (its {@code name:}, or the type when absent)
     */
    DestinationConfig configure(String name, DestinationSettings settings, DestinationContext context);
}
