package io.millrace.pipeline;

/** The seed of a randomized stress test: {@code -Dstress.seed=N} replays a run; otherwise a new one, printed. */
final class StressSeed {
    private StressSeed() {
    }

    static long of(String test) {
        String fixed = System.getProperty("stress.seed");
        long seed = fixed != null ? Long.parseLong(fixed) : java.util.concurrent.ThreadLocalRandom.current().nextLong();
        System.out.println(test + ": stress seed " + seed + " (replay with -Dstress.seed=" + seed + ")");
        return seed;
    }
}
