package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;
import java.util.ArrayList;

/**
 * Arrays of any element type, any number of dimensions (PostgreSQL allows 6), NULL elements and
 * explicit lower bounds. Text form as array_out prints it ({@code [0:1]={{1,NULL},{"a b","\"q\""}}}),
 * binary form as array_send.
 */
final class ArrayCodec extends BaseCodec {
    static final int MAXDIM = 6;

    private final TypeCodec element;
    private final char delim;

    ArrayCodec(String name, TypeCodec element, char delim) {
        super(name);
        this.element = element;
        this.delim = delim;
    }

    TypeCodec element() {
        return element;
    }

    @Override
    public boolean supportsBinary() {
        return element.supportsBinary();
    }

    // ------------------------------------------------------------------ text

    @Override
    public Object decodeText(String text) {
        try {
            return new TextParser(text).parse();
        } catch (IllegalArgumentException e) {
            if (e.getMessage() != null && e.getMessage().startsWith("invalid " + name + " ")) {
                throw e;
            }
            throw badText(text, "element: " + e.getMessage(), e);
        }
    }

    /** One parse; not shared between threads. */
    private final class TextParser {
        private final String s;
        private final int n;
        private int p;
        private int ndim = -1; // known once the first element is reached
        private final int[] dims = new int[MAXDIM];
        private final ArrayList<Object> out = new ArrayList<>();
        private final StringBuilder buf = new StringBuilder();

        TextParser(String s) {
            this.s = s;
            this.n = s.length();
        }

        PgArray parse() {
            int[] lbs = null;
            int[] ubs = null;
            skipSpace();
            if (p < n && s.charAt(p) == '[') {
                lbs = new int[MAXDIM];
                ubs = new int[MAXDIM];
                int k = 0;
                while (p < n && s.charAt(p) == '[') {
                    if (k == MAXDIM) {
                        throw bad("more than " + MAXDIM + " dimensions");
                    }
                    p++;
                    int a = readInt();
                    if (p < n && s.charAt(p) == ':') {
                        p++;
                        lbs[k] = a;
                        ubs[k] = readInt();
                    } else {
                        lbs[k] = 1;
                        ubs[k] = a;
                    }
                    if (p >= n || s.charAt(p) != ']') {
                        throw bad("expected ']' at position " + p);
                    }
                    p++;
                    if ((long) ubs[k] - lbs[k] + 1 < 1) {
                        throw bad("upper bound below lower bound");
                    }
                    k++;
                    skipSpace();
                }
                if (p >= n || s.charAt(p) != '=') {
                    throw bad("expected '=' after the dimensions");
                }
                p++;
                lbs = java.util.Arrays.copyOf(lbs, k);
                ubs = java.util.Arrays.copyOf(ubs, k);
                skipSpace();
            }
            if (p >= n || s.charAt(p) != '{') {
                throw bad("expected '{'");
            }
            level(0);
            skipSpace();
            if (p != n) {
                throw bad("unexpected text after the closing '}' at position " + p);
            }
            if (ndim <= 0) { // "{}"
                if (lbs != null) {
                    throw bad("dimensions given for an empty array");
                }
                return PgArray.EMPTY;
            }
            int[] d = java.util.Arrays.copyOf(dims, ndim);
            if (lbs == null) {
                lbs = new int[ndim];
                java.util.Arrays.fill(lbs, 1);
            } else {
                if (lbs.length != ndim) {
                    throw bad("the dimensions given do not match the array's " + ndim);
                }
                for (int i = 0; i < ndim; i++) {
                    if ((long) ubs[i] - lbs[i] + 1 != d[i]) {
                        throw bad("the dimensions given do not match the array's");
                    }
                }
            }
            return new PgArray(d, lbs, out.toArray());
        }

        private int readInt() {
            int start = p;
            if (p < n && (s.charAt(p) == '-' || s.charAt(p) == '+')) {
                p++;
            }
            while (p < n && s.charAt(p) >= '0' && s.charAt(p) <= '9') {
                p++;
            }
            try {
                return Integer.parseInt(s, start, p, 10);
            } catch (NumberFormatException e) {
                throw bad("expected a bound at position " + start);
            }
        }

