package io.millrace.core.types;

/**
 * A {@code time} value: microseconds since midnight, 0 to 86 400 000 000 inclusive
 * ({@code 24:00:00} is a valid PostgreSQL time).
 */
public record PgTime(long micros) {
    public static final long MAX_MICROS = 86_400_000_000L;

    public PgTime {
        if (micros < 0 || micros > MAX_MICROS) {
            throw new IllegalArgumentException("time out of range (0 .. 24:00:00): " + micros + " microseconds");
        }
    }

    @Override
    public String toString() {
        return DateTimeText.formatTime(new StringBuilder(15), micros).toString();
    }
}
