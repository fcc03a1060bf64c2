package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;

/**
 * inet, cidr, macaddr, macaddr8, bit and varbit. Their Java value is the server's canonical text;
 * the binary decoders print exactly what the server's output functions print (inet_net_ntop's
 * IPv6 compression, /32 left out of an inet host, lower-case hex).
 */
final class NetCodecs {
    private static final char[] HEX = "0123456789abcdef".toCharArray();
    private static final int PGSQL_AF_INET = 2;
    private static final int PGSQL_AF_INET6 = 3;

    private NetCodecs() {
    }

    /** A type whose value is its canonical text; subclasses check the text and decode binary. */
    abstract static class TextValued extends BaseCodec {
        TextValued(String name) {
            super(name);
        }

        /** Whether {@code c} may appear in this type's text. */
        abstract boolean allowed(char c);

        @Override
        public Object decodeText(String text) {
            if (text.isEmpty() && !name.equals("bit") && !name.equals("varbit")) {
                throw badText(text, "empty");
            }
            for (int i = 0; i < text.length(); i++) {
                if (!allowed(text.charAt(i))) {
                    throw badText(text, "unexpected character '" + text.charAt(i) + "'");
                }
            }
            return text;
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

    /** inet and cidr (network_out / inet_send). */
    static final class Inet extends TextValued {
        private final boolean cidr;

        Inet(boolean cidr) {
            super(cidr ? "cidr" : "inet");
            this.cidr = cidr;
        }

        @Override
        boolean allowed(char c) {
            return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '.' || c == ':' || c == '/';
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            if (len < 4 || off < 0 || off + len > buf.length) {
                throw badBinary(buf, off, len, "shorter than the 4-byte header");
            }
            int family = buf[off];
            int bits = buf[off + 1] & 0xff;
            int nb = buf[off + 3] & 0xff;
            int size = family == PGSQL_AF_INET ? 4 : family == PGSQL_AF_INET6 ? 16 : -1;
            if (size < 0 || nb != size || len != 4 + nb || bits > 8 * size) {
                throw badBinary(buf, off, len, "bad family " + family + ", bits " + bits + " or size " + nb);
            }
            StringBuilder sb = new StringBuilder(size == 4 ? 18 : 43);
            int a = off + 4;
            if (size == 4) {
                for (int i = 0; i < 4; i++) {
                    if (i > 0) {
                        sb.append('.');
                    }
                    sb.append(buf[a + i] & 0xff);
                }
                if (bits != 32) {
                    sb.append('/').append(bits);
                } else if (cidr) {
                    sb.append("/32");
                }
            } else {
                ipv6(sb, buf, a);
                if (bits != 128) {
                    sb.append('/').append(bits);
                } else if (cidr) {
                    sb.append("/128");
                }
            }
            return sb.toString();
        }

        /** inet_net_ntop_ipv6: the first longest run (2 or more) of zero words becomes "::"; ::a.b.c.d and ::ffff:a.b.c.d stay dotted. */
        private static void ipv6(StringBuilder sb, byte[] b, int a) {
            int[] words = new int[8];
            for (int i = 0; i < 8; i++) {
                words[i] = ((b[a + 2 * i] & 0xff) << 8) | (b[a + 2 * i + 1] & 0xff);
            }
            int bestBase = -1;
            int bestLen = 0;
            int curBase = -1;
            int curLen = 0;
            for (int i = 0; i < 8; i++) {
                if (words[i] == 0) {
                    if (curBase == -1) {
                        curBase = i;
                        curLen = 1;
                    } else {
                        curLen++;
                    }
                } else if (curBase != -1) {
                    if (bestBase == -1 || curLen > bestLen) {
                        bestBase = curBase;
                        bestLen = curLen;
                    }
                    curBase = -1;
                }
            }
            if (curBase != -1 && (bestBase == -1 || curLen > bestLen)) {
                bestBase = curBase;
                bestLen = curLen;
            }
            if (bestBase != -1 && bestLen < 2) {
                bestBase = -1;
            }
            for (int i = 0; i < 8; i++) {
                if (bestBase != -1 && i >= bestBase && i < bestBase + bestLen) {
                    if (i == bestBase) {
                        sb.append(':');
                    }
                    continue;
                }
                if (i != 0) {
                    sb.append(':');
                }
                if (i == 6 && bestBase == 0
                        && (bestLen == 6 || (bestLen == 7 && words[7] != 1) || (bestLen == 5 && words[5] == 0xffff))) {
                    sb.append(b[a + 12] & 0xff).append('.').append(b[a + 13] & 0xff).append('.')
                            .append(b[a + 14] & 0xff).append('.').append(b[a + 15] & 0xff);
                    break;
                }
                sb.append(Integer.toHexString(words[i]));
            }
            if (bestBase != -1 && bestBase + bestLen == 8) {
                sb.append(':');
            }
        }
    }

    /** macaddr (6 bytes) and macaddr8 (8 bytes): {@code 08:00:2b:01:02:03}. */
    static final class Mac extends TextValued {
        private final int size;

        Mac(int size) {
            super(size == 6 ? "macaddr" : "macaddr8");
            this.size = size;
        }

        @Override
        boolean allowed(char c) {
            return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '-' || c == '.';
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkLen(buf, off, len, size);
            char[] out = new char[3 * size - 1];
            for (int i = 0, j = 0; i < size; i++) {
                if (i > 0) {
                    out[j++] = ':';
                }
                out[j++] = HEX[(buf[off + i] >> 4) & 15];
                out[j++] = HEX[buf[off + i] & 15];
            }
            return new String(out);
        }
    }

    /** bit and varbit: the bits as '0'/'1'; binary is an int32 bit count and the bits, first bit high. */
    static final class Bits extends TextValued {
        Bits(String name) {
            super(name);
        }

        @Override
        boolean allowed(char c) {
            return c == '0' || c == '1';
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            if (len < 4 || off < 0 || off + len > buf.length) {
                throw badBinary(buf, off, len, "shorter than the 4-byte length");
            }
            int nbits = i32(buf, off);
            if (nbits < 0 || len != 4 + (int) ((nbits + 7L) / 8)) {
                throw badBinary(buf, off, len, "bit length " + nbits + " does not match the size");
            }
            char[] out = new char[nbits];
            int p = off + 4;
            for (int i = 0; i < nbits; i++) {
                out[i] = (buf[p + (i >> 3)] & (0x80 >> (i & 7))) != 0 ? '1' : '0';
            }
            return new String(out);
        }
    }
}
