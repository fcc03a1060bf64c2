package io.millrace.core.change;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.schema.TableRef;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CheckpointJsonTest {
    private static final Identity ID = new Identity("7312", "app", "millrace", "millrace_pub", "mirror");

    @Test
    void roundTripsEveryField() {
        OnlineTask task = new OnlineTask(TableRef.parse("public.orders"), "region = 'eu'", List.of(
                OnlineTask.KeyRange.stored(null, List.of("10", "a\tb")),
                OnlineTask.KeyRange.stored(List.of("20", "x"), null),
                OnlineTask.KeyRange.stored(Arrays.asList("30", "\"quoted\""), List.of("40", "ü"))), 1234);
        Checkpoint c = new Checkpoint(Checkpoint.VERSION, ID, Lsn.parse("0/16B3748"), new Position(Lsn.parse("0/16B3700"), 17),
                new SnapshotProgress(SnapshotProgress.State.RUNNING, Lsn.parse("0/1000"), List.of(TableRef.parse("public.a")),
                        List.of(new SnapshotProgress.Chunk(TableRef.parse("public.b"), 1, 4))),
                List.of(task, OnlineTask.whole(TableRef.parse("public.items"), null), new OnlineTask(TableRef.parse("public.keyed"), null, List.of(OnlineTask.KeyRange.ALL),
                        0, 5, false, List.of("region", "id"))));
        Checkpoint back = CheckpointJson.read(CheckpointJson.write(c));
        assertThat(back).isEqualTo(c);
        assertThat(back.online().get(2).key()).containsExactly("region", "id");
        assertThat(back.online().get(0).key()).as("not recorded: unknown").isNull();
        assertThat(back.online().get(0).remaining().get(0).lo()).as("open below").isEqualTo(KeyBound.OPEN);
        assertThat(back.online().get(1).filter()).isNull();
    }

    /**
     * Format 1 (written before the task kinds) is read as the current format: a re-read of moved keys was marked by a comment
     * at the start of its filter, a reconciling copy by a flag; a checkpoint written from it is of the current format, and a
     * format newer than this build's is refused by name.
     */
    @Test
    void aFormatOneCheckpointIsUpgradedAndWrittenBackInTheCurrentFormat() {
        String v1 = """
                {"version":1,"identity":{"system_id":"7312","database":"app","slot":"millrace","publication":"millrace_pub",\
                "destination":"mirror"},"flush_lsn":"0/16B3748","applied_commit_lsn":"0/16B3700","applied_ordinal":17,\
                "snapshot":{"state":"DONE","consistent_point":"0/1000","tables_done":[],"chunks_done":[]},"online":[\
                {"table":"public.orders","filter":"/* millrace: moved keys read again */ (\\"id\\") IN (('7'), ('9'))",\
                "rows_done":0,"oid":16400,"key":["id"],"remaining":[{"lo":null,"hi":null}]},\
                {"table":"public.orders","rows_done":500,"oid":16400,"remaining":[{"lo":["500"],"hi":null}]},\
                {"table":"public.items","filter":"region = 'eu'","rows_done":3,"remaining":[{"lo":null,"hi":["9"]}]},\
                {"table":"public.lost","rows_done":0,"oid":16500,"reconcile":true,"remaining":[{"lo":null,"hi":null}]},\
                {"table":"public.both","filter":"id > 5","rows_done":0,"reconcile":true,"remaining":[{"lo":null,"hi":null}]}]}""";
        Checkpoint c = CheckpointJson.read(v1);
        assertThat(c.version()).isEqualTo(Checkpoint.VERSION);
        assertThat(c.online()).extracting(OnlineTask::kind).containsExactly(OnlineTask.Kind.REREAD, OnlineTask.Kind.COPY,
                OnlineTask.Kind.FILTERED, OnlineTask.Kind.RECONCILE, OnlineTask.Kind.FILTERED);
        assertThat(c.online().get(0).filter()).as("the marker is gone").isEqualTo("(\"id\") IN (('7'), ('9'))");
        assertThat(c.online().get(1).remaining()).containsExactly(OnlineTask.KeyRange.stored(List.of("500"), null));
        assertThat(c.online().get(1).rowsDone()).isEqualTo(500);
        assertThat(c.online().get(2).filter()).isEqualTo("region = 'eu'");
        assertThat(c.online().get(3).reconcile()).isTrue();
        assertThat(c.online().get(4).filter()).as("format 1 read a filtered task as not reconciling, whatever its flag")
                .isEqualTo("id > 5");
        String v2 = CheckpointJson.write(c);
        assertThat(v2).startsWith("{\"version\":" + Checkpoint.VERSION + ",").contains("\"kind\":\"reread\"")
                .doesNotContain("millrace: moved keys").doesNotContain("\"reconcile\":");
        assertThat(CheckpointJson.read(v2)).isEqualTo(c);
        assertThatThrownBy(() -> CheckpointJson.read(v2.replace("\"version\":" + Checkpoint.VERSION, "\"version\":"
                + (Checkpoint.VERSION + 1)))).hasMessageContaining("checkpoint format version " + (Checkpoint.VERSION + 1)
                + " is not supported").hasMessageContaining("written by a newer Millrace");
    }

    /** A task's kind and its filter agree: a filtered or re-read task has one, the others none. */
    @Test
    void aTaskWhoseKindAndFilterDisagreeIsRefused() {
        assertThatThrownBy(() -> new OnlineTask(TableRef.parse("public.t"), OnlineTask.Kind.REREAD, null, List.of(OnlineTask.KeyRange.ALL), 0, 0, null))
                .hasMessageContaining("a REREAD task needs a filter");
        assertThatThrownBy(() -> new OnlineTask(TableRef.parse("public.t"), OnlineTask.Kind.COPY, "id > 1", List.of(OnlineTask.KeyRange.ALL), 0, 0,
                null)).hasMessageContaining("a COPY task takes no filter (id > 1)");
    }

    @Test
    void aCheckpointWithoutOnlineTasksReadsAsBefore() {
        Checkpoint c = new Checkpoint(Checkpoint.VERSION, ID, Lsn.parse("0/10"), Position.START, SnapshotProgress.skipped(Lsn.parse("0/10")));
        String json = CheckpointJson.write(c);
        assertThat(json).doesNotContain("online");
        assertThat(CheckpointJson.read(json)).isEqualTo(c);
        assertThat(c.advance(Lsn.parse("0/20"), Position.START).withOnline(List.of(OnlineTask.whole(TableRef.parse("public.t"), null)))
                .advance(Lsn.parse("0/30"), Position.START).online()).hasSize(1);
    }

    /** INV: IDENTITY — a slot's replacement is recorded, and survives every later advance of the checkpoint. */
    @Test
    void aSlotReplacementAndReconcilingTasksRoundTrip() {
        Checkpoint c = new Checkpoint(Checkpoint.VERSION, ID, Lsn.parse("0/3000"), new Position(Lsn.parse("0/3000"), 0),
                SnapshotProgress.skipped(Lsn.parse("0/10")), List.of(new OnlineTask(TableRef.parse("public.t"), null, List.of(OnlineTask.KeyRange.ALL), 0, 77,
                true)), null, new Checkpoint.SlotLost(Checkpoint.SlotLost.State.REPLACED, Lsn.parse("0/20"), Lsn.parse("0/3000"),
                "slot 'millrace' was invalidated (wal_status = lost)", 2));
        String json = CheckpointJson.write(c);
        assertThat(json).contains("\"slot_lost\"").contains("\"kind\":\"reconcile\"");
        Checkpoint back = CheckpointJson.read(json);
        assertThat(back).isEqualTo(c);
        assertThat(back.advance(Lsn.parse("0/4000"), Position.START).withOnline(List.of()).slotLost()).isEqualTo(c.slotLost());
        assertThat(CheckpointJson.write(new Checkpoint(Checkpoint.VERSION, ID, Lsn.parse("0/10"), Position.START,
                SnapshotProgress.skipped(Lsn.parse("0/10"))))).doesNotContain("slot_lost").doesNotContain("kind");
    }

    /**
     * The shapes the tables were last written in round-trip (an oid above 2^31 too), are left out when there are none (a
     * checkpoint as before), and survive the other changes of a checkpoint.
     */
    @Test
    void shapesRoundTripAndACheckpointWithoutThemReadsAsBefore() {
        Checkpoint c = new Checkpoint(Checkpoint.VERSION, ID, Lsn.parse("0/10"), Position.START, SnapshotProgress.skipped(Lsn.parse("0/10")));
        assertThat(CheckpointJson.write(c)).doesNotContain("shapes");
        java.util.SortedMap<Integer, String> shapes = new java.util.TreeMap<>(java.util.Map.of(16384, "00112233aabbccdd", (int) 3_000_000_000L,
                "ffeeddccbbaa9988"));
        Checkpoint with = c.withShapes(shapes);
        String json = CheckpointJson.write(with);
        assertThat(json).contains("\"3000000000\":\"ffeeddccbbaa9988\"");
        assertThat(CheckpointJson.read(json)).isEqualTo(with);
        assertThat(with.advance(Lsn.parse("0/20"), Position.START).withOnline(List.of()).withTables(new java.util.TreeMap<>())
                .shapes()).isEqualTo(shapes);
    }

    /**
     * The rules the tables were written under round-trip, survive every other change of a checkpoint (a rename of a held
     * table, a new shape, an advance), and a checkpoint without them (a release before) reads with none.
     */
    @Test
    void rulesRoundTripAndSurviveTheOtherChanges() {
        Checkpoint c = new Checkpoint(Checkpoint.VERSION, ID, Lsn.parse("0/10"), Position.START, SnapshotProgress.skipped(Lsn.parse("0/10")));
        assertThat(CheckpointJson.write(c)).doesNotContain("rules");
        java.util.SortedMap<Integer, String> rules = new java.util.TreeMap<>(java.util.Map.of(16384, "0123456789abcdef", (int) 3_000_000_000L,
                "fedcba9876543210"));
        Checkpoint with = c.withRules(rules);
        String json = CheckpointJson.write(with);
        assertThat(json).contains("\"rules\":{").contains("\"3000000000\":\"fedcba9876543210\"");
        assertThat(CheckpointJson.read(json)).isEqualTo(with);
        assertThat(with.advance(Lsn.parse("0/20"), Position.START).withOnline(List.of()).withSnapshot(c.snapshot())
                .withTables(new java.util.TreeMap<>(java.util.Map.of(16384, new TableRef("public", "renamed"))))
                .withShapes(new java.util.TreeMap<>(java.util.Map.of(16384, "00112233aabbccdd"))).rules()).isEqualTo(rules);
        assertThat(CheckpointJson.read(json.replace("\"rules\"", "\"later\"")).rules()).isEmpty();
    }

    @Test
    void anUnknownVersionIsRefused() {
        assertThatThrownBy(() -> CheckpointJson.read("{\"version\":3}")).hasMessageContaining("version 3 is not supported");
    }

    /**
     * Issue 17: a task names its table as a {@link io.millrace.core.schema.TableRef}, stored so that a name holding a dot
     * or a double quote reads back as the same table (the text {@code schema.table} read back as three parts, and the
     * restart stopped: OnlineSnapshotIT). A checkpoint stored before, with the name unquoted, is split at its first dot.
     */
    @Test
    void aTableNameWithADotOrAQuoteReadsBackAsTheSameTable() {
        TableRef odd = new TableRef("public", "odd.name \"q\"");
        TableRef spaced = new TableRef("my schema", " padded ");
        TableRef hashed = new TableRef("public", "a#1/2"); // a chunk's text is schema.table#i/n
        Checkpoint c = new Checkpoint(Checkpoint.VERSION, ID, Lsn.parse("0/20"), new Position(Lsn.parse("0/20"), 0),
                new SnapshotProgress(SnapshotProgress.State.RUNNING, Lsn.parse("0/10"), List.of(odd),
                        List.of(new SnapshotProgress.Chunk(hashed, 0, 3), new SnapshotProgress.Chunk(spaced, 2, 3))),
                List.of(OnlineTask.whole(odd, null), OnlineTask.whole(spaced, null)));
        String json = CheckpointJson.write(c);
        assertThat(json).contains("\"table\":\"public.\\\"odd.name \\\"\\\"q\\\"\\\"\\\"\"");
        assertThat(CheckpointJson.read(json).online()).extracting(OnlineTask::table).containsExactly(odd, spaced);
        assertThat(CheckpointJson.read(json)).isEqualTo(c);
        assertThat(CheckpointJson.read(json).snapshot().chunksDone()).extracting(SnapshotProgress.Chunk::table)
                .containsExactly(hashed, spaced);
        String before = json.replace("public.\\\"odd.name \\\"\\\"q\\\"\\\"\\\"", "public.odd.name \\\"q\\\"");
        assertThat(before).contains("\"table\":\"public.odd.name \\\"q\\\"\"");
        assertThat(CheckpointJson.read(before).online().get(0).table()).as("stored unquoted before").isEqualTo(odd);
    }
}
