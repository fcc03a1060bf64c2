package io.millrace.core.sink;

import io.millrace.core.MillraceException;
import io.millrace.core.Secret;

import java.nio.file.Path;
import java.util.Map;

/**
 * One destination's settings as written in the configuration (a YAML mapping, or a builder's map), read by a
 * {@link DestinationProvider}. Every read marks its key as known; values of the wrong form throw an error of kind
 * {@code CONFIG} that names the full key (e.g. {@code destinations[0].port}) and the expected form.
 */
public interface DestinationSettings {

    /** The full name of {@code key} for messages, e.g. {@code destinations[1].url}. */
    String key(String key);

    /** Whether {@code key} is set (to anything but null). */
    boolean has(String key);

    /** A string, or {@code dflt} when absent; empty strings are refused. */
    String string(String key, String dflt);

    /** A string that must be present; the error shows {@code example}. */
    String requireString(String key, String example);

    /** A whole number within {@code [min, max]}, or {@code dflt} when absent. */
    int integer(String key, int dflt, int min, int max);

    boolean bool(String key, boolean dflt);

    /** A mapping of strings to strings (e.g. client properties), empty when absent. */
    Map<String, String> stringMap(String key);

    /** A path resolved against {@link DestinationContext#baseDir()}, or null when absent and {@code dflt} is null. */
    Path path(String key, String dflt);

    /**
     * A secret from {@code <prefix>_env} (an environment variable) or {@code <prefix>_file}; a literal
     * {@code <prefix>} key is refused. {@link Secret#NONE} when neither is set. {@code prefix} is e.g. {@code password}.
     * For commands that talk to the source only ({@code preflight}, {@code status}) a secret that cannot be read (its
     * variable unset, its file unreadable) is not an error but {@link Secret#NONE}, and {@code run} refuses it: so
     * a provider must not refuse an empty secret itself.
     */
    Secret secret(String prefix);

    /**
     * Declares every key this destination accepts besides {@code name} and {@code type}; call it first. A key
     * present but not among them is refused at once, naming it, the nearest known one and the known ones, so that a
     * misspelling ({@code databse}) is named as such and not reported as a missing required setting. After
     * {@link DestinationProvider#configure} returns, a key present but never read is refused too (e.g. {@code host}
     * beside {@code url}, which makes it meaningless).
     */
    void allow(String... keys);

    /** A configuration error naming {@code key} (as {@link #key}). */
    MillraceException error(String key, String message);
}
