package io.millrace.core.sink;

import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Discards every event: for measuring the engine without a destination's cost (benchmarks). Its
 * checkpoint lives in memory only, so a restart starts afresh; never use it for real data.
 */
public final class NullSink implements Sink {
    private final String name;
    private final AtomicLong events = new AtomicLong();

    public NullSink(String name) {
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public boolean transactional() {
        return false;
    }

    @Override
    public Optional<Checkpoint> open() {
        return Optional.empty();
    }

    @Override
    public void write(List<ChangeEvent> batch, Checkpoint checkpoint) {
        events.addAndGet(batch.size());
    }

    public long events() {
        return events.get();
    }

    @Override
    public void close() {
    }
}
