package io.millrace.core.types;

/** Shared plumbing of the built-in codecs: the name, error messages, big-endian reads. */
abstract class BaseCodec implements TypeCodec {
    private static final int MAX_SHOWN = 120;

    final String name;

    BaseCodec(String name) {
        this.name = name;
    }

    @Override
    public final String typeName() {
        return name;
    }

    @Override
    public String toString() {
        return "TypeCodec[" + name + "]";
    }

    final IllegalArgumentException badText(String text, String why) {
        return badText(name, text, why, null);
    }

    final IllegalArgumentException badText(String text, String why, Throwable cause) {
        return badText(name, text, why, cause);
    }

    static IllegalArgumentException badText(String type, String text, String why, Throwable cause) {
        String shown = text == null ? "null" : "'" + (text.length() > MAX_SHOWN ? text.substring(0, MAX_SHOWN) + "...' ("
                + text.length() + " chars)" : text + "'");
        return new IllegalArgumentException("invalid " + type + " text value " + shown + (why == null ? "" : ": " + why), cause);
    }

    final IllegalArgumentException badBinary(byte[] buf, int off, int len, String why) {
        StringBuilder sb = new StringBuilder("invalid ").append(name).append(" binary value (").append(len).append(" bytes");
        if (buf != null && off >= 0 && len >= 0 && off + len <= buf.length) {
            sb.append(": ");
            for (int i = 0; i < Math.min(len, 32); i++) {
                int b = buf[off + i] & 0xff;
                sb.append(Character.forDigit(b >> 4, 16)).append(Character.forDigit(b & 15, 16));
            }
            if (len > 32) {
                sb.append("...");
            }
        }
        return new IllegalArgumentException(sb.append(")").append(why == null ? "" : ": " + why).toString());
    }

    final void checkLen(byte[] buf, int off, int len, int want) {
        if (len != want) {
            throw badBinary(buf, off, len, "expected " + want + " bytes");
        }
        if (off < 0 || off + len > buf.length) {
            throw badBinary(null, off, len, "range " + off + "+" + len + " outside a buffer of " + buf.length);
        }
    }

    final IllegalArgumentException wrongValue(Object value) {
        return new IllegalArgumentException(name + " codec cannot render a value of "
                + (value == null ? "null" : value.getClass().getName()) + ": " + value);
    }

    static short i16(byte[] b, int o) {
        return (short) ((b[o] << 8) | (b[o + 1] & 0xff));
    }

    static int u16(byte[] b, int o) {
        return ((b[o] & 0xff) << 8) | (b[o + 1] & 0xff);
    }

    static int i32(byte[] b, int o) {
        return (b[o] << 24) | ((b[o + 1] & 0xff) << 16) | ((b[o + 2] & 0xff) << 8) | (b[o + 3] & 0xff);
    }

    static long i64(byte[] b, int o) {
        return ((long) i32(b, o) << 32) | (i32(b, o + 4) & 0xFFFFFFFFL);
    }
}
