package io.millrace.core.change;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.Codecs;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

class SourceTablesTest {
    private static RelationInfo rel(int oid, String name) {
        return new RelationInfo(oid, TableRef.parse(name), 'd', List.of(new ColumnInfo("id", Codecs.builtin(23), -1, true)),
                TypeResolver.builtinsOnly());
    }

    private static ChangeEvent streamed(RelationInfo r) {
        return new ChangeEvent(Op.CREATE, r, null, new Object[] {1}, Lsn.parse("0/10"), new Position(Lsn.parse("0/10"), 1), 1, 0, false);
    }

    private static ChangeEvent read(RelationInfo r) {
        return new ChangeEvent(Op.READ, r, null, new Object[] {1}, Lsn.parse("0/10"), new Position(Lsn.parse("0/10"), 1), 0, 0, true);
    }

    private static SortedMap<Integer, TableRef> held(Object... oidAndName) {
        SortedMap<Integer, TableRef> m = new TreeMap<>();
        for (int i = 0; i < oidAndName.length; i += 2) {
            m.put((Integer) oidAndName[i], TableRef.parse((String) oidAndName[i + 1]));
        }
        return m;
    }

    @Test
    void newTablesAreHeldUnderTheirNameAndNothingIsRenamed() {
        SourceTables.Followed f = SourceTables.follow(held(), List.of(streamed(rel(1, "public.a")), read(rel(2, "public.b"))));
        assertThat(f.held()).isEqualTo(held(1, "public.a", 2, "public.b"));
        assertThat(f.renames()).isEmpty();
    }

    @Test
    void aStreamedChangeUnderANewNameIsARenameAndEarlierChangesGoToTheNewName() {
        RelationInfo before = rel(1, "public.customers");
        RelationInfo after = rel(1, "public.clients");
        SourceTables.Followed f = SourceTables.follow(held(1, "public.customers"), List.of(streamed(before), streamed(after)));
        assertThat(f.renames()).containsExactly(new SourceTables.Rename(1, TableRef.parse("public.customers"),
                TableRef.parse("public.clients"), false));
        assertThat(f.name(before)).isEqualTo(TableRef.parse("public.clients"));
        assertThat(f.held()).isEqualTo(held(1, "public.clients"));
    }

    @Test
    void snapshotRowsUnderAnOlderNameFollowTheNameHeld() {
        SourceTables.Followed f = SourceTables.follow(held(1, "public.clients"), List.of(read(rel(1, "public.customers"))));
        assertThat(f.renames()).isEmpty();
        assertThat(f.name(rel(1, "public.customers"))).isEqualTo(TableRef.parse("public.clients"));
    }

    @Test
    void aNewTableTakingAHeldNamePutsTheOldCopyAside() {
        SourceTables.Followed f = SourceTables.follow(held(16385, "public.gone"), List.of(read(rel(16390, "public.gone"))));
        assertThat(f.renames()).containsExactly(new SourceTables.Rename(16385, TableRef.parse("public.gone"),
                TableRef.parse("public.gone__16385"), true));
        assertThat(f.held()).isEqualTo(held(16385, "public.gone__16385", 16390, "public.gone"));
        // the old table shows up again, renamed: its copy follows from aside
        SourceTables.Followed g = SourceTables.follow(f.held(), List.of(streamed(rel(16385, "public.old_gone"))));
        assertThat(g.renames()).containsExactly(new SourceTables.Rename(16385, TableRef.parse("public.gone__16385"),
                TableRef.parse("public.old_gone"), false));
    }

    @Test
    void twoTablesSwappingNamesEndUnderTheirNewNames() {
        // a (1) -> tmp, b (2) -> a, tmp (1) -> b, then a change of each
        SourceTables.Followed f = SourceTables.follow(held(1, "public.a", 2, "public.b"),
                List.of(streamed(rel(2, "public.a")), streamed(rel(1, "public.b"))));
        assertThat(f.held()).isEqualTo(held(1, "public.b", 2, "public.a"));
        List<String> steps = new ArrayList<>();
        f.renames().forEach(r -> steps.add(r.from().table() + ">" + r.to().table()));
        assertThat(steps).containsExactly("a>a__1", "b>a", "a__1>b");
    }

    @Test
    void asideNamesFitPostgresIdentifiers() {
        TableRef t = SourceTables.aside(new TableRef("public", "ü".repeat(40)), -1);
        assertThat(t.table()).endsWith("__4294967295");
        assertThat(t.table().getBytes(java.nio.charset.StandardCharsets.UTF_8).length).isLessThanOrEqualTo(63);
    }

    @Test
    void tablesRoundTripThroughTheCheckpointJson() {
        Checkpoint c = new Checkpoint(Checkpoint.VERSION, new Identity("1", "d", "s", "p", "x"), Lsn.parse("0/10"), Position.START,
                SnapshotProgress.skipped(Lsn.parse("0/10")))
                .withTables(new TreeMap<>(java.util.Map.of(-5, new TableRef("public", "a\"b"), 7, new TableRef("my.schema", "t.x"))));
        assertThat(CheckpointJson.read(CheckpointJson.write(c))).isEqualTo(c);
        assertThat(CheckpointJson.write(c)).contains("\"oid\":4294967291");
    }
}
