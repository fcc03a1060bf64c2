package io.millrace.ops;

import io.millrace.engine.EngineStatus;
import io.millrace.engine.config.EngineConfig;

import java.util.List;
import java.util.function.LongSupplier;

/**
 * The answers of {@code /healthz} (liveness) and {@code /readyz} (readiness) for orchestrators, decided from the
 * engine's status alone.
 *
 * <p><b>Live</b> unless the engine failed or stopped, or it is stuck: it has work — WAL between the source's position
 * and the durable one, a snapshot or online copy under way, bytes in flight — and none of its progress figures (durable
 * position, events written, rows copied, bytes in flight, online chunks read) moved for {@code live_max_stall_s}. An
 * engine waiting to retry after a transient failure is live: restarting the process would not help it. <b>Ready</b>
 * while it streams (the initial snapshot has landed and the reader holds the slot) within {@code ready_max_lag_s} and
 * {@code ready_max_lag_mb}, with no table still being copied (an initial snapshot continued online after a restart) and
 * no re-copy after a lost slot under way; an unknown lag (no sample yet, no change delivered yet) does not count
 * against it.
 *
 * <p>Threads: {@link #observe} from the status sampler once a second and from requests; all methods synchronized.
 */
final class Health {
    /** One answer: HTTP 200 when {@code ok}, else 503, with the reason. */
    record Answer(boolean ok, String state, String reason, long lagMillis, long lagBytes) {
    }

    private final EngineConfig.Health bounds;
    private final LongSupplier millis;
    // @GuardedBy("this")
    private List<Object> progress;
    // @GuardedBy("this")
    private long progressAt;

    Health(EngineConfig.Health bounds, LongSupplier millis) {
        this.bounds = bounds;
        this.millis = millis;
        this.progressAt = millis.getAsLong();
    }

    /** Notes the engine's progress figures: a change, or nothing to do, resets the stall clock. */
    synchronized void observe(EngineStatus s) {
        List<Object> now = figures(s);
        if (!now.equals(progress) || work(s) == null) {
            progress = now;
            progressAt = millis.getAsLong();
        }
    }

    synchronized Answer liveness(EngineStatus s) {
        observe(s);
        switch (s.state()) {
            case "failed" -> {
                return answer(false, s, "the engine failed: " + s.lastError());
            }
            case "stopped" -> {
                return answer(false, s, "the engine has stopped");
            }
            case "retrying" -> {
                return answer(true, s, s.lastError());
            }
            default -> {
                long stalled = millis.getAsLong() - progressAt;
                String work = work(s);
                if (bounds.liveMaxStallMillis() > 0 && work != null && stalled >= bounds.liveMaxStallMillis()) {
                    return answer(false, s, "stuck: no progress for " + stalled / 1000 + " s (operations.live_max_stall_s: "
                            + bounds.liveMaxStallMillis() / 1000 + ") with " + work);
                }
                return answer(true, s, s.state() + (work == null ? "" : ", " + work));
            }
        }
    }

    synchronized Answer readiness(EngineStatus s) {
        observe(s);
        if (!"streaming".equals(s.state())) {
            return answer(false, s, "not streaming: the engine is " + s.state() + (s.lastError() == null ? "" : " (" + s.lastError() + ")"));
        }
        // Streaming is not enough: an initial snapshot interrupted and continued online, or a re-copy after a lost slot,
        // leaves the destinations without rows until it lands (before, /readyz said 200 there, found by a user).
        List<String> copying = s.tables().stream().filter(t -> t.phase().equals("waiting") || t.phase().equals("snapshot"))
                .map(EngineStatus.Table::table).toList();
        if (!copying.isEmpty()) {
            return answer(false, s, "the destinations do not hold every row yet: " + copying.size() + " table(s) still being copied ("
                    + String.join(", ", copying.subList(0, Math.min(3, copying.size()))) + (copying.size() > 3 ? ", ..." : "") + ")");
        }
        if (s.slotLost() != null && "reconciling".equals(s.slotLost().action())) {
            return answer(false, s, "the destinations are being reconciled after the slot was lost: " + s.slotLost().reconciling().size()
                    + " table(s) copied again");
        }
        if (s.lagMillis() > bounds.readyMaxLagMillis()) {
            return answer(false, s, "lag " + s.lagMillis() + " ms exceeds operations.ready_max_lag_s (" + bounds.readyMaxLagMillis() / 1000 + " s)");
        }
        if (bounds.readyMaxLagBytes() > 0 && s.lagBytes() > bounds.readyMaxLagBytes()) {
            return answer(false, s, "lag " + s.lagBytes() + " bytes of WAL exceeds operations.ready_max_lag_mb (" + (bounds.readyMaxLagBytes() >> 20)
                    + " MiB)");
        }
        return answer(true, s, "streaming within the lag bounds");
    }

    private static Answer answer(boolean ok, EngineStatus s, String reason) {
        return new Answer(ok, s.state(), reason, s.lagMillis(), s.lagBytes());
    }

    /** What the engine has to do now, or null when nothing. */
    private static String work(EngineStatus s) {
        if ("snapshotting".equals(s.state())) {
            return "a snapshot under way";
        }
        if (s.online() != null && !s.online().paused() && !s.online().tasks().isEmpty()) {
            return "online snapshots under way";
        }
        if (s.lagBytes() > 0) {
            return s.lagBytes() + " bytes of WAL to read";
        }
        if (s.budgetUsed() > 0) {
            return s.budgetUsed() + " bytes in flight";
        }
        return null;
    }

    private static List<Object> figures(EngineStatus s) {
        long copied = s.tables().stream().mapToLong(EngineStatus.Table::rowsCopied).sum();
        return List.of(s.state(), String.valueOf(s.durableLsn()), s.eventsWritten(), copied, s.budgetUsed(),
                s.online() == null ? 0L : s.online().chunksRead());
    }
}
