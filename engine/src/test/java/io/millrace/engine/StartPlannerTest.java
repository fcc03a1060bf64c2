package io.millrace.engine;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.Position;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.change.OnlineTask;
import io.millrace.core.change.SnapshotProgress;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.Codecs;
import io.millrace.engine.StartPlanner.Destination;
import io.millrace.engine.StartPlanner.Facts;
import io.millrace.engine.StartPlanner.Slot;
import io.millrace.engine.config.EngineConfig.SnapshotMode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link StartPlanner} as a decision table: each row names the situation (and the integration test that meets it
 * against a real server), the facts, and the plan. Refusals are checked word for word: the CLI prints them.
 */
class StartPlannerTest {
    private static final String SYS = "7300000000000000001";
    private static final Lsn CP = Lsn.of(0x1_0000_0000L);
    private static final RelationInfo A = rel("a", true);
    private static final RelationInfo B = rel("b", true);
    private static final RelationInfo KEYLESS = rel("keyless", false);
    /** A table created under b's name after b was dropped: another oid. */
    private static final RelationInfo NEW_B = new RelationInfo(B.oid() + 7, B.table(), 'd', B.columns(), TypeResolver.builtinsOnly());
    private static final TableRef SIGNAL = new TableRef("public", "signals");

    private static RelationInfo rel(String name, boolean key) {
        return new RelationInfo(16384 + name.hashCode() % 1000, new TableRef("public", name), key ? 'd' : 'f',
                List.of(new ColumnInfo("id", Codecs.builtin(23), -1, key), new ColumnInfo("v", Codecs.builtin(25), -1, false)),
                TypeResolver.builtinsOnly());
    }

    private static Identity id(String destination) {
        return new Identity(SYS, "src", "s1", "p1", destination);
    }

    /** A checkpoint streaming at {@code lsn}, snapshot done. */
    private static Checkpoint streaming(String destination, long lsn) {
        return new Checkpoint(Checkpoint.VERSION, id(destination), Lsn.of(lsn), new Position(Lsn.of(lsn), 0),
                new SnapshotProgress(SnapshotProgress.State.DONE, CP, List.of()));
    }

    /** A checkpoint streaming at 100 holding a and b, both written under {@code rule}. */
    private static Checkpoint ruled(String destination, String rule) {
        return streaming(destination, 100).withTables(new java.util.TreeMap<>(java.util.Map.of(A.oid(), A.table(), B.oid(), B.table())))
                .withRules(new java.util.TreeMap<>(java.util.Map.of(A.oid(), rule, B.oid(), rule)));
    }

    /** A masked column in a rule's stamp ({@link io.millrace.engine.transform.Transforms#fingerprint}'s masks part). */
    private static String masked(String column, String maskMark) {
        return io.millrace.engine.transform.Transforms.nameMark(column) + ":" + maskMark;
    }

    private static final String KEY_MASK_CHANGED = "config: the transforms of public.a changed while Millrace was stopped, and so did the"
            + " mask of its key column 'id' (a mask added, taken away or changed, or the salt of its hash): the destinations hold its"
            + " rows under the keys they have, and a copy cannot re-key them (each row would be there twice, the old keys as they"
            + " were). Fix: put the rule and the salt back as they were, or start over with empty destinations (millrace reset"
            + " CONFIG --data drop, then run)";

    /** The claim a fresh start writes before it creates the slot: RUNNING at 0/0. */
    private static Checkpoint claim(String destination) {
        return new Checkpoint(Checkpoint.VERSION, id(destination), Lsn.ZERO, Position.START,
                new SnapshotProgress(SnapshotProgress.State.RUNNING, Lsn.ZERO, List.of()));
    }

    /** A snapshot under way at consistent point {@code cp}, {@code done} landed. */
    private static Checkpoint copying(String destination, Lsn cp, String... done) {
        return new Checkpoint(Checkpoint.VERSION, id(destination), cp, Position.START,
                new SnapshotProgress(SnapshotProgress.State.RUNNING, cp, java.util.Arrays.stream(done).map(TableRef::parse).toList()));
    }

    private static Destination dest(String name, Checkpoint cp) {
        return new Destination(name, id(name), Optional.ofNullable(cp));
    }

    private static final Slot NO_SLOT = new Slot("s1", false, null, null);

    private static Slot slot(Lsn confirmed, Integer pid) {
        return new Slot("s1", true, confirmed, pid);
    }

    /** A slot invalidated by the server ({@code wal_status = lost}). */
    private static Slot lost() {
        return new Slot("s1", true, Lsn.of(100), null, true);
    }

    /** A checkpoint at {@code lsn} marked REPLACING (a replacement of the lost slot under way), a reconciling task for a and b. */
    private static Checkpoint replacing(String destination, long lsn) {
        return streaming(destination, lsn).withOnline(List.of(OnlineTask.reconciling(A), OnlineTask.reconciling(B)))
                .withSlotLost(new Checkpoint.SlotLost(Checkpoint.SlotLost.State.REPLACING, Lsn.of(lsn), Lsn.ZERO,
                        "slot 's1' was invalidated (wal_status = lost): x", 1));
    }

