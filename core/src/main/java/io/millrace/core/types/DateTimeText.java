package io.millrace.core.types;

/**
 * Parsing and printing of PostgreSQL's ISO date/time text (DateStyle=ISO) without regex or
 * intermediate objects: dates are epoch days, times microseconds, offsets seconds east of UTC.
 * Years are proleptic Gregorian and astronomical (year 0 is 1 BC); the text form prints
 * {@code 0044-03-15 BC} for year -43.
 */
final class DateTimeText {
    static final long MICROS_PER_SECOND = 1_000_000L;
    static final long MICROS_PER_DAY = 86_400_000_000L;
    /** 2000-01-01, PostgreSQL's epoch, in days since 1970-01-01. */
    static final int PG_EPOCH_DAY = 10_957;

    private DateTimeText() {
    }

    // ---------------------------------------------------------------- calendar

    /** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
    static long epochDay(long y, int m, int d) {
        y -= m <= 2 ? 1 : 0;
        long era = Math.floorDiv(y, 400);
        long yoe = y - era * 400;
        long doy = (153L * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
        long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146_097 + doe - 719_468;
    }

    /** The date of an epoch day, packed as {@code year << 16 | month << 8 | day} (year signed). */
    static long civil(long epochDay) {
        long z = epochDay + 719_468;
        long era = Math.floorDiv(z, 146_097);
        long doe = z - era * 146_097;
        long yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        long mp = (5 * doy + 2) / 153;
        long d = doy - (153 * mp + 2) / 5 + 1;
        long m = mp < 10 ? mp + 3 : mp - 9;
        long y = yoe + era * 400 + (m <= 2 ? 1 : 0);
        return (y << 16) | (m << 8) | d;
    }

    static boolean isLeap(long y) {
        return (y & 3) == 0 && (y % 100 != 0 || y % 400 == 0);
    }

    static int monthLength(long y, int m) {
        switch (m) {
            case 2:
                return isLeap(y) ? 29 : 28;
            case 4:
            case 6:
            case 9:
            case 11:
                return 30;
            default:
                return 31;
        }
    }

    // ---------------------------------------------------------------- parsing

