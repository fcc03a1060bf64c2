package io.millrace.core;

/**
 * A PostgreSQL write-ahead-log position. Unsigned 64-bit; ordered; printed as {@code X/XXXXXXXX}
 * like the server does. Parsing bad input throws instead of returning a sentinel.
 */
public record Lsn(long value) implements Comparable<Lsn> {
    public static final Lsn ZERO = new Lsn(0);

    public static Lsn of(long value) {
        return value == 0 ? ZERO : new Lsn(value);
    }

    /** Parses the server's {@code hi/lo} hexadecimal form, e.g. {@code 16/B374D848}. */
    public static Lsn parse(String text) {
        if (text == null) {
            throw new IllegalArgumentException("LSN must not be null");
        }
        int slash = text.indexOf('/');
        if (slash <= 0 || slash == text.length() - 1 || slash > 8 || text.length() - slash - 1 > 8) {
            throw new IllegalArgumentException("not an LSN (expected hex 'X/X', e.g. '16/B374D848'): '" + text + "'");
        }
        try {
            long hi = Long.parseLong(text.substring(0, slash), 16);
            long lo = Long.parseLong(text.substring(slash + 1), 16);
            return of((hi << 32) | lo);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not an LSN (expected hex 'X/X', e.g. '16/B374D848'): '" + text + "'", e);
        }
    }

    public boolean isAfter(Lsn other) {
        return compareTo(other) > 0;
    }

    public static Lsn max(Lsn a, Lsn b) {
        return a.compareTo(b) >= 0 ? a : b;
    }

    public static Lsn min(Lsn a, Lsn b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    @Override
    public int compareTo(Lsn o) {
        return Long.compareUnsigned(value, o.value);
    }

    @Override
    public String toString() {
        return String.format("%X/%X", value >>> 32, value & 0xFFFFFFFFL);
    }
}
