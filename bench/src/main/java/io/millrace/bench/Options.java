package io.millrace.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Command-line options of a benchmark run (see {@link #USAGE}). */
record Options(long rows, int repeat, int txRows, String xmx, List<String> only, List<String> skip, Path work, boolean keep, Path out,
               Path recvlogical, String jfr, int timeoutSeconds, int pgMajor, boolean kafka, String millraceJvm) {

    static final String USAGE = """
            usage: java -jar bench/target/millrace-bench.jar [options]          the side-by-side run
                   java -jar bench/target/millrace-bench.jar jmh [JMH options]  the decoder micro-benchmarks
                   java -jar bench/target/millrace-bench.jar jfr-top FILE.jfr    CPU samples of a profile, by thread and frame
            options:
              --rows N            rows per phase (default 1000000)
              --repeat K          run every contestant K times, interleaved; the table shows the median (default 1)
              --tx-rows N         rows per transaction when pre-filling the slots (default 10000)
              --xmx SIZE          heap limit of every contestant JVM (default 2g)
              --millrace-jvm OPTS JVM options of the Millrace contestants instead of --xmx, e.g. "lean" for
                                  bin/millrace's defaults (-Xmx192m -XX:+UseParallelGC) or "-Xmx160m -XX:+UseSerialGC"
              --only a,b          run only contestants whose id starts with one of these (ids: see below)
              --skip a,b          skip contestants whose id starts with one of these
              --work DIR          scratch folder (PostgreSQL data, jsonl output); default a new temp folder
              --keep              keep the scratch folder
              --out FILE          results in Markdown (default: results.md next to the jar, i.e. bench/target/)
              --recvlogical PATH  pg_recvlogical of the same major (default /usr/lib/postgresql/15/bin/pg_recvlogical)
              --jfr ID[,ID]       record a JFR profile (settings=profile) of these contestants (ID.jfr next to --out)
              --timeout S         per contestant (default 1800)
              --pg-major N        embedded PostgreSQL major (default 15, to match pg_recvlogical)
              --kafka             also stream into Kafka: a KRaft broker in this JVM, Millrace's kafka destination
                                  (exactly once) beside Debezium embedded with a Kafka producer (stream-*-kafka*)
            """;

    static Options parse(List<String> args, Path defaultOut) {
        long rows = 1_000_000;
        int repeat = 1;
        int txRows = 10_000;
        String xmx = "2g";
        List<String> only = new ArrayList<>();
        List<String> skip = new ArrayList<>();
        Path work = null;
        boolean keep = false;
        Path out = defaultOut;
        Path recv = Path.of("/usr/lib/postgresql/15/bin/pg_recvlogical");
        String jfr = null;
        int timeout = 1800;
        int major = 15;
        boolean kafka = false;
        String millraceJvm = null;
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            if (a.equals("--keep")) {
                keep = true;
                continue;
            }
            if (a.equals("--kafka")) {
                kafka = true;
                continue;
            }
            if (a.equals("--help") || a.equals("-h")) {
                throw new IllegalArgumentException("");
            }
            if (i + 1 >= args.size()) {
                throw new IllegalArgumentException("option " + a + " needs a value");
            }
            String v = args.get(++i);
            switch (a) {
                case "--rows" -> rows = Long.parseLong(v.replace("_", "").replace(",", ""));
                case "--tx-rows" -> txRows = Integer.parseInt(v);
                case "--repeat" -> repeat = Integer.parseInt(v);
                case "--xmx" -> xmx = v;
                case "--only" -> only = List.of(v.split(","));
                case "--skip" -> skip = List.of(v.split(","));
                case "--work" -> work = Path.of(v);
                case "--out" -> out = Path.of(v);
                case "--recvlogical" -> recv = Path.of(v);
                case "--jfr" -> jfr = v;
                case "--timeout" -> timeout = Integer.parseInt(v);
                case "--pg-major" -> major = Integer.parseInt(v);
                case "--millrace-jvm" -> millraceJvm = v.equals("lean") ? DrainBench.LEAN_JVM : v;
                default -> throw new IllegalArgumentException("unknown option " + a);
            }
        }
        if (rows < 1 || txRows < 1 || repeat < 1) {
            throw new IllegalArgumentException("--rows, --repeat and --tx-rows must be positive");
        }
        return new Options(rows, repeat, txRows, xmx, only, skip, work, keep, out, recv, jfr, timeout, major, kafka, millraceJvm);
    }

    boolean selected(Contestant c) {
        if ("kafka".equals(c.dest()) && !kafka) {
            return false; // the Kafka contestants need --kafka (a broker)
        }
        boolean in = only.isEmpty() || only.stream().anyMatch(p -> c.id().startsWith(p));
        return in && skip.stream().noneMatch(p -> c.id().startsWith(p));
    }
}
