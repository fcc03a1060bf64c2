package io.millrace.core.schema;

/** SQL identifier and literal quoting. Every identifier Millrace sends is quoted. */
public final class Ident {
    private Ident() {
    }

    /** Quotes an identifier: {@code my"table} becomes {@code "my""table"}. */
    public static String quote(String identifier) {
        if (identifier == null || identifier.isEmpty()) {
            throw new IllegalArgumentException("identifier must not be empty");
        }
        if (identifier.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("identifier must not contain a NUL character");
        }
        return '"' + identifier.replace("\"", "\"\"") + '"';
    }

    /** {@code "schema"."table"}. */
    public static String qualified(String schema, String table) {
        return quote(schema) + "." + quote(table);
    }

    /** Quotes a string literal: {@code it's} becomes {@code 'it''s'}. */
    public static String literal(String value) {
        if (value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("literal must not contain a NUL character");
        }
        return "'" + value.replace("'", "''") + "'";
    }
}
