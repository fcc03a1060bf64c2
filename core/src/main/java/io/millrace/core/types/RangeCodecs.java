package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Ranges and multiranges over any subtype's codec. Text as range_out / multirange_out print it
 * ({@code [1,10)}, {@code ["2024-01-02 03:04:05",)}, {@code empty}, {@code {[1,3),[5,7)}}),
 * binary as range_send (a flags byte, then each present bound as int32 length and the subtype's
 * bytes) and multirange_send (int32 count, then each range as int32 length and range_send bytes).
 * Text and JSON are range_out's form with the bounds printed by the subtype's {@code toPgText}.
 */
final class RangeCodecs {
    private static final int RANGE_EMPTY = 0x01;
    private static final int RANGE_LB_INC = 0x02;
    private static final int RANGE_UB_INC = 0x04;
    private static final int RANGE_LB_INF = 0x08;
    private static final int RANGE_UB_INF = 0x10;
    private static final int RANGE_LB_NULL = 0x20;
    private static final int RANGE_UB_NULL = 0x40;
    private static final int KNOWN_FLAGS = 0xFF;

    private RangeCodecs() {
    }

    static final class Range extends BaseCodec {
        private final TypeCodec subtype;

        Range(String name, TypeCodec subtype) {
            super(name);
            this.subtype = subtype;
        }

        TypeCodec subtype() {
            return subtype;
        }

        @Override
        public boolean supportsBinary() {
            return subtype.supportsBinary();
        }

        @Override
        public Object decodeText(String text) {
            TextParser p = new TextParser(this, text);
            PgRange r = p.range();
            p.skipSpace();
            if (!p.atEnd()) {
                throw badText(text, "unexpected text after the range at position " + p.pos);
            }
            return r;
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            if (len < 1 || off < 0 || off + len > buf.length) {
                throw badBinary(buf, off, len, "no flags byte");
            }
            int flags = buf[off] & 0xff;
            if ((flags & ~KNOWN_FLAGS) != 0 || (flags & (RANGE_LB_NULL | RANGE_UB_NULL)) != 0) {
                throw badBinary(buf, off, len, "bad flags 0x" + Integer.toHexString(flags));
            }
            if ((flags & RANGE_EMPTY) != 0) {
                if (len != 1) {
                    throw badBinary(buf, off, len, "data after an empty range");
                }
                return PgRange.EMPTY;
            }
            int p = off + 1;
            int end = off + len;
            Object lower = null;
            Object upper = null;
            if ((flags & RANGE_LB_INF) == 0) {
                int n = boundLength(buf, off, len, p, end);
                lower = bound(buf, off, len, p + 4, n);
                p += 4 + n;
            }
            if ((flags & RANGE_UB_INF) == 0) {
                int n = boundLength(buf, off, len, p, end);
                upper = bound(buf, off, len, p + 4, n);
                p += 4 + n;
            }
            if (p != end) {
                throw badBinary(buf, off, len, (end - p) + " bytes after the bounds");
            }
            return new PgRange(lower, upper, lower != null && (flags & RANGE_LB_INC) != 0,
                    upper != null && (flags & RANGE_UB_INC) != 0, false);
        }

        private int boundLength(byte[] buf, int off, int len, int p, int end) {
            if (p + 4 > end) {
                throw badBinary(buf, off, len, "ends before a bound");
            }
            int n = i32(buf, p);
            if (n < 0 || n > end - p - 4) {
                throw badBinary(buf, off, len, "bound length " + n + " runs past the end");
            }
            return n;
        }

        private Object bound(byte[] buf, int off, int len, int p, int n) {
            try {
                return subtype.decodeBinary(buf, p, n);
            } catch (IllegalArgumentException e) {
                IllegalArgumentException wrapped = badBinary(buf, off, len, "bound: " + e.getMessage());
                wrapped.initCause(e);
                throw wrapped;
            }
        }

        @Override
        public String toPgText(Object value) {
            if (!(value instanceof PgRange r)) {
                throw wrongValue(value);
            }
            return text(new StringBuilder(), r).toString();
        }

        StringBuilder text(StringBuilder sb, PgRange r) {
            if (r.empty()) {
                return sb.append("empty");
            }
            sb.append(r.lowerInclusive() ? '[' : '(');
            if (r.lower() != null) {
                escape(sb, serverText(subtype, r.lower()), true);
            }
            sb.append(',');
            if (r.upper() != null) {
                escape(sb, serverText(subtype, r.upper()), true);
            }
            return sb.append(r.upperInclusive() ? ']' : ')');
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            gen.writeString(toPgText(value));
        }
    }

    static final class Multirange extends BaseCodec {
        private final Range range;

        Multirange(String name, Range range) {
            super(name);
            this.range = range;
        }

        @Override
        public boolean supportsBinary() {
            return range.supportsBinary();
        }

