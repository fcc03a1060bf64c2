package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;

/**
 * For types without a codec (reg* types, aclitem, extension types): the value is the
 * server's text, kept as {@link PgUnknown}. Text format only — the source must not ask for binary.
 */
final class FallbackCodec extends BaseCodec {
    FallbackCodec(String name) {
        super(name);
    }

    @Override
    public Object decodeText(String text) {
        return new PgUnknown(name, text);
    }

    @Override
    public Object decodeBinary(byte[] buf, int off, int len) {
        throw new UnsupportedOperationException("type " + name
                + " has no binary decoder (supportsBinary() is false): ask for text format");
    }

    @Override
    public boolean supportsBinary() {
        return false;
    }

    @Override
    public String toPgText(Object value) {
        if (value instanceof PgUnknown u) {
            return u.text();
        }
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
