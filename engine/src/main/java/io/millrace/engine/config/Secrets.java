package io.millrace.engine.config;

import io.millrace.core.MillraceException;
import io.millrace.core.Secret;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Function;

/**
 * Reads a password or token from an environment variable or a file, with errors that name the setting
 * ({@code key}, e.g. {@code source.password_env}). Shared by the YAML loader and the builder in {@code io.millrace.api}.
 */
public final class Secrets {
    private Secrets() {
    }

    /** A password from the environment variable {@code var}; unset or empty is an error. */
    public static Secret passwordFromEnv(String key, String var, Function<String, String> env) {
        return fromEnv(key, var, env, "password");
    }

    /** A secret from the environment variable {@code var}; unset or empty is an error, which calls it {@code what}. */
    public static Secret fromEnv(String key, String var, Function<String, String> env, String what) {
        String v = env.apply(var);
        if (v == null) {
            throw Limit.error(key, "names the environment variable " + var + ", which is not set; export it in the environment of this"
                    + " command (millrace run, and the commands that call a running pipeline, such as millrace snapshot, read it there)");
        }
        if (v.isEmpty()) {
            throw Limit.error(key, "names the environment variable " + var + ", which is empty; export the " + what + " in it, or remove "
                    + key + " if the server needs no " + what);
        }
        return Secret.of(v);
    }

    /** A control token from the environment variable {@code var} (surrounding white space removed). */
    public static Secret tokenFromEnv(String key, String var, Function<String, String> env) {
        String v = env.apply(var);
        if (v == null || v.isBlank()) {
            throw Limit.error(key, "names the environment variable " + var + ", which is not set or empty; export the token in the"
                    + " environment of this command (millrace run, and the commands that call a running pipeline, such as millrace"
                    + " snapshot and millrace duckdb-copy, read it there)");
        }
        return Secret.of(v.strip());
    }

    /** A password or token from a file (surrounding white space, such as the final newline, removed). */
    public static Secret fromFile(String key, Path file) {
        try {
            return Secret.of(Files.readString(file, StandardCharsets.UTF_8).strip());
        } catch (IOException e) {
            throw Limit.error(key, "names " + file + ", which cannot be read: " + e.getMessage());
        }
    }

    /** The error when two ways of giving one secret are both used. */
    public static MillraceException both(String key, String other) {
        return Limit.error(key, "and " + other + " are both set; keep one");
    }
}
