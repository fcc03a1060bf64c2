package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;
import io.millrace.core.schema.TypeInfo;
import io.millrace.core.schema.TypeResolver;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Composite types over their attributes' codecs. Text as record_out prints it ({@code (1,"a b",)}:
 * a NULL field is empty, an empty string {@code ""}), binary as record_send (int32 field count,
 * then per field its type oid, int32 length or -1 for NULL, and the bytes). Text and JSON are
 * record_out's form, each field printed by its codec's {@code toPgText}.
 *
 * <h2>Shapes</h2>
 * A composite type's attributes change with {@code ALTER TYPE ... ADD / DROP ATTRIBUTE} while its tables do not, so
 * the stream sends no Relation message for it; logical decoding prints each value with the catalog of its change's
 * moment, so a value's field count (and, in binary, its field types) is the type's shape at that moment. The codec
 * keeps every shape it has met, the catalog's at its making first. A value that fits none of them makes it read the
 * type again ({@link TypeResolver#reread}, once per new shape, never for a value that fits) and work out the value's
 * shape from it ({@link #shapeOf}); a transaction begun before the ALTER and committed after it still carries the old
 * shape, after values of the new one, and both decode. A value whose fields cannot be named for certain (an attribute
 * was dropped meanwhile) is an error naming the counts (INV: NO-SILENT-ERROR).
 *
 * <h2>Threads</h2>
 * The decoder pool's threads share one codec: {@link #shapes} is replaced, never changed, under the codec's lock, and
 * read without it.
 */
final class CompositeCodec extends BaseCodec {
    /** One version of the type's attributes: their names, type oids, attnums and codecs, in attnum order. */
    record Shape(List<String> names, List<Integer> oids, List<Integer> numbers, List<TypeCodec> fields) {
        Shape {
            names = List.copyOf(names);
            oids = List.copyOf(oids);
            numbers = List.copyOf(numbers);
            fields = List.copyOf(fields);
        }

        int size() {
            return fields.size();
        }

        boolean fits(int count, int[] fieldOids) {
            if (count != fields.size()) {
                return false;
            }
            for (int i = 0; fieldOids != null && i < count; i++) {
                if (fieldOids[i] != oids.get(i)) {
                    return false;
                }
            }
            return true;
        }
    }

    private final int typeOid;
    private final TypeResolver resolver;
    /** The shapes met so far, the first the one the codec was made with. Written under {@code this}. */
    private volatile List<Shape> shapes;
    /** The names of the attributes the catalog had when last read again, for error messages. */
    private volatile List<String> latest;

    CompositeCodec(String name, int typeOid, Shape shape, TypeResolver resolver) {
        super(name);
        this.typeOid = typeOid;
        this.resolver = resolver;
        this.shapes = List.of(shape);
    }

    @Override
    public boolean supportsBinary() {
        return shapes.get(0).fields().stream().allMatch(TypeCodec::supportsBinary);
    }

    @Override
    public Object decodeText(String text) {
        RangeCodecs.TextParser p = new RangeCodecs.TextParser(this, text);
        p.skipSpace();
        p.expect('(');
        List<String> raw = new ArrayList<>();
        raw.add(p.bound(false));
        while (p.peek() == ',') {
            p.expect(',');
            raw.add(p.bound(false));
        }
        p.expect(')');
        p.skipSpace();
        if (!p.atEnd()) {
            throw badText(text, "unexpected text after the value at position " + p.pos);
        }
        Shape shape = shapeOf(raw.size(), null);
        if (shape == null) {
            throw badText(text, misfit(raw.size(), null));
        }
        List<PgComposite.Field> out = new ArrayList<>(raw.size());
        for (int i = 0; i < raw.size(); i++) {
            String t = raw.get(i);
            try {
                out.add(new PgComposite.Field(shape.names().get(i), t == null ? null : shape.fields().get(i).decodeText(t)));
            } catch (IllegalArgumentException e) {
                throw badText(text, "field " + shape.names().get(i) + ": " + e.getMessage(), e);
            }
        }
        return new PgComposite(out);
    }

    @Override
    public Object decodeBinary(byte[] buf, int off, int len) {
        if (len < 4 || off < 0 || off + len > buf.length) {
            throw badBinary(buf, off, len, "shorter than the field count");
        }
        int n = i32(buf, off);
        int end = off + len;
        if (n < 0 || n > (len - 4) / 8) {
            throw badBinary(buf, off, len, "field count " + n + " does not fit in the value");
        }
        int[] fieldOids = new int[n];
        for (int i = 0, p = off + 4; i < n; i++) {
            if (p + 8 > end) {
                throw badBinary(buf, off, len, "ends before field " + (i + 1));
            }
            fieldOids[i] = i32(buf, p);
            int flen = i32(buf, p + 4);
            if (flen < -1 || flen > end - p - 8) {
                throw badBinary(buf, off, len, "field " + (i + 1) + " length " + flen + " runs past the end");
            }
            p += 8 + Math.max(flen, 0);
        }
        Shape shape = shapeOf(n, fieldOids);
        if (shape == null) {
            throw badBinary(buf, off, len, misfit(n, fieldOids));
        }
        int p = off + 4;
        List<PgComposite.Field> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String field = shape.names().get(i);
            int flen = i32(buf, p + 4);
            p += 8;
            if (flen == -1) {
                out.add(new PgComposite.Field(field, null));
                continue;
            }
            if (flen < 0 || flen > end - p) {
                throw badBinary(buf, off, len, "field " + field + " length " + flen + " runs past the end");
            }
            try {
                out.add(new PgComposite.Field(field, shape.fields().get(i).decodeBinary(buf, p, flen)));
            } catch (IllegalArgumentException e) {
                IllegalArgumentException wrapped = badBinary(buf, off, len, "field " + field + ": " + e.getMessage());
                wrapped.initCause(e);
                throw wrapped;
            }
            p += flen;
        }
        if (p != end) {
            throw badBinary(buf, off, len, (end - p) + " bytes after the last field");
        }
        return new PgComposite(out);
    }

    /**
     * The shape a value of {@code count} fields (of these type oids, when the form carries them) was written in: one met
     * before, else one read from the catalog now. {@code null} when none fits.
     *
     * <p>The catalog keeps dropped attributes (flagged) and numbers attributes in the order they were added, never reusing
     * a number. So when every attribute of the first shape is still there and none added since was dropped, attributes were
     * only added: a value of {@code count} fields has the first {@code count} of today's, even where the type was altered
     * again since (the stream runs behind the catalog). Otherwise only today's shape is known for certain.
     */
    private Shape shapeOf(int count, int[] fieldOids) {
        for (Shape s : shapes) {
            if (s.fits(count, fieldOids)) {
                return s;
            }
        }
        synchronized (this) {
            for (Shape s : shapes) {
                if (s.fits(count, fieldOids)) {
                    return s;
                }
            }
            TypeInfo now = resolver == null ? null : resolver.reread(typeOid);
            if (now == null || !now.isComposite()) {
                return null;
            }
            List<TypeInfo.Attribute> live = now.liveAttributes();
            latest = live.stream().map(TypeInfo.Attribute::name).toList();
            Shape first = shapes.get(0);
            int firstLast = first.numbers().stream().mapToInt(Integer::intValue).max().orElse(0);
            boolean onlyAdded = live.stream().map(TypeInfo.Attribute::number).toList().containsAll(first.numbers())
                    && now.attributes().stream().noneMatch(a -> a.dropped() && a.number() > firstLast);
            List<TypeInfo.Attribute> written;
            if (onlyAdded && count >= first.size() && count <= live.size()) {
                written = live.subList(0, count);
            } else if (count == live.size()) {
                written = live;
            } else {
                return null;
            }
            Shape read = Codecs.shape(written, resolver, 0);
            if (!read.fits(count, fieldOids)) {
                return null;
            }
            if (shapes.stream().noneMatch(s -> s.numbers().equals(read.numbers()) && s.oids().equals(read.oids()))) {
                List<Shape> more = new ArrayList<>(shapes);
                more.add(read);
                shapes = List.copyOf(more);
            }
            return read;
        }
    }

    private String misfit(int count, int[] fieldOids) {
        List<String> now = latest;
        Shape last = shapes.get(shapes.size() - 1);
        String what = count != last.size() || fieldOids == null ? count + " fields" : "fields of type oids "
                + java.util.Arrays.stream(fieldOids).mapToObj(Integer::toUnsignedString).toList() + " (the shape with "
                + last.names() + " has " + last.oids().stream().map(Integer::toUnsignedString).toList() + ")";
        return what + " where the type has " + (now == null ? "?" : now.size() + " (" + now) + ", read from the catalog again; shapes"
                + " met: " + shapes.stream().map(Shape::names).toList() + "): attributes were dropped or changed (ALTER TYPE ..."
                + " ATTRIBUTE) after this change was made and before it was read, so its fields cannot be named for certain";
    }

    @Override
    public String toPgText(Object value) {
        if (!(value instanceof PgComposite c)) {
            throw wrongValue(value);
        }
        List<Shape> known = shapes;
        Shape shape = known.size() == 1 && known.get(0).size() == c.fields().size() ? known.get(0) : null; // the usual case
        for (int k = 0; shape == null && k < known.size(); k++) {
            if (known.get(k).names().equals(c.fields().stream().map(PgComposite.Field::name).toList())) {
                shape = known.get(k); // the shape the value was decoded in
            }
        }
        if (shape == null) {
            throw wrongValue(value);
        }
        StringBuilder sb = new StringBuilder().append('(');
        for (int i = 0; i < shape.size(); i++) {
            if (i > 0) {
                sb.append(',');
            }
            Object v = c.fields().get(i).value();
            if (v != null) {
                RangeCodecs.escape(sb, RangeCodecs.serverText(shape.fields().get(i), v), false);
            }
        }
        return sb.append(')').toString();
    }

    @Override
    public void writeJson(JsonGenerator gen, Object value) throws IOException {
        gen.writeString(toPgText(value));
    }
}
