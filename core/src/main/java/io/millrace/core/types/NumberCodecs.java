package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;

/** bool, the integers, oid, the floats, numeric and money. */
final class NumberCodecs {
    private NumberCodecs() {
    }

    static final class Bool extends BaseCodec {
        Bool() {
            super("bool");
        }

        @Override
        public Object decodeText(String text) {
            if (text.length() == 1) {
                char c = text.charAt(0);
                if (c == 't') {
                    return Boolean.TRUE;
                }
                if (c == 'f') {
                    return Boolean.FALSE;
                }
            }
            // boolin's other spellings, for text that did not come from the server's output
            switch (text.trim().toLowerCase(java.util.Locale.ROOT)) {
                case "t", "true", "y", "yes", "on", "1":
                    return Boolean.TRUE;
                case "f", "false", "n", "no", "off", "0":
                    return Boolean.FALSE;
                default:
                    throw badText(text, "expected t or f");
            }
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 1);
            byte b = buf[off];
            if (b != 0 && b != 1) {
                throw badBinary(buf, off, len, "expected 0 or 1");
            }
            return b == 1 ? Boolean.TRUE : Boolean.FALSE;
        }

        @Override
        public boolean encodesBinary() {
            return true;
        }

        @Override
        public byte[] encodeBinary(Object value) {
            if (value instanceof Boolean b) {
                return new byte[]{(byte) (b ? 1 : 0)};
            }
            throw wrongValue(value);
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof Boolean b) {
                return b ? "t" : "f";
            }
            throw wrongValue(value);
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            if (value instanceof Boolean b) {
                gen.writeBoolean(b);
            } else {
                throw wrongValue(value);
            }
        }
    }

    /** int2, int4, int8 and oid share everything but their width and range. */
    static final class Int extends BaseCodec {
        private final int width;
        private final long min;
        private final long max;

        private Int(String name, int width, long min, long max) {
            super(name);
            this.width = width;
            this.min = min;
            this.max = max;
        }

        static Int int2() {
            return new Int("int2", 2, Short.MIN_VALUE, Short.MAX_VALUE);
        }

        static Int int4() {
            return new Int("int4", 4, Integer.MIN_VALUE, Integer.MAX_VALUE);
        }

        static Int int8() {
            return new Int("int8", 8, Long.MIN_VALUE, Long.MAX_VALUE);
        }

        static Int oid() {
            return new Int("oid", 4, 0, 0xFFFFFFFFL);
        }

        /** xid, cid: unsigned 32-bit, like oid. */
        static Int unsigned32(String name) {
            return new Int(name, 4, 0, 0xFFFFFFFFL);
        }

        /** xid8 (PostgreSQL 13+): unsigned 64-bit; values from 2^63 on (epoch 2^31, never reached) are refused. */
        static Int xid8() {
            return new Int("xid8", 8, 0, Long.MAX_VALUE);
        }

        private Object box(long v) {
            switch (width) {
                case 2:
                    return (short) v;
                case 4:
                    return min == 0 ? (Object) v : (Object) (int) v;
                default:
                    return v;
            }
        }

        @Override
        public Object decodeText(String text) {
            long v = parseLong(text);
            if (v < min || v > max) {
                throw badText(text, "out of range " + min + " .. " + max);
            }
            return box(v);
        }

        private long parseLong(String s) {
            int n = s.length();
            if (n == 0 || n > 20) {
                throw badText(s, "expected an integer");
            }
            int i = 0;
            boolean neg = false;
            char c0 = s.charAt(0);
            if (c0 == '-' || c0 == '+') {
                neg = c0 == '-';
                i = 1;
                if (n == 1) {
                    throw badText(s, "expected an integer");
                }
            }
            // accumulate negatively so Long.MIN_VALUE parses
            long acc = 0;
            for (; i < n; i++) {
                int d = s.charAt(i) - '0';
                if (d < 0 || d > 9) {
                    throw badText(s, "expected an integer");
                }
                if (acc < (Long.MIN_VALUE + d) / 10) {
                    throw badText(s, "out of range " + min + " .. " + max);
                }
                acc = acc * 10 - d;
            }
            if (!neg) {
                if (acc == Long.MIN_VALUE) {
                    throw badText(s, "out of range " + min + " .. " + max);
                }
                acc = -acc;
            }
            return acc;
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, width);
            switch (width) {
                case 2:
                    return i16(buf, off);
                case 4:
                    return min == 0 ? (Object) (i32(buf, off) & 0xFFFFFFFFL) : (Object) i32(buf, off);
                default:
                    long v = i64(buf, off);
                    if (v < min) {
                        throw badBinary(buf, off, len, "out of range " + min + " .. " + max);
                    }
                    return v;
            }
        }

        private long value(Object value) {
            if (value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte) {
                long v = ((Number) value).longValue();
                if (v < min || v > max) {
                    throw new IllegalArgumentException(name + " value out of range " + min + " .. " + max + ": " + v);
                }
                return v;
            }
            throw wrongValue(value);
        }

        /** int2, int4 and int8 (oid-like types keep the text form). */
        @Override
        public boolean encodesBinary() {
            return min < 0;
        }

        @Override
        public byte[] encodeBinary(Object value) {
            long v = value(value);
            byte[] b = new byte[width];
            for (int i = width - 1; i >= 0; i--, v >>= 8) {
                b[i] = (byte) v;
            }
            return b;
        }

        @Override
        public String toPgText(Object value) {
            return Long.toString(value(value));
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            gen.writeNumber(value(value));
        }
    }

    static final class Float4 extends BaseCodec {
        Float4() {
            super("float4");
        }

        @Override
        public Object decodeText(String text) {
            float f = parseFloat(text);
            return f;
        }

        private float parseFloat(String text) {
            switch (text) {
                case "NaN":
                    return Float.NaN;
                case "Infinity":
                    return Float.POSITIVE_INFINITY;
                case "-Infinity":
                    return Float.NEGATIVE_INFINITY;
                default:
                    checkFloatSyntax(this, text);
                    try {
                        return Float.parseFloat(text);
                    } catch (NumberFormatException e) {
                        throw badText(text, "expected a floating point number", e);
                    }
            }
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 4);
            return Float.intBitsToFloat(i32(buf, off));
        }

        @Override
        public boolean encodesBinary() {
            return true;
        }

        @Override
        public byte[] encodeBinary(Object value) {
            if (!(value instanceof Float f)) {
                throw wrongValue(value);
            }
            int v = Float.floatToRawIntBits(f);
            return new byte[]{(byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8), (byte) v};
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof Float f) {
                return floatText(f);
            }
            throw wrongValue(value);
        }

        static String floatText(float f) {
            if (Float.isNaN(f)) {
                return "NaN";
            }
            if (Float.isInfinite(f)) {
                return f > 0 ? "Infinity" : "-Infinity";
            }
            return Float.toString(f);
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            if (!(value instanceof Float f)) {
                throw wrongValue(value);
            }
            if (Float.isNaN(f) || Float.isInfinite(f)) {
                gen.writeString(floatText(f));
            } else {
                gen.writeNumber(f);
            }
        }
    }

    static final class Float8 extends BaseCodec {
        Float8() {
            super("float8");
        }

        @Override
        public Object decodeText(String text) {
            return parse(this, text);
        }

        /** float8out's text (also inside geometric values), errors named after {@code codec}. */
        static double parse(BaseCodec codec, String text) {
            switch (text) {
                case "NaN":
                    return Double.NaN;
                case "Infinity":
                    return Double.POSITIVE_INFINITY;
                case "-Infinity":
                    return Double.NEGATIVE_INFINITY;
                default:
                    checkFloatSyntax(codec, text);
                    try {
                        return Double.parseDouble(text);
                    } catch (NumberFormatException e) {
                        throw codec.badText(text, "expected a floating point number", e);
                    }
            }
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 8);
            return Double.longBitsToDouble(i64(buf, off));
        }

        @Override
        public boolean encodesBinary() {
            return true;
        }

        @Override
        public byte[] encodeBinary(Object value) {
            if (!(value instanceof Double d)) {
                throw wrongValue(value);
            }
            return BinaryOut.int8(Double.doubleToRawLongBits(d));
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof Double d) {
                return doubleText(d);
            }
            throw wrongValue(value);
        }

        static String doubleText(double d) {
            if (Double.isNaN(d)) {
                return "NaN";
            }
            if (Double.isInfinite(d)) {
                return d > 0 ? "Infinity" : "-Infinity";
            }
            return Double.toString(d);
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            if (!(value instanceof Double d)) {
                throw wrongValue(value);
            }
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                gen.writeString(doubleText(d));
            } else {
                gen.writeNumber(d);
            }
        }
    }

    /**
     * Java's parsers accept hex floats, a trailing 'd'/'f' and surrounding blanks; PostgreSQL's
     * output never has them, so they mean the text is not a float. (No regex: a scan.)
     */
    static void checkFloatSyntax(BaseCodec codec, String s) {
        int n = s.length();
        if (n == 0) {
            throw codec.badText(s, "expected a floating point number");
        }
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+')) {
                throw codec.badText(s, "expected a floating point number");
            }
        }
    }

    static final class Numeric extends BaseCodec {
        private static final int NUMERIC_POS = 0x0000;
        private static final int NUMERIC_NEG = 0x4000;
        private static final int NUMERIC_NAN = 0xC000;
        private static final int NUMERIC_PINF = 0xD000;
        private static final int NUMERIC_NINF = 0xF000;

        Numeric() {
            super("numeric");
        }

        @Override
        public Object decodeText(String text) {
            switch (text) {
                case "NaN":
                    return PgNumericSpecial.NAN;
                case "Infinity":
                    return PgNumericSpecial.POSITIVE_INFINITY;
                case "-Infinity":
                    return PgNumericSpecial.NEGATIVE_INFINITY;
                default:
                    checkFloatSyntax(this, text);
                    try {
                        return new BigDecimal(text);
                    } catch (NumberFormatException e) {
                        throw badText(text, "expected a decimal number, NaN, Infinity or -Infinity", e);
                    }
            }
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            if (len < 8) {
                throw badBinary(buf, off, len, "shorter than the 8-byte header");
            }
            int ndigits = u16(buf, off);
            int weight = i16(buf, off + 2);
            int sign = u16(buf, off + 4);
            int dscale = u16(buf, off + 6);
            if (len != 8 + 2 * ndigits) {
                throw badBinary(buf, off, len, "header says " + ndigits + " digits, expected " + (8 + 2 * ndigits) + " bytes");
            }
            switch (sign) {
                case NUMERIC_NAN:
                    return PgNumericSpecial.NAN;
                case NUMERIC_PINF:
                    return PgNumericSpecial.POSITIVE_INFINITY;
                case NUMERIC_NINF:
                    return PgNumericSpecial.NEGATIVE_INFINITY;
                case NUMERIC_POS:
                case NUMERIC_NEG:
                    break;
                default:
                    throw badBinary(buf, off, len, "bad sign word 0x" + Integer.toHexString(sign));
            }
            if (dscale > 0x3FFF) {
                throw badBinary(buf, off, len, "bad display scale " + dscale);
            }
            if (ndigits == 0) {
                return BigDecimal.valueOf(0, dscale);
            }
            // value = digits (base 10000, most significant first) * 10000^(weight - ndigits + 1)
            int scale = 4 * (ndigits - 1 - weight);
            BigDecimal v;
            int p = off + 8;
            if (ndigits <= 4) {
                long acc = 0;
                for (int i = 0; i < ndigits; i++, p += 2) {
                    acc = acc * 10000 + digit(buf, off, len, p);
                }
                // to the display scale in long arithmetic (acc < 10^16): the setScale below would divide a BigDecimal
                if (scale > dscale && scale - dscale <= 16) {
                    long pow = LONG_POW10[scale - dscale];
                    if (acc % pow == 0) {
                        acc /= pow;
                        scale = dscale;
                    }
                } else if (scale < dscale && dscale - scale <= 18 && acc <= Long.MAX_VALUE / LONG_POW10[dscale - scale]) {
                    acc *= LONG_POW10[dscale - scale];
                    scale = dscale;
                }
                v = BigDecimal.valueOf(sign == NUMERIC_NEG ? -acc : acc, scale);
            } else {
                char[] chars = new char[4 * ndigits + 1];
                chars[0] = sign == NUMERIC_NEG ? '-' : '+';
                for (int i = 0, c = 1; i < ndigits; i++, p += 2) {
                    int d = digit(buf, off, len, p);
                    chars[c++] = (char) ('0' + d / 1000);
                    chars[c++] = (char) ('0' + d / 100 % 10);
                    chars[c++] = (char) ('0' + d / 10 % 10);
                    chars[c++] = (char) ('0' + d % 10);
                }
                v = new BigDecimal(new BigInteger(new String(chars)), scale);
            }
            if (v.scale() != dscale) {
                try {
                    v = v.setScale(dscale, RoundingMode.UNNECESSARY);
                } catch (ArithmeticException e) {
                    throw badBinary(buf, off, len, "digits beyond the display scale " + dscale);
                }
            }
            return v;
        }

        private int digit(byte[] buf, int off, int len, int p) {
            int d = u16(buf, p);
            if (d > 9999) {
                throw badBinary(buf, off, len, "base-10000 digit out of range: " + d);
            }
            return d;
        }

        @Override
        public boolean encodesBinary() {
            return true;
        }

        /**
         * numeric's send format: ndigits, weight, sign, dscale (int16 each), then base-10000 digits, most significant
         * first, without leading or trailing zero digits; dscale is the value's scale (0 for a negative one).
         */
        @Override
        public byte[] encodeBinary(Object value) {
            if (value instanceof PgNumericSpecial s) {
                int sign = s == PgNumericSpecial.NAN ? NUMERIC_NAN : s == PgNumericSpecial.POSITIVE_INFINITY ? NUMERIC_PINF : NUMERIC_NINF;
                // the display scale the server sends with them (its receive function ignores it): 0 for NaN, 32 for the infinities
                return new byte[]{0, 0, 0, 0, (byte) (sign >>> 8), (byte) sign, 0, (byte) (s == PgNumericSpecial.NAN ? 0 : 32)};
            }
            BigDecimal d;
            if (value instanceof BigDecimal b) {
                d = b;
            } else if (value instanceof BigInteger b) {
                d = new BigDecimal(b);
            } else if (value instanceof Long || value instanceof Integer || value instanceof Short) {
                d = BigDecimal.valueOf(((Number) value).longValue());
            } else {
                throw wrongValue(value);
            }
            if (d.scale() < 0) {
                d = d.setScale(0);
            }
            int dscale = d.scale();
            if (dscale > 0x3FFF) {
                throw new IllegalArgumentException("numeric value with a scale above " + 0x3FFF + ": " + d);
            }
            if (d.precision() <= 18) {
                byte[] fast = encodeSmall(Math.abs(d.unscaledValue().longValueExact()), dscale, d.signum() < 0);
                if (fast != null) {
                    return fast;
                }
            }
            String s = d.unscaledValue().abs().toString();
            int intLen = s.length() - dscale; // digits before the decimal point (<= 0: none)
            // zeros put before and after the digits so that groups of 4 start at the decimal point
            int lead = Math.floorMod(-intLen, 4);
            int groups = (lead + s.length() + Math.floorMod(-(lead + s.length()), 4)) / 4;
            int weight = Math.floorDiv(lead + intLen, 4) - 1; // of the first group: base-10000 digits before the point, - 1
            int[] digits = new int[groups];
            for (int g = 0, p = -lead; g < groups; g++) {
                int v = 0;
                for (int k = 0; k < 4; k++, p++) {
                    v = v * 10 + (p >= 0 && p < s.length() ? s.charAt(p) - '0' : 0);
                }
                digits[g] = v;
            }
            int first = 0;
            while (first < groups && digits[first] == 0) {
                first++;
                weight--;
            }
            int last = groups;
            while (last > first && digits[last - 1] == 0) {
                last--;
            }
            int n = last - first;
            int sign = d.signum() < 0 ? NUMERIC_NEG : NUMERIC_POS;
            if (n == 0) {
                weight = 0;
                sign = NUMERIC_POS;
            }
            byte[] out = new byte[8 + 2 * n];
            BinaryOut.int2(out, 0, n);
            BinaryOut.int2(out, 2, weight);
            BinaryOut.int2(out, 4, sign);
            BinaryOut.int2(out, 6, dscale);
            for (int i = 0; i < n; i++) {
                BinaryOut.int2(out, 8 + 2 * i, digits[first + i]);
            }
            return out;
        }

        /**
         * {@link #encodeBinary} of {@code u × 10^-dscale} ({@code 0 <= u < 10^18}) in long arithmetic: the fraction padded
         * to whole base-10000 digits, then the digits taken least significant first; null when the padding overflows.
         */
        private static byte[] encodeSmall(long u, int dscale, boolean negative) {
            int fracPad = Math.floorMod(-dscale, 4);
            if (u > Long.MAX_VALUE / LONG_POW10[fracPad]) {
                return null;
            }
            long v = u * LONG_POW10[fracPad];
            int[] groups = new int[6]; // 10^18 * 10^3 < 10000^6
            int n = 0;
            for (; v != 0; v /= 10000) {
                groups[n++] = (int) (v % 10000);
            }
            int weight = n - (dscale + fracPad) / 4 - 1;
            int low = 0;
            while (low < n && groups[low] == 0) {
                low++;
            }
            int digits = n - low;
            byte[] out = new byte[8 + 2 * digits];
            BinaryOut.int2(out, 0, digits);
            BinaryOut.int2(out, 2, digits == 0 ? 0 : weight);
            BinaryOut.int2(out, 4, negative && digits > 0 ? NUMERIC_NEG : NUMERIC_POS);
            BinaryOut.int2(out, 6, dscale);
            for (int i = 0; i < digits; i++) {
                BinaryOut.int2(out, 8 + 2 * i, groups[n - 1 - i]);
            }
            return out;
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof BigDecimal d) {
                return d.toPlainString();
            }
            if (value instanceof PgNumericSpecial s) {
                return s.pgText();
            }
            if (value instanceof BigInteger || value instanceof Long || value instanceof Integer || value instanceof Short) {
                return value.toString();
            }
            throw wrongValue(value);
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            if (value instanceof BigDecimal d && d.scale() >= 0 && d.scale() <= PLAIN_MAX_SCALE && d.precision() <= 18) {
                char[] buf = DateTimeText.SCRATCH.get();
                gen.writeString(buf, 0, plain(d.unscaledValue().longValue(), d.scale(), buf));
            } else {
                gen.writeString(toPgText(value));
            }
        }

        private static final long[] LONG_POW10 = {1L, 10L, 100L, 1_000L, 10_000L, 100_000L, 1_000_000L, 10_000_000L,
                100_000_000L, 1_000_000_000L, 10_000_000_000L, 100_000_000_000L, 1_000_000_000_000L, 10_000_000_000_000L,
                100_000_000_000_000L, 1_000_000_000_000_000L, 10_000_000_000_000_000L, 100_000_000_000_000_000L,
                1_000_000_000_000_000_000L};

        /** The largest scale {@link #plain} writes into the 64 chars of the scratch buffer. */
        static final int PLAIN_MAX_SCALE = 40;

        /**
         * {@link BigDecimal#toPlainString()} of {@code unscaled × 10^-scale} ({@code |unscaled| < 10^18}, {@code 0 <= scale}) into
         * {@code out} (at least {@code scale + 21} long: {@code 0 <= scale <= PLAIN_MAX_SCALE} fits the scratch), allocating nothing; returns its length.
         */
        static int plain(long unscaled, int scale, char[] out) {
            int p = 0;
            if (unscaled < 0) {
                out[p++] = '-';
            }
            long a = Math.abs(unscaled);
            int digits = 1;
            for (long t = a / 10; t != 0; t /= 10) {
                digits++;
            }
            if (scale >= digits) { // 0.00ddd
                out[p++] = '0';
                out[p++] = '.';
                for (int i = digits; i < scale; i++) {
                    out[p++] = '0';
                }
                scale = 0;
            }
            int end = p + digits + (scale > 0 ? 1 : 0);
            int i = end - 1;
            for (int k = 0; k < scale; k++) {
                out[i--] = (char) ('0' + a % 10);
                a /= 10;
            }
            if (scale > 0) {
                out[i--] = '.';
            }
            for (; i >= p; i--) {
                out[i] = (char) ('0' + a % 10);
                a /= 10;
            }
            return end;
        }
    }

    /**
     * money: int64 cents. The server's text depends on lc_monetary; with {@code C} it is
     * {@code $1,234.56} or {@code -$1,234.56}. Decoding skips currency symbol and group separators,
     * takes {@code -} or parentheses as the sign and {@code .} as the decimal point.
     */
    static final class Money extends BaseCodec {
        Money() {
            super("money");
        }

        @Override
        public Object decodeText(String text) {
            int n = text.length();
            boolean neg = false;
            boolean digits = false;
            int fraction = -1; // digits seen after the point, -1 before the point
            long cents = 0;
            try {
                for (int i = 0; i < n; i++) {
                    char c = text.charAt(i);
                    if (c >= '0' && c <= '9') {
                        if (fraction >= 2) {
                            throw badText(text, "more than 2 fraction digits");
                        }
                        cents = Math.addExact(Math.multiplyExact(cents, 10), c - '0');
                        digits = true;
                        if (fraction >= 0) {
                            fraction++;
                        }
                    } else if (c == '.') {
                        if (fraction >= 0) {
                            throw badText(text, "two decimal points");
                        }
                        fraction = 0;
                    } else if (c == '-' || c == '(') {
                        neg = true;
                    } else if (c != '$' && c != ',' && c != ' ' && c != ')') {
                        throw badText(text, "unexpected character '" + c + "'");
                    }
                }
                if (!digits) {
                    throw badText(text, "no digits");
                }
                for (int f = Math.max(fraction, 0); f < 2; f++) {
                    cents = Math.multiplyExact(cents, 10);
                }
            } catch (ArithmeticException e) {
                if (neg && isMinCents(text)) {
                    return BigDecimal.valueOf(Long.MIN_VALUE, 2);
                }
                throw badText(text, "out of range for money", e);
            }
            return BigDecimal.valueOf(neg ? -cents : cents, 2);
        }

        private static boolean isMinCents(String text) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < text.length(); i++) {
                char c = text.charAt(i);
                if (c >= '0' && c <= '9') {
                    sb.append(c);
                }
            }
            return sb.toString().equals("922337203685477580" + "8");
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 8);
            return BigDecimal.valueOf(i64(buf, off), 2);
        }

        private BigDecimal value(Object value) {
            if (value instanceof BigDecimal d) {
                try {
                    BigDecimal cents = d.setScale(2, RoundingMode.UNNECESSARY);
                    cents.unscaledValue().longValueExact();
                    return cents;
                } catch (ArithmeticException e) {
                    throw new IllegalArgumentException("money value must fit int64 cents: " + d.toPlainString(), e);
                }
            }
            throw wrongValue(value);
        }

        @Override
        public String toPgText(Object value) {
            return value(value).toPlainString();
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            gen.writeString(value(value).toPlainString());
        }
    }

    /** pg_lsn: {@link io.millrace.core.Lsn}; text and JSON {@code 16/B374D848} as pg_lsn_out prints it, binary int64. */
    static final class PgLsn extends BaseCodec {
        PgLsn() {
            super("pg_lsn");
        }

        @Override
        public Object decodeText(String text) {
            try {
                return io.millrace.core.Lsn.parse(text);
            } catch (IllegalArgumentException e) {
                throw badText(text, "expected hex 'X/X'", e);
            }
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 8);
            return io.millrace.core.Lsn.of(i64(buf, off));
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof io.millrace.core.Lsn l) {
                return l.toString();
            }
            throw wrongValue(value);
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            gen.writeString(toPgText(value));
        }
    }
}
