package io.millrace.bench;

/**
 * What one contestant's process reported.
 *
 * @param rows        rows (change records) it counted
 * @param nanos       wall time from its start to the last row (inside the child: after JVM start-up)
 * @param firstNanos  wall time from its start to the first row (start-up cost: connections, slot, catalog), -1 if unknown
 * @param cpuNanos    CPU time of the contestant's process (user + system) over its whole life, -1 if unknown
 * @param peakRssKb   peak resident set size (VmHWM) of the contestant's process
 * @param load1       1-minute load average of the machine when it started
 * @param error       why it failed, or null
 */
public record Measurement(long rows, long nanos, long firstNanos, long cpuNanos, long peakRssKb, double load1, String error) {

    public static Measurement failed(String error, double load1) {
        return new Measurement(0, 0, -1, -1, 0, load1, error);
    }

    public boolean ok() {
        return error == null;
    }

    public double seconds() {
        return nanos / 1e9;
    }

    public double rowsPerSecond() {
        return nanos == 0 ? 0 : rows / seconds();
    }

    /** One line a child prints on stdout; the orchestrator parses it back with {@link #parse}. */
    public String line() {
        return "BENCH-RESULT rows=" + rows + " nanos=" + nanos + " firstNanos=" + firstNanos + " cpuNanos=" + cpuNanos + " peakRssKb=" + peakRssKb;
    }

    /** Parses {@link #line()}; null when {@code line} is not one. */
    public static Measurement parse(String line, double load1) {
        if (!line.startsWith("BENCH-RESULT ")) {
            return null;
        }
        long rows = 0;
        long nanos = 0;
        long first = -1;
        long cpu = -1;
        long rss = 0;
        for (String kv : line.substring("BENCH-RESULT ".length()).trim().split(" ")) {
            String[] p = kv.split("=", 2);
            long v = Long.parseLong(p[1]);
            switch (p[0]) {
                case "rows" -> rows = v;
                case "nanos" -> nanos = v;
                case "firstNanos" -> first = v;
                case "cpuNanos" -> cpu = v;
                case "peakRssKb" -> rss = v;
                default -> throw new IllegalArgumentException("unknown field in " + line);
            }
        }
        return new Measurement(rows, nanos, first, cpu, rss, load1, null);
    }
}
