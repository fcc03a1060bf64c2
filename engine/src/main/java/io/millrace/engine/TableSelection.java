package io.millrace.engine;

import io.millrace.core.schema.TableRef;
import io.millrace.source.SourceConfig;

import java.util.List;

/**
 * Which tables a pipeline captures: {@code source.tables} (names and patterns) less {@code source.exclude_tables}.
 * Replaced whole by a reload ({@link Reloader}); immutable.
 */
record TableSelection(List<TableRef> tables, List<TableRef> excludeTables) {
    TableSelection {
        tables = List.copyOf(tables);
        excludeTables = List.copyOf(excludeTables);
    }

    static TableSelection of(SourceConfig s) {
        return new TableSelection(s.tables(), s.excludeTables());
    }

    /**
     * Whether {@code t} is selected; {@code published} says whether the publication publishes it, which decides when
     * {@code source.tables} is empty (every table of an existing publication).
     */
    boolean selects(TableRef t, boolean published) {
        if (excludeTables.stream().anyMatch(x -> TableRef.matches(x, t))) {
            return false;
        }
        return tables.isEmpty() ? published : tables.stream().anyMatch(p -> TableRef.matches(p, t));
    }
}
