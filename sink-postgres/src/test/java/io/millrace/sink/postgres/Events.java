package io.millrace.sink.postgres;

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

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/** Builds relations (built-in types, no catalog) and change events for tests. */
final class Events {
    static final int BOOL = 16, BYTEA = 17, INT8 = 20, INT2 = 21, INT4 = 23, TEXT = 25, JSON = 114, FLOAT8 = 701,
            BPCHAR = 1042, VARCHAR = 1043, DATE = 1082, TIMESTAMP = 1114, TIMESTAMPTZ = 1184, INTERVAL = 1186,
            NUMERIC = 1700, UUID = 2950, JSONB = 3802, INT4_ARRAY = 1007, TEXT_ARRAY = 1009;

    private static final AtomicInteger OIDS = new AtomicInteger(50_000);
    private final AtomicLong lsn = new AtomicLong(0x1000);

    static ColumnInfo col(String name, int typeOid) {
        return new ColumnInfo(name, Codecs.builtin(typeOid), -1, false);
    }

    static ColumnInfo col(String name, int typeOid, int typmod) {
        return new ColumnInfo(name, Codecs.builtin(typeOid), typmod, false);
    }

    static ColumnInfo key(String name, int typeOid) {
        return new ColumnInfo(name, Codecs.builtin(typeOid), -1, true);
    }

    static RelationInfo rel(String schema, String table, char replicaIdentity, ColumnInfo... columns) {
        return new RelationInfo(OIDS.incrementAndGet(), new TableRef(schema, table), replicaIdentity, List.of(columns),
                Codecs.builtins());
    }

    /** The same table (same oid) with another shape. */
    static RelationInfo reshape(RelationInfo old, ColumnInfo... columns) {
        return new RelationInfo(old.oid(), old.table(), old.replicaIdentity(), List.of(columns), Codecs.builtins());
    }

    private ChangeEvent event(Op op, RelationInfo rel, Object[] before, Object[] after) {
        long l = lsn.addAndGet(16);
        return new ChangeEvent(op, rel, before, after, Lsn.of(l), new Position(Lsn.of(l), 1), 7, 0, op == Op.READ);
    }

    ChangeEvent insert(RelationInfo rel, Object... after) {
        return event(Op.CREATE, rel, null, after);
    }

    ChangeEvent read(RelationInfo rel, Object... after) {
        return event(Op.READ, rel, null, after);
    }

    /** Update without old row (key unchanged, REPLICA IDENTITY DEFAULT). */
    ChangeEvent update(RelationInfo rel, Object... after) {
        return event(Op.UPDATE, rel, null, after);
    }

    ChangeEvent update(RelationInfo rel, Object[] before, Object[] after) {
        return event(Op.UPDATE, rel, before, after);
    }

    ChangeEvent delete(RelationInfo rel, Object... before) {
        return event(Op.DELETE, rel, before, null);
    }

    ChangeEvent truncate(RelationInfo rel) {
        return event(Op.TRUNCATE, rel, null, null);
    }

    /** The old-key image of a keyed relation: key columns set, the rest null. */
    static Object[] keyImage(RelationInfo rel, Object... keyValues) {
        Object[] img = new Object[rel.columnCount()];
        int[] k = rel.keyIndexes();
        for (int j = 0; j < k.length; j++) {
            img[k[j]] = keyValues[j];
        }
        return img;
    }

    static Object[] row(Object... values) {
        return values;
    }

    Checkpoint checkpoint(String destination) {
        long l = lsn.get();
        return new Checkpoint(Checkpoint.VERSION, new Identity("7300000000000000001", "app", "millrace", "millrace_pub",
                destination), Lsn.of(l), new Position(Lsn.of(l), 1), SnapshotProgress.skipped(Lsn.of(0x1000)));
    }
}
