package io.millrace.snapshot;

import java.nio.charset.StandardCharsets;

/**
 * Splits one row of {@code COPY ... TO STDOUT} text format into column strings: tab-separated,
 * {@code \N} for NULL, backslash escapes undone. Stateless.
 */
public final class CopyText {
    private CopyText() {
    }

    /** Fills {@code out} with the row's values ({@code null} for NULL); returns the column count. */
    public static int split(byte[] row, int len, String[] out) {
        if (len > 0 && row[len - 1] == '\n') {
            len--;
        }
        int col = 0;
        int start = 0;
        boolean escaped = false;
        for (int i = 0; i <= len; i++) {
            if (i == len || row[i] == '\t') {
                if (col >= out.length) {
                    throw new IllegalArgumentException("COPY row has more than " + out.length + " columns");
                }
                out[col++] = field(row, start, i, escaped);
                start = i + 1;
                escaped = false;
            } else if (row[i] == '\\') {
                escaped = true;
                i++; // the next byte is escaped (never a separator)
            }
        }
        return col;
    }

    private static String field(byte[] b, int from, int to, boolean escaped) {
        if (!escaped) {
            return new String(b, from, to - from, StandardCharsets.UTF_8);
        }
        if (to - from == 2 && b[from] == '\\' && b[from + 1] == 'N') {
            return null;
        }
        byte[] out = new byte[to - from];
        int n = 0;
        for (int i = from; i < to; i++) {
            byte c = b[i];
            if (c != '\\' || i + 1 >= to) {
                out[n++] = c;
                continue;
            }
            byte e = b[++i];
            switch (e) {
                case 'b' -> out[n++] = '\b';
                case 'f' -> out[n++] = '\f';
                case 'n' -> out[n++] = '\n';
                case 'r' -> out[n++] = '\r';
                case 't' -> out[n++] = '\t';
                case 'v' -> out[n++] = 0x0B;
                case 'x' -> {
                    int v = 0;
                    int digits = 0;
                    while (digits < 2 && i + 1 < to && Character.digit(b[i + 1], 16) >= 0) {
                        v = v * 16 + Character.digit(b[++i], 16);
                        digits++;
                    }
                    out[n++] = (byte) v;
                }
                default -> {
                    if (e >= '0' && e <= '7') {
                        int v = e - '0';
                        int digits = 1;
                        while (digits < 3 && i + 1 < to && b[i + 1] >= '0' && b[i + 1] <= '7') {
                            v = v * 8 + (b[++i] - '0');
                            digits++;
                        }
                        out[n++] = (byte) v;
                    } else {
                        out[n++] = e;
                    }
                }
            }
        }
        return new String(out, 0, n, StandardCharsets.UTF_8);
    }
}
