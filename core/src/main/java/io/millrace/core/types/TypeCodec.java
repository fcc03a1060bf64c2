package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;

/**
 * Converts one PostgreSQL type between its wire forms (text and binary), a Java value, its
 * PostgreSQL text input form and its JSON form. docs/TYPES.md lists the Java and JSON form of
 * every type.
 *
 * <p>Codecs are immutable and thread-safe; they never do I/O (the decoder is pure).
 * Values passed in are never {@code null} and never {@link UnchangedToast} — callers handle those.
 */
public interface TypeCodec {

    /** The type's name as a label, e.g. {@code int4}, {@code _text}, {@code public.mood}. */
    String typeName();

    /** Decodes the type's text output form (what {@code typoutput} prints). */
    Object decodeText(String text);

    /** Decodes the type's binary send form ({@code typsend}), {@code len} bytes at {@code off}. */
    Object decodeBinary(byte[] buf, int off, int len);

    /** Whether {@link #decodeBinary} is supported; when false the source must not ask for binary. */
    default boolean supportsBinary() {
        return true;
    }

    /**
     * Renders a value as text that PostgreSQL's input function for this type accepts and that
     * denotes the same value (round trip: {@code decodeText(toPgText(v))} equals {@code v}).
     */
    String toPgText(Object value);

    /**
     * Whether {@link #encodeBinary} writes this type's binary (send) format, the one {@link #decodeBinary} reads; when
     * false a writer uses {@link #toPgText} (a COPY into PostgreSQL then goes in text format).
     */
    default boolean encodesBinary() {
        return false;
    }

    /** The value in the type's binary (send) format, as {@code COPY ... (FORMAT binary)} and {@link #decodeBinary} read it. */
    default byte[] encodeBinary(Object value) {
        throw new UnsupportedOperationException(typeName() + " has no binary encoder");
    }

    /** Writes the value's JSON representation (docs/TYPES.md). */
    void writeJson(JsonGenerator gen, Object value) throws IOException;
}