    /** A checkpoint re-bound to a new slot at {@code lsn}, the copy of a still reconciling. */
    private static Checkpoint replaced(String destination, long lsn) {
        return streaming(destination, lsn).withOnline(List.of(OnlineTask.reconciling(A)))
                .withSlotLost(new Checkpoint.SlotLost(Checkpoint.SlotLost.State.REPLACED, Lsn.of(50), Lsn.of(lsn), "x", 1));
    }

    /** Facts of a first start: two destinations without checkpoints, no slot, publication exists with a and b, PG 16. */
    private static Facts base() {
        return new Facts(List.of(dest("replica", null), dest("events", null)), NO_SLOT, 160000, SnapshotMode.INITIAL,
                List.of(A, B), true, List.of(), null, false);
    }

    private static Facts with(UnaryOperator<Builder> change) {
        return change.apply(new Builder(base())).build();
    }

    /** Rewrites one fact at a time. */
    private static final class Builder {
        List<Destination> destinations;
        Slot slot;
        int version;
        SnapshotMode mode;
        List<RelationInfo> tables;
        boolean publicationExists;
        List<TableRef> unpublished;
        TableRef signal;
        boolean signalPublished;
        io.millrace.source.SourceConfig.OnSlotLost onSlotLost = io.millrace.source.SourceConfig.OnSlotLost.STOP;
        java.util.Map<Integer, String> rules = java.util.Map.of();
        java.util.Map<TableRef, String> ruleOfNames = java.util.Map.of();
        java.util.Map<Integer, String> keyMasked = java.util.Map.of();

        Builder(Facts f) {
            destinations = f.destinations();
            slot = f.slot();
            version = f.serverVersion();
            mode = f.mode();
            tables = f.tables();
            publicationExists = f.publicationExists();
            unpublished = f.unpublished();
            signal = f.signalTable();
            signalPublished = f.signalPublished();
        }

        Builder checkpoints(Checkpoint replica, Checkpoint events) {
            destinations = List.of(dest("replica", replica), dest("events", events));
            return this;
        }

        /** The rule every table reaches the destinations under now. */
        Builder rules(String rule) {
            rules = java.util.Map.of(A.oid(), rule, B.oid(), rule);
            return this;
        }

        /** Table a's rule masks its key column id now. */
        Builder keyMasked() {
            keyMasked = java.util.Map.of(A.oid(), "id");
            return this;
        }

        /** The rule a table named {@code t} would reach them under now. */
        Builder ruleOf(TableRef t, String rule) {
            ruleOfNames = java.util.Map.of(t, rule);
            return this;
        }

        Builder resnapshot() {
            onSlotLost = io.millrace.source.SourceConfig.OnSlotLost.RESNAPSHOT;
            return this;
        }

        Builder slot(Slot s) {
            slot = s;
            return this;
        }

        Builder version(int v) {
            version = v;
            return this;
        }

        Builder mode(SnapshotMode m) {
            mode = m;
            return this;
        }

        Builder tables(RelationInfo... t) {
            tables = List.of(t);
            return this;
        }

        Builder noPublication() {
            publicationExists = false;
            return this;
        }

        Builder unpublished(TableRef... t) {
            unpublished = List.of(t);
            return this;
        }

        Builder signal(boolean published) {
            signal = SIGNAL;
            signalPublished = published;
            return this;
        }

        Builder foreign(String name, Checkpoint cp) {
            destinations = List.of(new Destination(name, id(name), Optional.of(cp)), dest("events", null));
            return this;
        }

        Facts build() {
            return new Facts(destinations, slot, version, mode, tables, publicationExists, unpublished, signal, signalPublished,
                    onSlotLost, rules, t -> ruleOfNames.get(t), keyMasked);
        }
    }

    record Row(String name, Facts facts, Consumer<StartPlan> expect) {
        @Override
        public String toString() {
            return name;
        }
    }

    private static Row row(String name, Facts facts, Consumer<StartPlan> expect) {
        return new Row(name, facts, expect);
    }

    private static Consumer<StartPlan> refused(Kind kind, String message) {
        return p -> {
            assertThat(p).isInstanceOf(StartPlan.Refuse.class);
            StartPlan.Refuse r = (StartPlan.Refuse) p;
            assertThat(r.kind()).isEqualTo(kind);
            assertThat(r.message()).isEqualTo(message);
            assertThat(r.error().getMessage()).isEqualTo(message);
        };
    }

    private static <T extends StartPlan> Consumer<StartPlan> is(Class<T> type, Consumer<T> more) {
        return p -> {
            assertThat(p).isInstanceOf(type);
            more.accept(type.cast(p));
        };
    }

