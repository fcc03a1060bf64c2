package io.millrace.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads a process's peak RSS and CPU time from /proc (Linux). */
final class Proc {
    private Proc() {
    }

    /** VmHWM in kB, or -1 when the process is gone. */
    static long peakRssKb(long pid) {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (l.startsWith("VmHWM:")) {
                    return Long.parseLong(l.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }

    /** utime + stime in nanoseconds (assuming 100 clock ticks a second), or -1 when gone. */
    static long cpuNanos(long pid) {
        try {
            String s = Files.readString(Path.of("/proc/" + pid + "/stat"));
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            // after the command: state(0) ppid(1) ... utime(11) stime(12)
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** The 1-minute load average, or -1 when unknown. */
    static double load1() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** Voluntary and involuntary context switches summed over the live threads of this process, or {-1, -1}. */
    static long[] contextSwitches() {
        long[] sum = {0, 0};
        try (java.util.stream.Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : tasks.toList()) {
                try {
                    for (String l : Files.readAllLines(t.resolve("status"))) {
                        if (l.startsWith("voluntary_ctxt_switches:")) {
                            sum[0] += Long.parseLong(l.replaceAll("[^0-9]", ""));
                        } else if (l.startsWith("nonvoluntary_ctxt_switches:")) {
                            sum[1] += Long.parseLong(l.replaceAll("[^0-9]", ""));
                        }
                    }
                } catch (IOException e) {
                    // the thread ended meanwhile
                }
            }
        } catch (IOException | RuntimeException e) {
            return new long[]{-1, -1};
        }
        return sum;
    }

    /** This process's threads by CPU time (utime + stime), the busiest first: "name cpu-seconds" each, at most {@code n}. */
    static String busiestThreads(int n) {
        java.util.Map<String, Long> byName = new java.util.HashMap<>();
        try (java.util.stream.Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : tasks.toList()) {
                try {
                    String stat = Files.readString(t.resolve("stat"));
                    String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replaceAll("[#-]?\\d+$", "");
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    byName.merge(name, (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10L, Long::sum);
                } catch (IOException | RuntimeException e) {
                    // the thread ended meanwhile
                }
            }
        } catch (IOException e) {
            return "?";
        }
        StringBuilder sb = new StringBuilder();
        byName.entrySet().stream().sorted(java.util.Map.Entry.<String, Long>comparingByValue().reversed()).limit(n)
                .forEach(e -> sb.append(sb.length() == 0 ? "" : ", ").append(e.getKey()).append(' ')
                        .append(String.format(java.util.Locale.ROOT, "%.1f s", e.getValue() / 1000.0)));
        return sb.toString();
    }

    /**
     * CPU time of this process's threads, also of threads that ended: {@link #sample} reads {@code /proc/self/task}
     * (call it every few tens of milliseconds), keeping each thread's last user and system time; {@link #toString}
     * sums them by name (digits at the end dropped), busiest first, as "name user+sys s (sys s)".
     */
    static final class ThreadCpu {
        private final java.util.Map<String, long[]> byTid = new java.util.HashMap<>();
        private final java.util.Map<String, String> names = new java.util.HashMap<>();

        void sample() {
            try (java.util.stream.Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
                for (Path t : tasks.toList()) {
                    try {
                        String stat = Files.readString(t.resolve("stat"));
                        String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replaceAll("[#-]?\\d+$", "");
                        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                        String tid = t.getFileName().toString();
                        byTid.put(tid, new long[]{Long.parseLong(f[11]) * 10L, Long.parseLong(f[12]) * 10L});
                        names.put(tid, name);
                    } catch (IOException | RuntimeException e) {
                        // the thread ended meanwhile: its last sample stays
                    }
                }
            } catch (IOException e) {
                // keep what was sampled
            }
        }

        @Override
        public String toString() {
            java.util.Map<String, long[]> sum = new java.util.HashMap<>();
            byTid.forEach((tid, v) -> {
                long[] s = sum.computeIfAbsent(names.get(tid), k -> new long[2]);
                s[0] += v[0];
                s[1] += v[1];
            });
            StringBuilder sb = new StringBuilder();
            sum.entrySet().stream().sorted((a, b) -> Long.compare(b.getValue()[0] + b.getValue()[1], a.getValue()[0] + a.getValue()[1]))
                    .limit(14).forEach(e -> sb.append(sb.length() == 0 ? "" : ", ").append(e.getKey()).append(' ')
                            .append(String.format(java.util.Locale.ROOT, "%.2f s (sys %.2f)", (e.getValue()[0] + e.getValue()[1]) / 1000.0,
                                    e.getValue()[1] / 1000.0)));
            return sb.toString();
        }
    }
}
