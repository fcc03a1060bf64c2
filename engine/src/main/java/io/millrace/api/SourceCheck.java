package io.millrace.api;

import io.millrace.core.MillraceException;

/**
 * One finding of {@link Millrace#checkSource}: what {@code millrace preflight} prints for the same source.
 *
 * @param name    what was checked ({@code wal_level}, {@code replication privilege}, {@code publication},
 *                {@code table public.orders}, ...)
 * @param outcome passed, a warning, or a failure that stops a start
 * @param detail  what was found
 * @param fix     how to fix it (SQL or a setting), or null
 * @param kind    for a failure, the kind of error a start would stop with (its exit code); null otherwise
 */
public record SourceCheck(String name, Outcome outcome, String detail, String fix, MillraceException.Kind kind) {

    /** The outcome of a check. */
    public enum Outcome { OK, WARN, FAIL }

    /** Whether this check stops a start. */
    public boolean failed() {
        return outcome == Outcome.FAIL;
    }

    @Override
    public String toString() {
        return outcome + " " + name + ": " + detail + (fix == null ? "" : " (fix: " + fix + ")");
    }
}