    private static final String FOREIGN_FIX = " Resuming from it would skip or repeat changes. Point this pipeline at an empty"
            + " destination, or remove that destination's checkpoint to start over.";

    static Stream<Row> rows() {
        Checkpoint otherSystem = new Checkpoint(Checkpoint.VERSION, new Identity("7399", "src", "s1", "p1", "replica"), Lsn.of(100),
                Position.START, SnapshotProgress.skipped(CP));
        Checkpoint otherSlot = new Checkpoint(Checkpoint.VERSION, new Identity(SYS, "src", "orig2", "p1", "replica"), Lsn.of(100),
                Position.START, SnapshotProgress.skipped(CP));
        Checkpoint otherDestination = new Checkpoint(Checkpoint.VERSION, id("elsewhere"), Lsn.of(100), Position.START,
                SnapshotProgress.skipped(CP));
        return Stream.of(
                // --- first starts (SnapshotIT, E2e): no checkpoint anywhere
                row("first start: claim, create the slot, copy", base(), is(StartPlan.Fresh.class, f -> {
                    assertThat(f.snapshot()).isTrue();
                    assertThat(f.publication()).isEqualTo(StartPlan.Publication.NONE);
                })),
                row("first start, snapshot.mode never, no slot: create it, copy nothing (SnapshotModesIT)",
                        with(b -> b.mode(SnapshotMode.NEVER)), is(StartPlan.Fresh.class, f -> assertThat(f.snapshot()).isFalse())),
                row("first start, snapshot.mode initial_only: copy (and stop after it, in the engine)",
                        with(b -> b.mode(SnapshotMode.INITIAL_ONLY)), is(StartPlan.Fresh.class, f -> assertThat(f.snapshot()).isTrue())),
                row("first start without a publication: created for the tables and the signal table",
                        with(b -> b.noPublication().signal(false)), is(StartPlan.Fresh.class, f -> assertThat(f.publication())
                                .isEqualTo(new StartPlan.Publication(List.of(A.table(), B.table(), SIGNAL), List.of(), false)))),
                row("first start, the signal table missing from the existing publication: added",
                        with(b -> b.signal(false)), is(StartPlan.Fresh.class, f -> assertThat(f.publication().addSignal()).isTrue())),
                row("first start, the signal table already published: nothing to add",
                        with(b -> b.signal(true)), is(StartPlan.Fresh.class, f -> assertThat(f.publication()).isEqualTo(StartPlan.Publication.NONE))),
                row("first start, a slot nobody claimed: refused, it may be another pipeline's (BadInputIT)",
                        with(b -> b.slot(slot(Lsn.of(500), null))), refused(Kind.SOURCE_SETUP, "replication slot 's1' exists, but no"
                                + " destination holds a checkpoint of it, so it may belong to another pipeline. If it is left over from an"
                                + " earlier attempt of this one, drop it: SELECT pg_drop_replication_slot('s1'); to stream from it without"
                                + " copying the tables, set snapshot.mode: never; otherwise choose another source.slot")),
                row("first start, snapshot.mode never, a slot exists: stream from its confirmed position (SnapshotModesIT)",
                        with(b -> b.mode(SnapshotMode.NEVER).slot(slot(Lsn.of(500), null))),
                        is(StartPlan.AdoptSlot.class, a -> assertThat(a.from()).isEqualTo(Lsn.of(500)))),

                // --- identity (IdentityIT): checked before everything else
                row("a checkpoint of another source system: refused (IdentityIT)", with(b -> b.foreign("replica", otherSystem)),
                        refused(Kind.IDENTITY, "destination 'replica' holds a checkpoint of another pipeline: source system identifier 7399"
                                + " (this source is " + SYS + ")." + FOREIGN_FIX)),
                row("a checkpoint of another slot: refused even with a slot that exists (IdentityIT)",
                        with(b -> b.foreign("replica", otherSlot).slot(slot(Lsn.of(100), null))),
                        refused(Kind.IDENTITY, "destination 'replica' holds a checkpoint of another pipeline: slot 'orig2' (this pipeline"
                                + " uses 's1')." + FOREIGN_FIX)),
                row("a checkpoint another destination wrote (IdentityIT)", with(b -> b.foreign("replica", otherDestination)),
                        refused(Kind.IDENTITY, "destination 'replica' holds a checkpoint of another pipeline: destination 'elsewhere'"
                                + " (this is 'replica')." + FOREIGN_FIX)),

                // --- some destinations with a checkpoint, some without
                row("a destination added to a streaming pipeline: refused (SnapshotModesIT)",
                        with(b -> b.checkpoints(streaming("replica", 100), null).slot(slot(Lsn.of(100), null))),
                        refused(Kind.CONFIG, "some destinations have a checkpoint and some do not (replica: checkpoint, events: none)."
                                + " A destination added to a running pipeline would miss the changes before it; if a destination was not"
                                + " added but its checkpoint's place changed (a kafka destination's checkpoint_topic, a postgres"
                                + " destination's state_schema, a duckdb file, a jsonl directory), set it back; otherwise give the new destination"
                                + " a pipeline (and slot) of its own, or start all destinations afresh")),
                row("a crash between the first claims, before the slot: start over, nothing to drop (FirstStartCrashIT)",
                        with(b -> b.checkpoints(claim("replica"), null)),
                        is(StartPlan.RestartSnapshot.class, r -> assertThat(r.dropSlot()).isFalse())),
                row("a crash after the claims and the slot: drop it and start over (FirstStartCrashIT)",
                        with(b -> b.checkpoints(claim("replica"), claim("events")).slot(slot(Lsn.of(40), null))),
                        is(StartPlan.RestartSnapshot.class, r -> {
                            assertThat(r.dropSlot()).isTrue();
                            assertThat(r.snapshot()).isTrue();
                            assertThat(r.notOnline()).isNull();
                        })),

                // --- an interrupted snapshot
                row("snapshot interrupted, slot kept, keyed tables: landed tables stay, the rest online (InterruptedSnapshotIT)",
                        with(b -> b.checkpoints(copying("replica", CP, "public.a"), copying("events", CP, "public.a", "public.b"))
                                .slot(slot(CP, null))),
                        is(StartPlan.ResumeOnline.class, r -> {
                            assertThat(r.landed()).isEqualTo(1);
                            assertThat(r.left()).containsExactly(B.table());
                            assertThat(r.consistentPoint()).isEqualTo(CP);
                            assertThat(r.checkpoints()).allSatisfy(c -> {
                                assertThat(c.snapshot()).isEqualTo(new SnapshotProgress(SnapshotProgress.State.DONE, CP, List.of(TableRef.parse("public.a"))));
                                assertThat(c.online()).containsExactly(OnlineTask.whole(B));
                            });
                        })),
                row("snapshot interrupted, a landed table's rule changed while stopped (Ctrl-C in the first snapshot, a mask added):"
                                + " it is copied again, reconciling, beside the tables left",
                        with(b -> b.checkpoints(copying("replica", CP, "public.a").withTables(new java.util.TreeMap<>(java.util.Map.of(A.oid(),
                                A.table()))).withRules(new java.util.TreeMap<>(java.util.Map.of(A.oid(), "old"))),
                                copying("events", CP, "public.a")).slot(slot(CP, null)).rules("new")),
                        is(StartPlan.ResumeOnline.class, r -> assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online())
                                .containsExactlyInAnyOrder(OnlineTask.whole(B), OnlineTask.reconciling(A))))),
                row("snapshot interrupted, an unfinished table without a key: start over (SnapshotModesIT)",
                        with(b -> b.tables(A, KEYLESS).checkpoints(copying("replica", CP, "public.a"), copying("events", CP, "public.a"))
                                .slot(slot(CP, null))),
                        is(StartPlan.RestartSnapshot.class, r -> {
                            assertThat(r.dropSlot()).isTrue();
                            assertThat(r.notOnline()).isEqualTo("table public.keyless has no key, so it cannot be copied online: the"
                                    + " snapshot starts over");
                        })),
                row("snapshot interrupted on PostgreSQL 13: start over (no logical messages)",
                        with(b -> b.version(130000).checkpoints(copying("replica", CP), copying("events", CP)).slot(slot(CP, null))),
                        is(StartPlan.RestartSnapshot.class, r -> assertThat(r.dropSlot()).isTrue())),
                row("snapshot interrupted, destinations at different consistent points: start over",
                        with(b -> b.checkpoints(copying("replica", CP), copying("events", Lsn.of(7))).slot(slot(CP, null))),
                        is(StartPlan.RestartSnapshot.class, r -> assertThat(r.dropSlot()).isTrue())),
                row("snapshot interrupted and its slot gone: start over on a new one",
                        with(b -> b.checkpoints(copying("replica", CP), copying("events", CP))),
                        is(StartPlan.RestartSnapshot.class, r -> assertThat(r.dropSlot()).isFalse())),
                row("snapshot interrupted, now snapshot.mode never: a new slot, nothing copied",
                        with(b -> b.mode(SnapshotMode.NEVER).checkpoints(copying("replica", CP), copying("events", CP)).slot(slot(CP, null))),
                        is(StartPlan.RestartSnapshot.class, r -> {
                            assertThat(r.snapshot()).isFalse();
                            assertThat(r.dropSlot()).isTrue();
                        })),
                row("snapshot interrupted, slot confirmed past the consistent point: refused",
                        with(b -> b.checkpoints(copying("replica", CP), copying("events", CP)).slot(slot(Lsn.of(CP.value() + 8), null))),
                        p -> assertThat(((StartPlan.Refuse) p).kind()).isEqualTo(Kind.IDENTITY)),

