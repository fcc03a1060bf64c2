package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;

import static io.millrace.core.types.DateTimeText.MICROS_PER_SECOND;
import static io.millrace.core.types.DateTimeText.PG_EPOCH_DAY;

/** date, time, timetz, timestamp, timestamptz, interval. */
final class DateTimeCodecs {
    /** 2000-01-01 00:00 UTC in seconds since 1970. */
    static final long PG_EPOCH_SECONDS = PG_EPOCH_DAY * 86_400L;

    private DateTimeCodecs() {
    }

    static PgInfinity infinity(String text) {
        if (text.length() == 8 && text.equals("infinity")) {
            return PgInfinity.POSITIVE;
        }
        if (text.length() == 9 && text.equals("-infinity")) {
            return PgInfinity.NEGATIVE;
        }
        return null;
    }

    static final class Date extends BaseCodec {
        Date() {
            super("date");
        }

        @Override
        public Object decodeText(String text) {
            PgInfinity inf = infinity(text);
            if (inf != null) {
                return inf;
            }
            try {
                int bc = DateTimeText.bcEnd(text);
                int limit = bc < 0 ? text.length() : bc;
                long day = DateTimeText.parseDate(text, limit, bc >= 0);
                if (DateTimeText.dateEnd(text) != limit) {
                    throw new DateTimeText.Bad("unexpected text after the date");
                }
                return LocalDate.ofEpochDay(day);
            } catch (DateTimeText.Bad e) {
                throw badText(text, e.getMessage() + " (expected YYYY-MM-DD[ BC], infinity or -infinity)");
            }
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 4);
            int d = i32(buf, off);
            if (d == Integer.MAX_VALUE) {
                return PgInfinity.POSITIVE;
            }
            if (d == Integer.MIN_VALUE) {
                return PgInfinity.NEGATIVE;
            }
            return LocalDate.ofEpochDay((long) d + PG_EPOCH_DAY);
        }

        @Override
        public boolean encodesBinary() {
            return true;
        }

