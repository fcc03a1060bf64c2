package io.millrace.core.types;

/**
 * A value of a range type: its bounds as values of the subtype's codec ({@code null} for an
 * unbounded side, which is never inclusive), or {@link #EMPTY}. The server sends ranges
 * canonical (an {@code int4range} {@code [1,5]} arrives as {@code [1,6)}), so equal values are
 * equal records.
 *
 * @param lower          the lower bound, {@code null} when unbounded
 * @param upper          the upper bound, {@code null} when unbounded
 * @param lowerInclusive whether the lower bound is in the range ({@code [})
 * @param upperInclusive whether the upper bound is in the range ({@code ]})
 * @param empty          the empty range (then the rest is null/false)
 */
public record PgRange(Object lower, Object upper, boolean lowerInclusive, boolean upperInclusive, boolean empty) {
    public static final PgRange EMPTY = new PgRange(null, null, false, false, true);

    public PgRange {
        if (empty && (lower != null || upper != null || lowerInclusive || upperInclusive)) {
            throw new IllegalArgumentException("an empty range has no bounds");
        }
        if (lower == null && lowerInclusive || upper == null && upperInclusive) {
            throw new IllegalArgumentException("an unbounded side of a range is never inclusive");
        }
    }

    /** A non-empty range. */
    public static PgRange of(Object lower, boolean lowerInclusive, Object upper, boolean upperInclusive) {
        return new PgRange(lower, upper, lowerInclusive, upperInclusive, false);
    }
}
