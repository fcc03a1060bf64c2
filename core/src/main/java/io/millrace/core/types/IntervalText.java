package io.millrace.core.types;

import static io.millrace.core.types.DateTimeText.MICROS_PER_SECOND;

/** The text forms of {@code interval}: PostgreSQL's own (IntervalStyle=postgres) and ISO-8601 for JSON. */
final class IntervalText {
    private static final long MICROS_PER_MINUTE = 60 * MICROS_PER_SECOND;
    private static final long MICROS_PER_HOUR = 60 * MICROS_PER_MINUTE;

    private IntervalText() {
    }

    /**
     * Parses interval_out's postgres style: {@code [N year[s]] [N mon[s]] [N day[s]] [±]H+:MM:SS[.f]},
     * each part signed on its own, e.g. {@code -1 years -2 mons +3 days -04:05:06.789}.
     */
    static PgInterval parse(String s) {
        int n = s.length();
        if (n == 8 && s.equals("infinity")) {
            return PgInterval.POSITIVE_INFINITY;
        }
        if (n == 9 && s.equals("-infinity")) {
            return PgInterval.NEGATIVE_INFINITY;
        }
        long months = 0;
        long days = 0;
        long micros = 0;
        boolean any = false;
        boolean time = false;
        int p = 0;
        while (p < n) {
            if (s.charAt(p) == ' ') {
                p++;
                continue;
            }
            int end = s.indexOf(' ', p);
            if (end < 0) {
                end = n;
            }
            if (s.indexOf(':', p) >= 0 && s.indexOf(':', p) < end) {
                if (time) {
                    throw new DateTimeText.Bad("two time parts");
                }
                micros = parseTimePart(s, p, end);
                time = true;
                p = end;
            } else {
                long v = parseInt(s, p, end);
                int u = end + 1;
                if (u >= n) {
                    throw new DateTimeText.Bad("number without a unit at position " + p);
                }
                int uend = s.indexOf(' ', u);
                if (uend < 0) {
                    uend = n;
                }
                switch (unit(s, u, uend)) {
                    case 'y':
                        months += v * 12;
                        break;
                    case 'm':
                        months += v;
                        break;
                    case 'd':
                        days += v;
                        break;
                    default:
                        throw new DateTimeText.Bad("unknown unit '" + s.substring(u, uend) + "'");
                }
                if (Math.abs(months) > (1L << 40) || Math.abs(days) > (1L << 40)) {
                    throw new DateTimeText.Bad("out of range");
                }
                p = uend;
            }
            any = true;
        }
        if (!any) {
            throw new DateTimeText.Bad("empty");
        }
        if (months != (int) months || days != (int) days) {
            throw new DateTimeText.Bad("out of range");
        }
        return new PgInterval((int) months, (int) days, micros);
    }

    /** 'y' for year(s), 'm' for mon(s), 'd' for day(s), 0 otherwise; no substring. */
    private static char unit(String s, int from, int to) {
        int len = to - from;
        if (len > 0 && s.charAt(to - 1) == 's') {
            len--;
        }
        if (len == 4 && s.startsWith("year", from)) {
            return 'y';
        }
        if (len == 3 && s.startsWith("mon", from)) {
            return 'm';
        }
        if (len == 3 && s.startsWith("day", from)) {
            return 'd';
        }
        return 0;
    }

    private static long parseInt(String s, int from, int to) {
        boolean neg = false;
        int p = from;
        if (p < to && (s.charAt(p) == '-' || s.charAt(p) == '+')) {
            neg = s.charAt(p) == '-';
            p++;
        }
        if (p >= to || to - p > 12) {
            throw new DateTimeText.Bad("expected a number at position " + from);
        }
        long v = 0;
        for (; p < to; p++) {
            int d = s.charAt(p) - '0';
            if (d < 0 || d > 9) {
                throw new DateTimeText.Bad("expected a number at position " + from);
            }
            v = v * 10 + d;
        }
        return neg ? -v : v;
    }

    /** {@code [±]H+:MM:SS[.ffffff]} as microseconds; accumulates negatively so the int64 minimum fits. */
    private static long parseTimePart(String s, int from, int to) {
        boolean neg = false;
        int p = from;
        if (s.charAt(p) == '-' || s.charAt(p) == '+') {
            neg = s.charAt(p) == '-';
            p++;
        }
        int colon = s.indexOf(':', p);
        if (colon <= p || colon - p > 10 || colon + 6 > to) {
            throw new DateTimeText.Bad("expected H:MM:SS at position " + from);
        }
        long h = 0;
        for (int i = p; i < colon; i++) {
            int d = s.charAt(i) - '0';
            if (d < 0 || d > 9) {
                throw new DateTimeText.Bad("expected H:MM:SS at position " + from);
            }
            h = h * 10 + d;
        }
        int m = DateTimeText.digits(s, colon + 1, colon + 3);
        int sec = DateTimeText.digits(s, colon + 4, colon + 6);
        if (m < 0 || sec < 0 || s.charAt(colon + 3) != ':' || m > 59 || sec > 59) {
            throw new DateTimeText.Bad("expected H:MM:SS at position " + from);
        }
        long frac = 0;
        int q = colon + 6;
        if (q < to) {
            if (s.charAt(q) != '.' || q + 1 == to || to - q - 1 > 6) {
                throw new DateTimeText.Bad("bad fraction of a second at position " + q);
            }
            long scale = 100_000;
            for (int i = q + 1; i < to; i++, scale /= 10) {
                int d = s.charAt(i) - '0';
                if (d < 0 || d > 9) {
                    throw new DateTimeText.Bad("bad fraction of a second at position " + q);
                }
                frac += d * scale;
            }
        }
        try {
            long v = Math.negateExact(Math.multiplyExact(h, MICROS_PER_HOUR));
            v = Math.subtractExact(v, m * MICROS_PER_MINUTE + sec * MICROS_PER_SECOND + frac);
            return neg ? v : Math.negateExact(v);
        } catch (ArithmeticException e) {
            throw new DateTimeText.Bad("time part out of range");
        }
    }