        /** At '{' of a (sub-)array of depth {@code lvl}; reads through its '}'. */
        private void level(int lvl) {
            if (lvl >= MAXDIM) {
                throw bad("more than " + MAXDIM + " dimensions");
            }
            p++; // '{'
            skipSpace();
            int count = 0;
            if (p < n && s.charAt(p) == '}') {
                p++;
                if (lvl == 0 && ndim < 0) {
                    ndim = 0;
                    return;
                }
                throw bad("empty sub-array");
            }
            while (true) {
                skipSpace();
                if (p >= n) {
                    throw bad("ends early");
                }
                if (s.charAt(p) == '{') {
                    if (ndim >= 0 && lvl + 1 >= ndim) {
                        throw bad("unexpected '{' at position " + p);
                    }
                    level(lvl + 1);
                } else {
                    if (ndim < 0) {
                        ndim = lvl + 1;
                    } else if (ndim != lvl + 1) {
                        throw bad("sub-arrays of unequal depth");
                    }
                    element();
                }
                count++;
                skipSpace();
                if (p >= n) {
                    throw bad("ends early");
                }
                char c = s.charAt(p++);
                if (c == '}') {
                    break;
                }
                if (c != delim) {
                    throw bad("expected '" + delim + "' or '}' at position " + (p - 1));
                }
            }
            if (dims[lvl] == 0) {
                dims[lvl] = count;
            } else if (dims[lvl] != count) {
                throw bad("sub-arrays of unequal length");
            }
        }

        private void element() {
            buf.setLength(0);
            if (s.charAt(p) == '"') {
                p++;
                while (true) {
                    if (p >= n) {
                        throw bad("unterminated quoted element");
                    }
                    char c = s.charAt(p++);
                    if (c == '"') {
                        break;
                    }
                    if (c == '\\') {
                        if (p >= n) {
                            throw bad("ends after a backslash");
                        }
                        c = s.charAt(p++);
                    }
                    buf.append(c);
                }
                out.add(element.decodeText(buf.toString()));
                return;
            }
            boolean escaped = false;
            int lastKept = 0; // buf length up to the last escaped or non-space character
            while (p < n) {
                char c = s.charAt(p);
                if (c == delim || c == '}') {
                    break;
                }
                if (c == '{' || c == '"') {
                    throw bad("unexpected '" + c + "' in an unquoted element at position " + p);
                }
                p++;
                if (c == '\\') {
                    if (p >= n) {
                        throw bad("ends after a backslash");
                    }
                    buf.append(s.charAt(p++));
                    escaped = true;
                    lastKept = buf.length();
                } else {
                    buf.append(c);
                    if (!isSpace(c)) {
                        lastKept = buf.length();
                    }
                }
            }
            buf.setLength(lastKept);
            if (buf.length() == 0 && !escaped) {
                throw bad("empty unquoted element at position " + p);
            }
            if (!escaped && buf.length() == 4 && "NULL".equalsIgnoreCase(buf.toString())) {
                out.add(null);
            } else {
                out.add(element.decodeText(buf.toString()));
            }
        }

        private void skipSpace() {
            while (p < n && isSpace(s.charAt(p))) {
                p++;
            }
        }

        private IllegalArgumentException bad(String why) {
            return badText(s, why);
        }
    }

    /** array_isspace: the characters array_in skips and array_out quotes. */
    static boolean isSpace(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0x0B || c == '\f';
    }

    @Override
    public String toPgText(Object value) {
        if (!(value instanceof PgArray a)) {
            throw wrongValue(value);
        }
        StringBuilder sb = new StringBuilder(16 + 8 * a.elements().length);
        int nd = a.dims().length;
        if (nd == 0) {
            return "{}";
        }
        boolean bounds = false;
        for (int lb : a.lowerBounds()) {
            bounds |= lb != 1;
        }
        if (bounds) {
            for (int i = 0; i < nd; i++) {
                sb.append('[').append(a.lowerBounds()[i]).append(':')
                        .append((long) a.lowerBounds()[i] + a.dims()[i] - 1).append(']');
            }
            sb.append('=');
        }
        writeText(sb, a, 0, 0);
        return sb.toString();
    }

    /** Writes dimension {@code lvl} starting at flat index {@code start}; returns the next flat index. */
    private int writeText(StringBuilder sb, PgArray a, int lvl, int start) {
        sb.append('{');
        int idx = start;
        boolean last = lvl == a.dims().length - 1;
        for (int i = 0; i < a.dims()[lvl]; i++) {
            if (i > 0) {
                sb.append(delim);
            }
            if (last) {
                Object v = a.elements()[idx++];
                if (v == null) {
                    sb.append("NULL");
                } else {
                    quote(sb, element.toPgText(v));
                }
            } else {
                idx = writeText(sb, a, lvl + 1, idx);
            }
        }
        sb.append('}');
        return idx;
    }

