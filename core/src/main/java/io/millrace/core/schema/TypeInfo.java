package io.millrace.core.schema;

/**
 * What the catalog ({@code pg_type}) says of a type, as far as decoding needs it.
 *
 * @param oid         the type's oid
 * @param schema      its namespace, e.g. {@code pg_catalog}
 * @param name        its name, e.g. {@code int4}, {@code _int4}, {@code mood}
 * @param typtype     {@code b} base, {@code c} composite, {@code d} domain, {@code e} enum,
 *                    {@code p} pseudo, {@code r} range, {@code m} multirange
 * @param category    {@code pg_type.typcategory}, e.g. {@code A} for arrays
 * @param elementOid  for an array type, the element type's oid ({@code typelem}); 0 otherwise
 * @param baseOid     for a domain, the base type's oid ({@code typbasetype}); 0 otherwise
 */
public record TypeInfo(int oid, String schema, String name, char typtype, char category, int elementOid, int baseOid) {

    public boolean isArray() {
        return category == 'A' && elementOid != 0;
    }

    public boolean isDomain() {
        return typtype == 'd';
    }

    public boolean isEnum() {
        return typtype == 'e';
    }

    /** The name as SQL would write it, schema-qualified unless in pg_catalog. */
    public String qualifiedName() {
        return "pg_catalog".equals(schema) ? name : Ident.quote(schema) + "." + Ident.quote(name);
    }
}
