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

import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/** The order in which a table destination applies a batch: per table, except around a TRUNCATE of several tables. */
class TableApplierTest {
    private static final RelationInfo A = rel(1, "s.a");
    private static final RelationInfo B = rel(2, "s.b");

    private static RelationInfo rel(int oid, String table) {
        return new RelationInfo(oid, TableRef.parse(table), 'd', List.of(new ColumnInfo("id", Codecs.builtin(23), -1, true)),
                Codecs.builtins());
    }

    private static ChangeEvent ev(Op op, RelationInfo rel, long lsn, int ordinal) {
        return new ChangeEvent(op, rel, null, null, Lsn.of(lsn), new Position(Lsn.of(900), ordinal), 7, 0, false);
    }

    /** Records what it is asked to do. */
    private static final class Recording extends TableApplier {
        final List<String> calls = new ArrayList<>();

        Recording() {
            super("test");
        }

        @Override
        protected void rename(io.millrace.core.change.SourceTables.Rename r) {
        }

        @Override
        protected TableRef targetOf(TableRef source) {
            return source;
        }

        @Override
        protected void ensure(TableRef target, RelationInfo rel) {
        }

        @Override
        protected void truncate(TableRef target) {
            calls.add("truncate " + target);
        }

        @Override
        protected void truncate(List<TableRef> targets) {
            calls.add("truncate " + targets);
        }

        @Override
        protected void applyKeyed(TableRef target, RelationInfo rel, List<ChangeEvent> run) {
            calls.add(target + " x" + run.size());
        }

        @Override
        protected void applyKeyless(TableRef target, RelationInfo rel, List<ChangeEvent> run) {
            calls.add(target + " keyless x" + run.size());
        }

        @Override
        protected RuntimeException failed(TableRef target, RelationInfo rel, List<ChangeEvent> run, SQLException e) {
            return new IllegalStateException(e);
        }
    }

    @Test
    void aTruncateOfSeveralTablesIsOneStatementBetweenWhatComesBeforeAndAfterIt() {
        Recording r = new Recording();
        // TRUNCATE s.a, s.b (one message: one WAL position) between changes of both tables
        r.apply(List.of(ev(Op.CREATE, A, 100, 1), ev(Op.CREATE, B, 101, 2), ev(Op.CREATE, A, 102, 3),
                ev(Op.TRUNCATE, A, 103, 4), ev(Op.TRUNCATE, B, 103, 5),
                ev(Op.CREATE, B, 104, 6), ev(Op.CREATE, A, 105, 7)), Set.of(), new TreeMap<>());
        assertThat(r.calls).containsExactly("s.a x2", "s.b x1", "truncate [s.a, s.b]", "s.b x1", "s.a x1");
    }

    @Test
    void aTruncateOfOneTableStaysInItsTablesRuns() {
        Recording r = new Recording();
        // two TRUNCATE messages of one table each (two WAL positions): per table, as before
        r.apply(List.of(ev(Op.CREATE, A, 100, 1), ev(Op.TRUNCATE, A, 101, 2), ev(Op.TRUNCATE, B, 102, 3), ev(Op.CREATE, A, 103, 4)),
                Set.of(), new TreeMap<>());
        assertThat(r.calls).containsExactly("s.a x1", "truncate s.a", "s.a x1", "truncate s.b");
    }
}
