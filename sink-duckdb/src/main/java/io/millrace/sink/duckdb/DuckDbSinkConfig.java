package io.millrace.sink.duckdb;

import io.millrace.core.MillraceException;
import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.Sink;

import java.nio.file.Path;

/**
 * Settings of a {@code duckdb} destination: the YAML's {@code type: duckdb} reads into one
 * ({@link DuckDbDestinationProvider}); an application may build one with a constructor, which checks every value.
 *
 * @param name   the destination's name in the configuration (part of the checkpoint identity)
 * @param file   the DuckDB database file; created when missing (its directory must exist)
 * @param schema the schema that receives every table, or {@code null} to keep each source table's schema
 * @param memoryLimitMb DuckDB's {@code memory_limit} in MB: the native memory the file's engine may use beside the JVM's
 *               heap (DuckDB's own default is 80 % of the machine's RAM); larger work spills to a temporary folder
 *               beside the file (INV: BOUNDED)
 * @param dropTables {@code drop_tables}: a table dropped in the source (told by the DDL event trigger) is dropped here too,
 *               in order with the data; false (the default) keeps the copy
 */
public record DuckDbSinkConfig(String name, Path file, String schema, int memoryLimitMb, boolean dropTables) implements DestinationConfig {
    /** DuckDB's memory limit unless the configuration says otherwise: its own default would be 80 % of the machine. */
    public static final int DEFAULT_MEMORY_LIMIT_MB = 256;

    public DuckDbSinkConfig(String name, Path file, String schema) {
        this(name, file, schema, DEFAULT_MEMORY_LIMIT_MB);
    }

    public DuckDbSinkConfig(String name, Path file, String schema, int memoryLimitMb) {
        this(name, file, schema, memoryLimitMb, false);
    }

    public DuckDbSinkConfig {
        if (name == null || name.isBlank()) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "duckdb destination: 'name' must not be empty");
        }
        if (file == null) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name
                    + "': 'file' must name the DuckDB database file, e.g. /var/lib/millrace/mirror.duckdb");
        }
        if (schema != null && schema.isBlank()) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name
                    + "': 'schema' must not be blank (leave it unset to keep each source table's schema)");
        }
        if (memoryLimitMb < 16) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name + "': memory_limit_mb must be"
                    + " at least 16, got " + memoryLimitMb);
        }
        if (DuckDbSink.STATE_SCHEMA.equals(schema)) {
            throw new MillraceException(MillraceException.Kind.CONFIG, "destination '" + name + "': schema '"
                    + schema + "' holds Millrace's own bookkeeping; choose another");
        }
    }

    @Override
    public String type() {
        return DuckDbDestinationProvider.TYPE;
    }

    @Override
    public Sink newSink() {
        return new DuckDbSink(this);
    }

    /** The file can be written and no other process holds it (see {@link DuckDbSink#preflight()}). */
    @Override
    public void preflight() {
        new DuckDbSink(this).preflight();
    }
}
