package io.millrace.api;

import io.millrace.core.MillraceException;
import io.millrace.core.schema.TableRef;
import io.millrace.engine.config.Limit;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** The checks the settings' builders make where a value is given, each error naming the setting as YAML spells it. */
final class Check {
    private Check() {
    }

    static MillraceException error(String key, String message) {
        return Limit.error(key, message);
    }

    static int range(Limit limit, String key, int value) {
        return limit.check(key, value);
    }

    /** A non-empty string. */
    static String text(String key, String value) {
        if (value == null || value.isBlank()) {
            throw error(key, "must not be empty");
        }
        return value;
    }

    static <T> T given(String key, T value) {
        if (value == null) {
            throw error(key, "must not be null");
        }
        return value;
    }

    /** Table names or patterns ({@code public.orders}, {@code 'public.*'}), parsed. */
    static List<TableRef> tables(String key, List<String> names) {
        Objects.requireNonNull(names, key);
        List<TableRef> out = new ArrayList<>();
        for (String t : names) {
            if (t == null || t.isBlank()) {
                throw error(key, "must hold non-empty strings, got " + (t == null ? "null" : "'" + t + "'"));
            }
            try {
                out.add(TableRef.parse(t));
            } catch (IllegalArgumentException e) {
                throw error(key, e.getMessage());
            }
        }
        return List.copyOf(out);
    }

    /** The message {@code requireString} gives for a missing required setting. */
    static MillraceException required(String key, String name, String example) {
        return error(key, "is required (e.g. " + name + ": " + example + ")");
    }
}
