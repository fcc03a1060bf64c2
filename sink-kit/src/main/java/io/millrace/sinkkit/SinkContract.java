package io.millrace.sinkkit;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.fault.Faults;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.Sink;
import io.millrace.testkit.Events;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInfo;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.stream.Stream;

import static io.millrace.testkit.Events.INT4;
import static io.millrace.testkit.Events.TEXT;
import static io.millrace.testkit.Events.TOAST;
import static io.millrace.testkit.Events.col;
import static io.millrace.testkit.Events.key;
import static io.millrace.testkit.Events.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

/**
 * The contract every destination keeps (see {@link Sink}), as JUnit 5 cases. A sink's test extends
 * {@link TableSinkContract} (a destination that holds tables) or {@link EventSinkContract} (one that holds the events),
 * supplying {@link #newSink}, a fresh sink over a destination it can reopen, and a way to read back what the
 * destination holds. Each case uses a destination name and tables of its own ({@code public.ct_<case>}), and reads the
 * destination back only after closing its sink.
 *
 * <p>The cases:
 * <ul>
 *   <li><b>order</b> (INV: ORDER): inserts, updates and deletes of the same keys, in one batch and across batches,
 *       land as applied in list order;</li>
 *   <li><b>checkpoint</b> (INV: RESUME): {@code open()} returns nothing for a new destination, then the checkpoint
 *       last written, also after a write of no events;</li>
 *   <li><b>identity</b> (INV: IDENTITY): the checkpoint comes back with the identity it was written with, so that the
 *       engine refuses it for another pipeline (system id, slot, ...); another destination name does not see it;</li>
 *   <li><b>a fault in write</b> at each of {@link #faultPoints()} (armed with {@link Faults#arm}, {@code fail}): after
 *       the sink is closed and a new one opened, the batch is written again from the checkpoint {@code open()} returns,
 *       as the engine does. A {@linkplain Sink#transactional() transactional} sink then holds every change exactly
 *       once; an at-least-once one holds every change, and repeats only changes of the batch the fault cut (after
 *       the checkpoint {@code open()} returned), each where a consumer dropping every event not after the last it
 *       processed recognises it (INV: RESUME);</li>
 *   <li><b>truncate</b>: rows before a truncate are gone, rows after it stay;</li>
 *   <li><b>shape changes</b>: a column added, one dropped, one renamed (same type, same place), the table renamed
 *       (same oid, another name): the sink follows;</li>
 *   <li><b>unchanged TOAST</b>: an update carrying {@link io.millrace.core.types.UnchangedToast} keeps the stored
 *       value (a table destination) or carries Debezium's placeholder (an event destination, docs/EVENTS.md).</li>
 * </ul>
 *
 * <p>The fault cases need the test JVM started with {@code -Dmillrace.fault.test=true} (Maven: the
 * surefire/failsafe {@code systemPropertyVariables}); without it they fail and say so.
 */
public abstract class SinkContract {
    /** The source schema of the contract's tables. */
    public static final String SCHEMA = "public";

    /**
     * A new, unopened sink for the destination named {@code destination}. Called again with the same name, it reaches
     * the same destination (its checkpoint, its data); each name is a destination of its own.
     */
    protected abstract Sink newSink(String destination);

    /**
     * The fault points ({@link Faults#hit}) a {@link Sink#write} of this sink passes, e.g.
     * {@link FaultPoint#SINK_POSTGRES_BEFORE_COMMIT}. None by default.
     */
    protected List<FaultPoint> faultPoints() {
        return List.of();
    }

    /**
     * Checks that {@code destination}, its sink closed, holds what {@code written} (each change once, in list order)
     * leaves; {@code repeats} says which changes it may also hold again.
     */
    protected abstract void assertHolds(String destination, List<ChangeEvent> written, Repeats repeats);

    /**
     * The changes an at-least-once destination may hold twice: those after {@code after} (the checkpoint {@code open()}
     * returned after a fault) and at or before {@code upTo} (the end of the batch the fault cut, written again).
     */
    public record Repeats(Position after, Position upTo) {
        /** No change twice (exactly once). */
        public static final Repeats NONE = new Repeats(Position.START, Position.START);

        public boolean allow(Position p) {
            return p.isAfter(after) && !p.isAfter(upTo);
        }
    }

    /** The relation of a contract table {@code (id int4 key, name text, qty int4)}. */
    protected static RelationInfo table(String name) {
        return Events.rel(SCHEMA, "ct_" + name, 'd', key("id", INT4), col("name", TEXT), col("qty", INT4));
    }

    /** A table without a key (REPLICA IDENTITY NOTHING) {@code (id int4, name text)}: a row applied twice shows. */
    protected static RelationInfo keyless(String name) {
        return Events.rel(SCHEMA, "ct_" + name + "_log", 'n', col("id", INT4), col("name", TEXT));
    }

