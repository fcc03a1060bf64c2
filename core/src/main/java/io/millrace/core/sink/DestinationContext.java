package io.millrace.core.sink;

import io.millrace.core.event.SourceMeta;

import java.nio.file.Path;

/**
 * What a destination's settings may depend on besides its own keys.
 *
 * @param pipeline  the pipeline's name ({@code name:})
 * @param slot      the replication slot's name
 * @param meta      the source fields every event carries
 * @param baseDir   the directory relative paths are resolved against (the configuration file's)
 */
public record DestinationContext(String pipeline, String slot, SourceMeta meta, Path baseDir) {
}
