package io.millrace.migrate;

import java.time.Duration;
import java.util.List;

/**
 * What {@link Migration#verify} found.
 *
 * @param chunks    keyset chunks compared
 * @param rows      rows the source snapshot held in them
 * @param rechecked chunks that differed at first and were compared again, row by row
 * @param divergent chunks whose rows still differed in every re-check round (none: source and target agree)
 * @param skipped   tables not compared, with the reason
 * @param took      how long the pass took
 * @param unchanged chunks of {@code chunks} not hashed: the cutover's comparison found that no row of theirs was written on
 *                  either side since the last full pass found them equal (0 in a full pass)
 * @param columnDrift column definitions that differ between a source table and its copy (a column added, dropped, or
 *                  given another type, default or NOT NULL on the source since the copy), each as
 *                  {@code schema.table.column: source ..., target ...}
 * @param columnsRepaired whether {@code --repair} made the target's definitions the source's
 */
public record VerifyReport(long chunks, long rows, long rechecked, List<Divergence> divergent, List<String> skipped, Duration took,
                           long unchanged, List<String> columnDrift, boolean columnsRepaired) {

    public VerifyReport {
        divergent = List.copyOf(divergent);
        skipped = List.copyOf(skipped);
        columnDrift = List.copyOf(columnDrift);
    }

    /**
     * A chunk that differs: the rows of {@code table} whose key is above {@code from} and at most {@code to}.
     *
     * @param table    {@code schema.table}
     * @param from     the key (its columns' text) the chunk starts after; null: open below
     * @param to       the last key of the chunk; null: open above
     * @param keys     how many keys differ (a row missing on either side, or with other values); -1 for a table without a
     *                 key compared as a whole ({@link #whole})
     * @param sample   up to 10 of them, key columns joined by commas; for a table compared whole, its row counts
     * @param repaired whether {@code --repair} copied the chunk again
     */
    public record Divergence(String table, List<String> from, List<String> to, int keys, List<String> sample, boolean repaired) {
        public Divergence {
            from = from == null ? null : List.copyOf(from);
            to = to == null ? null : List.copyOf(to);
            sample = List.copyOf(sample);
        }

        /** A table without a key, compared as a whole (the source fenced), whose rows differ: {@code sourceRows}, {@code targetRows}. */
        static Divergence whole(String table, long sourceRows, long targetRows, boolean repaired) {
            return new Divergence(table, null, null, -1, List.of("source " + sourceRows + " row(s), target " + targetRows), repaired);
        }

        /** {@code public.orders key (100) .. (200]: 1 key(s) differ, e.g. 150} */
        @Override
        public String toString() {
            if (keys < 0) {
                return table + " (no key, compared whole): its rows differ, " + String.join("; ", sample)
                        + (repaired ? " (repaired: copied again whole)" : "");
            }
            return table + " key range " + (from == null ? "(-inf" : "(" + String.join(", ", from)) + " .. "
                    + (to == null ? "+inf)" : String.join(", ", to) + "]") + ": " + keys + " key(s) differ, e.g. "
                    + String.join("; ", sample) + (repaired ? " (repaired: copied again)" : "");
        }
    }

    /** Whether every compared chunk matched (or was repaired), and every column definition (or was repaired). */
    public boolean equal() {
        return divergent.stream().allMatch(Divergence::repaired) && (columnDrift.isEmpty() || columnsRepaired);
    }

    /** For the terminal. */
    public String render() {
        StringBuilder b = new StringBuilder("verify: " + chunks + " chunk(s)" + (unchanged > 0 ? " (" + unchanged
                + " unchanged since the last pass, not hashed)" : "") + ", " + rows + " row(s), " + rechecked
                + " re-checked, " + divergent.size() + " divergent, in " + took.toMillis() + " ms\n");
        for (String c : columnDrift) {
            b.append(columnsRepaired ? "  COLUMN (repaired: made the source's) " : "  COLUMN DIFFERS ").append(c).append('\n');
        }
        for (Divergence d : divergent) {
            b.append("  DIVERGENT ").append(d).append('\n');
        }
        for (String s : skipped) {
            b.append("  not compared: ").append(s).append('\n');
        }
        return b.toString();
    }
}
