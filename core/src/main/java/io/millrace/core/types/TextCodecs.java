package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.UUID;

/** The string types (text, varchar, bpchar, name, xml, json, jsonb, enums), bytea and uuid. */
final class TextCodecs {
    private TextCodecs() {
    }

    /**
     * A type whose value is its text. The binary form is the same text in the client encoding
     * (UTF-8 here); for jsonb it is a version byte (1) and then the text.
     */
    static final class Str extends BaseCodec {
        private final boolean jsonbHeader;

        Str(String name) {
            this(name, false);
        }

        private Str(String name, boolean jsonbHeader) {
            super(name);
            this.jsonbHeader = jsonbHeader;
        }

        static Str jsonb() {
            return new Str("jsonb", true);
        }

        @Override
        public Object decodeText(String text) {
            return text;
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            if (off < 0 || len < 0 || off + len > buf.length) {
                throw badBinary(null, off, len, "range outside a buffer of " + buf.length);
            }
            if (jsonbHeader) {
                if (len < 1 || buf[off] != 1) {
                    throw badBinary(buf, off, len, "expected jsonb version byte 1");
                }
                return new String(buf, off + 1, len - 1, StandardCharsets.UTF_8);
            }
            return new String(buf, off, len, StandardCharsets.UTF_8);
        }

        /** Not xml: its receive function reads an encoding declaration of its own. */
        @Override
        public boolean encodesBinary() {
            return !typeName().equals("xml");
        }

