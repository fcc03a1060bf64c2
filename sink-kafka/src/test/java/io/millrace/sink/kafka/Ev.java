package io.millrace.sink.kafka;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.change.Op;
import io.millrace.core.change.SnapshotProgress;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.types.Codecs;
import io.millrace.core.types.UnchangedToast;

import java.util.ArrayList;
import java.util.List;

/** Builds relations and change events for tests; values come from each codec's decodeText. */
final class Ev {
    static final Object TOAST = UnchangedToast.INSTANCE;
    private long ordinal;
    private final long commit;

    Ev(long commit) {
        this.commit = commit;
    }

    /** A column: "name:oid" or "name:oid:typmod"; a leading '*' marks a key column. */
    static RelationInfo rel(int oid, String table, char identity, String... cols) {
        List<ColumnInfo> list = new ArrayList<>();
        for (String c : cols) {
            boolean key = c.startsWith("*");
            String[] p = (key ? c.substring(1) : c).split(":");
            int typmod = p.length > 2 ? Integer.parseInt(p[2]) : -1;
            list.add(new ColumnInfo(p[0], Codecs.builtin(Integer.parseInt(p[1])), typmod, key));
        }
        return new RelationInfo(oid, TableRef.parse(table), identity, list, Codecs.builtins());
    }

    /** Values from text: null stays SQL NULL, TOAST stays unchanged TOAST. */
    static Object[] row(RelationInfo rel, Object... texts) {
        Object[] out = new Object[texts.length];
        for (int i = 0; i < texts.length; i++) {
            Object t = texts[i];
            out[i] = t == null || t == TOAST ? t : rel.codec(i).decodeText(t.toString());
        }
        return out;
    }

    ChangeEvent ins(RelationInfo rel, Object... texts) {
        return ev(Op.CREATE, rel, null, row(rel, texts));
    }

    ChangeEvent upd(RelationInfo rel, Object[] before, Object... texts) {
        return ev(Op.UPDATE, rel, before == null ? null : row(rel, before), row(rel, texts));
    }

    ChangeEvent del(RelationInfo rel, Object... before) {
        return ev(Op.DELETE, rel, row(rel, before), null);
    }

    ChangeEvent trunc(RelationInfo rel) {
        return ev(Op.TRUNCATE, rel, null, null);
    }

    private ChangeEvent ev(Op op, RelationInfo rel, Object[] before, Object[] after) {
        return new ChangeEvent(op, rel, before, after, Lsn.of(commit), new Position(Lsn.of(commit), ordinal++), 7, 0, false);
    }

    static Checkpoint cp(String destination, long lsn) {
        return new Checkpoint(Checkpoint.VERSION, new Identity("7000", "src", "slot", "pub", destination), Lsn.of(lsn),
                new Position(Lsn.of(lsn), 3), SnapshotProgress.skipped(Lsn.of(16)));
    }
}
