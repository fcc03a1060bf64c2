package io.millrace.core.types;

import java.nio.charset.StandardCharsets;

/**
 * tsvector and tsquery. Their Java value is the server's canonical text ({@code 'a':1A 'cat':3},
 * {@code 'fat' & ( 'rat' | !'cat' )}); the binary decoders print exactly what tsvectorout and
 * tsqueryout print from tsvectorsend / tsquerysend bytes.
 */
final class TextSearchCodecs {
    private static final int QI_VAL = 1;
    private static final int QI_OPR = 2;
    private static final int OP_NOT = 1;
    private static final int OP_AND = 2;
    private static final int OP_OR = 3;
    private static final int OP_PHRASE = 4;
    /** tsquery_op_priorities, by operator - 1: NOT, AND, OR, PHRASE. */
    private static final int[] PRIORITY = {4, 2, 1, 3};
    private static final int MAX_POS = 0x3FFF;

    private TextSearchCodecs() {
    }

    /** Values are the canonical text: text decodes as itself, JSON is that string. */
    abstract static class Canonical extends NetCodecs.TextValued {
        Canonical(String name) {
            super(name);
        }

        @Override
        boolean allowed(char c) {
            return true;
        }

        @Override
        public Object decodeText(String text) {
            return text; // may be empty: a tsvector or tsquery without lexemes
        }

        /** Reads a NUL-terminated UTF-8 string at {@code p}; returns the index after the NUL. */
        final int cstring(byte[] buf, int off, int len, int p, StringBuilder quotedInto) {
            int end = off + len;
            int z = p;
            while (z < end && buf[z] != 0) {
                z++;
            }
            if (z >= end) {
                throw badBinary(buf, off, len, "unterminated lexeme");
            }
            String s = new String(buf, p, z - p, StandardCharsets.UTF_8);
            quotedInto.append('\'');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '\'' || c == '\\') {
                    quotedInto.append(c);
                }
                quotedInto.append(c);
            }
            quotedInto.append('\'');
            return z + 1;
        }

        final void checkRange(byte[] buf, int off, int len) {
            if (len < 4 || off < 0 || off + len > buf.length) {
                throw badBinary(buf, off, len, "shorter than the count");
            }
        }
    }

    static final class TsVector extends Canonical {
        TsVector() {
            super("tsvector");
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkRange(buf, off, len);
            int n = i32(buf, off);
            int end = off + len;
            if (n < 0 || n > len) {
                throw badBinary(buf, off, len, "bad lexeme count " + n);
            }
            StringBuilder sb = new StringBuilder(len + 2 * n);
            int p = off + 4;
            for (int i = 0; i < n; i++) {
                if (i > 0) {
                    sb.append(' ');
                }
                p = cstring(buf, off, len, p, sb);
                if (p + 2 > end) {
                    throw badBinary(buf, off, len, "ends before the positions of lexeme " + i);
                }
                int npos = u16(buf, p);
                p += 2;
                if (p + 2L * npos > end) {
                    throw badBinary(buf, off, len, "ends inside the positions of lexeme " + i);
                }
                for (int k = 0; k < npos; k++, p += 2) {
                    int wp = u16(buf, p);
                    sb.append(k == 0 ? ':' : ',').append(wp & MAX_POS);
                    switch (wp >> 14) {
                        case 3 -> sb.append('A');
                        case 2 -> sb.append('B');
                        case 1 -> sb.append('C');
                        default -> { }
                    }
                }
            }
            if (p != end) {
                throw badBinary(buf, off, len, (end - p) + " bytes after the last lexeme");
            }
            return sb.toString();
        }
    }

    static final class TsQuery extends Canonical {
        TsQuery() {
            super("tsquery");
        }

        @Override
        public Object decodeBinary(byte[] buf, int off, int len) {
            checkRange(buf, off, len);
            int n = i32(buf, off);
            if (n < 0 || n > len) {
                throw badBinary(buf, off, len, "bad item count " + n);
            }
            Reader r = new Reader(buf, off, len);
            r.p = off + 4;
            if (n == 0) {
                r.end();
                return "";
            }
            String s = r.infix(-1, false);
            r.end();
            return s;
        }

        /** infix() of tsquery.c over the items in their stored order: an operator, its right operand, its left. */
        private final class Reader {
            private final byte[] buf;
            private final int off;
            private final int len;
            int p;

            Reader(byte[] buf, int off, int len) {
                this.buf = buf;
                this.off = off;
                this.len = len;
            }

            private int u8() {
                if (p >= off + len) {
                    throw badBinary(buf, off, len, "ends inside an item");
                }
                return buf[p++] & 0xff;
            }

            String infix(int parentPriority, boolean rightPhraseOp) {
                int type = u8();
                StringBuilder sb = new StringBuilder();
                if (type == QI_VAL) {
                    int weight = u8();
                    int prefix = u8();
                    p = cstring(buf, off, len, p, sb);
                    if (weight != 0 || prefix != 0) {
                        sb.append(':');
                        if (prefix != 0) {
                            sb.append('*');
                        }
                        if ((weight & 8) != 0) {
                            sb.append('A');
                        }
                        if ((weight & 4) != 0) {
                            sb.append('B');
                        }
                        if ((weight & 2) != 0) {
                            sb.append('C');
                        }
                        if ((weight & 1) != 0) {
                            sb.append('D');
                        }
                    }
                    return sb.toString();
                }
                if (type != QI_OPR) {
                    throw badBinary(buf, off, len, "bad item type " + type);
                }
                int op = u8();
                if (op < OP_NOT || op > OP_PHRASE) {
                    throw badBinary(buf, off, len, "bad operator " + op);
                }
                int priority = PRIORITY[op - 1];
                if (op == OP_NOT) {
                    boolean paren = priority < parentPriority;
                    sb.append(paren ? "( " : "").append('!').append(infix(priority, false));
                    return sb.append(paren ? " )" : "").toString();
                }
                int distance = 0;
                if (op == OP_PHRASE) {
                    distance = (short) ((u8() << 8) | u8());
                }
                boolean paren = priority < parentPriority || (op == OP_PHRASE && rightPhraseOp);
                String right = infix(priority, op == OP_PHRASE);
                String left = infix(priority, false);
                sb.append(paren ? "( " : "").append(left);
                switch (op) {
                    case OP_OR -> sb.append(" | ");
                    case OP_AND -> sb.append(" & ");
                    default -> sb.append(distance != 1 ? " <" + distance + "> " : " <-> ");
                }
                return sb.append(right).append(paren ? " )" : "").toString();
            }

            void end() {
                if (p != off + len) {
                    throw badBinary(buf, off, len, (off + len - p) + " bytes after the last item");
                }
            }
        }
    }
}