        @Override
        public byte[] encodeBinary(Object value) {
            byte[] utf8 = toPgText(value).getBytes(StandardCharsets.UTF_8);
            if (!jsonbHeader) {
                return utf8;
            }
            byte[] b = new byte[utf8.length + 1];
            b[0] = 1; // jsonb's binary format version
            System.arraycopy(utf8, 0, b, 1, utf8.length);
            return b;
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof String s) {
                return s;
            }
            throw wrongValue(value);
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            gen.writeString(toPgText(value));
        }
    }

    /** bytea: binary form is the raw bytes; text form is hex ({@code \x0a1b}) or the old escape format. */
    static final class Bytea extends BaseCodec {
        private static final char[] HEX = "0123456789abcdef".toCharArray();

        Bytea() {
            super("bytea");
        }

        @Override
        public Object decodeText(String text) {
            int n = text.length();
            if (n >= 2 && text.charAt(0) == '\\' && text.charAt(1) == 'x') {
                return decodeHex(text);
            }
            return decodeEscape(text);
        }

        private byte[] decodeHex(String s) {
            int n = s.length();
            if ((n & 1) != 0) {
                // byteain skips whitespace between pairs; the server never prints any
                return decodeHexLenient(s);
            }
            byte[] out = new byte[(n - 2) / 2];
            for (int i = 2, j = 0; i < n; i += 2, j++) {
                int hi = Character.digit(s.charAt(i), 16);
                int lo = Character.digit(s.charAt(i + 1), 16);
                if (hi < 0 || lo < 0) {
                    return decodeHexLenient(s);
                }
                out[j] = (byte) ((hi << 4) | lo);
            }
            return out;
        }

        private byte[] decodeHexLenient(String s) {
            byte[] out = new byte[s.length() / 2];
            int j = 0;
            int i = 2;
            int n = s.length();
            while (i < n) {
                char c = s.charAt(i);
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                    i++;
                    continue;
                }
                if (i + 1 >= n) {
                    throw badText(s, "odd number of hex digits");
                }
                int hi = Character.digit(c, 16);
                int lo = Character.digit(s.charAt(i + 1), 16);
                if (hi < 0 || lo < 0) {
                    throw badText(s, "invalid hex digit near position " + i);
                }
                out[j++] = (byte) ((hi << 4) | lo);
                i += 2;
            }
            return Arrays.copyOf(out, j);
        }

        private byte[] decodeEscape(String s) {
            int n = s.length();
            byte[] out = new byte[n];
            int j = 0;
            for (int i = 0; i < n; ) {
                char c = s.charAt(i);
                if (c != '\\') {
                    if (c > 0x7f) {
                        // a non-ASCII character stands for its UTF-8 bytes (the client encoding)
                        int end = i + (Character.isHighSurrogate(c) && i + 1 < n ? 2 : 1);
                        byte[] enc = s.substring(i, end).getBytes(StandardCharsets.UTF_8);
                        if (j + enc.length > out.length) {
                            out = Arrays.copyOf(out, out.length + n + enc.length);
                        }
                        System.arraycopy(enc, 0, out, j, enc.length);
                        j += enc.length;
                        i = end;
                        continue;
                    }
                    out[j++] = (byte) c;
                    i++;
                } else if (i + 1 < n && s.charAt(i + 1) == '\\') {
                    out[j++] = '\\';
                    i += 2;
                } else if (i + 3 < n && isOct(s.charAt(i + 1)) && s.charAt(i + 1) <= '3' && isOct(s.charAt(i + 2))
                        && isOct(s.charAt(i + 3))) {
                    out[j++] = (byte) (((s.charAt(i + 1) - '0') << 6) | ((s.charAt(i + 2) - '0') << 3) | (s.charAt(i + 3) - '0'));
                    i += 4;
                } else {
                    throw badText(s, "invalid escape at position " + i + " (expected \\\\ or \\ooo)");
                }
            }
            return j == out.length ? out : Arrays.copyOf(out, j);
        }

        private static boolean isOct(char c) {
            return c >= '0' && c <= '7';
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            if (off < 0 || len < 0 || off + len > buf.length) {
                throw badBinary(null, off, len, "range outside a buffer of " + buf.length);
            }
            return Arrays.copyOfRange(buf, off, off + len);
        }

        @Override
        public boolean encodesBinary() {
            return true;
        }

        @Override
        public byte[] encodeBinary(Object value) {
            if (!(value instanceof byte[] b)) {
                throw wrongValue(value);
            }
            return b;
        }

        @Override
        public String toPgText(Object value) {
            if (!(value instanceof byte[] b)) {
                throw wrongValue(value);
            }
            char[] out = new char[2 + 2 * b.length];
            out[0] = '\\';
            out[1] = 'x';
            for (int i = 0, j = 2; i < b.length; i++) {
                out[j++] = HEX[(b[i] >> 4) & 15];
                out[j++] = HEX[b[i] & 15];
            }
            return new String(out);
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            if (!(value instanceof byte[] b)) {
                throw wrongValue(value);
            }
            gen.writeString(Base64.getEncoder().encodeToString(b));
        }
    }

    static final class Uuid extends BaseCodec {
        Uuid() {
            super("uuid");
        }

        @Override
        public Object decodeText(String text) {
            // canonical form from uuid_out: 8-4-4-4-12 lower-case hex
            if (text.length() == 36 && text.charAt(8) == '-' && text.charAt(13) == '-' && text.charAt(18) == '-'
                    && text.charAt(23) == '-') {
                long hi = hex(text, 0, 8) << 32 | hex(text, 9, 13) << 16 | hex(text, 14, 18);
                long lo = hex(text, 19, 23) << 48 | hex(text, 24, 36);
                return new UUID(hi, lo);
            }
            // uuid_in also takes braces and missing hyphens (after each group of 4 digits)
            StringBuilder digits = new StringBuilder(32);
            String t = text;
            if (t.length() >= 2 && t.charAt(0) == '{' && t.charAt(t.length() - 1) == '}') {
                t = t.substring(1, t.length() - 1);
            }
            for (int i = 0; i < t.length(); i++) {
                char c = t.charAt(i);
                if (c != '-') {
                    digits.append(c);
                } else if (digits.length() % 4 != 0 || i == 0 || t.charAt(i - 1) == '-') {
                    throw badText(text, "expected 32 hex digits, e.g. a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
                }
            }
            if (digits.length() != 32 || t.endsWith("-")) {
                throw badText(text, "expected 32 hex digits, e.g. a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
            }
            return new UUID(hex(digits, 0, 16, text), hex(digits, 16, 32, text));
        }

        private long hex(CharSequence s, int from, int to) {
            return hex(s, from, to, s.toString());
        }

        private long hex(CharSequence s, int from, int to, String whole) {
            long v = 0;
            for (int i = from; i < to; i++) {
                int d = Character.digit(s.charAt(i), 16);
                if (d < 0) {
                    throw badText(whole, "expected 32 hex digits, e.g. a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
                }
                v = v << 4 | d;
            }
            return v;
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, 16);
            return new UUID(i64(buf, off), i64(buf, off + 8));
        }

        @Override
        public boolean encodesBinary() {
            return true;
        }

        @Override
        public byte[] encodeBinary(Object value) {
            if (!(value instanceof UUID u)) {
                throw wrongValue(value);
            }
            byte[] b = new byte[16];
            System.arraycopy(BinaryOut.int8(u.getMostSignificantBits()), 0, b, 0, 8);
            System.arraycopy(BinaryOut.int8(u.getLeastSignificantBits()), 0, b, 8, 8);
            return b;
        }

        @Override
        public String toPgText(Object value) {
            if (value instanceof UUID u) {
                return u.toString();
            }
            throw wrongValue(value);
        }

        @Override
        public void writeJson(JsonGenerator gen, Object value) throws IOException {
            gen.writeString(toPgText(value));
        }
    }
}