    /** Parsing failed; the codec turns this into a message naming the type and the text. */
    static final class Bad extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Bad(String why) {
            super(why, null, false, false);
        }
    }

    /** Digits {@code s[from, to)} as a number; {@code -1} if any is not a digit or the range is empty. */
    static int digits(String s, int from, int to) {
        if (from >= to || to > s.length()) {
            return -1;
        }
        int v = 0;
        for (int i = from; i < to; i++) {
            int d = s.charAt(i) - '0';
            if (d < 0 || d > 9) {
                return -1;
            }
            v = v * 10 + d;
        }
        return v;
    }

    static void expect(String s, int i, char c) {
        if (i >= s.length() || s.charAt(i) != c) {
            throw new Bad(i >= s.length() ? "ends early, expected '" + c + "'" : "expected '" + c + "' at position " + i);
        }
    }

    /** Where the text ends once a trailing {@code " BC"} is taken off, or -1 when there is none. */
    static int bcEnd(String s) {
        int n = s.length();
        return n > 3 && s.charAt(n - 1) == 'C' && s.charAt(n - 2) == 'B' && s.charAt(n - 3) == ' ' ? n - 3 : -1;
    }

    /**
     * Parses {@code Y+-MM-DD} (year of 1 to 8 digits) from position 0 and returns the epoch day; the
     * date part ends 6 characters after the first '-' ({@link #dateEnd}).
     */
    static long parseDate(String s, int limit, boolean bc) {
        int dash = s.indexOf('-', 1);
        if (dash < 0 || dash > 8 || dash + 6 > limit) {
            throw new Bad("expected YYYY-MM-DD");
        }
        int year = digits(s, 0, dash);
        int month = digits(s, dash + 1, dash + 3);
        int day = digits(s, dash + 4, dash + 6);
        if (year < 0 || month < 0 || day < 0 || s.charAt(dash + 3) != '-') {
            throw new Bad("expected YYYY-MM-DD");
        }
        if (bc) {
            if (year == 0) {
                throw new Bad("year 0 BC does not exist");
            }
            year = 1 - year;
        }
        if (month < 1 || month > 12 || day < 1 || day > monthLength(year, month)) {
            throw new Bad("no such date");
        }
        return epochDay(year, month, day);
    }

    /** Position after the date part that {@link #parseDate} read. */
    static int dateEnd(String s) {
        return s.indexOf('-', 1) + 6;
    }

    /**
     * Parses {@code HH:MM:SS[.ffffff]} at {@code from}; returns microseconds since midnight and
     * leaves the end position to {@link #timeEnd}. 24:00:00 is allowed only when {@code allow24}.
     */
    static long parseTime(String s, int from, int limit, boolean allow24) {
        if (from + 8 > limit) {
            throw new Bad("expected HH:MM:SS");
        }
        int h = digits(s, from, from + 2);
        int m = digits(s, from + 3, from + 5);
        int sec = digits(s, from + 6, from + 8);
        if (h < 0 || m < 0 || sec < 0 || s.charAt(from + 2) != ':' || s.charAt(from + 5) != ':') {
            throw new Bad("expected HH:MM:SS");
        }
        long frac = 0;
        int p = from + 8;
        if (p < limit && s.charAt(p) == '.') {
            int q = p + 1;
            long scale = 100_000;
            while (q < limit) {
                int d = s.charAt(q) - '0';
                if (d < 0 || d > 9) {
                    break;
                }
                if (scale == 0) {
                    throw new Bad("more than 6 fraction digits");
                }
                frac += d * scale;
                scale /= 10;
                q++;
            }
            if (q == p + 1) {
                throw new Bad("expected digits after '.'");
            }
        }
        if (m > 59 || sec > 59 || h > 24 || (h == 24 && (!allow24 || m != 0 || sec != 0 || frac != 0))) {
            throw new Bad("time out of range");
        }
        return ((h * 60L + m) * 60 + sec) * MICROS_PER_SECOND + frac;
    }

    /** Position after the time that {@link #parseTime} read from {@code from}. */
    static int timeEnd(String s, int from, int limit) {
        int p = from + 8;
        if (p < limit && s.charAt(p) == '.') {
            p++;
            while (p < limit && s.charAt(p) >= '0' && s.charAt(p) <= '9') {
                p++;
            }
        }
        return p;
    }

    /** Parses a zone offset {@code ±HH[:MM[:SS]]} filling {@code s[from, limit)}; returns seconds east of UTC. */
    static int parseOffset(String s, int from, int limit) {
        if (from >= limit) {
            throw new Bad("missing time zone offset");
        }
        char sign = s.charAt(from);
        if (sign != '+' && sign != '-') {
            throw new Bad("expected a time zone offset (+HH[:MM[:SS]]) at position " + from);
        }
        int len = limit - from - 1;
        int h;
        int m = 0;
        int sec = 0;
        if (len == 2) {
            h = digits(s, from + 1, from + 3);
        } else if (len == 5 && s.charAt(from + 3) == ':') {
            h = digits(s, from + 1, from + 3);
            m = digits(s, from + 4, from + 6);
        } else if (len == 8 && s.charAt(from + 3) == ':' && s.charAt(from + 6) == ':') {
            h = digits(s, from + 1, from + 3);
            m = digits(s, from + 4, from + 6);
            sec = digits(s, from + 7, from + 9);
        } else {
            throw new Bad("expected a time zone offset (+HH[:MM[:SS]]) at position " + from);
        }
        if (h < 0 || m < 0 || sec < 0 || h > 15 || m > 59 || sec > 59) {
            throw new Bad("bad time zone offset");
        }
        int v = (h * 60 + m) * 60 + sec;
        return sign == '-' ? -v : v;
    }

    /**
     * Parses a timestamp {@code Y-MM-DD HH:MM:SS[.ffffff][±zone][ BC]}; returns microseconds since
     * 2000-01-01 00:00 UTC, PostgreSQL's own representation, which holds its whole range (micros
     * since 1970 would not: 294276 AD overflows). The zone, when {@code withZone}, is applied;
     * otherwise the local time is read as if it were UTC.
     */
    static long parseTimestamp(String s, boolean withZone) {
        int bc = bcEnd(s);
        int limit = bc < 0 ? s.length() : bc;
        long day = parseDate(s, limit, bc >= 0) - PG_EPOCH_DAY;
        int p = dateEnd(s);
        expect(s, p, ' ');
        long micros = parseTime(s, p + 1, limit, false);
        p = timeEnd(s, p + 1, limit);
        if (withZone) {
            micros -= parseOffset(s, p, limit) * MICROS_PER_SECOND;
        } else if (p != limit) {
            throw new Bad("unexpected text at position " + p);
        }
        try {
            return Math.addExact(Math.multiplyExact(day, MICROS_PER_DAY), micros);
        } catch (ArithmeticException e) {
            throw new Bad("out of range");
        }
    }

    // ---------------------------------------------------------------- printing

    static void pad2(StringBuilder sb, int v) {
        sb.append((char) ('0' + v / 10)).append((char) ('0' + v % 10));
    }

    /** Appends a year with at least 4 digits (no sign). */
    static void year4(StringBuilder sb, long y) {
        if (y < 1000) {
            sb.append(y < 10 ? "000" : y < 100 ? "00" : "0");
        }
        sb.append(y);
    }

    /** Appends {@code YYYY-MM-DD} as PostgreSQL prints it; returns whether it is a BC date (caller appends " BC"). */
    static boolean formatDate(StringBuilder sb, long epochDay) {
        long c = civil(epochDay);
        long y = c >> 16;
        boolean bc = y <= 0;
        year4(sb, bc ? 1 - y : y);
        sb.append('-');
        pad2(sb, (int) (c >> 8) & 0xff);
        sb.append('-');
        pad2(sb, (int) c & 0xff);
        return bc;
    }

    /** Appends {@code HH:MM:SS} and, when non-zero, the fraction without trailing zeros. */
    static StringBuilder formatTime(StringBuilder sb, long micros) {
        long secs = micros / MICROS_PER_SECOND;
        int frac = (int) (micros % MICROS_PER_SECOND);
        pad2(sb, (int) (secs / 3600));
        sb.append(':');
        pad2(sb, (int) (secs / 60 % 60));
        sb.append(':');
        pad2(sb, (int) (secs % 60));
        appendFraction(sb, frac);
        return sb;
    }

    /** Appends {@code .ffffff} without trailing zeros, nothing when zero. */
    static void appendFraction(StringBuilder sb, int frac) {
        if (frac == 0) {
            return;
        }
        sb.append('.');
        int digits = 6;
        while (frac % 10 == 0) {
            frac /= 10;
            digits--;
        }
        for (int div = pow10(digits - 1); div > 0; div /= 10) {
            sb.append((char) ('0' + frac / div % 10));
        }
    }

    /** Appends {@code .ffffff}, always six digits. */
    static void appendFraction6(StringBuilder sb, int frac) {
        sb.append('.');
        for (int div = 100_000; div > 0; div /= 10) {
            sb.append((char) ('0' + frac / div % 10));
        }
    }

    private static int pow10(int n) {
        int v = 1;
        for (int i = 0; i < n; i++) {
            v *= 10;
        }
        return v;
    }

    /** Appends an offset as PostgreSQL prints it: {@code +00}, {@code +05:30}, {@code -03:30:15}. */
    static StringBuilder formatOffset(StringBuilder sb, int secondsEast) {
        sb.append(secondsEast < 0 ? '-' : '+');
        int a = Math.abs(secondsEast);
        pad2(sb, a / 3600);
        if (a % 3600 != 0) {
            sb.append(':');
            pad2(sb, a / 60 % 60);
            if (a % 60 != 0) {
                sb.append(':');
                pad2(sb, a % 60);
            }
        }
        return sb;
    }

    /** {@code YYYY-MM-DD HH:MM:SS[.ffffff]} of microseconds since 2000-01-01; returns whether BC. */
    static boolean formatTimestamp(StringBuilder sb, long pgMicros) {
        long day = Math.floorDiv(pgMicros, MICROS_PER_DAY) + PG_EPOCH_DAY;
        long tod = Math.floorMod(pgMicros, MICROS_PER_DAY);
        boolean bc = formatDate(sb, day);
        sb.append(' ');
        formatTime(sb, tod);
        return bc;
    }

    /**
     * ISO-8601 UTC of microseconds since 2000-01-01, like {@link java.time.Instant#toString()} but
     * with exactly 6 fraction digits when there is a fraction: {@code 2024-01-02T03:04:05.123456Z}.
     */
    static String isoInstant(long pgMicros) {
        char[] buf = new char[ISO_INSTANT_MAX];
        return new String(buf, 0, isoInstant(pgMicros, buf));
    }

    /** A thread's scratch for the text of one value written as JSON (the generator copies it): no garbage per value. */
    static final ThreadLocal<char[]> SCRATCH = ThreadLocal.withInitial(() -> new char[64]);

    /** The most chars {@link #isoInstant(long, char[])} writes: a sign, 19 year digits, {@code -MM-DDTHH:MM:SS.ffffffZ}. */
    static final int ISO_INSTANT_MAX = 1 + 19 + 23;

    /** {@link #isoInstant(long)} into {@code out} (at least {@link #ISO_INSTANT_MAX} long), allocating nothing; returns its length. */
    static int isoInstant(long pgMicros, char[] out) {
        long day = Math.floorDiv(pgMicros, MICROS_PER_DAY) + PG_EPOCH_DAY;
        long tod = Math.floorMod(pgMicros, MICROS_PER_DAY);
        long c = civil(day);
        long y = c >> 16;
        int p = 0;
        if (y > 9999) {
            out[p++] = '+';
        } else if (y < 0) {
            out[p++] = '-';
        }
        long a = Math.abs(y);
        int digits = 1;
        for (long t = a / 10; t != 0; t /= 10) {
            digits++;
        }
        for (int i = digits; i < 4; i++) {
            out[p++] = '0';
        }
        for (int i = p + digits - 1; i >= p; i--) {
            out[i] = (char) ('0' + a % 10);
            a /= 10;
        }
        p += digits;
        out[p++] = '-';
        p = put2(out, p, (int) (c >> 8) & 0xff);
        out[p++] = '-';
        p = put2(out, p, (int) c & 0xff);
        out[p++] = 'T';
        long secs = tod / MICROS_PER_SECOND;
        int frac = (int) (tod % MICROS_PER_SECOND);
        p = put2(out, p, (int) (secs / 3600));
        out[p++] = ':';
        p = put2(out, p, (int) (secs / 60 % 60));
        out[p++] = ':';
        p = put2(out, p, (int) (secs % 60));
        if (frac != 0) {
            out[p++] = '.';
            for (int div = 100_000; div > 0; div /= 10) {
                out[p++] = (char) ('0' + frac / div % 10);
            }
        }
        out[p++] = 'Z';
        return p;
    }

    private static int put2(char[] out, int p, int v) {
        out[p] = (char) ('0' + v / 10);
        out[p + 1] = (char) ('0' + v % 10);
        return p + 2;
    }
}
