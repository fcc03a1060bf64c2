package io.millrace.core.fault;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Named fault points for crash tests: {@code Faults.hit(FaultPoint.SINK_POSTGRES_BEFORE_COMMIT)} marks a place
 * where a crash or a delay tells something about the invariants (INV: DURABLE, INV: RESUME). The points
 * are the constants of {@link FaultPoint}, also listed with their places in docs/RELIABILITY.md.
 *
 * <p>Armed only at JVM start, from the system property {@code millrace.fault} or, when that is absent,
 * the environment variable {@code MILLRACE_FAULT}: a comma-separated list of
 * {@code point:action[:arg]}, for example {@code sink.postgres.after-commit:crash:3} (halt the JVM at the
 * third hit), {@code source.before-feedback:delay:200} (sleep 200 ms at every hit) or
 * {@code pipeline.before-durable:fail:2} (throw an {@link InjectedFault} at the second hit).
 * A crash prints {@code millrace fault point <point>: crash at hit <n>} to stderr and ends the JVM with
 * {@link Runtime#halt} and status {@value #CRASH_EXIT}: no shutdown hook, no finally block, no flush runs,
 * as after SIGKILL.
 *
 * <p>In-JVM tests (the sink contract kit) arm points while they run with {@link #arm}, which needs the JVM started
 * with {@code -D}{@value #ARMABLE_PROPERTY}{@code =true} (or with a spec): a {@code fail} point then throws inside the
 * sink's {@code write}, as a crash there would end it.
 *
 * <p>Unarmed and not armable, {@link #hit} is a test of a {@code static final} false: the JIT removes it.
 * Thread-safe: points may be hit from any thread.
 */
public final class Faults {
    /** Exit status of a JVM halted at a fault point. */
    public static final int CRASH_EXIT = 86;

    /** The system property that lets a test arm points in this JVM after its start ({@link #arm}). */
    public static final String ARMABLE_PROPERTY = "millrace.fault.test";

    private static final Map<String, Arm> AT_START = parse(spec());
    private static final boolean ARMABLE = !AT_START.isEmpty() || Boolean.getBoolean(ARMABLE_PROPERTY);
    private static volatile Map<String, Arm> arms = AT_START;

    private Faults() {
    }

    /** What happens at an armed point. */
    public enum Action { CRASH, DELAY, FAIL }

    /** Thrown by an armed {@code fail} point. */
    public static final class InjectedFault extends RuntimeException {
        private static final long serialVersionUID = 1L;

        InjectedFault(String point, int hit) {
            super("injected fault at " + point + " (hit " + hit + ")");
        }
    }

    /** Points armed by {@link #arm}; closing restores what was armed before. */
    public interface Armed extends AutoCloseable {
        @Override
        void close();
    }

    private record Arm(String point, Action action, long arg, AtomicInteger hits) {
    }

    /** Marks the fault point {@code point}; does nothing unless armed. Any thread. */
    public static void hit(FaultPoint point) {
        if (ARMABLE) {
            fire(point.id());
        }
    }

    /** Whether any point is armed in this JVM. */
    public static boolean armed() {
        return ARMABLE && !arms.isEmpty();
    }

    /** Whether {@link #arm} may be used in this JVM (see {@link #ARMABLE_PROPERTY}). */
    public static boolean armable() {
        return ARMABLE;
    }

    /**
     * Arms {@code spec} (as {@code millrace.fault} reads it, hits counted from now) in place of what is armed, until
     * the returned handle is closed, which restores it. For tests in one JVM; one at a time.
     *
     * @throws IllegalStateException when the JVM was not started armable ({@link #ARMABLE_PROPERTY})
     */
    public static Armed arm(String spec) {
        if (!ARMABLE) {
            throw new IllegalStateException("fault points cannot be armed in this JVM: start it with -D" + ARMABLE_PROPERTY
                    + "=true (for Maven: surefire/failsafe systemPropertyVariables)");
        }
        Map<String, Arm> before = arms;
        arms = parse(spec.strip());
        return () -> arms = before;
    }

    private static void fire(String point) {
        Arm a = arms.get(point);
        if (a == null) {
            return;
        }
        int n = a.hits().incrementAndGet();
        switch (a.action()) {
            case CRASH -> {
                if (n == a.arg()) {
                    System.err.println(new FaultPoint(point).crashLine(n));
                    System.err.flush();
                    Runtime.getRuntime().halt(CRASH_EXIT);
                }
            }
            case FAIL -> {
                if (n == a.arg()) {
                    throw new InjectedFault(point, n);
                }
            }
            case DELAY -> {
                try {
                    Thread.sleep(a.arg());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    private static String spec() {
        String s = System.getProperty("millrace.fault");
        if (s == null) {
            s = System.getenv("MILLRACE_FAULT");
        }
        return s == null ? "" : s.strip();
    }

    /**
     * Parses {@code point:action[:arg],...}. A malformed entry stops the JVM's start of Millrace with
     * an {@link IllegalArgumentException}: a test that thinks it armed a point must not run unarmed.
     */
    static Map<String, Arm> parse(String spec) {
        Map<String, Arm> out = new HashMap<>();
        if (spec.isEmpty()) {
            return out;
        }
        for (String entry : spec.split(",")) {
            String[] p = entry.strip().split(":");
            if (p.length < 2 || p.length > 3 || p[0].isBlank()) {
                throw new IllegalArgumentException("millrace.fault: '" + entry + "' is not point:action[:arg]"
                        + " (e.g. sink.postgres.after-commit:crash:3, source.before-feedback:delay:200)");
            }
            try {
                new FaultPoint(p[0].strip());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("millrace.fault: '" + entry + "': " + e.getMessage(), e);
            }
            Action action;
            try {
                action = Action.valueOf(p[1].strip().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("millrace.fault: unknown action '" + p[1] + "' in '" + entry
                        + "' (crash, delay or fail)", e);
            }
            long arg;
            try {
                arg = p.length == 3 ? Long.parseLong(p[2].strip()) : (action == Action.DELAY ? 100 : 1);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("millrace.fault: '" + p[2] + "' in '" + entry + "' is not a number", e);
            }
            if (arg < (action == Action.DELAY ? 0 : 1)) {
                throw new IllegalArgumentException("millrace.fault: '" + entry + "': the hit number starts at 1");
            }
            out.put(p[0].strip(), new Arm(p[0].strip(), action, arg, new AtomicInteger()));
        }
        return Map.copyOf(out);
    }
}
