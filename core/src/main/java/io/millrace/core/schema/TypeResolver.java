package io.millrace.core.schema;

/**
 * Looks up types by oid. Implementations may consult the catalog for types they have not seen
 * (enums, domains, arrays of those); the decoder itself only ever calls this through the framer,
 * never while decoding values.
 *
 * <p>Implementations must be safe to call from any thread.
 */
@FunctionalInterface
public interface TypeResolver {
    /** Returns the type, or {@code null} when the oid is unknown even to the catalog. */
    TypeInfo resolve(int oid);

    /** A resolver that knows only the built-in types compiled into the codecs. */
    static TypeResolver builtinsOnly() {
        return oid -> null;
    }
}
