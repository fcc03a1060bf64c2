package io.millrace.sink.duckdb;

import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.DestinationContext;
import io.millrace.core.sink.DestinationProvider;
import io.millrace.core.sink.DestinationSettings;

/** {@code type: duckdb}: a DuckDB database file receiving the tables, exactly once ({@link DuckDbSinkConfig}). */
public final class DuckDbDestinationProvider implements DestinationProvider {
    public static final String TYPE = "duckdb";

    @Override
    public String type() {
        return TYPE;
    }

    @Override
    public DestinationConfig configure(String name, DestinationSettings s, DestinationContext context) {
        s.allow("file", "schema", "memory_limit_mb", "drop_tables");
        return new DuckDbSinkConfig(name, context.baseDir().resolve(s.requireString("file", "mirror.duckdb")), s.string("schema", null),
                s.integer("memory_limit_mb", DuckDbSinkConfig.DEFAULT_MEMORY_LIMIT_MB, 16, 1 << 20),
                s.bool("drop_tables", false));
    }
}