    /** Quotes an element where array_out would: empty, NULL, or containing {@code " \ { }}, the delimiter or space. */
    private void quote(StringBuilder sb, String t) {
        boolean needs = t.isEmpty() || (t.length() == 4 && t.equalsIgnoreCase("NULL"));
        for (int i = 0; i < t.length() && !needs; i++) {
            char c = t.charAt(i);
            needs = c == '"' || c == '\\' || c == '{' || c == '}' || c == delim || isSpace(c);
        }
        if (!needs) {
            sb.append(t);
            return;
        }
        sb.append('"');
        for (int i = 0; i < t.length(); i++) {
            char c = t.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\');
            }
            sb.append(c);
        }
        sb.append('"');
    }

    // ------------------------------------------------------------------ binary

    @Override
    public Object decodeBinary(byte[] buf, int off, int len) {
        if (!element.supportsBinary()) {
            throw new UnsupportedOperationException("array " + name + " of " + element.typeName()
                    + " has no binary decoder (supportsBinary() is false): ask for text format");
        }
        if (len < 12 || off < 0 || off + len > buf.length) {
            throw badBinary(buf, off, len, "shorter than the 12-byte header");
        }
        int end = off + len;
        int nd = i32(buf, off);
        int flags = i32(buf, off + 4);
        if (nd < 0 || nd > MAXDIM || (flags != 0 && flags != 1)) {
            throw badBinary(buf, off, len, "bad header (ndim " + nd + ", flags " + flags + ")");
        }
        if (nd == 0) {
            if (len != 12) {
                throw badBinary(buf, off, len, "data after an empty array");
            }
            return PgArray.EMPTY;
        }
        int p = off + 12;
        if (p + 8 * nd > end) {
            throw badBinary(buf, off, len, "ends inside the dimensions");
        }
        int[] dims = new int[nd];
        int[] lbs = new int[nd];
        long total = 1;
        for (int i = 0; i < nd; i++, p += 8) {
            dims[i] = i32(buf, p);
            lbs[i] = i32(buf, p + 4);
            total *= dims[i];
            if (dims[i] <= 0 || total > (end - p) / 4) {
                throw badBinary(buf, off, len, "bad dimension " + dims[i]);
            }
        }
        Object[] elems = new Object[(int) total];
        for (int i = 0; i < elems.length; i++) {
            if (p + 4 > end) {
                throw badBinary(buf, off, len, "ends before element " + i);
            }
            int elen = i32(buf, p);
            p += 4;
            if (elen == -1) {
                continue;
            }
            if (elen < 0 || elen > end - p) {
                throw badBinary(buf, off, len, "element " + i + " length " + elen + " runs past the end");
            }
            try {
                elems[i] = element.decodeBinary(buf, p, elen);
            } catch (IllegalArgumentException e) {
                IllegalArgumentException wrapped = badBinary(buf, off, len, "element " + i + ": " + e.getMessage());
                wrapped.initCause(e);
                throw wrapped;
            }
            p += elen;
        }
        if (p != end) {
            throw badBinary(buf, off, len, (end - p) + " bytes after the last element");
        }
        return new PgArray(dims, lbs, elems);
    }

    // ------------------------------------------------------------------ JSON

    /** Nested JSON arrays, one level per dimension; lower bounds are not written. */
    @Override
    public void writeJson(JsonGenerator gen, Object value) throws IOException {
        if (!(value instanceof PgArray a)) {
            throw wrongValue(value);
        }
        if (a.dims().length == 0) {
            gen.writeStartArray();
            gen.writeEndArray();
            return;
        }
        writeJson(gen, a, 0, 0);
    }

    private int writeJson(JsonGenerator gen, PgArray a, int lvl, int start) throws IOException {
        gen.writeStartArray();
        int idx = start;
        boolean last = lvl == a.dims().length - 1;
        for (int i = 0; i < a.dims()[lvl]; i++) {
            if (last) {
                Object v = a.elements()[idx++];
                if (v == null) {
                    gen.writeNull();
                } else {
                    element.writeJson(gen, v);
                }
            } else {
                idx = writeJson(gen, a, lvl + 1, idx);
            }
        }
        gen.writeEndArray();
        return idx;
    }
}
