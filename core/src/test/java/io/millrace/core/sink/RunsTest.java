package io.millrace.core.sink;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.types.Codecs;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class RunsTest {
    private static RelationInfo rel(int oid, String table, char identity, boolean... keys) {
        List<ColumnInfo> cols = new ArrayList<>();
        for (int i = 0; i < keys.length; i++) {
            cols.add(new ColumnInfo("c" + i, Codecs.builtin(23), -1, keys[i]));
        }
        return new RelationInfo(oid, TableRef.parse(table), identity, cols, Codecs.builtins());
    }

    private static long lsn = 100;

    private static ChangeEvent ev(Op op, RelationInfo rel) {
        lsn++;
        return new ChangeEvent(op, rel, null, null, Lsn.of(lsn), new Position(Lsn.of(lsn), 1), 1, 0, false);
    }

    @Test
    void runsEndAtATruncateAndAtAnotherShape() {
        RelationInfo v1 = rel(1, "s.t", 'd', true, false);
        RelationInfo v1again = rel(1, "s.t", 'd', true, false);
        RelationInfo v2 = rel(1, "s.t", 'd', true, false, false);
        List<ChangeEvent> events = List.of(ev(Op.CREATE, v1), ev(Op.UPDATE, v1again), ev(Op.TRUNCATE, v1), ev(Op.TRUNCATE, v1),
                ev(Op.CREATE, v1), ev(Op.CREATE, v2), ev(Op.DELETE, v2));
        assertThat(Runs.of(events)).extracting(List::size).containsExactly(2, 1, 1, 1, 2);
        assertThat(Runs.of(List.of())).isEmpty();
    }

    @Test
    void byTargetKeepsFirstSeenOrderAndListOrder() {
        RelationInfo a = rel(1, "s.a", 'd', true);
        RelationInfo b = rel(2, "s.b", 'd', true);
        ChangeEvent a1 = ev(Op.CREATE, a), b1 = ev(Op.CREATE, b), a2 = ev(Op.DELETE, a);
        var byTable = Runs.byTarget(List.of(a1, b1, a2), e -> e.relation().table());
        assertThat(byTable.keySet()).containsExactly(TableRef.parse("s.a"), TableRef.parse("s.b"));
        assertThat(byTable.get(TableRef.parse("s.a"))).containsExactly(a1, a2);
    }

    @Test
    void keyedUnlessNoKeyNothingOrFullOnEveryColumn() {
        assertThat(Runs.keyed(rel(1, "s.t", 'd', true, false))).isTrue();
        assertThat(Runs.keyed(rel(1, "s.t", 'd', false, false))).isFalse();
        assertThat(Runs.keyed(rel(1, "s.t", 'n', true, false))).isFalse();
        assertThat(Runs.keyed(rel(1, "s.t", 'f', true, true))).isFalse();
        assertThat(Runs.keyed(rel(1, "s.t", 'f', true, false))).isTrue();
        assertThat(Runs.keyed(rel(1, "s.t", 'i', true, false))).isTrue();
    }
}
