package io.millrace.core;

import java.util.Arrays;

/**
 * A password or token. {@link #toString()} never shows it, so it cannot leak through logs, status
 * output or exception messages by accident; only {@link #reveal()} gives the value, to the driver.
 */
public final class Secret {
    public static final Secret NONE = new Secret(new char[0]);

    private final char[] value;

    private Secret(char[] value) {
        this.value = value;
    }

    public static Secret of(String value) {
        return value == null || value.isEmpty() ? NONE : new Secret(value.toCharArray());
    }

    public boolean isEmpty() {
        return value.length == 0;
    }

    /** The secret itself. Pass it to a driver; never log or print it. */
    public String reveal() {
        return new String(value);
    }

    /**
     * {@code text} with each occurrence of the secret that stands as a word of its own (not inside a longer run of letters
     * and digits) shown as {@code ******}: a message that echoed it does not show it, and one that merely holds its
     * characters is left whole. A plain replace turned a destination's "database \"nodb\" does not exist" into "does not
     * e******ist" under the password "x", garbling the message and telling what the password is part of.
     */
    public String scrub(String text) {
        if (isEmpty() || text == null) {
            return text;
        }
        return java.util.regex.Pattern.compile("(?<![\\p{L}\\p{N}])" + java.util.regex.Pattern.quote(reveal()) + "(?![\\p{L}\\p{N}])")
                .matcher(text).replaceAll("******");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Secret s && Arrays.equals(value, s.value);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(value);
    }

    @Override
    public String toString() {
        return isEmpty() ? "<none>" : "******";
    }
}
