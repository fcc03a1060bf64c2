package io.millrace.bench;

import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * Entry point of {@code millrace-bench.jar}: the side-by-side run (default), one contestant
 * ({@code child}, started by the run itself), the online snapshot comparison ({@code online}), the heap cost of decoded rows ({@code heap-per-row}), JMH ({@code jmh}), or a summary of a JFR profile
 * ({@code jfr-top FILE}). See docs/BENCHMARKS.md.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] argv) throws Exception {
        List<String> args = Arrays.asList(argv);
        if (!args.isEmpty() && args.get(0).equals("child")) {
            System.exit(Child.main(args.subList(1, args.size())));
        }
        if (!args.isEmpty() && args.get(0).equals("jfr-top")) {
            JfrTop.main(args.subList(1, args.size()));
            return;
        }
        if (!args.isEmpty() && args.get(0).equals("online")) {
            OnlineBench.main(args.subList(1, args.size()));
            return;
        }
        if (!args.isEmpty() && args.get(0).equals("heap-per-row")) {
            HeapPerRow.main(args.subList(1, args.size()));
            return;
        }
        if (!args.isEmpty() && args.get(0).equals("jmh")) {
            org.openjdk.jmh.Main.main(args.subList(1, args.size()).toArray(new String[0]));
            return;
        }
        Options o;
        try {
            o = Options.parse(args, defaultOut());
        } catch (IllegalArgumentException e) {
            if (!e.getMessage().isEmpty()) {
                System.err.println(e.getMessage());
            }
            System.err.print(Options.USAGE);
            System.err.println("contestants: " + Contestant.all().stream().map(Contestant::id).toList());
            System.exit(e.getMessage().isEmpty() ? 0 : 2);
            return;
        }
        System.exit(new Orchestrator(o).run());
    }

    /** results.md next to the jar (bench/target/), or in the current folder when not run from a jar. */
    private static Path defaultOut() {
        try {
            Path p = Path.of(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            return p.getParent().resolve("results.md").toAbsolutePath(); // bench/target/ for the jar and for target/classes
        } catch (URISyntaxException | RuntimeException e) {
            return Path.of("results.md").toAbsolutePath();
        }
    }
}
