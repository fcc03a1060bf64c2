package io.millrace.cli.crash;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@code millrace run <config>} in a JVM of its own, with the test's class path, its output (stdout
 * and stderr) in a log file. {@link #kill()} sends SIGKILL ({@link Process#destroyForcibly()} on
 * Linux), {@link #terminate} SIGTERM ({@link Process#destroy()}).
 */
public final class EngineProcess {
    /** Exit status of a process that SIGKILL ended: 128 + 9. */
    public static final int SIGKILL_EXIT = 137;

    /** Exit status of a process halted at an armed fault point ({@code io.millrace.core.fault.Faults.CRASH_EXIT}). */
    public static final int FAULT_EXIT = io.millrace.core.fault.Faults.CRASH_EXIT;

    /** Waits up to {@code millis} for the process to end by itself; returns its exit status, or -1 while it runs. */
    public int awaitExit(long millis) throws InterruptedException {
        return process.waitFor(millis, TimeUnit.MILLISECONDS) ? process.exitValue() : -1;
    }

    private final Process process;
    private final Path log;
    private final long startedNanos;

    private EngineProcess(Process process, Path log, long startedNanos) {
        this.process = process;
        this.log = log;
        this.startedNanos = startedNanos;
    }

    public static EngineProcess start(Path config, Path log) throws IOException {
        return start(config, log, List.of());
    }

    /** As {@link #start(Path, Path)}, with more JVM options, e.g. {@code -Dmillrace.fault=sink.postgres.after-commit:crash:3}. */
    public static EngineProcess start(Path config, Path log, List<String> jvmOptions) throws IOException {
        List<String> all = new java.util.ArrayList<>(List.of("-Xmx384m", "-XX:+UseSerialGC"));
        all.addAll(jvmOptions);
        return startWith(config, log, all);
    }

    /** As {@link #start(Path, Path)}, with these JVM options only (heap and collector included). */
    public static EngineProcess startWith(Path config, Path log, List<String> jvmOptions) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new java.util.ArrayList<>();
        if (DEFAULT_SIGNALS) {
            // The engine's signals as a user's shell gives them, whatever the test runner inherited (under nohup, SIGHUP is
            // ignored, and a JVM never handles a signal it started with ignored).
            cmd.addAll(List.of("env", "--default-signal=HUP"));
        }
        cmd.add(java);
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), "io.millrace.cli.Main", "run", config.toAbsolutePath().toString()));
        return startCommand(log, cmd);
    }

    /** Whether {@code env --default-signal} (coreutils 8.31+) is there to reset inherited signal dispositions. */
    private static final boolean DEFAULT_SIGNALS = defaultSignals();

    private static boolean defaultSignals() {
        try {
            Process p = new ProcessBuilder("env", "--default-signal=HUP", "true").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Any command line (e.g. {@code java ... io.millrace.cli.Main migrate run CONFIG}), its output in {@code log}. */
    public static EngineProcess startCommand(Path log, List<String> cmd) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("MILLRACE_LOG_LEVEL", "INFO");
        long t0 = System.nanoTime();
        return new EngineProcess(pb.start(), log, t0);
    }

    /**
     * The JVM options {@code bin/millrace} runs the engine with when MILLRACE_JAVA_OPTS is unset, read from the script
     * itself (its {@code ${MILLRACE_JAVA_OPTS:-...}}), so that tests run what users run.
     */
    public static List<String> binMillraceJvmOptions() throws IOException {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isRegularFile(dir.resolve("bin").resolve("millrace"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("bin/millrace not found above " + Path.of("").toAbsolutePath());
        }
        String script = Files.readString(dir.resolve("bin").resolve("millrace"), StandardCharsets.UTF_8);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\$\\{MILLRACE_JAVA_OPTS:-([^}]*)}").matcher(script);
        if (!m.find()) {
            throw new IllegalStateException("bin/millrace has no ${MILLRACE_JAVA_OPTS:-...} default");
        }
        return List.of(m.group(1).trim().split("\\s+"));
    }

    /** The process's peak resident set size so far in kB (VmHWM in /proc/PID/status), or -1 when unknown. */
    public long peakRssKb() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(process.pid()), "status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException | RuntimeException e) {
            // the process has ended, or no /proc
        }
        return -1;
    }

    public long pid() {
        return process.pid();
    }

    public boolean alive() {
        return process.isAlive();
    }

    public long millisSinceStart() {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedNanos);
    }

    public Path log() {
        return log;
    }

    /** Writes the JVM's thread dump (jcmd Thread.print) next to the log, for diagnosis; best effort. */
    public void threadDump() {
        Path out = log.resolveSibling(log.getFileName().toString().replace(".log", ".threads.txt"));
        try {
            String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
            Process p = new ProcessBuilder(jcmd, Long.toString(process.pid()), "Thread.print").redirectErrorStream(true)
                    .redirectOutput(out.toFile()).start();
            p.waitFor(20, TimeUnit.SECONDS);
        } catch (IOException e) {
            // diagnosis only
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** SIGKILL; returns the exit status (137 when the signal ended it). */
    public int kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new AssertionError("engine pid " + process.pid() + " still alive 30 s after SIGKILL");
        }
        return process.exitValue();
    }

    /** SIGTERM, then waits up to {@code seconds}; returns the exit status, or -1 if it did not end in time. */
    public int terminate(int seconds) throws InterruptedException {
        process.destroy();
        if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
            return -1;
        }
        return process.exitValue();
    }

    /** Kills it without waiting for anything but its end (clean-up after a failure). */
    public void destroyQuietly() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public String logText() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(cannot read " + log + ": " + e + ")";
        }
    }

    /** The last {@code lines} lines of the log, for failure messages. */
    public String logTail(int lines) {
        List<String> all = logText().lines().toList();
        return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    }
}
