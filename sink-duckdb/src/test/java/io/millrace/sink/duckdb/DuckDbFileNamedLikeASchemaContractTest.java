package io.millrace.sink.duckdb;

import io.millrace.sinkkit.SinkContract;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The sink contract with every DuckDB file named after the schema of the tables it receives ({@code public.duckdb}):
 * DuckDB names the file's catalog {@code public}, and refused {@code public.t} as an ambiguous reference to a catalog or a
 * schema until the destination named its tables with the catalog ({@link DuckNames}).
 */
class DuckDbFileNamedLikeASchemaContractTest extends DuckDbSinkContractTest {
    @Override
    protected Path file(String destination) {
        Path d = dir.resolve(destination);
        try {
            Files.createDirectories(d);
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
        return d.resolve(SinkContract.SCHEMA + ".duckdb");
    }
}
