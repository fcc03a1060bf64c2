package io.millrace.core;

/**
 * What change data costs on the heap, as the memory budget counts it (INV: BOUNDED). The budget must count what the
 * rows take in memory, not the bytes that carried them: a row of a few small columns takes 26 bytes on the wire and
 * about 200 once decoded into an event (event, position, value array, boxed values), and a budget counting wire bytes
 * let a 2M-row transaction of such rows exhaust a 192 MB heap. The estimates are calibrated against measured heap use
 * (docs/BENCHMARKS.md, "Memory per row") and err on the high side.
 */
public final class HeapCost {
    /** Per replication message between the reader and the assembler: the byte array's header, the record and list slot that carry it. */
    static final int MESSAGE_OVERHEAD = 96;
    /** Per decoded row change: the event object, its position and its WAL position. */
    static final int EVENT_OVERHEAD = 80;
    /** Per row image: the value array's header. */
    static final int IMAGE_OVERHEAD = 16;
    /** Per value in an image: its array slot and the boxed value's or string's header. */
    static final int VALUE_OVERHEAD = 24;

    private HeapCost() {
    }

    /** A replication message of {@code bytes} bytes as the reader hands it on. */
    public static long message(int bytes) {
        return bytes + (long) MESSAGE_OVERHEAD;
    }

    /**
     * A decoded row change carrying {@code images} row images (1 for an insert or a read, up to 2 for an update) of
     * {@code columns} columns, decoded from {@code encodedBytes} bytes (the pgoutput message, or the COPY text row): the
     * values' data take about one and a half times their encoded size (numbers and date-times become objects, strings
     * keep a header). Measured (bench {@code heap-per-row}): 162 bytes for a (bigint, int) row of 30 wire bytes
     * (estimate 189), 432 for the benchmark table's six-column row of 173 (estimate 500).
     */
    public static long row(int encodedBytes, int columns, int images) {
        return EVENT_OVERHEAD + (long) images * (IMAGE_OVERHEAD + (long) VALUE_OVERHEAD * columns) + encodedBytes
                + encodedBytes / 2L;
    }
}
