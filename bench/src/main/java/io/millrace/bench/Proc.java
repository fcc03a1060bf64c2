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
}
