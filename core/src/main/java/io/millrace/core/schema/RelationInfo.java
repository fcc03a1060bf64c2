package io.millrace.core.schema;

import io.millrace.core.types.Codecs;
import io.millrace.core.types.TypeCodec;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A table's shape at one point of the stream: what a pgoutput Relation message (or the catalog, for
 * a snapshot) says, with the codec of each column resolved once. Immutable: when the stream sends a
 * new Relation message for the same oid (a column added or dropped), the framer makes a new
 * instance, and changes framed before keep the old one. That is how the relation cache follows the
 * stream even when decoding runs later or on another thread.
 */
public final class RelationInfo {
    private final int oid;
    private final TableRef table;
    /** The table's name in the source: {@link #table} unless a transform {@link #renamed} it for the destinations. */
    private final TableRef sourceTable;
    private final char replicaIdentity;
    private final List<ColumnInfo> columns;
    private final TypeCodec[] codecs;
    private final int[] keyIndexes;
    /** The event trigger's account of the DDL that led to this shape, or null. */
    private final SchemaChange ddl;

    public RelationInfo(int oid, TableRef table, char replicaIdentity, List<ColumnInfo> columns, TypeResolver resolver) {
        this(oid, table, replicaIdentity, columns, resolver, null);
    }

    private RelationInfo(RelationInfo r, SchemaChange ddl) {
        this.oid = r.oid;
        this.table = r.table;
        this.sourceTable = r.sourceTable;
        this.replicaIdentity = r.replicaIdentity;
        this.columns = r.columns;
        this.codecs = r.codecs;
        this.keyIndexes = r.keyIndexes;
        this.ddl = ddl;
    }

    /**
     * @param ddl the event trigger's account of the DDL that led from the table's previous shape in the stream to this one
     *            ({@link ShapeChange#between} reads the change from it), or null
     */
    public RelationInfo(int oid, TableRef table, char replicaIdentity, List<ColumnInfo> columns, TypeResolver resolver, SchemaChange ddl) {
        this.ddl = ddl;
        this.oid = oid;
        this.table = Objects.requireNonNull(table, "table");
        this.sourceTable = this.table;
        this.replicaIdentity = replicaIdentity;
        this.columns = List.copyOf(columns);
        this.codecs = new TypeCodec[this.columns.size()];
        List<Integer> keys = new ArrayList<>();
        for (int i = 0; i < codecs.length; i++) {
            ColumnInfo c = this.columns.get(i);
            codecs[i] = Codecs.forType(c.type(), resolver);
            if (c.key()) {
                keys.add(i);
            }
        }
        this.keyIndexes = keys.stream().mapToInt(Integer::intValue).toArray();
    }

    private RelationInfo(RelationInfo r, List<ColumnInfo> columns, TypeCodec[] codecs) {
        this.oid = r.oid;
        this.table = r.table;
        this.sourceTable = r.sourceTable;
        this.replicaIdentity = r.replicaIdentity;
        this.columns = List.copyOf(columns);
        this.codecs = codecs;
        List<Integer> keys = new ArrayList<>();
        for (int i = 0; i < codecs.length; i++) {
            if (this.columns.get(i).key()) {
                keys.add(i);
            }
        }
        this.keyIndexes = keys.stream().mapToInt(Integer::intValue).toArray();
        this.ddl = r.ddl;
    }

    /**
     * This shape as a transform shows it to destinations: the columns at {@code keep} (indexes into this shape, in
     * order), those {@code asText} says as {@code text} columns of the same name and key flag (their values are masked),
     * the others with their own type and codec.
     */
    public RelationInfo project(int[] keep, java.util.function.IntPredicate asText) {
        List<ColumnInfo> cols = new ArrayList<>(keep.length);
        TypeCodec[] cs = new TypeCodec[keep.length];
        TypeInfo text = Codecs.builtin(25);
        for (int j = 0; j < keep.length; j++) {
            ColumnInfo c = columns.get(keep[j]);
            if (asText.test(keep[j])) {
                cols.add(new ColumnInfo(c.name(), text, -1, c.key()));
                cs[j] = Codecs.forType(text, Codecs.builtins());
            } else {
                cols.add(c);
                cs[j] = codecs[keep[j]];
            }
        }
        return new RelationInfo(this, cols, cs);
    }

    /** This shape under another name: the name a transform gives the table in the destinations ({@code rename}). */
    public RelationInfo renamed(TableRef name) {
        return new RelationInfo(this, name);
    }

    private RelationInfo(RelationInfo r, TableRef name) {
        this.oid = r.oid;
        this.table = Objects.requireNonNull(name, "name");
        this.sourceTable = r.sourceTable;
        this.replicaIdentity = r.replicaIdentity;
        this.columns = r.columns;
        this.codecs = r.codecs;
        this.keyIndexes = r.keyIndexes;
        this.ddl = r.ddl;
    }

    /** This shape, carrying the event trigger's account of the DDL that led to it. */
    public RelationInfo withDdl(SchemaChange change) {
        return new RelationInfo(this, change);
    }

    /** The event trigger's account of the DDL that led to this shape ({@link SchemaChange}), or null (none, or no trigger). */
    public SchemaChange ddl() {
        return ddl;
    }

    public int oid() {
        return oid;
    }

    public TableRef table() {
        return table;
    }

    /**
     * The table's name in the source, which {@link #table} is unless a transform gave the table another name in the
     * destinations ({@link #renamed}): what online copies and the checkpoint's {@code copying} set name it by.
     */
    public TableRef sourceTable() {
        return sourceTable;
    }

    /** {@code d} default (primary key), {@code n} nothing, {@code f} full, {@code i} index. */
    public char replicaIdentity() {
        return replicaIdentity;
    }

    public List<ColumnInfo> columns() {
        return columns;
    }

    public int columnCount() {
        return codecs.length;
    }

    public ColumnInfo column(int i) {
        return columns.get(i);
    }

    public TypeCodec codec(int i) {
        return codecs[i];
    }

    /** Indexes of the replica identity (key) columns, in column order. Empty when the table has none. */
    public int[] keyIndexes() {
        return keyIndexes.clone();
    }

    public boolean hasKey() {
        return keyIndexes.length > 0;
    }

    /** Same table, same columns (names, types, modifiers, key flags) in the same order. */
    public boolean sameShape(RelationInfo other) {
        return other != null && table.equals(other.table) && columns.equals(other.columns);
    }

    @Override
    public String toString() {
        return table + "(oid " + oid + ", " + columns.size() + " columns)";
    }
}