    /** interval_out with IntervalStyle=postgres, byte for byte. */
    static String format(PgInterval iv) {
        if (iv.equals(PgInterval.POSITIVE_INFINITY)) {
            return "infinity";
        }
        if (iv.equals(PgInterval.NEGATIVE_INFINITY)) {
            return "-infinity";
        }
        StringBuilder sb = new StringBuilder(40);
        // state[0] = is_zero, state[1] = is_before (each nonzero field sets is_before for the next one only)
        boolean[] state = {true, false};
        addPart(sb, iv.months() / 12, "year", state);
        addPart(sb, iv.months() % 12, "mon", state);
        addPart(sb, iv.days(), "day", state);
        long micros = iv.micros();
        if (state[0] || micros != 0) {
            boolean minus = micros < 0;
            if (!state[0]) {
                sb.append(' ');
            }
            if (minus) {
                sb.append('-');
            } else if (state[1]) {
                sb.append('+');
            }
            long a = minus ? -micros : micros; // Long.MIN_VALUE stays negative: read it unsigned
            long hours = Long.divideUnsigned(a, MICROS_PER_HOUR);
            long rest = Long.remainderUnsigned(a, MICROS_PER_HOUR);
            if (hours < 10) {
                sb.append('0');
            }
            sb.append(hours).append(':');
            DateTimeText.pad2(sb, (int) (rest / MICROS_PER_MINUTE));
            sb.append(':');
            rest %= MICROS_PER_MINUTE;
            DateTimeText.pad2(sb, (int) (rest / MICROS_PER_SECOND));
            DateTimeText.appendFraction(sb, (int) (rest % MICROS_PER_SECOND));
        }
        return sb.toString();
    }

    private static void addPart(StringBuilder sb, int value, String unit, boolean[] state) {
        if (value == 0) {
            return;
        }
        if (!state[0]) {
            sb.append(' ');
        }
        if (state[1] && value > 0) {
            sb.append('+');
        }
        sb.append(value).append(' ').append(unit);
        if (value != 1) {
            sb.append('s');
        }
        state[1] = value < 0;
        state[0] = false;
    }

    /**
     * ISO-8601 duration as Debezium's interval.handling.mode=string writes it: zero parts left out,
     * each part with its own sign, e.g. {@code P1Y2M3DT4H5M6.789S}, {@code P-1M3DT-0.5S}; zero is
     * {@code PT0S}; PostgreSQL 17's infinite intervals are {@code infinity} / {@code -infinity}.
     */
    static String iso(PgInterval iv) {
        if (iv.equals(PgInterval.POSITIVE_INFINITY)) {
            return "infinity";
        }
        if (iv.equals(PgInterval.NEGATIVE_INFINITY)) {
            return "-infinity";
        }
        StringBuilder sb = new StringBuilder(32).append('P');
        int years = iv.months() / 12;
        int months = iv.months() % 12;
        if (years != 0) {
            sb.append(years).append('Y');
        }
        if (months != 0) {
            sb.append(months).append('M');
        }
        if (iv.days() != 0) {
            sb.append(iv.days()).append('D');
        }
        long micros = iv.micros();
        if (micros != 0) {
            sb.append('T');
            boolean minus = micros < 0;
            long a = minus ? -micros : micros;
            long hours = Long.divideUnsigned(a, MICROS_PER_HOUR);
            long rest = Long.remainderUnsigned(a, MICROS_PER_HOUR);
            long mins = rest / MICROS_PER_MINUTE;
            rest %= MICROS_PER_MINUTE;
            if (hours != 0) {
                sb.append(minus ? "-" : "").append(hours).append('H');
            }
            if (mins != 0) {
                sb.append(minus ? "-" : "").append(mins).append('M');
            }
            if (rest != 0) {
                sb.append(minus ? "-" : "").append(rest / MICROS_PER_SECOND);
                DateTimeText.appendFraction(sb, (int) (rest % MICROS_PER_SECOND));
                sb.append('S');
            }
        }
        return sb.length() == 1 ? "PT0S" : sb.toString();
    }
}
