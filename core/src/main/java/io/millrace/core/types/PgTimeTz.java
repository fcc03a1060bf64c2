package io.millrace.core.types;

/**
 * A {@code timetz} value: local microseconds since midnight and the zone offset in seconds EAST of
 * UTC, as PostgreSQL prints it ({@code 10:00:00+05:30} has offsetSeconds 19800). Note that the
 * binary wire form carries the offset WEST of UTC; the codec converts.
 */
public record PgTimeTz(long micros, int offsetSeconds) {
    /** PostgreSQL's limit on a time zone offset: 15:59:59. */
    public static final int MAX_OFFSET_SECONDS = 15 * 3600 + 59 * 60 + 59;

    public PgTimeTz {
        if (micros < 0 || micros > PgTime.MAX_MICROS) {
            throw new IllegalArgumentException("timetz out of range (0 .. 24:00:00): " + micros + " microseconds");
        }
        if (offsetSeconds < -MAX_OFFSET_SECONDS || offsetSeconds > MAX_OFFSET_SECONDS) {
            throw new IllegalArgumentException("timetz offset out of range (±15:59:59): " + offsetSeconds + " seconds");
        }
    }

    /** The same instant of the day in UTC, microseconds since midnight (0 .. 86 399 999 999). */
    public long utcMicros() {
        return Math.floorMod(micros - offsetSeconds * 1_000_000L, PgTime.MAX_MICROS);
    }

    @Override
    public String toString() {
        StringBuilder sb = DateTimeText.formatTime(new StringBuilder(24), micros);
        return DateTimeText.formatOffset(sb, offsetSeconds).toString();
    }
}
