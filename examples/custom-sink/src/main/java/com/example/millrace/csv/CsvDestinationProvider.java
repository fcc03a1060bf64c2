package com.example.millrace.csv;

import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.DestinationContext;
import io.millrace.core.sink.DestinationProvider;
import io.millrace.core.sink.DestinationSettings;

/**
 * {@code type: csv}: a directory of CSV change logs, one file per table ({@link CsvSink}). Registered only in
 * {@code META-INF/services/io.millrace.core.sink.DestinationProvider}: with this jar on the class path the
 * configuration accepts
 * <pre>
 * destinations:
 *   - name: changes
 *     type: csv
 *     directory: ./changes
 * </pre>
 */
public final class CsvDestinationProvider implements DestinationProvider {
    public static final String TYPE = "csv";

    @Override
    public String type() {
        return TYPE;
    }

    @Override
    public DestinationConfig configure(String name, DestinationSettings settings, DestinationContext context) {
        settings.allow("directory"); // first: a misspelt key is named as such, not reported as a missing directory
        if (!settings.has("directory")) {
            throw settings.error("directory", "is required for a csv destination: the directory of its files (e.g. directory: ./changes)");
        }
        return new CsvSinkConfig(name, settings.path("directory", null));
    }
}
