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
