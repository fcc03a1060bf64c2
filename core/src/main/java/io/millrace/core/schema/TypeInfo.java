package io.millrace.core.schema;

import java.util.List;

/**
 * What the catalog ({@code pg_type}, {@code pg_range}, {@code pg_attribute}) says of a type, as far
 * as decoding needs it.
 *
 * @param oid         the type's oid
 * @param schema      its namespace, e.g. {@code pg_catalog}
 * @param name        its name, e.g. {@code int4}, {@code _int4}, {@code mood}
 * @param typtype     {@code b} base, {@code c} composite, {@code d} domain, {@code e} enum,
 *                    {@code p} pseudo, {@code r} range, {@code m} multirange
 * @param category    {@code pg_type.typcategory}, e.g. {@code A} for arrays
 * @param elementOid  for an array type, the element type's oid ({@code typelem}); 0 otherwise
 * @param baseOid     for a domain, the base type's oid ({@code typbasetype}); 0 otherwise
 * @param rangeOid    for a range, its subtype ({@code pg_range.rngsubtype}); for a multirange, its
 *                    range type ({@code pg_range.rngtypid}); 0 otherwise
 * @param attributes  for a composite type, its attributes in {@code attnum} order, the dropped ones included (flagged):
 *                    a value's fields are the attributes not dropped at its time; empty otherwise
 */
public record TypeInfo(int oid, String schema, String name, char typtype, char category, int elementOid, int baseOid,
        int rangeOid, List<Attribute> attributes) {

    /**
     * A composite type's attribute ({@code pg_attribute} of {@code typrelid}).
     *
     * @param number  its {@code attnum} (attributes are numbered in the order they were added; a number is never reused)
     * @param dropped {@code attisdropped}: no value written since it was dropped has this field
     */
    public record Attribute(String name, int typeOid, int number, boolean dropped) {
        /** An attribute not dropped, numbered by the caller's order (tests and built-in types). */
        public Attribute(String name, int typeOid) {
            this(name, typeOid, 0, false);
        }
    }

    public TypeInfo {
        attributes = List.copyOf(attributes);
    }

    /** A type that is neither a range, a multirange nor a composite. */
    public TypeInfo(int oid, String schema, String name, char typtype, char category, int elementOid, int baseOid) {
        this(oid, schema, name, typtype, category, elementOid, baseOid, 0, List.of());
    }

    public boolean isArray() {
        return category == 'A' && elementOid != 0;
    }

    public boolean isDomain() {
        return typtype == 'd';
    }

    public boolean isEnum() {
        return typtype == 'e';
    }

    public boolean isRange() {
        return typtype == 'r';
    }

    public boolean isMultirange() {
        return typtype == 'm';
    }

    public boolean isComposite() {
        return typtype == 'c';
    }

    /** A composite type's attributes not dropped, in order: the fields of a value written now. */
    public List<Attribute> liveAttributes() {
        return attributes.stream().filter(a -> !a.dropped()).toList();
    }

    /** The name as SQL would write it, schema-qualified unless in pg_catalog. */
    public String qualifiedName() {
        return "pg_catalog".equals(schema) ? name : Ident.quote(schema) + "." + Ident.quote(name);
    }
}
