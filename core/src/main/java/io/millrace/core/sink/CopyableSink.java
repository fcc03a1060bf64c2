package io.millrace.core.sink;

import io.millrace.core.change.Checkpoint;

import java.nio.file.Path;
import java.util.Optional;

/**
 * A sink that can write a consistent copy of what it holds to a new file while it runs (the engine's
 * {@code POST /duckdb/copy} control call and {@code millrace duckdb-copy}): for a destination that is one file a
 * single process may open, e.g. DuckDB, so that other processes can read a copy meanwhile.
 *
 * <p>An optional capability: the engine looks for it with {@code instanceof} on an opened sink and needs no other
 * knowledge of the destination.
 */
public interface CopyableSink extends Sink {

    /**
     * Writes a copy of the destination as of its last committed batch to {@code target}, which must not exist.
     * Any thread, while the sink is open; never blocks the writer for long.
     *
     * @return the checkpoint the copy holds (what it is up to), or empty before the first batch
     */
    Optional<Checkpoint> copyTo(Path target);
}