        /** Days since 2000-01-01 (int32); infinity and -infinity as int32's largest and smallest. */
        @Override
        public byte[] encodeBinary(Object value) {
            int days;
            if (value instanceof PgInfinity i) {
                days = i == PgInfinity.POSITIVE ? Integer.MAX_VALUE : Integer.MIN_VALUE;
            } else if (value instanceof LocalDate d) {
                days = Math.toIntExact(d.toEpochDay() - PG_EPOCH_DAY);
            } else {
                throw wrongValue(value);
            }
            byte[] b = new byte[4];
            BinaryOut.int2(b, 0, days >>> 16);
            BinaryOut.int2(b, 2, days);
            return b;
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof LocalDate d) {
                StringBuilder sb = new StringBuilder(13);
                if (DateTimeText.formatDate(sb, d.toEpochDay())) {
                    sb.append(" BC");
                }
                return sb.toString();
            }
            if (value instanceof PgInfinity i) {
                return i.pgText();
            }
            throw wrongValue(value);
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            if (value instanceof LocalDate d) {
                gen.writeNumber(d.toEpochDay());
            } else if (value instanceof PgInfinity i) {
                gen.writeString(i.pgText());
            } else {
                throw wrongValue(value);
            }
        }
    }

    static final class Time extends BaseCodec {
        Time() {
            super("time");
        }

        @Override
        public Object decodeText(String text) {
            try {
                int n = text.length();
                long micros = DateTimeText.parseTime(text, 0, n, true);
                if (DateTimeText.timeEnd(text, 0, n) != n) {
                    throw new DateTimeText.Bad("unexpected text after the time");
                }
                return new PgTime(micros);
            } catch (DateTimeText.Bad e) {
                throw badText(text, e.getMessage() + " (expected HH:MM:SS[.ffffff])");
            }
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 8);
            long micros = i64(buf, off);
            if (micros < 0 || micros > PgTime.MAX_MICROS) {
                throw badBinary(buf, off, len, "time out of range");
            }
            return new PgTime(micros);
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof PgTime t) {
                return DateTimeText.formatTime(new StringBuilder(15), t.micros()).toString();
            }
            throw wrongValue(value);
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            if (value instanceof PgTime t) {
                gen.writeNumber(t.micros());
            } else {
                throw wrongValue(value);
            }
        }
    }

    static final class TimeTz extends BaseCodec {
        TimeTz() {
            super("timetz");
        }

        @Override
        public Object decodeText(String text) {
            try {
                int n = text.length();
                long micros = DateTimeText.parseTime(text, 0, n, true);
                int p = DateTimeText.timeEnd(text, 0, n);
                return new PgTimeTz(micros, DateTimeText.parseOffset(text, p, n));
            } catch (DateTimeText.Bad e) {
                throw badText(text, e.getMessage() + " (expected HH:MM:SS[.ffffff]+HH[:MM[:SS]])");
            }
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 12);
            long micros = i64(buf, off);
            int zoneWest = i32(buf, off + 8); // timetz_send: seconds WEST of UTC
            if (micros < 0 || micros > PgTime.MAX_MICROS || Math.abs(zoneWest) > PgTimeTz.MAX_OFFSET_SECONDS) {
                throw badBinary(buf, off, len, "timetz out of range");
            }
            return new PgTimeTz(micros, -zoneWest);
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof PgTimeTz t) {
                return t.toString();
            }
            throw wrongValue(value);
        }

        /** Debezium ZonedTime: the time in UTC, {@code HH:mm:ss.SSSSSSZ}. */
        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            if (!(value instanceof PgTimeTz t)) {
                throw wrongValue(value);
            }
            long utc = t.utcMicros();
            StringBuilder sb = new StringBuilder(16);
            long secs = utc / MICROS_PER_SECOND;
            DateTimeText.pad2(sb, (int) (secs / 3600));
            sb.append(':');
            DateTimeText.pad2(sb, (int) (secs / 60 % 60));
            sb.append(':');
            DateTimeText.pad2(sb, (int) (secs % 60));
            DateTimeText.appendFraction6(sb, (int) (utc % MICROS_PER_SECOND));
            gen.writeString(sb.append('Z').toString());
        }
    }

    /** timestamp and timestamptz: the same wire forms; the zone decides the Java type and the text. */
    static final class Timestamp extends BaseCodec {
        private final boolean withZone;

        Timestamp(boolean withZone) {
            super(withZone ? "timestamptz" : "timestamp");
            this.withZone = withZone;
        }

        @Override
        public Object decodeText(String text) {
            PgInfinity inf = infinity(text);
            if (inf != null) {
                return inf;
            }
            long micros;
            try {
                micros = DateTimeText.parseTimestamp(text, withZone);
            } catch (DateTimeText.Bad e) {
                throw badText(text, e.getMessage() + (withZone ? " (expected YYYY-MM-DD HH:MM:SS[.ffffff]+HH[:MM[:SS]][ BC])"
                        : " (expected YYYY-MM-DD HH:MM:SS[.ffffff][ BC])"));
            }
            return fromPgMicros(micros);
        }

        /** The value of microseconds since 2000-01-01 (PostgreSQL's epoch; 1970-based micros overflow in 294247 AD). */
        private Object fromPgMicros(long pgMicros) {
            long secs = Math.floorDiv(pgMicros, MICROS_PER_SECOND) + PG_EPOCH_SECONDS;
            int nanos = (int) Math.floorMod(pgMicros, MICROS_PER_SECOND) * 1000;
            return withZone ? Instant.ofEpochSecond(secs, nanos) : LocalDateTime.ofEpochSecond(secs, nanos, ZoneOffset.UTC);
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 8);
            long v = i64(buf, off);
            if (v == Long.MAX_VALUE) {
                return PgInfinity.POSITIVE;
            }
            if (v == Long.MIN_VALUE) {
                return PgInfinity.NEGATIVE;
            }
            return fromPgMicros(v);
        }

        /** Epoch seconds of the value (local time read as UTC for timestamp). */
        private long epochSecond(Object value) {
            if (withZone && value instanceof Instant i) {
                return i.getEpochSecond();
            }
            if (!withZone && value instanceof LocalDateTime t) {
                return t.toEpochSecond(ZoneOffset.UTC);
            }
            throw wrongValue(value);
        }

        private static int nano(Object value) {
            return value instanceof Instant i ? i.getNano() : ((LocalDateTime) value).getNano();
        }

        /** Microseconds since 2000-01-01 UTC; sub-microseconds are dropped. */
        long pgMicros(Object value) {
            long secs = epochSecond(value) - PG_EPOCH_SECONDS;
            try {
                return Math.addExact(Math.multiplyExact(secs, MICROS_PER_SECOND), nano(value) / 1000);
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException(name + " value out of PostgreSQL's range: " + value, e);
            }
        }

        @Override
        public boolean encodesBinary() {
            return true;
        }

        /** Microseconds since 2000-01-01 (int64; UTC for timestamptz); infinity and -infinity as int64's largest and smallest. */
        @Override
        public byte[] encodeBinary(Object value) {
            if (value instanceof PgInfinity i) {
                return BinaryOut.int8(i == PgInfinity.POSITIVE ? Long.MAX_VALUE : Long.MIN_VALUE);
            }
            return BinaryOut.int8(pgMicros(value));
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof PgInfinity i) {
                return i.pgText();
            }
            StringBuilder sb = new StringBuilder(36);
            boolean bc = DateTimeText.formatTimestamp(sb, pgMicros(value));
            if (withZone) {
                sb.append("+00");
            }
            if (bc) {
                sb.append(" BC");
            }
            return sb.toString();
        }

        /**
         * timestamp: Debezium MicroTimestamp, micros since 1970 as a number (beyond 294247 AD, where
         * that overflows int64, still the exact number); timestamptz: ZonedTimestamp, ISO-8601 UTC.
         */
        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            if (value instanceof PgInfinity i) {
                gen.writeString(i.pgText());
            } else if (withZone) {
                char[] buf = DateTimeText.SCRATCH.get();
                gen.writeString(buf, 0, DateTimeText.isoInstant(pgMicros(value), buf));
            } else {
                long secs = epochSecond(value);
                long micros = nano(value) / 1000;
                if (Math.abs(secs) < 9_000_000_000_000L) {
                    gen.writeNumber(secs * MICROS_PER_SECOND + micros);
                } else {
                    gen.writeNumber(java.math.BigInteger.valueOf(secs).multiply(java.math.BigInteger.valueOf(MICROS_PER_SECOND))
                            .add(java.math.BigInteger.valueOf(micros)));
                }
            }
        }
    }

    static final class Interval extends BaseCodec {
        Interval() {
            super("interval");
        }

        @Override
        public Object decodeText(String text) {
            try {
                return IntervalText.parse(text);
            } catch (DateTimeText.Bad e) {
                throw badText(text, e.getMessage() + " (expected IntervalStyle postgres, e.g. 1 year 2 mons -3 days +04:05:06.5)");
            }
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 16);
            long micros = i64(buf, off);
            int days = i32(buf, off + 8);
            int months = i32(buf, off + 12);
            if (micros == Long.MAX_VALUE && days == Integer.MAX_VALUE && months == Integer.MAX_VALUE) {
                return PgInterval.POSITIVE_INFINITY;
            }
            if (micros == Long.MIN_VALUE && days == Integer.MIN_VALUE && months == Integer.MIN_VALUE) {
                return PgInterval.NEGATIVE_INFINITY;
            }
            return new PgInterval(months, days, micros);
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof PgInterval i) {
                return IntervalText.format(i);
            }
            throw wrongValue(value);
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            if (value instanceof PgInterval i) {
                gen.writeString(IntervalText.iso(i));
            } else {
                throw wrongValue(value);
            }
        }
    }
}
