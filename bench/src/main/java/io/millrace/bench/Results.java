package io.millrace.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The results of one run, as a table: each contestant's rate, its ratio to the PostgreSQL limit it
 * is compared with (COPY for snapshots, pg_recvlogical for streaming, in the same value format), and
 * to Debezium's fastest configuration in the same phase. A ratio above 1 is faster than the
 * reference. Every ratio comes from measurements of this one run.
 */
public final class Results {
    private final Map<Contestant, Measurement> measured = new LinkedHashMap<>();

    public void add(Contestant c, Measurement m) {
        measured.put(c, m);
    }

    public Map<Contestant, Measurement> measured() {
        return measured;
    }

    /** Rows/s of the contestant's PostgreSQL limit, when that limit ran and succeeded. */
    public Optional<Double> limitRate(Contestant c) {
        return measured.entrySet().stream().filter(e -> e.getKey().id().equals(c.limit()) && e.getValue().ok())
                .map(e -> e.getValue().rowsPerSecond()).findFirst();
    }

    /** Rows/s of the fastest successful Debezium configuration in the contestant's phase. */
    public Optional<Double> debeziumRate(Contestant.Phase phase) {
        return measured.entrySet().stream()
                .filter(e -> e.getKey().phase() == phase && e.getKey().kind() == Contestant.Kind.DEBEZIUM && e.getValue().ok())
                .map(e -> e.getValue().rowsPerSecond()).max(Double::compare);
    }

    static final String[] HEADER = {"phase", "contestant", "rows", "seconds", "first row s", "rows/s", "× PG limit", "× Debezium (fastest)",
            "peak RSS MB", "CPU s", "load"};

    /** The table's rows, formatted. */
    public List<String[]> rows() {
        List<String[]> out = new ArrayList<>();
        for (Map.Entry<Contestant, Measurement> e : measured.entrySet()) {
            Contestant c = e.getKey();
            Measurement m = e.getValue();
            String phase = c.phase().name().toLowerCase(Locale.ROOT);
            if (!m.ok()) {
                out.add(new String[]{phase, c.label(), "-", "-", "-", "-", "-", "-", "-", "-", fmt(m.load1(), 1) + " FAILED: " + shorten(m.error())});
                continue;
            }
            double rate = m.rowsPerSecond();
            String toLimit = limitRate(c).map(l -> ratio(rate / l)).orElse("-");
            String toDbz = debeziumRate(c.phase()).map(d -> ratio(rate / d)).orElse("-");
            out.add(new String[]{phase, c.label(), String.format(Locale.ROOT, "%,d", m.rows()), fmt(m.seconds(), 2),
                    m.firstNanos() < 0 ? "-" : fmt(m.firstNanos() / 1e9, 2), String.format(Locale.ROOT, "%,.0f", rate), toLimit, toDbz, fmt(m.peakRssKb() / 1024.0, 0),
                    m.cpuNanos() < 0 ? "-" : fmt(m.cpuNanos() / 1e9, 1), fmt(m.load1(), 1)});
        }
        return out;
    }

    private static String shorten(String error) {
        String e = String.valueOf(error).replace('|', '/').replace('\n', ' ');
        return e.length() <= 120 ? e : e.substring(0, 120) + "...";
    }

    private static String ratio(double r) {
        return String.format(Locale.ROOT, "%.2f×", r);
    }

    private static String fmt(double v, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", v);
    }

    /** A fixed-width table for the terminal. */
    public String text() {
        List<String[]> rows = rows();
        int[] w = new int[HEADER.length];
        for (int i = 0; i < HEADER.length; i++) {
            w[i] = HEADER[i].length();
            for (String[] r : rows) {
                w[i] = Math.max(w[i], r[i].length());
            }
        }
        StringBuilder sb = new StringBuilder();
        line(sb, HEADER, w);
        StringBuilder rule = new StringBuilder();
        for (int x : w) {
            rule.append("-".repeat(x)).append("  ");
        }
        sb.append(rule.toString().stripTrailing()).append('\n');
        for (String[] r : rows) {
            line(sb, r, w);
        }
        return sb.toString();
    }

    private static void line(StringBuilder sb, String[] cells, int[] w) {
        StringBuilder l = new StringBuilder();
        for (int i = 0; i < cells.length; i++) {
            boolean left = i < 2;
            String cell = cells[i];
            String pad = " ".repeat(Math.max(0, w[i] - cell.length()));
            l.append(left ? cell + pad : pad + cell).append("  ");
        }
        sb.append(l.toString().stripTrailing()).append('\n');
    }

    /** The same table in Markdown. */
    public String markdown() {
        StringBuilder sb = new StringBuilder();
        sb.append("| ").append(String.join(" | ", HEADER)).append(" |\n|");
        for (int i = 0; i < HEADER.length; i++) {
            sb.append(i < 2 ? "---|" : "--:|");
        }
        sb.append('\n');
        for (String[] r : rows()) {
            sb.append("| ").append(String.join(" | ", r).replace("\n", " ")).append(" |\n");
        }
        return sb.toString();
    }
}
