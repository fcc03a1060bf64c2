package io.millrace.core.types;

import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Composite types over their attributes' codecs. Text as record_out prints it ({@code (1,"a b",)}:
 * a NULL field is empty, an empty string {@code ""}), binary as record_send (int32 field count,
 * then per field its type oid, int32 length or -1 for NULL, and the bytes). Text and JSON are
 * record_out's form, each field printed by its codec's {@code toPgText}.
 */
final class CompositeCodec extends BaseCodec {
    private final List<String> names;
    private final List<Integer> oids;
    private final List<TypeCodec> fields;

    CompositeCodec(String name, List<String> names, List<Integer> oids, List<TypeCodec> fields) {
        super(name);
        this.names = List.copyOf(names);
        this.oids = List.copyOf(oids);
        this.fields = List.copyOf(fields);
    }

    @Override
    public boolean supportsBinary() {
        return fields.stream().allMatch(TypeCodec::supportsBinary);
    }

    @Override
    public Object decodeText(String text) {
        RangeCodecs.TextParser p = new RangeCodecs.TextParser(this, text);
        p.skipSpace();
        p.expect('(');
        List<PgComposite.Field> out = new ArrayList<>(fields.size());
        for (int i = 0; i < fields.size(); i++) {
            if (i > 0) {
                p.expect(',');
            }
            String t = p.bound(false);
            try {
                out.add(new PgComposite.Field(names.get(i), t == null ? null : fields.get(i).decodeText(t)));
            } catch (IllegalArgumentException e) {
                throw badText(text, "field " + names.get(i) + ": " + e.getMessage(), e);
            }
        }
        p.expect(')');
        p.skipSpace();
        if (!p.atEnd()) {
            throw badText(text, "unexpected text after the value at position " + p.pos);
        }
        return new PgComposite(out);
    }

    @Override
    public Object decodeBinary(byte[] buf, int off, int len) {
        if (len < 4 || off < 0 || off + len > buf.length) {
            throw badBinary(buf, off, len, "shorter than the field count");
        }
        int n = i32(buf, off);
        if (n != fields.size()) {
            throw badBinary(buf, off, len, n + " fields where the catalog has " + fields.size() + " (" + names + ")");
        }
        int p = off + 4;
        int end = off + len;
        List<PgComposite.Field> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            if (p + 8 > end) {
                throw badBinary(buf, off, len, "ends before field " + names.get(i));
            }
            int oid = i32(buf, p);
            int flen = i32(buf, p + 4);
            p += 8;
            if (oid != oids.get(i)) {
                throw badBinary(buf, off, len, "field " + names.get(i) + " has type oid " + Integer.toUnsignedString(oid)
                        + " where the catalog has " + Integer.toUnsignedString(oids.get(i)));
            }
            if (flen == -1) {
                out.add(new PgComposite.Field(names.get(i), null));
                continue;
            }
            if (flen < 0 || flen > end - p) {
                throw badBinary(buf, off, len, "field " + names.get(i) + " length " + flen + " runs past the end");
            }
            try {
                out.add(new PgComposite.Field(names.get(i), fields.get(i).decodeBinary(buf, p, flen)));
            } catch (IllegalArgumentException e) {
                IllegalArgumentException wrapped = badBinary(buf, off, len, "field " + names.get(i) + ": " + e.getMessage());
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

    @Override
    public String toPgText(Object value) {
        if (!(value instanceof PgComposite c) || c.fields().size() != fields.size()) {
            throw wrongValue(value);
        }
        StringBuilder sb = new StringBuilder().append('(');
        for (int i = 0; i < fields.size(); i++) {
            if (i > 0) {
                sb.append(',');
            }
            Object v = c.fields().get(i).value();
            if (v != null) {
                RangeCodecs.escape(sb, RangeCodecs.serverText(fields.get(i), v), false);
            }
        }
        return sb.append(')').toString();
    }

    @Override
    public void writeJson(JsonGenerator gen, Object value) throws IOException {
        gen.writeString(toPgText(value));
    }
}
