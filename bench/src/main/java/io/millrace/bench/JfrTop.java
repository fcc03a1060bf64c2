package io.millrace.bench;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Summarises the CPU samples ({@code jdk.ExecutionSample}) of a JFR recording: samples per thread,
 * then per busy thread the top frames by self time (the method on top of the stack) and by total time
 * (the method anywhere on the stack), and self time keyed by the nearest Millrace frame that called it. {@code java -jar millrace-bench.jar jfr-top FILE.jfr [N]}.
 */
final class JfrTop {
    private JfrTop() {
    }

    static void main(List<String> args) throws IOException {
        Path file = Path.of(args.get(0));
        int top = args.size() > 1 ? Integer.parseInt(args.get(1)) : 12;
        Map<String, Integer> perThread = new HashMap<>();
        Map<String, Map<String, Integer>> self = new HashMap<>();
        Map<String, Map<String, Integer>> total = new HashMap<>();
        Map<String, Map<String, Integer>> caller = new HashMap<>();
        int samples = 0;
        long maxAfterGc = 0;
        long maxCommitted = 0;
        int gcs = 0;
        for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
            if (e.getEventType().getName().equals("jdk.GCHeapSummary")) {
                if ("After GC".equals(e.getString("when"))) {
                    gcs++;
                    maxAfterGc = Math.max(maxAfterGc, e.getLong("heapUsed"));
                }
                maxCommitted = Math.max(maxCommitted, e.getValue("heapSpace") instanceof jdk.jfr.consumer.RecordedObject o
                        ? o.getLong("committedSize") : 0);
                continue;
            }
            if (!e.getEventType().getName().equals("jdk.ExecutionSample")) {
                continue;
            }
            samples++;
            String thread = e.getThread("sampledThread") == null ? "?" : e.getThread("sampledThread").getJavaName();
            thread = thread == null ? "?" : thread.replaceAll("-\\d+$", "-N");
            perThread.merge(thread, 1, Integer::sum);
            RecordedStackTrace st = e.getStackTrace();
            if (st == null || st.getFrames().isEmpty()) {
                continue;
            }
            List<RecordedFrame> frames = st.getFrames();
            self.computeIfAbsent(thread, k -> new HashMap<>()).merge(name(frames.get(0)), 1, Integer::sum);
            String mine = frames.stream().map(JfrTop::name).filter(n -> n.startsWith("io.millrace")).findFirst().orElse("(no Millrace frame)");
            String leaf = name(frames.get(0));
            caller.computeIfAbsent(thread, k -> new HashMap<>()).merge(leaf.equals(mine) ? mine : mine + " → " + leaf, 1, Integer::sum);
            Set<String> seen = new HashSet<>();
            for (RecordedFrame f : frames) {
                String n = name(f);
                if (seen.add(n)) {
                    total.computeIfAbsent(thread, k -> new HashMap<>()).merge(n, 1, Integer::sum);
                }
            }
        }
        System.out.printf(Locale.ROOT, "%s: %d CPU samples; %d GCs, heap used after GC at most %d MB, heap committed at most %d MB%n%n"
                + "samples per thread:%n", file.getFileName(), samples, gcs, maxAfterGc >> 20, maxCommitted >> 20);
        Map<String, Integer> threads = sorted(perThread);
        for (Map.Entry<String, Integer> t : threads.entrySet()) {
            System.out.printf(Locale.ROOT, "  %5.1f%%  %s%n", 100.0 * t.getValue() / samples, t.getKey());
        }
        int shown = 0;
        for (Map.Entry<String, Integer> t : threads.entrySet()) {
            if (shown++ == 4 || t.getValue() < samples / 20) {
                break;
            }
            System.out.printf(Locale.ROOT, "%nthread %s (%d samples) — self:%n", t.getKey(), t.getValue());
            print(self.getOrDefault(t.getKey(), Map.of()), t.getValue(), top);
            System.out.printf(Locale.ROOT, "thread %s — self, with the nearest Millrace frame that called it:%n", t.getKey());
            print(caller.getOrDefault(t.getKey(), Map.of()), t.getValue(), top);
            System.out.printf(Locale.ROOT, "thread %s — total (on the stack), io.millrace frames:%n", t.getKey());
            Map<String, Integer> mine = new HashMap<>();
            total.getOrDefault(t.getKey(), Map.of()).forEach((k, v) -> {
                if (k.startsWith("io.millrace")) {
                    mine.put(k, v);
                }
            });
            print(mine, t.getValue(), top);
        }
    }

    private static void print(Map<String, Integer> m, int of, int top) {
        sorted(m).entrySet().stream().limit(top)
                .forEach(e -> System.out.printf(Locale.ROOT, "  %5.1f%%  %s%n", 100.0 * e.getValue() / of, e.getKey()));
    }

    private static String name(RecordedFrame f) {
        return f.getMethod().getType().getName() + "." + f.getMethod().getName();
    }

    private static Map<String, Integer> sorted(Map<String, Integer> m) {
        Map<String, Integer> out = new LinkedHashMap<>();
        m.entrySet().stream().sorted(Map.Entry.<String, Integer>comparingByValue().reversed()).forEach(e -> out.put(e.getKey(), e.getValue()));
        return out;
    }
}
