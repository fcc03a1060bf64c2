package io.millrace.engine;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.Position;
import io.millrace.core.Secret;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.change.SnapshotProgress;
import io.millrace.source.SlotManager;
import io.millrace.source.SourceConfig;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** What a resume with source.failover accepts of the slot it finds after a failover (no server: the facts are given). */
class FailoverSlotTest {
    private static final SourceConfig SRC = new SourceConfig("db1", 5432, "shop", "cdc", Secret.NONE, "fo", "fo", List.of(), List.of(),
            true, SourceConfig.BinaryMode.AUTO, Duration.ofSeconds(10), Map.of(),
            List.of(new SourceConfig.HostPort("db1", 5432), new SourceConfig.HostPort("db2", 5432)), true);
    private static final SlotManager.SystemInfo PROMOTED = new SlotManager.SystemInfo("7400000000000000001", 2, Lsn.parse("0/5000000"), "shop");

    private static List<Optional<Checkpoint>> at(String lsn) {
        Lsn l = Lsn.parse(lsn);
        return List.of(Optional.of(new Checkpoint(Checkpoint.VERSION, new Identity(PROMOTED.systemId(), "shop", "fo", "fo", "replica"), l,
                new Position(l, 0), SnapshotProgress.skipped(Lsn.parse("0/1000000")))));
    }

    @Test
    void aSynchronisedSlotConfirmedBehindTheCheckpointsResumes() {
        // the standby copies the position from time to time: behind is normal and safe (the server skips what commits before the start)
        assertThatCode(() -> FailoverSlot.check(SRC, "db2:5432/shop", PROMOTED, new FailoverSlot.State(true, true, true,
                Lsn.parse("0/3000000")), at("0/4000000"))).doesNotThrowAnyException();
    }

    @Test
    void aPromotedStandbyWithoutTheSlotStopsNamingSlotSync() {
        MillraceException e = catchThrowableOfType(MillraceException.class, () -> FailoverSlot.check(SRC, "db2:5432/shop", PROMOTED,
                new FailoverSlot.State(false, false, false, null), at("0/4000000")));
        assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
        assertThat(e.getMessage()).contains("slot 'fo' does not exist on db2:5432/shop (timeline 2)").contains("up to 0/4000000")
                .contains("sync_replication_slots").contains("does not skip");
    }

    @Test
    void destinationsAheadOfTheServersWalStop() {
        // INV: IDENTITY — the destinations hold transactions this server never had (a standby promoted that lacked them)
        MillraceException e = catchThrowableOfType(MillraceException.class, () -> FailoverSlot.check(SRC, "db2:5432/shop", PROMOTED,
                new FailoverSlot.State(true, true, true, Lsn.parse("0/3000000")), at("0/6000000")));
        assertThat(e.kind()).isEqualTo(Kind.IDENTITY);
        assertThat(e.getMessage()).contains("up to 0/6000000").contains("ends at 0/5000000").contains("synchronized_standby_slots");
    }

    @Test
    void withoutFailoverOrCheckpointsNothingIsChecked() {
        SourceConfig plain = new SourceConfig("db1", 5432, "shop", "cdc", Secret.NONE, "fo", "fo", List.of(), List.of(), true,
                SourceConfig.BinaryMode.AUTO, Duration.ofSeconds(10), Map.of());
        FailoverSlot.State none = new FailoverSlot.State(false, false, false, null);
        assertThatCode(() -> FailoverSlot.check(plain, "db1:5432/shop", PROMOTED, none, at("0/6000000"))).doesNotThrowAnyException();
        assertThatCode(() -> FailoverSlot.check(SRC, "db1:5432/shop", PROMOTED, none, List.of(Optional.empty()))).doesNotThrowAnyException();
        SlotManager.SystemInfo other = new SlotManager.SystemInfo("7499999999999999999", 1, Lsn.parse("0/5000000"), "shop");
        assertThatCode(() -> FailoverSlot.check(SRC, "db1:5432/shop", other, none, at("0/4000000")))
                .as("another system's checkpoint is the planner's refusal").doesNotThrowAnyException();
    }
}
