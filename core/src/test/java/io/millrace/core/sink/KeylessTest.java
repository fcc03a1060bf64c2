package io.millrace.core.sink;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.types.Codecs;
import io.millrace.core.types.UnchangedToast;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link Keyless#net}: a run of a table without a key as rows added and taken away (PostgresSinkIT, DuckDbSinkIT apply it). */
class KeylessTest {
    private static final TableRef T = TableRef.parse("s.t");
    private static final RelationInfo REL = new RelationInfo(1, T, 'f', List.of(new ColumnInfo("n", Codecs.builtin(23), -1, true),
            new ColumnInfo("body", Codecs.builtin(25), -1, true)), Codecs.builtins());
    private long lsn = 100;

    private ChangeEvent ev(Op op, Object[] before, Object[] after) {
        lsn++;
        return new ChangeEvent(op, REL, before, after, Lsn.of(lsn), new Position(Lsn.of(lsn), 1), 1, 0, false);
    }

    private static Object[] row(Object... v) {
        return v;
    }

    /** Updates of rows 0..n-1 from body "a" to "b": enough to be applied by their net effect. */
    private List<ChangeEvent> updates(int n) {
        List<ChangeEvent> run = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            run.add(ev(Op.UPDATE, row(i, "a"), row(i, "b")));
        }
        return run;
    }

    private static List<String> rows(List<Keyless.Counted> counted) {
        return counted.stream().map(c -> c.values()[0] + "|" + c.values()[1] + "×" + c.times()).toList();
    }

    @Test
    void aShortRunIsAppliedOneChangeAtATime() {
        assertThat(Keyless.net(T, REL, updates(Keyless.NET_FROM - 1))).isNull();
        assertThat(Keyless.net(T, REL, updates(Keyless.NET_FROM))).isNotNull();
    }

    @Test
    void whatARunAddsAndLaterTakesAwayCancelsAndEqualRowsAreCounted() {
        List<ChangeEvent> run = updates(Keyless.NET_FROM);
        run.add(ev(Op.CREATE, null, row(100, "x")));
        run.add(ev(Op.UPDATE, row(100, "x"), row(100, "y")));   // a row the run inserted, updated twice
        run.add(ev(Op.UPDATE, row(100, "y"), row(100, "z")));
        run.add(ev(Op.DELETE, row(7, null), null));              // two equal rows with a NULL go
        run.add(ev(Op.DELETE, row(7, null), null));
        run.add(ev(Op.CREATE, null, row(8, "")));                // inserted and deleted: nothing
        run.add(ev(Op.DELETE, row(8, ""), null));
        run.add(ev(Op.UPDATE, row(0, "b"), row(0, "a")));        // row 0 back to what it was: nothing
        Keyless.Net net = Keyless.net(T, REL, run);
        assertThat(rows(net.added())).contains("100|z×1", "1|b×1").doesNotContain("0|b×1", "0|a×1", "100|x×1", "100|y×1", "8|×1");
        assertThat(rows(net.removed())).contains("7|null×2", "1|a×1").doesNotContain("0|a×1", "8|×1");
        assertThat(net.removedRows()).isEqualTo(Keyless.NET_FROM - 1 + 2);
    }

    @Test
    void anUnchangedToastValueInTheNewRowIsTheOldRowsValue() {
        List<ChangeEvent> run = updates(Keyless.NET_FROM);
        run.add(ev(Op.UPDATE, row(50, "long"), row(51, UnchangedToast.INSTANCE)));
        Keyless.Net net = Keyless.net(T, REL, run);
        assertThat(rows(net.added())).contains("51|long×1");
        assertThat(rows(net.removed())).contains("50|long×1");
    }

    @Test
    void anOldRowWithoutAValueIsAppliedOneChangeAtATimeAndOneMissingIsRefused() {
        List<ChangeEvent> run = updates(Keyless.NET_FROM);
        run.add(ev(Op.UPDATE, row(50, UnchangedToast.INSTANCE), row(51, "x")));
        assertThat(Keyless.net(T, REL, run)).isNull();

        List<ChangeEvent> noOld = updates(Keyless.NET_FROM);
        noOld.add(ev(Op.DELETE, null, null));
        assertThatThrownBy(() -> Keyless.net(T, REL, noOld)).isInstanceOf(MillraceException.class)
                .hasMessageContaining("carries no old row").hasMessageContaining("REPLICA IDENTITY FULL");
    }
}
