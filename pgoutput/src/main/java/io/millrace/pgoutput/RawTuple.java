package io.millrace.pgoutput;

import io.millrace.core.MillraceException;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.types.TypeCodec;
import io.millrace.core.types.UnchangedToast;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * One TupleData of a pgoutput row message, framed but not decoded: a reference to the message
 * bytes plus, per column, its kind and where its value lies. The framer builds it without copying
 * the message; {@link #decode} turns it into values later, possibly on another thread.
 *
 * <p>Column kinds: {@code 'n'} SQL NULL, {@code 'u'} unchanged TOASTed value (no bytes sent),
 * {@code 't'} text format, {@code 'b'} binary format.
 *
 * <p>Immutable and thread-safe, provided nobody writes to the message array after it was framed
 * (the framer's contract with its caller). {@link #decode} is pure: no I/O, no shared state.
 */
public final class RawTuple {
    /** Kept for {@link #byteSize()}: per column one kind byte, one offset and one length. */
    private static final int INDEX_BYTES_PER_COLUMN = 1 + 4 + 4;
    private static final int OVERHEAD_BYTES = 64;
    private static final int MAX_VALUE_IN_ERROR = 64;
    /** Codecs tend to quote the value in their message; keep that short too. */
    private static final int MAX_CAUSE_IN_ERROR = 200;

    private final byte[] data;
    private final int start;
    private final int end;
    private final byte[] kinds;
    private final int[] offsets;
    private final int[] lengths;

    private RawTuple(byte[] data, int start, int end, byte[] kinds, int[] offsets, int[] lengths) {
        this.data = data;
        this.start = start;
        this.end = end;
        this.kinds = kinds;
        this.offsets = offsets;
        this.lengths = lengths;
    }

    /**
     * Reads a TupleData ({@code Int16} column count, then per column a kind byte and, for {@code t}
     * and {@code b}, an {@code Int32} length and the bytes) at the reader's position.
     */
    static RawTuple read(ByteReader r) {
        int tupleStart = r.position();
        int n = r.u16("tuple column count");
        if (n > r.remaining()) { // each column takes at least its kind byte
            throw r.error("truncated: tuple of " + n + " columns but only " + r.remaining() + " bytes remain");
        }
        byte[] kinds = new byte[n];
        int[] offsets = new int[n];
        int[] lengths = new int[n];
        for (int i = 0; i < n; i++) {
            int kind = r.u8("kind of tuple column", i);
            switch (kind) {
                case 'n', 'u' -> offsets[i] = r.position();
                case 't', 'b' -> {
                    int len = r.i32("length of tuple column", i);
                    if (len < 0) {
                        throw r.error("tuple column " + i + " has negative length " + len);
                    }
                    lengths[i] = len;
                    offsets[i] = r.skip(len, "value of tuple column", i);
                }
                default -> throw r.error("tuple column " + i + " has unknown kind byte " + describeByte(kind)
                        + " (expected 'n', 'u', 't' or 'b')");
            }
            kinds[i] = (byte) kind;
        }
        return new RawTuple(r.array(), tupleStart, r.position(), kinds, offsets, lengths);
    }

    public int columnCount() {
        return kinds.length;
    }

    /** {@code 'n'}, {@code 'u'}, {@code 't'} or {@code 'b'}. */
    public char kind(int i) {
        return (char) kinds[i];
    }

    /** A copy of column {@code i}'s value bytes as sent (text in UTF-8, or binary); {@code null} for kinds n and u. */
    public byte[] valueBytes(int i) {
        if (kinds[i] == 'n' || kinds[i] == 'u') {
            return null;
        }
        return Arrays.copyOfRange(data, offsets[i], offsets[i] + lengths[i]);
    }

    /**
     * Bytes this tuple accounts for, for memory budgets: its TupleData bytes in the message plus the
     * column index. The old and new tuple of one message together account for about the message.
     */
    public int byteSize() {
        return (end - start) + kinds.length * INDEX_BYTES_PER_COLUMN + OVERHEAD_BYTES;
    }

    /**
     * Decodes every column with the relation's codecs: {@code null} for SQL NULL,
     * {@link UnchangedToast#INSTANCE} for an unchanged TOASTed value, otherwise the codec's value.
     * Pure and thread-safe.
     *
     * @param relation the relation this tuple was framed with (the one in its message)
     * @throws MillraceException of kind DECODE when the column count differs from the relation's or a
     *                           codec rejects a value (the message names table, column, type and value)
     */
    public Object[] decode(RelationInfo relation) {
        int n = kinds.length;
        if (n != relation.columnCount()) {
            throw new MillraceException(MillraceException.Kind.DECODE, "tuple of table " + relation.table() + " (oid "
                    + relation.oid() + ") has " + n + " column(s) but its Relation message describes "
                    + relation.columnCount() + ": the tuple does not belong to this relation shape");
        }
        Object[] values = new Object[n];
        for (int i = 0; i < n; i++) {
            switch (kinds[i]) {
                case 'n' -> values[i] = null;
                case 'u' -> values[i] = UnchangedToast.INSTANCE;
                case 't' -> values[i] = decodeText(relation, i);
                default -> values[i] = decodeBinary(relation, i);
            }
        }
        return values;
    }

    private Object decodeText(RelationInfo relation, int i) {
        String text = new String(data, offsets[i], lengths[i], StandardCharsets.UTF_8);
        try {
            return relation.codec(i).decodeText(text);
        } catch (RuntimeException e) {
            throw valueError(relation, i, "text", text.length() > MAX_VALUE_IN_ERROR
                    ? "'" + text.substring(0, MAX_VALUE_IN_ERROR) + "'... (" + lengths[i] + " bytes)" : "'" + text + "'", e);
        }
    }

    private Object decodeBinary(RelationInfo relation, int i) {
        try {
            return relation.codec(i).decodeBinary(data, offsets[i], lengths[i]);
        } catch (RuntimeException e) {
            StringBuilder hex = new StringBuilder("0x");
            int shown = Math.min(lengths[i], MAX_VALUE_IN_ERROR / 2);
            for (int k = 0; k < shown; k++) {
                hex.append(String.format("%02x", data[offsets[i] + k] & 0xFF));
            }
            if (shown < lengths[i]) {
                hex.append("...");
            }
            hex.append(" (").append(lengths[i]).append(" bytes)");
            throw valueError(relation, i, "binary", hex.toString(), e);
        }
    }

    private static MillraceException valueError(RelationInfo relation, int i, String format, String value,
                                                RuntimeException cause) {
        ColumnInfo column = relation.column(i);
        TypeCodec codec = relation.codec(i);
        String type = column.type().qualifiedName() + " (oid " + column.type().oid() + (codec == null ? "" : ", codec "
                + codec.typeName()) + ")";
        return new MillraceException(MillraceException.Kind.DECODE, "cannot decode column \"" + column.name() + "\" of table "
                + relation.table() + ", type " + type + ", from its " + format + " value " + value + ": "
                + truncate(String.valueOf(cause.getMessage()), MAX_CAUSE_IN_ERROR), cause);
    }

    private static String truncate(String s, int max) {
        return s.length() <= max ? s : s.substring(0, max) + "...";
    }

    static String describeByte(int b) {
        return b >= 0x20 && b < 0x7F ? String.format("'%c' (0x%02x)", (char) b, b) : String.format("0x%02x", b);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("RawTuple[");
        for (int i = 0; i < kinds.length; i++) {
            sb.append(i == 0 ? "" : ", ").append((char) kinds[i]);
            if (kinds[i] == 't' || kinds[i] == 'b') {
                sb.append(':').append(lengths[i]);
            }
        }
        return sb.append(']').toString();
    }
}
