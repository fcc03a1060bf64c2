package io.millrace.sinkkit;

import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.schema.TableRef;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@link SinkContract} for a destination that holds the events (a log, a topic): per table, the events it holds
 * are the written ones in list order, each once; where a repeat is allowed (an at-least-once sink after a fault), a
 * repeat is one that a consumer dropping every event not after the last it processed recognises, of a change the
 * {@link Repeats} allow. An unchanged TOAST value is Debezium's placeholder (docs/EVENTS.md).
 */
public abstract class EventSinkContract extends SinkContract {

    /**
     * The events {@code destination} holds, in the order it holds them at least per table (a topic per table keeps
     * order only within itself). {@link Recorded#fromEnvelope} reads a Debezium-compatible envelope; tombstones and
     * other records that are not events are left out.
     */
    protected abstract List<Recorded> recorded(String destination);

    @Override
    protected void assertHolds(String destination, List<ChangeEvent> written, Repeats repeats) {
        Map<TableRef, List<Recorded>> expected = byTable(written.stream().map(Recorded::of).toList());
        Map<TableRef, List<Recorded>> held = byTable(recorded(destination));
        assertThat(held.keySet()).as("destination %s: the tables it holds events of", destination)
                .containsExactlyInAnyOrderElementsOf(expected.keySet());
        for (Map.Entry<TableRef, List<Recorded>> t : held.entrySet()) {
            List<Recorded> once = new ArrayList<>();
            Position last = null;
            for (Recorded r : t.getValue()) {
                if (last != null && !r.position().isAfter(last)) {
                    assertThat(repeats.allow(r.position())).as("destination %s, %s: %s is repeated (or out of order); allowed: %s",
                            destination, t.getKey(), r, repeats).isTrue();
                    continue;
                }
                once.add(r);
                last = r.position();
            }
            assertThat(once).as("destination %s, %s: the events, each once, in order", destination, t.getKey())
                    .containsExactlyElementsOf(expected.get(t.getKey()));
        }
    }

    private static Map<TableRef, List<Recorded>> byTable(List<Recorded> events) {
        Map<TableRef, List<Recorded>> out = new LinkedHashMap<>();
        for (Recorded r : events) {
            out.computeIfAbsent(r.table(), k -> new ArrayList<>()).add(r);
        }
        return out;
    }
}
