package io.millrace.pipeline;

import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.sink.Sink;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

/** A transactional test destination that keeps every event it is given, in order, and starts without a checkpoint. */
public final class Collected implements Sink {
    public final List<ChangeEvent> events = Collections.synchronizedList(new ArrayList<>());

    @Override
    public String name() {
        return "rows";
    }

    @Override
    public boolean transactional() {
        return true;
    }

    @Override
    public Optional<Checkpoint> open() {
        return Optional.empty();
    }

    @Override
    public void write(List<ChangeEvent> batch, Checkpoint checkpoint) {
        events.addAll(batch);
    }

    @Override
    public void close() {
    }
}