    // ---- the cases ----

    @Test
    void order() {
        Run run = new Run("order");
        RelationInfo t = table("order");
        Events ev = run.ev;
        run.open();
        run.write(ev.insert(t, row(1, "a", 1)), ev.insert(t, row(2, "b", 2)), ev.update(t, row(1, "a2", 10)),
                ev.insert(t, row(3, "c", 3)), ev.delete(t, Events.keyImage(t, 3)));
        run.write(ev.delete(t, Events.keyImage(t, 2)), ev.insert(t, row(2, "b2", 20)), ev.update(t, row(2, "b3", 21)),
                ev.insert(t, row(3, "c2", 30)));
        run.write(ev.update(t, row(3, "c3", 31)), ev.update(t, row(3, "c4", 32)), ev.delete(t, Events.keyImage(t, 1)),
                ev.insert(t, row(4, null, null)));
        RelationInfo log = keyless("order");
        run.write(ev.insert(log, row(1, "a")), ev.insert(t, row(5, "e", 5)), ev.insert(log, row(1, "a")), ev.insert(log, row(2, null)));
        run.close();
        assertHolds(run.destination, run.written, Repeats.NONE);
    }

    @Test
    void checkpointReturnedOnOpenIsTheLastWritten() {
        Run run = new Run("checkpoint");
        RelationInfo t = table("checkpoint");
        assertThat(run.open()).as("a new destination has no checkpoint").isEmpty();
        run.write(run.ev.insert(t, row(1, "a", 1)));
        run.close();
        Checkpoint first = run.last;
        assertThat(run.open()).as("open() after one write").contains(first);
        Checkpoint held = Events.checkpoint(Events.identity(run.destination), Lsn.of(0x2000), new Position(Lsn.of(0x2000), 1))
                .withTables(new TreeMap<>(Map.of(t.oid(), t.table())));
        run.sink.write(List.of(), held);
        run.close();
        assertThat(run.open()).as("open() after a write of no events: the checkpoint alone advances").contains(held);
        run.close();
        assertHolds(run.destination, run.written, Repeats.NONE);
    }

    @Test
    void checkpointKeepsItsIdentity() {
        Run run = new Run("identity");
        RelationInfo t = table("identity");
        run.open();
        run.write(run.ev.insert(t, row(1, "a", 1)));
        run.close();
        Checkpoint stored = run.open().orElseThrow();
        run.close();
        Identity ours = Events.identity(run.destination);
        assertThat(stored.identity()).isEqualTo(ours);
        assertThat(ours.difference(stored.identity())).isNull();
        Identity otherSystem = new Identity("7300000000000000999", ours.database(), ours.slot(), ours.publication(), ours.destination());
        assertThat(otherSystem.difference(stored.identity())).as("another source would refuse it")
                .contains("source system identifier " + Events.SYSTEM_ID);
        Identity otherSlot = new Identity(ours.systemId(), ours.database(), "other_slot", ours.publication(), ours.destination());
        assertThat(otherSlot.difference(stored.identity())).as("another slot would refuse it").contains("slot 'millrace'");
        try (Sink other = newSink(run.destination + "_other")) {
            assertThat(other.open()).as("another destination does not see this one's checkpoint").isEmpty();
        }
    }

    @TestFactory
    Stream<DynamicTest> faultInWrite() {
        return faultPoints().stream().map(point -> DynamicTest.dynamicTest(point.id(), () -> faultAt(point)));
    }

    private void faultAt(FaultPoint point) {
        if (!Faults.armable()) {
            fail("the fault cases need -D" + Faults.ARMABLE_PROPERTY + "=true in the test JVM (surefire/failsafe systemPropertyVariables)");
        }
        Run run = new Run("fault_" + point.id().replaceAll("[^A-Za-z0-9]", "_"));
        String name = "fault_" + Integer.toHexString(point.id().hashCode());
        RelationInfo t = table(name);
        RelationInfo log = keyless(name);
        Events ev = run.ev;
        run.open();
        run.write(ev.insert(t, row(1, "a", 1)), ev.insert(t, row(2, "b", 2)), ev.insert(log, row(1, "a")));
        Checkpoint before = run.last;
        List<ChangeEvent> batch = List.of(ev.update(t, row(1, "a2", 11)), ev.delete(t, Events.keyImage(t, 2)),
                ev.insert(log, row(2, "b")), ev.insert(t, row(3, "c", 3)), ev.insert(log, row(3, "c")));
        Checkpoint after = ev.checkpoint(run.destination);
        try (Faults.Armed armed = Faults.arm(point.id() + ":fail:1")) {
            assertThatThrownBy(() -> run.sink.write(batch, after)).as("write() reaches fault point " + point)
                    .hasStackTraceContaining("injected fault at " + point);
        }
        run.close(); // the sink ends here, as a crash at the point would end it
        Checkpoint durable = run.open().orElseThrow(() -> new AssertionError("no checkpoint after a fault at " + point));
        assertThat(durable).as("the checkpoint after a fault at " + point + ": the one before the batch or the batch's")
                .isIn(before, after);
        List<ChangeEvent> again = batch.stream().filter(e -> e.position().isAfter(durable.applied())).toList();
        run.sink.write(again, after);
        run.written.addAll(batch);
        run.close();
        assertThat(run.open()).contains(after);
        run.close();
        assertHolds(run.destination, run.written, run.transactional ? Repeats.NONE : new Repeats(durable.applied(), after.applied()));
    }

