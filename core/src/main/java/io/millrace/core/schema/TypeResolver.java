package io.millrace.core.schema;

/**
 * Looks up types by oid. Implementations may consult the catalog for types they have not seen
 * (enums, domains, arrays of those); the decoder itself calls {@link #resolve} only through the framer,
 * never while decoding values, and {@link #reread} only for a composite value whose shape it has not met.
 *
 * <p>Implementations must be safe to call from any thread.
 */
@FunctionalInterface
public interface TypeResolver {
    /** Returns the type, or {@code null} when the oid is unknown even to the catalog. */
    TypeInfo resolve(int oid);

    /**
     * The type as the catalog has it now, not as it was first read: a composite type's attributes change with
     * {@code ALTER TYPE ... ATTRIBUTE} and no stream message says so. A composite codec calls it for a value whose field
     * count or field types fit no shape it has met (once per change of shape). The default reads nothing new.
     */
    default TypeInfo reread(int oid) {
        return resolve(oid);
    }

    /** A resolver that knows only the built-in types compiled into the codecs. */
    static TypeResolver builtinsOnly() {
        return oid -> null;
    }
}
