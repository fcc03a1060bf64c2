package io.millrace.core;

import java.util.regex.Pattern;

/** PostgreSQL driver messages, made fit to stand in Millrace's own. */
public final class PgMessages {
    private static final Pattern DRIVER_ADVICE = Pattern.compile(
            "\\.? Check that the hostname and port are correct and that the postmaster is accepting TCP/IP connections\\.?");

    private PgMessages() {
    }

    /**
     * {@code msg} without pgjdbc's own advice on a refused connection ("Check that the hostname and port are correct and
     * that the postmaster is accepting TCP/IP connections"): Millrace's advice follows it, naming the settings to check,
     * and two pieces of advice in one line read as two problems (found by a user).
     */
    public static String withoutDriverAdvice(String msg) {
        return DRIVER_ADVICE.matcher(msg).replaceAll("");
    }

    /**
     * Whether {@code msg} is pgjdbc's own refusal to answer a server that asks for a password when none was given (SQLSTATE
     * 08004, before any connection problem): an authentication error to name, not a server that is down to retry.
     */
    public static boolean noPasswordGiven(String msg) {
        return msg != null && msg.contains("but no password was provided");
    }
}
