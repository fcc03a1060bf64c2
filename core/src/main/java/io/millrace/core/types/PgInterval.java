package io.millrace.core.types;

/**
 * An {@code interval}: PostgreSQL keeps months, days and microseconds apart (a month is not a fixed
 * number of days, nor a day a fixed number of hours across DST). Each field carries its own sign.
 * PostgreSQL 17's {@code infinity} is {@link #POSITIVE_INFINITY} (all fields at their maximum)
 * and {@code -infinity} is {@link #NEGATIVE_INFINITY} (all at their minimum), as on the wire.
 */
public record PgInterval(int months, int days, long micros) {
    public static final PgInterval POSITIVE_INFINITY = new PgInterval(Integer.MAX_VALUE, Integer.MAX_VALUE, Long.MAX_VALUE);
    public static final PgInterval NEGATIVE_INFINITY = new PgInterval(Integer.MIN_VALUE, Integer.MIN_VALUE, Long.MIN_VALUE);

    public boolean isInfinite() {
        return equals(POSITIVE_INFINITY) || equals(NEGATIVE_INFINITY);
    }

    /** PostgreSQL's own text form ({@code IntervalStyle=postgres}), e.g. {@code 1 year 2 mons -3 days +04:05:06.5}. */
    @Override
    public String toString() {
        return IntervalText.format(this);
    }
}
