package io.millrace.core.types;

/** The non-finite values of {@code numeric}; finite values decode as {@link java.math.BigDecimal}. */
public enum PgNumericSpecial {
    NAN("NaN"),
    POSITIVE_INFINITY("Infinity"),
    NEGATIVE_INFINITY("-Infinity");

    private final String text;

    PgNumericSpecial(String text) {
        this.text = text;
    }

    /** The spelling PostgreSQL prints and accepts: {@code NaN}, {@code Infinity}, {@code -Infinity}. */
    public String pgText() {
        return text;
    }
}
