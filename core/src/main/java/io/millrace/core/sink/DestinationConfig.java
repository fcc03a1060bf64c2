package io.millrace.core.sink;

/**
 * One configured destination: validated settings that can make its {@link Sink}.
 *
 * <p>Built-in destinations and third-party ones alike implement this (usually as a record); the engine knows
 * destinations only through it, so a jar on the class path with a {@link DestinationProvider} adds a destination
 * without any change to the engine or the configuration loader.
 */
public interface DestinationConfig {

    /** The destination's name in the configuration: unique within a pipeline, part of its checkpoint identity. */
    String name();

    /** The {@link DestinationProvider#type()} it was configured as, e.g. {@code postgres}. */
    String type();

    /** A new sink for these settings, not yet {@linkplain Sink#open() opened}; called once per engine run. */
    Sink newSink();

    /**
     * Checks, for {@code millrace preflight} and before anything runs, that the destination can be written: it answers,
     * takes the credentials, is not read-only, lets the user create or use what the sink keeps its checkpoint in. Writes
     * nothing the pipeline keeps (a probe file written and removed at most). A problem is thrown as a {@link io.millrace.core.MillraceException} whose message names it and its fix
     * and whose kind gives the exit code, as {@link Sink#open()} would throw it. The default checks nothing.
     */
    default void preflight() {
    }
}
