package io.millrace.engine.transform;

import io.millrace.core.schema.TableRef;

import java.util.List;
import java.util.Map;

/**
 * One entry of {@code transforms.tables}: what the destinations see of the tables {@code match} names.
 *
 * @param setting  where it was configured, e.g. {@code transforms.tables[0]} (for messages)
 * @param match    a table, or a pattern with {@code *} and {@code ?} as {@code source.tables} takes
 * @param include  the only columns passed on ({@code columns.include}), or null for all but {@code exclude}
 * @param exclude  columns left out ({@code columns.exclude}); empty when {@code include} is given
 * @param masks    column → how its values are hidden ({@code mask}), in configuration order
 * @param filter   an SQL condition on the table's columns a row must meet to reach destinations ({@code filter}), or null
 * @param rename   the name the destinations give the table ({@code rename}): {@code schema.table} where {@code {schema}}
 *                 and {@code {table}} stand for the source table's, e.g. {@code mirror.{table}}; or null (its own name)
 */
public record TableRule(String setting, TableRef match, List<String> include, List<String> exclude, Map<String, Mask> masks,
                        String filter, String rename) {
    public TableRule {
        include = include == null ? null : List.copyOf(include);
        exclude = List.copyOf(exclude);
        masks = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(masks));
    }

    public TableRule(String setting, TableRef match, List<String> include, List<String> exclude, Map<String, Mask> masks, String filter) {
        this(setting, match, include, exclude, masks, filter, null);
    }

    /** The name the destinations give {@code table}: {@link #rename} with its placeholders filled in, or {@code table}. */
    public TableRef destinationName(TableRef table) {
        if (rename == null) {
            return table;
        }
        int dot = rename.indexOf('.');
        return new TableRef(fill(rename.substring(0, dot), table), fill(rename.substring(dot + 1), table));
    }

    private static String fill(String template, TableRef t) {
        return template.replace("{schema}", t.schema()).replace("{table}", t.table());
    }

    /** Whether column {@code name} reaches destinations (before masking). */
    public boolean keeps(String name) {
        return include != null ? include.contains(name) : !exclude.contains(name);
    }
}
