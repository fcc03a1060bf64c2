package io.millrace.bench;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The results of one run, as a table: each contestant's rate (the median over its repetitions), its
 * ratio to the PostgreSQL limit it is compared with (COPY for snapshots, pg_recvlogical for
 * streaming, in the same value format), and to Debezium's fastest configuration in the same phase.
 * A ratio above 1 is faster than the reference. Every ratio comes from measurements of this one run.
 */
public final class Results {
    private final Map<Contestant, List<Measurement>> measured = new LinkedHashMap<>();

    public void add(Contestant c, Measurement m) {
        measured.computeIfAbsent(c, k -> new ArrayList<>()).add(m);
    }

    public Map<Contestant, List<Measurement>> measured() {
        return measured;
    }

    /** The successful repetition with the median rate (the lower one of the middle two for an even count), if any. */
    public Optional<Measurement> median(Contestant c) {
        List<Measurement> ok = measured.getOrDefault(c, List.of()).stream().filter(Measurement::ok)
                .sorted(Comparator.comparingDouble(Measurement::rowsPerSecond)).toList();
        return ok.isEmpty() ? Optional.empty() : Optional.of(ok.get((ok.size() - 1) / 2));
    }

    public boolean allOk() {
        return measured.values().stream().flatMap(List::stream).allMatch(Measurement::ok);
    }

    /** Median rows/s of the contestant's PostgreSQL limit, when that limit ran and succeeded. */
    public Optional<Double> limitRate(Contestant c) {
        return measured.keySet().stream().filter(k -> k.id().equals(c.limit())).findFirst().flatMap(this::median)
                .map(Measurement::rowsPerSecond);
    }

    /** Median rows/s of the fastest Debezium configuration in the phase. */
    public Optional<Double> debeziumRate(Contestant.Phase phase) {
        return measured.keySet().stream().filter(k -> k.phase() == phase && k.kind() == Contestant.Kind.DEBEZIUM)
                .map(this::median).flatMap(Optional::stream).map(Measurement::rowsPerSecond).max(Double::compare);
    }

    static final String[] HEADER = {"phase", "contestant", "runs", "rows", "seconds", "first row s", "rows/s", "rows/s min–max",
            "× PG limit", "× Debezium (fastest)", "peak RSS MB", "CPU s", "load"};

    /** The table's rows (one per contestant, its median repetition), formatted. */
    public List<String[]> rows() {
        List<String[]> out = new ArrayList<>();
        for (Map.Entry<Contestant, List<Measurement>> e : measured.entrySet()) {
            Contestant c = e.getKey();
            List<Measurement> all = e.getValue();
            long ok = all.stream().filter(Measurement::ok).count();
            String phase = c.phase().name().toLowerCase(Locale.ROOT);
            String runs = ok + "/" + all.size();
            Optional<Measurement> med = median(c);
            if (med.isEmpty()) {
                Measurement f = all.get(0);
                out.add(new String[]{phase, c.label(), runs, "-", "-", "-", "-", "-", "-", "-", "-", "-",
                        fmt(f.load1(), 1) + " FAILED: " + shorten(f.error())});
                continue;
            }
            Measurement m = med.get();
            double rate = m.rowsPerSecond();
            double min = all.stream().filter(Measurement::ok).mapToDouble(Measurement::rowsPerSecond).min().orElse(0);
            double max = all.stream().filter(Measurement::ok).mapToDouble(Measurement::rowsPerSecond).max().orElse(0);
            long rss = all.stream().filter(Measurement::ok).mapToLong(Measurement::peakRssKb).max().orElse(0);
            String toLimit = limitRate(c).map(l -> ratio(rate / l)).orElse("-");
            String toDbz = debeziumRate(c.phase()).map(d -> ratio(rate / d)).orElse("-");
            String load = fmt(m.load1(), 1) + (ok < all.size() ? " (" + (all.size() - ok) + " failed: "
                    + shorten(all.stream().filter(x -> !x.ok()).findFirst().map(Measurement::error).orElse("")) + ")" : "");
            out.add(new String[]{phase, c.label(), runs, String.format(Locale.ROOT, "%,d", m.rows()), fmt(m.seconds(), 2),
                    m.firstNanos() < 0 ? "-" : fmt(m.firstNanos() / 1e9, 2), String.format(Locale.ROOT, "%,.0f", rate),
                    all.size() == 1 ? "-" : String.format(Locale.ROOT, "%,.0f–%,.0f", min, max), toLimit, toDbz,
                    fmt(rss / 1024.0, 0), m.cpuNanos() < 0 ? "-" : fmt(m.cpuNanos() / 1e9, 1), load});
        }
        return out;
    }

    /** Every repetition of every contestant, in the order they ran within each contestant. */
    public List<String[]> everyRun() {
        List<String[]> out = new ArrayList<>();
        for (Map.Entry<Contestant, List<Measurement>> e : measured.entrySet()) {
            int i = 0;
            for (Measurement m : e.getValue()) {
                i++;
                out.add(new String[]{e.getKey().id(), Integer.toString(i), m.ok() ? fmt(m.seconds(), 2) : "-",
                        m.ok() ? String.format(Locale.ROOT, "%,.0f", m.rowsPerSecond()) : "FAILED: " + shorten(m.error()),
                        m.ok() ? fmt(m.peakRssKb() / 1024.0, 0) : "-", fmt(m.load1(), 1)});
            }
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
        return text(HEADER, rows());
    }

    static String text(String[] header, List<String[]> rows) {
        int[] w = new int[header.length];
        for (int i = 0; i < header.length; i++) {
            w[i] = header[i].length();
            for (String[] r : rows) {
                w[i] = Math.max(w[i], r[i].length());
            }
        }
        StringBuilder sb = new StringBuilder();
        line(sb, header, w);
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

    /** The table in Markdown, then (with repetitions) every run. */
    public String markdown() {
        String md = markdown(HEADER, rows(), 2);
        boolean repeated = measured.values().stream().anyMatch(l -> l.size() > 1);
        if (repeated) {
            md += "\nEvery run:\n\n" + markdown(new String[]{"contestant", "run", "seconds", "rows/s", "peak RSS MB", "load"}, everyRun(), 1);
        }
        return md;
    }

    static String markdown(String[] header, List<String[]> rows, int leftColumns) {
        StringBuilder sb = new StringBuilder();
        sb.append("| ").append(String.join(" | ", header)).append(" |\n|");
        for (int i = 0; i < header.length; i++) {
            sb.append(i < leftColumns ? "---|" : "--:|");
        }
        sb.append('\n');
        for (String[] r : rows) {
            sb.append("| ").append(String.join(" | ", r).replace("\n", " ")).append(" |\n");
        }
        return sb.toString();
    }
}