                // --- restarts of a streaming pipeline (ResumeIT, NetworkFaultsIT, IdentityIT, AddTableIT)
                row("restart: resume at the lowest durable position (ResumeIT)",
                        with(b -> b.checkpoints(streaming("replica", 100), streaming("events", 90)).slot(slot(Lsn.of(90), null))),
                        is(StartPlan.Resume.class, r -> {
                            assertThat(r.checkpoints()).containsExactly(streaming("replica", 100), streaming("events", 90));
                            assertThat(r.publication()).isEqualTo(StartPlan.Publication.NONE);
                        })),
                row("restart, slot confirmed before the checkpoints: resume (the server replays from them)",
                        with(b -> b.checkpoints(streaming("replica", 100), streaming("events", 100)).slot(slot(Lsn.of(60), null))),
                        is(StartPlan.Resume.class, r -> {
                        })),
                row("restart, the slot dropped while stopped: refused, no silent re-copy (NetworkFaultsIT)",
                        with(b -> b.checkpoints(streaming("replica", 100), streaming("events", 100))),
                        refused(Kind.SOURCE_SETUP, "replication slot 's1' does not exist, but the destinations hold checkpoints: it was"
                                + " dropped (or the server was replaced) while Millrace was stopped, and changes since may be lost. Millrace"
                                + " does not re-copy silently: start again with empty destinations (millrace reset removes their checkpoints and empties their tables) to"
                                + " take a new snapshot, or set source.on_slot_lost: resnapshot to have Millrace create a new slot and copy"
                                + " every table again online, deleting the rows the source no longer has")),
                // --- a lost slot (SlotInvalidatedIT, SlotLostResnapshotIT)
                row("restart, the slot invalidated, on_slot_lost stop: refused, nothing written (SlotInvalidatedIT)",
                        with(b -> b.checkpoints(streaming("replica", 100), streaming("events", 100)).slot(lost())),
                        refused(Kind.SOURCE_SETUP, "slot 's1' was invalidated (wal_status = lost): the server removed WAL it still needed"
                                + " (max_slot_wal_keep_size); changes were lost for this slot: drop it (SELECT pg_drop_replication_slot('s1');)"
                                + " and start again with a fresh destination so the tables are copied anew, or set source.on_slot_lost:"
                                + " resnapshot")),
                row("restart, the slot invalidated, on_slot_lost resnapshot: replaced, every table re-copied reconciling (SlotLostResnapshotIT)",
                        with(b -> b.resnapshot().checkpoints(streaming("replica", 100), streaming("events", 90)).slot(lost())),
                        is(StartPlan.ReplaceSlot.class, r -> {
                            assertThat(r.dropSlot()).isTrue();
                            assertThat(r.again()).isFalse();
                            assertThat(r.replacing()).allSatisfy(c -> {
                                assertThat(c.online()).containsExactly(OnlineTask.reconciling(A), OnlineTask.reconciling(B));
                                assertThat(c.slotLost().state()).isEqualTo(Checkpoint.SlotLost.State.REPLACING);
                                assertThat(c.slotLost().count()).isEqualTo(1);
                                assertThat(c.slotLost().reason()).contains("wal_status = lost");
                            });
                            assertThat(r.replacing()).extracting(c -> c.slotLost().lostAt()).containsExactly(Lsn.of(100), Lsn.of(90));
                            assertThat(r.replacing()).extracting(Checkpoint::flushLsn).containsExactly(Lsn.of(100), Lsn.of(90));
                        })),
                row("restart, the slot dropped, on_slot_lost resnapshot: replaced, nothing to drop",
                        with(b -> b.resnapshot().checkpoints(streaming("replica", 100), streaming("events", 100))),
                        is(StartPlan.ReplaceSlot.class, r -> {
                            assertThat(r.dropSlot()).isFalse();
                            assertThat(r.reason()).contains("does not exist");
                        })),
                row("restart after a crash in a replacement: the new slot is confirmed past REPLACING checkpoints, replaced again"
                                + " (INV: IDENTITY; SlotLostResnapshotIT)",
                        with(b -> b.resnapshot().checkpoints(replacing("replica", 100), replacing("events", 100)).slot(slot(Lsn.of(900), null))),
                        is(StartPlan.ReplaceSlot.class, r -> {
                            assertThat(r.dropSlot()).isTrue();
                            assertThat(r.again()).isTrue();
                            assertThat(r.replacing()).allSatisfy(c -> assertThat(c.slotLost().count()).isEqualTo(1));
                        })),
                row("restart after a crash in a replacement, on_slot_lost changed to stop: refused",
                        with(b -> b.checkpoints(replacing("replica", 100), replacing("events", 100)).slot(slot(Lsn.of(900), null))),
                        refused(Kind.SOURCE_SETUP, "the replacement of lost slot 's1' was interrupted (slot 's1' was invalidated"
                                + " (wal_status = lost): x): set source.on_slot_lost: resnapshot to finish it, or start again with empty"
                                + " destinations")),
                row("restart after a replacement (REPLACED, the new slot where the checkpoints are): resume, the copy goes on",
                        with(b -> b.resnapshot().checkpoints(replaced("replica", 900), replaced("events", 900)).slot(slot(Lsn.of(900), null))),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online())
                                .containsExactly(OnlineTask.reconciling(A))))),
                row("restart, the slot invalidated, on_slot_lost resnapshot, a keyless table: refused",
                        with(b -> b.resnapshot().tables(A, KEYLESS).checkpoints(streaming("replica", 100), streaming("events", 100))
                                .slot(lost())),
                        refused(Kind.SOURCE_SETUP, "slot 's1' was invalidated (wal_status = lost): the server removed WAL it still needed"
                                + " (max_slot_wal_keep_size); source.on_slot_lost: resnapshot copies every table again online, in key order,"
                                + " and table public.keyless has no key: give it a primary key (or a replica identity index), or start"
                                + " again with empty destinations (millrace reset removes their checkpoints and empties their tables)")),
                row("restart, the slot invalidated, on_slot_lost resnapshot, PostgreSQL 13: refused",
                        with(b -> b.resnapshot().version(130000).checkpoints(streaming("replica", 100), streaming("events", 100))
                                .slot(lost())),
                        refused(Kind.SOURCE_SETUP, "slot 's1' was invalidated (wal_status = lost): the server removed WAL it still needed"
                                + " (max_slot_wal_keep_size); source.on_slot_lost: resnapshot copies the tables again online, which needs"
                                + " PostgreSQL 14 or newer (this server is 130000): start again with empty destinations (millrace reset removes their"
                                + " checkpoints and empties their tables) to take a new snapshot")),
                row("restart, the slot confirmed past the checkpoints: refused (IdentityIT)",
                        with(b -> b.checkpoints(streaming("replica", 100), streaming("events", 90)).slot(slot(Lsn.of(200), null))),
                        refused(Kind.IDENTITY, "replication slot 's1' is confirmed up to 0/C8, past the destinations' checkpoint 0/5A: the"
                                + " slot was re-created or advanced by another process (another pipeline with the same source.slot?) while"
                                + " Millrace was stopped, and the changes between the two are no longer in it. Millrace does not skip them"
                                + " silently: give each pipeline its own source.slot, and start this one again with empty destinations"
                                + " (millrace reset removes their checkpoints and empties their tables) to take a new snapshot")),
                row("restart beside a running pipeline that moved the slot: in use, not identity (BadInputIT)",
                        with(b -> b.checkpoints(streaming("replica", 100), streaming("events", 100)).slot(slot(Lsn.of(200), 4242))),
                        refused(Kind.SLOT_IN_USE, "slot 's1' is in use by process 4242 (another Millrace or replication client). Fix: stop"
                                + " that process (SELECT pg_terminate_backend(4242);) or choose another source.slot")),
                row("restart with a table added to source.tables: recorded as an online task, then published (AddTableIT)",
                        with(b -> b.checkpoints(streaming("replica", 100), streaming("events", 100)).slot(slot(Lsn.of(100), null))
                                .unpublished(B.table())),
                        is(StartPlan.Resume.class, r -> {
                            assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online()).containsExactly(OnlineTask.whole(B)));
                            assertThat(r.publication()).isEqualTo(new StartPlan.Publication(null, List.of(B), false));
                        })),
                row("restart with a table a destination holds taken out of the publication while stopped: copied reconciling"
                                + " in every destination (NewTableIT)",
                        with(b -> b.checkpoints(streaming("replica", 100).withTables(new java.util.TreeMap<>(java.util.Map.of(B.oid(),
                                B.table()))), streaming("events", 100)).slot(slot(Lsn.of(100), null)).unpublished(B.table())),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints())
                                .allSatisfy(c -> assertThat(c.online()).containsExactly(OnlineTask.reconciling(B))))),
                row("restart with a table added whose task is already recorded: not recorded twice (OnlineCrashIT)",
                        with(b -> b.checkpoints(streaming("replica", 100).withOnline(List.of(OnlineTask.whole(B))),
                                streaming("events", 100).withOnline(List.of(OnlineTask.whole(B)))).slot(slot(Lsn.of(100), null))
                                .unpublished(B.table())),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online()).hasSize(1)))),
                row("restart with a table added under the name of a dropped one whose copy is recorded: copied, as its own table"
                                + " (CrashMatrixIT; DdlIT.aTableDroppedAndCreatedAgainUnderItsNameWhileItsCopyWasStoppedIsCopied)",
                        with(b -> b.tables(A, NEW_B).checkpoints(streaming("replica", 100).withOnline(List.of(OnlineTask.whole(B))),
                                streaming("events", 100).withOnline(List.of(OnlineTask.whole(B)))).slot(slot(Lsn.of(100), null))
                                .unpublished(NEW_B.table())),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online())
                                .containsExactly(OnlineTask.whole(B), OnlineTask.whole(NEW_B))))),
                row("restart with a table added, snapshot.mode never: published, not copied",
                        with(b -> b.mode(SnapshotMode.NEVER).checkpoints(streaming("replica", 100), streaming("events", 100))
                                .slot(slot(Lsn.of(100), null)).unpublished(B.table())),
                        is(StartPlan.Resume.class, r -> {
                            assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online()).isEmpty());
                            assertThat(r.publication().add()).containsExactly(B);
                        })),
                row("restart on PostgreSQL 13 with online tasks left: refused",
                        with(b -> b.version(130000).checkpoints(streaming("replica", 100).withOnline(List.of(OnlineTask.whole(B))),
                                streaming("events", 100)).slot(slot(Lsn.of(100), null))),
                        refused(Kind.SOURCE_SETUP, "online snapshots need PostgreSQL 14 or newer (logical messages in pgoutput); this"
                                + " server is 130000. Copy the tables with a fresh pipeline instead")),
                row("restart on PostgreSQL 13 with online tasks left, snapshot.mode initial_only: resume (it stops before streaming)",
                        with(b -> b.version(130000).mode(SnapshotMode.INITIAL_ONLY).checkpoints(streaming("replica", 100)
                                .withOnline(List.of(OnlineTask.whole(B))), streaming("events", 100)).slot(slot(Lsn.of(100), null))),
                        is(StartPlan.Resume.class, r -> {
                        })),
                row("restart, the publication dropped while stopped: created again, no table recorded as added",
                        with(b -> b.noPublication().checkpoints(streaming("replica", 100), streaming("events", 100))
                                .slot(slot(Lsn.of(100), null))),
                        is(StartPlan.Resume.class, r -> {
                            assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online()).isEmpty());
                            assertThat(r.publication().create()).containsExactly(A.table(), B.table());
                        })),
                row("restart, the signal table listed in source.tables and unpublished: added once, as a table",
                        with(b -> b.signal(false).tables(A, B, rel("signals", true)).unpublished(SIGNAL)
                                .checkpoints(streaming("replica", 100), streaming("events", 100)).slot(slot(Lsn.of(100), null))),
                        is(StartPlan.Resume.class, r -> {
                            assertThat(r.publication().add()).extracting(RelationInfo::table).containsExactly(SIGNAL);
                            assertThat(r.publication().addSignal()).isFalse();
                        })),
                row("restart with a table's rule changed while stopped (a mask added): copied reconciling in every destination,"
                                + " a table whose rule did not change is not (TransformsChangedWhileStoppedIT)",
                        with(b -> b.checkpoints(ruled("replica", "new").withRules(new java.util.TreeMap<>(java.util.Map.of(A.oid(), "new"))),
                                ruled("events", "new").withRules(new java.util.TreeMap<>(java.util.Map.of(A.oid(), "new", B.oid(), "old"))))
                                .slot(slot(Lsn.of(100), null)).rules("new")),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints())
                                .allSatisfy(c -> assertThat(c.online()).containsExactly(OnlineTask.reconciling(B))))),
                row("restart with a table renamed in the source and a renaming rule changed (the checkpoint holds the destination's"
                                + " old name, which today's rules give another rule): copied again under the new rules (RenameIT)",
                        with(b -> b.checkpoints(ruled("replica", "old").withTables(new java.util.TreeMap<>(java.util.Map.of(A.oid(),
                                new TableRef("mirror", "a_v2"), B.oid(), B.table()))), ruled("events", "old"))
                                .slot(slot(Lsn.of(100), null)).rules("new").ruleOf(new TableRef("mirror", "a_v2"), "none")),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online())
                                .containsExactlyInAnyOrder(OnlineTask.reconciling(A), OnlineTask.reconciling(B))))),
                row("restart with a table renamed away from its exact-name rule (no rule changed): refused, not copied in clear"
                                + " (MaskedColumnRenamedIT)",
                        with(b -> b.checkpoints(ruled("replica", "old").withTables(new java.util.TreeMap<>(java.util.Map.of(A.oid(),
                                new TableRef("public", "a_before"), B.oid(), B.table()))), ruled("events", "old"))
                                .slot(slot(Lsn.of(100), null)).rules("new").ruleOf(new TableRef("public", "a_before"), "old")),
                        refused(Kind.CONFIG, "config: table public.a_before was renamed to public.a in the source, and the transforms"
                                + " rules its name matches now are not the ones its rows reached the destinations under: copied again under"
                                + " them, a mask or an excluded column of the old rule would pass in clear. Fix: make a rule match public.a"
                                + " as the old one matched public.a_before (e.g. change its match), and start again; to change its rules"
                                + " after that, reload them while it runs")),
                row("restart with a key column's mask added while stopped (or its salt changed): refused, as a reload refuses it"
                                + " (a copy cannot re-key the destinations' rows: a user's 1,000 rows became 2,000, the old keys in clear)",
                        with(b -> b.checkpoints(ruled("replica", "old"), ruled("events", "old")).slot(slot(Lsn.of(100), null)).rules("new")
                                .keyMasked()),
                        refused(Kind.CONFIG, KEY_MASK_CHANGED)),
                row("restart with a key column's mask taken away while stopped: refused too (the checkpoints' stamps say it was"
                                + " masked; the copy would put every row there twice, the old keys hashed)",
                        with(b -> b.checkpoints(ruled("replica", "old/" + masked("id", "aaaaaaaa")), ruled("events", "old/"
                                + masked("id", "aaaaaaaa"))).slot(slot(Lsn.of(100), null)).rules("new/")),
                        refused(Kind.CONFIG, KEY_MASK_CHANGED)),
                row("restart with another column's mask added while stopped, the key's as it was: copied again under the new rule",
                        with(b -> b.checkpoints(ruled("replica", "old/" + masked("id", "aaaaaaaa")), ruled("events", "old/"
                                + masked("id", "aaaaaaaa"))).slot(slot(Lsn.of(100), null))
                                .rules("new/" + masked("id", "aaaaaaaa") + "," + masked("v", "bbbbbbbb")).keyMasked()),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online())
                                .containsExactlyInAnyOrder(OnlineTask.reconciling(A), OnlineTask.reconciling(B))))),
                row("restart from checkpoints stamped by the release before (no masks part), the rules unchanged: nothing copied",
                        with(b -> b.checkpoints(ruled("replica", "same"), ruled("events", "same")).slot(slot(Lsn.of(100), null))
                                .rules("same/" + masked("id", "aaaaaaaa")).keyMasked()),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online()).isEmpty()))),
                row("restart with a key column masked and the rules unchanged: resume",
                        with(b -> b.checkpoints(ruled("replica", "same"), ruled("events", "same")).slot(slot(Lsn.of(100), null))
                                .rules("same").keyMasked()),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online()).isEmpty()))),
                row("restart with the rules unchanged: nothing copied",
                        with(b -> b.checkpoints(ruled("replica", "same"), ruled("events", "same")).slot(slot(Lsn.of(100), null)).rules("same")),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online()).isEmpty()))),
                row("restart from checkpoints that record no rules (an earlier release): taken as today's, nothing copied",
                        with(b -> b.checkpoints(ruled("replica", "old").withRules(new java.util.TreeMap<>()), ruled("events", "old")
                                .withRules(new java.util.TreeMap<>())).slot(slot(Lsn.of(100), null)).rules("new")),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online()).isEmpty()))),
                row("restart with a rule changed while a filtered copy of the table is under way: one reconciling copy replaces it",
                        with(b -> b.checkpoints(ruled("replica", "old").withOnline(List.of(OnlineTask.whole(TableRef.parse("public.a"), "id > 5"))),
                                ruled("events", "old")).slot(slot(Lsn.of(100), null)).rules("new")),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online())
                                .containsExactlyInAnyOrder(OnlineTask.reconciling(A), OnlineTask.reconciling(B))))),
                row("restart with a rule changed while a reconciling copy of the table is half done (its chunks under the old rules):"
                                + " a fresh reconciling copy replaces it",
                        with(b -> b.checkpoints(ruled("replica", "old").withOnline(List.of(new OnlineTask(TableRef.parse("public.a"), null,
                                List.of(OnlineTask.KeyRange.stored(List.of("500"), null)), 500, A.oid(), true))), ruled("events", "old"))
                                .slot(slot(Lsn.of(100), null)).rules("new")),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online())
                                .containsExactlyInAnyOrder(OnlineTask.reconciling(A), OnlineTask.reconciling(B))))),
                row("restart with a rule changed on PostgreSQL 13: no online copy (the start warns), resume",
                        with(b -> b.version(130000).checkpoints(ruled("replica", "old"), ruled("events", "old")).slot(slot(Lsn.of(100), null))
                                .rules("new")),
                        is(StartPlan.Resume.class, r -> assertThat(r.checkpoints()).allSatisfy(c -> assertThat(c.online()).isEmpty()))),
                row("restart on PostgreSQL 13 without online tasks: resume",
                        with(b -> b.version(130000).checkpoints(streaming("replica", 100), streaming("events", 100)).slot(slot(Lsn.of(100), null))),
                        is(StartPlan.Resume.class, r -> {
                        })));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rows")
    void decides(Row row) {
        row.expect().accept(StartPlanner.plan(row.facts()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rows")
    void isPure(Row row) {
        assertThat(StartPlanner.plan(row.facts())).as("the same facts, the same plan").isEqualTo(StartPlanner.plan(row.facts()));
    }
}
