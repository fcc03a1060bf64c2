package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;

/** A domain: its base type's codec under the domain's name (values and wire forms are the base type's). */
final class DomainCodec implements TypeCodec {
    private final String name;
    private final TypeCodec base;

    DomainCodec(String name, TypeCodec base) {
        this.name = name;
        this.base = base;
    }

    TypeCodec base() {
        return base;
    }

    @Override
    public String typeName() {
        return name;
    }

    @Override
    public Object decodeText(String text) {
        return base.decodeText(text);
    }

    @Override
    public Object decodeBinary(byte[] buf, int off, int len) {
        return base.decodeBinary(buf, off, len);
    }

    @Override
    public boolean supportsBinary() {
        return base.supportsBinary();
    }

    @Override
    public String toPgText(Object value) {
        return base.toPgText(value);
    }

    @Override
    public void writeJson(JsonGenerator gen, Object value) throws IOException {
        base.writeJson(gen, value);
    }

    @Override
    public String toString() {
        return "TypeCodec[" + name + " -> " + base.typeName() + "]";
    }
}