        @Override
        public Object decodeText(String text) {
            TextParser p = new TextParser(range, text);
            p.skipSpace();
            p.expect('{');
            List<PgRange> out = new ArrayList<>();
            p.skipSpace();
            if (p.peek() == '}') {
                p.pos++;
            } else {
                while (true) {
                    PgRange r = p.range();
                    if (!r.empty()) {
                        out.add(r);
                    }
                    p.skipSpace();
                    char c = p.peek();
                    p.pos++;
                    if (c == '}') {
                        break;
                    }
                    if (c != ',') {
                        throw badText(text, "expected ',' or '}' at position " + (p.pos - 1));
                    }
                }
            }
            p.skipSpace();
            if (!p.atEnd()) {
                throw badText(text, "unexpected text after the multirange at position " + p.pos);
            }
            return new PgMultirange(out);
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            if (len < 4 || off < 0 || off + len > buf.length) {
                throw badBinary(buf, off, len, "shorter than the range count");
            }
            int n = i32(buf, off);
            if (n < 0 || n > (len - 4) / 5) {
                throw badBinary(buf, off, len, "bad range count " + n);
            }
            int p = off + 4;
            int end = off + len;
            List<PgRange> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                if (p + 4 > end) {
                    throw badBinary(buf, off, len, "ends before range " + i);
                }
                int rlen = i32(buf, p);
                if (rlen < 1 || rlen > end - p - 4) {
                    throw badBinary(buf, off, len, "range " + i + " length " + rlen + " runs past the end");
                }
                out.add((PgRange) range.decodeBinary(buf, p + 4, rlen));
                p += 4 + rlen;
            }
            if (p != end) {
                throw badBinary(buf, off, len, (end - p) + " bytes after the last range");
            }
            return new PgMultirange(out);
        }

        @Override
        public String toPgText(Object value) {
            if (!(value instanceof PgMultirange m)) {
                throw wrongValue(value);
            }
            StringBuilder sb = new StringBuilder().append('{');
            for (int i = 0; i < m.ranges().size(); i++) {
                range.text(i == 0 ? sb : sb.append(','), m.ranges().get(i));
            }
            return sb.append('}').toString();
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            gen.writeString(toPgText(value));
        }
    }

    /** A value's text as the server prints it: the codec's toPgText, but float8 as float8out (FloatText), not Java's. */
    static String serverText(TypeCodec codec, Object v) {
        return codec instanceof NumberCodecs.Float8 && v instanceof Double d ? FloatText.pg(d) : codec.toPgText(v);
    }

    /**
     * range_bound_escape ({@code range}) and record_out's quoting: quotes an empty text or one holding
     * {@code " \ ( ) ,}, space, and for a range also {@code [ ]}; doubles {@code "} and {@code \}.
     */
    static void escape(StringBuilder sb, String t, boolean range) {
        boolean quote = t.isEmpty();
        for (int i = 0; i < t.length() && !quote; i++) {
            char c = t.charAt(i);
            quote = c == '"' || c == '\\' || c == '(' || c == ')' || c == ',' || ArrayCodec.isSpace(c) || range && (c == '[' || c == ']');
        }
        if (!quote) {
            sb.append(t);
            return;
        }
        sb.append('"');
        for (int i = 0; i < t.length(); i++) {
            char c = t.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append(c);
            }
            sb.append(c);
        }
        sb.append('"');
    }

    /** range_parse and range_parse_bound (and record_in's field parse) over a string, from a position; one parse, one thread. */
    static final class TextParser {
        private final BaseCodec codec;
        private final String s;
        int pos;

        TextParser(BaseCodec codec, String s) {
            this.codec = codec;
            this.s = s;
        }

        boolean atEnd() {
            return pos >= s.length();
        }

        char peek() {
            return atEnd() ? 0 : s.charAt(pos);
        }

        void skipSpace() {
            while (!atEnd() && ArrayCodec.isSpace(s.charAt(pos))) {
                pos++;
            }
        }

        void expect(char c) {
            if (peek() != c) {
                throw codec.badText(s, "expected '" + c + "' at position " + pos);
            }
            pos++;
        }

        PgRange range() {
            skipSpace();
            if (s.regionMatches(true, pos, "empty", 0, 5)) {
                pos += 5;
                return PgRange.EMPTY;
            }
            char open = peek();
            if (open != '[' && open != '(') {
                throw codec.badText(s, "expected '[', '(' or 'empty' at position " + pos);
            }
            pos++;
            String lower = bound(true);
            expect(',');
            String upper = bound(true);
            char close = peek();
            if (close != ']' && close != ')') {
                throw codec.badText(s, "expected ']' or ')' at position " + pos);
            }
            pos++;
            Object lo = lower == null ? null : element(lower);
            Object hi = upper == null ? null : element(upper);
            return new PgRange(lo, hi, lo != null && open == '[', hi != null && close == ']', false);
        }

        private Object element(String text) {
            try {
                return ((Range) codec).subtype().decodeText(text);
            } catch (IllegalArgumentException e) {
                throw codec.badText(s, "bound: " + e.getMessage(), e);
            }
        }

        /**
         * A bound's (or field's) text, or null when there is nothing before the delimiter (unbounded,
         * NULL). A range's bound ends at {@code , ] )}, a composite's field at {@code , )}.
         */
        String bound(boolean range) {
            char c0 = peek();
            if (c0 == ',' || c0 == ')' || range && c0 == ']') {
                return null;
            }
            StringBuilder sb = new StringBuilder();
            boolean inQuote = false;
            while (true) {
                if (atEnd()) {
                    throw codec.badText(s, "ends inside a bound");
                }
                char c = s.charAt(pos);
                if (!inQuote && (c == ',' || c == ')' || range && c == ']')) {
                    return sb.toString();
                }
                pos++;
                if (c == '\\') {
                    if (atEnd()) {
                        throw codec.badText(s, "ends after a backslash");
                    }
                    sb.append(s.charAt(pos++));
                } else if (c == '"') {
                    if (!inQuote) {
                        inQuote = true;
                    } else if (peek() == '"') {
                        sb.append('"');
                        pos++;
                    } else {
                        inQuote = false;
                    }
                } else {
                    sb.append(c);
                }
            }
        }
    }
}
