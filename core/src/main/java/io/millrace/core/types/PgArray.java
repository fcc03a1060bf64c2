package io.millrace.core.types;

import java.util.Arrays;

/**
 * A PostgreSQL array of any number of dimensions. {@code elements} are flat in row-major order
 * (last index varies fastest); a NULL element is {@code null}. An empty array has no dimensions.
 * Equality compares contents (arrays deeply, so {@code bytea} elements compare by bytes).
 *
 * @param dims        length of each dimension
 * @param lowerBounds lower bound of each dimension (PostgreSQL's default is 1)
 * @param elements    the elements, {@code product(dims)} of them
 */
public record PgArray(int[] dims, int[] lowerBounds, Object[] elements) {
    private static final int[] NONE = new int[0];
    public static final PgArray EMPTY = new PgArray(NONE, NONE, new Object[0]);

    public PgArray {
        if (dims == null || lowerBounds == null || elements == null) {
            throw new IllegalArgumentException("PgArray parts must not be null");
        }
        if (dims.length != lowerBounds.length) {
            throw new IllegalArgumentException("PgArray has " + dims.length + " dimensions but "
                    + lowerBounds.length + " lower bounds");
        }
        long n = dims.length == 0 ? 0 : 1;
        for (int d : dims) {
            if (d <= 0) {
                throw new IllegalArgumentException("PgArray dimension lengths must be positive: " + Arrays.toString(dims));
            }
            n *= d;
            if (n > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("PgArray too large: " + Arrays.toString(dims));
            }
        }
        if (n != elements.length) {
            throw new IllegalArgumentException("PgArray dimensions " + Arrays.toString(dims) + " need " + n
                    + " elements, got " + elements.length);
        }
    }

    /** A one-dimensional array with lower bound 1 (or the empty array when there are no elements). */
    public static PgArray of(Object... elements) {
        return elements.length == 0 ? EMPTY : new PgArray(new int[] {elements.length}, new int[] {1}, elements);
    }

    public int ndims() {
        return dims.length;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PgArray a && Arrays.equals(dims, a.dims) && Arrays.equals(lowerBounds, a.lowerBounds)
                && Arrays.deepEquals(elements, a.elements);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * Arrays.hashCode(dims) + Arrays.hashCode(lowerBounds)) + Arrays.deepHashCode(elements);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("PgArray[dims=").append(Arrays.toString(dims))
                .append(", lowerBounds=").append(Arrays.toString(lowerBounds)).append(", elements=[");
        for (int i = 0; i < elements.length; i++) {
            if (i > 0) {
                sb.append(", ");
            }
            Object e = elements[i];
            sb.append(e instanceof byte[] b ? "bytes" + Arrays.toString(b) : String.valueOf(e));
        }
        return sb.append("]]").toString();
    }
}
