package io.millrace.core.types;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A value of a composite type (a row type or {@code CREATE TYPE ... AS (...)}): its fields in
 * attribute order, each with the attribute's name and the field type's Java value, {@code null}
 * for a NULL field. Equality compares values deeply ({@code bytea} fields by bytes).
 */
public record PgComposite(List<Field> fields) {
    public PgComposite {
        fields = List.copyOf(fields);
    }

    /** One field: the attribute's name and its value ({@code null} for NULL). */
    public record Field(String name, Object value) {
        public Field {
            Objects.requireNonNull(name, "name");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Field f && name.equals(f.name) && Objects.deepEquals(value, f.value);
        }

        @Override
        public int hashCode() {
            return 31 * name.hashCode() + (value instanceof byte[] b ? Arrays.hashCode(b) : Objects.hashCode(value));
        }

        @Override
        public String toString() {
            return name + "=" + (value instanceof byte[] b ? "bytes" + Arrays.toString(b) : value);
        }
    }

    /** The value of the field named {@code name}; throws when there is none. */
    public Object get(String name) {
        for (Field f : fields) {
            if (f.name().equals(name)) {
                return f.value();
            }
        }
        throw new IllegalArgumentException("composite value has no field " + name + ": " + this);
    }
}
