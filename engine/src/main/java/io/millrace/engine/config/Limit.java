package io.millrace.engine.config;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;

/**
 * The bounds of every whole-number setting outside {@code destinations}, in one place: the builder in
 * {@code io.millrace.api} checks a value against them, and the YAML loader names them when a value is not a whole
 * number at all. The constant's name is the setting's path with dots as underscores.
 */
public enum Limit {
    SOURCE_PORT(1, 65535),
    SOURCE_STATUS_INTERVAL_MS(100, 600_000),
    SOURCE_SOCKET_TIMEOUT_S(0, 86_400),
    SOURCE_NEW_TABLES_POLL_S(0, 86_400),
    SNAPSHOT_READERS(1, 64),
    SNAPSHOT_CHUNK_PAGES(1, Integer.MAX_VALUE),
    ONLINE_READERS(1, 64),
    ONLINE_CHUNK_ROWS(1, Integer.MAX_VALUE),
    ONLINE_TARGET_CHUNK_MS(1, 3_600_000),
    ONLINE_MAX_CHUNK_MB(1, 1 << 16),
    PIPELINE_MEMORY_BUDGET_MB(4, 1 << 20),
    PIPELINE_BATCH_KB(1, 1 << 20),
    PIPELINE_LINGER_MS(1, 60_000),
    PIPELINE_DECODERS(0, 256),
    PIPELINE_DECODE_CHUNK_ROWS(1, 1 << 20),
    RETRY_MS(10, 3_600_000),
    RETRY_ATTEMPTS(0, 1_000_000),
    READY_MAX_LAG_S(1, 86_400),
    READY_MAX_LAG_MB(0, Integer.MAX_VALUE),
    LIVE_MAX_STALL_S(0, 86_400),
    MONITOR_INTERVAL_MS(100, 3_600_000),
    RETAINED_WAL_WARN_MB(1, Integer.MAX_VALUE),
    HTTP_PORT(0, 65535),
    TRANSFORMS_TOAST_CACHE_MB(1, 1 << 16);

    private final int min;
    private final int max;

    Limit(int min, int max) {
        this.min = min;
        this.max = max;
    }

    public int min() {
        return min;
    }

    public int max() {
        return max;
    }

    /** {@code value}, or an error of kind CONFIG naming {@code key} when it is out of bounds. */
    public int check(String key, int value) {
        if (value < min || value > max) {
            throw error(key, "must be from " + min + " to " + max + ", got " + value);
        }
        return value;
    }

    /** A configuration error: {@code config: <key> <message>}, the form every configuration message takes. */
    public static MillraceException error(String key, String message) {
        return new MillraceException(Kind.CONFIG, "config: " + key + " " + message);
    }
}