    @Test
    void truncate() {
        Run run = new Run("truncate");
        RelationInfo t = table("truncate");
        Events ev = run.ev;
        run.open();
        run.write(ev.insert(t, row(1, "a", 1)), ev.insert(t, row(2, "b", 2)));
        run.write(ev.update(t, row(2, "b2", 2)), ev.truncate(t), ev.insert(t, row(3, "c", 3)));
        run.write(ev.truncate(t));
        run.write(ev.insert(t, row(4, "d", 4)), ev.insert(t, row(1, "a2", 5)));
        run.close();
        assertHolds(run.destination, run.written, Repeats.NONE);
    }

    @Test
    void shapeChanges() {
        Run run = new Run("shape");
        RelationInfo v1 = table("shape");
        RelationInfo v2 = Events.reshape(v1, key("id", INT4), col("name", TEXT), col("qty", INT4), col("note", TEXT));
        RelationInfo v3 = Events.reshape(v2, key("id", INT4), col("qty", INT4), col("note", TEXT));
        RelationInfo v4 = Events.reshape(v3, key("id", INT4), col("amount", INT4), col("note", TEXT));
        Events ev = run.ev;
        run.open();
        run.write(ev.insert(v1, row(1, "a", 1)), ev.insert(v1, row(2, "b", 2)));
        run.write(ev.insert(v2, row(3, "c", 3, "added")), ev.update(v2, row(1, "a2", 10, "one")));
        run.write(ev.insert(v3, row(4, 4, "dropped name")), ev.update(v3, row(2, 20, null)));
        run.write(ev.insert(v4, row(5, 5, "renamed qty")), ev.update(v4, row(3, 30, "c2")));
        run.close();
        assertHolds(run.destination, run.written, Repeats.NONE);
    }

    /**
     * A source table renamed ({@code ALTER TABLE … RENAME}: the same oid under another name, which the checkpoint's
     * {@link Checkpoint#tables()} follows): the destination follows it, its rows and changes under the new name.
     */
    @Test
    void tableRenamed() {
        Run run = new Run("table_rename");
        RelationInfo before = table("rename_before");
        RelationInfo after = Events.renamed(before, new TableRef(SCHEMA, "ct_rename_after"));
        Events ev = run.ev;
        run.open();
        run.held.put(before.oid(), before.table());
        run.write(ev.insert(before, row(1, "a", 1)), ev.insert(before, row(2, "b", 2)));
        run.held.put(after.oid(), after.table());
        run.write(ev.update(after, row(1, "a2", 10)), ev.insert(after, row(3, "c", 3)));
        run.close();
        assertThat(run.open()).map(Checkpoint::tables).contains(new TreeMap<>(Map.of(after.oid(), after.table())));
        run.close();
        assertHolds(run.destination, run.written, Repeats.NONE);
    }

    @Test
    void unchangedToastKeepsTheStoredValue() {
        Run run = new Run("toast");
        RelationInfo t = table("toast");
        Events ev = run.ev;
        String big = "x".repeat(10_000);
        run.open();
        run.write(ev.insert(t, row(1, big, 1)), ev.insert(t, row(2, "small", 2)));
        run.write(ev.update(t, row(1, TOAST, 2)), ev.update(t, row(2, TOAST, 3)));
        run.write(ev.update(t, row(1, TOAST, 3)));
        run.close();
        assertHolds(run.destination, run.written, Repeats.NONE);
    }

    /** One case's destination: its sink, the events written to it, the checkpoint last written. */
    private final class Run {
        final String destination;
        final Events ev = new Events();
        final List<ChangeEvent> written = new ArrayList<>();
        /** The source tables the checkpoints say the destination holds (by oid), as the engine follows them. */
        final SortedMap<Integer, TableRef> held = new TreeMap<>();
        Sink sink;
        boolean transactional;
        Checkpoint last;

        Run(String name) {
            this.destination = "ct_" + name;
        }

        Optional<Checkpoint> open() {
            sink = newSink(destination);
            transactional = sink.transactional();
            return sink.open();
        }

        void write(ChangeEvent... events) {
            last = ev.checkpoint(destination).withTables(held);
            sink.write(List.of(events), last);
            written.addAll(List.of(events));
        }

        void close() {
            sink.close();
        }
    }
}
