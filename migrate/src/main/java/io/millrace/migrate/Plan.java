package io.millrace.migrate;

import io.millrace.core.MillraceException;

import java.util.List;

/**
 * What {@link Migration#plan()} found: what will be copied, what cannot be and why, what is worth knowing, and the
 * problems that stop the migration, each with its fix. Nothing was written to either server to make it.
 *
 * @param copy     each table to copy, with its size on the source
 * @param notes    how sequences, identity and generated columns, indexes and constraints are carried
 * @param cannot   what is not migrated (unlogged tables, large objects, ...), each with the reason and the fix
 * @param problems what must be fixed before the migration can start; empty when it can
 */
public record Plan(List<String> copy, List<String> notes, List<String> cannot, List<Problem> problems) {

    public Plan {
        copy = List.copyOf(copy);
        notes = List.copyOf(notes);
        cannot = List.copyOf(cannot);
        problems = List.copyOf(problems);
    }

    /**
     * One problem.
     *
     * @param kind    which exit code it means ({@link MillraceException.Kind#exitCode()})
     * @param message what is wrong, naming the server, table or setting
     * @param fix     what to run or change
     */
    public record Problem(MillraceException.Kind kind, String message, String fix) {
        @Override
        public String toString() {
            return message + ". Fix: " + fix;
        }
    }

    /** Whether the migration can start. */
    public boolean ok() {
        return problems.isEmpty();
    }

    /**
     * Throws the first problem (its kind, every problem in the message) when there is one.
     *
     * @throws MillraceException when {@link #ok()} is false
     */
    public void requireReady() {
        if (!ok()) {
            StringBuilder b = new StringBuilder("migrate: the plan has " + problems.size() + " problem(s), nothing was written: ");
            for (int i = 0; i < problems.size(); i++) {
                b.append(i == 0 ? "" : "; ").append(problems.get(i));
            }
            throw new MillraceException(problems.get(0).kind(), b.toString());
        }
    }

    /** For the terminal. */
    public String render() {
        StringBuilder b = new StringBuilder();
        section(b, "will copy", copy);
        section(b, "notes", notes);
        section(b, "cannot copy", cannot);
        b.append(problems.isEmpty() ? "problems: none\n" : "problems (" + problems.size() + "):\n");
        for (Problem p : problems) {
            b.append("  FAIL ").append(p.message()).append("\n       fix: ").append(p.fix()).append('\n');
        }
        return b.toString();
    }

    private static void section(StringBuilder b, String title, List<String> items) {
        b.append(title).append(items.isEmpty() ? ": none\n" : ":\n");
        for (String s : items) {
            b.append("  - ").append(s).append('\n');
        }
    }
}
