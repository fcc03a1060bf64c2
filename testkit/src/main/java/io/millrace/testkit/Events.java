package io.millrace.testkit;

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
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Builds relations (built-in types, no catalog), change events at increasing positions and checkpoints, for tests.
 *
 * <p>Two ways to place events: {@code new Events()} puts each event in a transaction of its own (commit LSNs
 * {@code 0x1010, 0x1020, …}, ordinal 1); {@link #transaction(long)} puts every event in one transaction at that commit
 * LSN (ordinals 1, 2, …); {@link #commit()} moves it on to the next one. Values are Java values as the codecs decode
 * them ({@code null} is SQL NULL, {@link #TOAST} an unchanged TOAST value), or text that {@link #parse} decodes.
 * One writer: not thread-safe.
 */
public final class Events {
    /** Built-in type oids. */
    public static final int BOOL = 16, BYTEA = 17, INT8 = 20, INT2 = 21, INT4 = 23, TEXT = 25, JSON = 114, FLOAT8 = 701,
            BPCHAR = 1042, VARCHAR = 1043, DATE = 1082, TIMESTAMP = 1114, TIMESTAMPTZ = 1184, INTERVAL = 1186,
            NUMERIC = 1700, UUID = 2950, JSONB = 3802, INT4_ARRAY = 1007, TEXT_ARRAY = 1009;
    /** The value of a TOASTed column an update did not change. */
    public static final Object TOAST = UnchangedToast.INSTANCE;
    /** The source system identifier of {@link #identity}. */
    public static final String SYSTEM_ID = "7300000000000000001";

    private static final long STEP = 16;
    private static final AtomicInteger OIDS = new AtomicInteger(50_000);

    private final boolean oneTransaction;
    private long commit;
    private long ordinal;
    private Position last;

    /** Each event in a transaction of its own, the first at commit LSN {@code 0x1010}. */
    public Events() {
        this(0x1000, false);
    }

    private Events(long commit, boolean oneTransaction) {
        this.commit = commit;
        this.oneTransaction = oneTransaction;
    }

    /** Every event in one transaction committed at {@code commitLsn}, until {@link #commit()}. */
    public static Events transaction(long commitLsn) {
        return new Events(commitLsn, true);
    }

    // ---- relations ----

    public static ColumnInfo col(String name, int typeOid) {
        return new ColumnInfo(name, Codecs.builtin(typeOid), -1, false);
    }

    public static ColumnInfo col(String name, int typeOid, int typmod) {
        return new ColumnInfo(name, Codecs.builtin(typeOid), typmod, false);
    }

    /** A replica identity (key) column. */
    public static ColumnInfo key(String name, int typeOid) {
        return new ColumnInfo(name, Codecs.builtin(typeOid), -1, true);
    }

    /** A relation of a new oid. */
    public static RelationInfo rel(String schema, String table, char replicaIdentity, ColumnInfo... columns) {
        return rel(OIDS.incrementAndGet(), new TableRef(schema, table), replicaIdentity, List.of(columns));
    }

    /**
     * A relation from column specs {@code "name:oid"} or {@code "name:oid:typmod"}, a leading {@code '*'} marking a key
     * column; {@code table} as {@link TableRef#parse} reads it.
     */
    public static RelationInfo rel(int oid, String table, char replicaIdentity, String... columns) {
        List<ColumnInfo> list = new ArrayList<>();
        for (String c : columns) {
            boolean key = c.startsWith("*");
            String[] p = (key ? c.substring(1) : c).split(":");
            int typmod = p.length > 2 ? Integer.parseInt(p[2]) : -1;
            list.add(new ColumnInfo(p[0], Codecs.builtin(Integer.parseInt(p[1])), typmod, key));
        }
        return rel(oid, TableRef.parse(table), replicaIdentity, list);
    }

    private static RelationInfo rel(int oid, TableRef table, char replicaIdentity, List<ColumnInfo> columns) {
        return new RelationInfo(oid, table, replicaIdentity, columns, Codecs.builtins());
    }

    /** The same table (same oid, same name) with another shape: columns added, dropped, renamed or retyped. */
    public static RelationInfo reshape(RelationInfo old, ColumnInfo... columns) {
        return rel(old.oid(), old.table(), old.replicaIdentity(), List.of(columns));
    }

    /** The same table (same oid, same columns) under another name, as after {@code ALTER TABLE … RENAME}. */
    public static RelationInfo renamed(RelationInfo old, TableRef to) {
        return rel(old.oid(), to, old.replicaIdentity(), old.columns());
    }

    // ---- row images ----

    public static Object[] row(Object... values) {
        return values;
    }

    /** Values from text through each column's codec: {@code null} stays SQL NULL, {@link #TOAST} stays unchanged TOAST. */
    public static Object[] parse(RelationInfo rel, Object... texts) {
        Object[] out = new Object[texts.length];
        for (int i = 0; i < texts.length; i++) {
            Object t = texts[i];
            out[i] = t == null || t == TOAST ? t : rel.codec(i).decodeText(t.toString());
        }
        return out;
    }

    /** The old-key image of a keyed relation: key columns set, the rest null. */
    public static Object[] keyImage(RelationInfo rel, Object... keyValues) {
        Object[] img = new Object[rel.columnCount()];
        int[] k = rel.keyIndexes();
        for (int j = 0; j < k.length; j++) {
            img[k[j]] = keyValues[j];
        }
        return img;
    }

    // ---- events ----

    public ChangeEvent insert(RelationInfo rel, Object... after) {
        return event(Op.CREATE, rel, null, after);
    }

    /** A row read by a snapshot (op r, snapshot flag set). */
    public ChangeEvent read(RelationInfo rel, Object... after) {
        return event(Op.READ, rel, null, after);
    }

    /** An update without old row image (key unchanged, REPLICA IDENTITY DEFAULT). */
    public ChangeEvent update(RelationInfo rel, Object... after) {
        return event(Op.UPDATE, rel, null, after);
    }

    public ChangeEvent update(RelationInfo rel, Object[] before, Object[] after) {
        return event(Op.UPDATE, rel, before, after);
    }

    public ChangeEvent delete(RelationInfo rel, Object... before) {
        return event(Op.DELETE, rel, before, null);
    }

    public ChangeEvent truncate(RelationInfo rel) {
        return event(Op.TRUNCATE, rel, null, null);
    }

    /** {@link #insert} with values {@link #parse parsed} from text. */
    public ChangeEvent insertText(RelationInfo rel, Object... texts) {
        return insert(rel, parse(rel, texts));
    }

    /** {@link #update(RelationInfo, Object[], Object[])} with values parsed from text; {@code before} may be null. */
    public ChangeEvent updateText(RelationInfo rel, Object[] before, Object... texts) {
        return update(rel, before == null ? null : parse(rel, before), parse(rel, texts));
    }

    /** {@link #delete} with values parsed from text. */
    public ChangeEvent deleteText(RelationInfo rel, Object... texts) {
        return delete(rel, parse(rel, texts));
    }

    /** Ends the current transaction: the next event is in a new one, at a higher commit LSN. */
    public Events commit() {
        commit += STEP;
        ordinal = 0;
        return this;
    }

    /** The position of the last event built, or {@link Position#START}. */
    public Position last() {
        return last == null ? Position.START : last;
    }

    private ChangeEvent event(Op op, RelationInfo rel, Object[] before, Object[] after) {
        if (!oneTransaction) {
            commit();
        }
        Lsn lsn = Lsn.of(commit);
        last = new Position(lsn, ++ordinal);
        return new ChangeEvent(op, rel, before, after, lsn, last, 7, 0, op == Op.READ);
    }

    // ---- checkpoints ----

    /** The identity of every checkpoint built here, for destination {@code destination}. */
    public static Identity identity(String destination) {
        return new Identity(SYSTEM_ID, "app", "millrace", "millrace_pub", destination);
    }

    /** A checkpoint after the last event built (flush LSN its commit LSN). */
    public Checkpoint checkpoint(String destination) {
        Position p = last();
        return checkpoint(identity(destination), p.commitLsn(), p);
    }

    /** A checkpoint at commit LSN {@code lsn}: flushed there, applied up to its first change. */
    public static Checkpoint checkpoint(String destination, long lsn) {
        return checkpoint(identity(destination), Lsn.of(lsn), new Position(Lsn.of(lsn), 1));
    }

    public static Checkpoint checkpoint(Identity identity, Lsn flushLsn, Position applied) {
        return new Checkpoint(Checkpoint.VERSION, identity, flushLsn, applied, SnapshotProgress.skipped(Lsn.of(0x1000)));
    }
}
