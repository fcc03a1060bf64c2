package io.millrace.core.types;

/**
 * {@code infinity} / {@code -infinity} of {@code date}, {@code timestamp} and {@code timestamptz};
 * finite values decode as {@link java.time.LocalDate}, {@link java.time.LocalDateTime} and
 * {@link java.time.Instant}.
 */
public enum PgInfinity {
    POSITIVE("infinity"),
    NEGATIVE("-infinity");

    private final String text;

    PgInfinity(String text) {
        this.text = text;
    }

    /** The spelling PostgreSQL prints and accepts: {@code infinity}, {@code -infinity}. */
    public String pgText() {
        return text;
    }
}
