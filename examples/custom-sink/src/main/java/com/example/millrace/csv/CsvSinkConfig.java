package com.example.millrace.csv;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.Sink;

import java.nio.file.Path;

/**
 * Settings of a {@code csv} destination, checked when built.
 *
 * @param name      the destination's name in the configuration (part of the checkpoint identity)
 * @param directory where the files and the state file go; created when missing
 */
public record CsvSinkConfig(String name, Path directory) implements DestinationConfig {
    public CsvSinkConfig {
        if (name == null || name.isBlank()) {
            throw new MillraceException(Kind.CONFIG, "csv destination: 'name' must not be empty");
        }
        if (directory == null) {
            throw new MillraceException(Kind.CONFIG, "csv destination '" + name + "': 'directory' must be given");
        }
    }

    @Override
    public String type() {
        return CsvDestinationProvider.TYPE;
    }

    @Override
    public Sink newSink() {
        return new CsvSink(this);
    }
}
