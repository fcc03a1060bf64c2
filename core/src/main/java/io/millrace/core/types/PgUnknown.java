package io.millrace.core.types;

/**
 * A value of a type Millrace has no codec for (composite, range, geometric, extension types ...):
 * the type's name and the server's text form, carried through unchanged.
 */
public record PgUnknown(String typeName, String text) {
    public PgUnknown {
        if (typeName == null || text == null) {
            throw new IllegalArgumentException("PgUnknown needs a type name and a text, got " + typeName + ", " + text);
        }
    }
}
