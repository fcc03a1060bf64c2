package io.millrace.core;

/**
 * Where a change stands in the stream: the commit LSN of its transaction and its ordinal (1-based)
 * inside that transaction. Positions are totally ordered because pgoutput delivers transactions in
 * commit order with strictly increasing commit LSNs (INV: ORDER). A consumer of an at-least-once
 * sink drops a streamed event whose position is not after the last one it processed (INV: RESUME); the events of an
 * initial snapshot (its rows, and the truncate that opens a copy again) all carry {@link #START} and are kept whatever
 * their position.
 */
public record Position(Lsn commitLsn, long ordinal) implements Comparable<Position> {
    /** Before every streamed change. Snapshot rows carry this position. */
    public static final Position START = new Position(Lsn.ZERO, 0);

    public Position {
        if (commitLsn == null) {
            throw new IllegalArgumentException("commitLsn must not be null");
        }
        if (ordinal < 0) {
            throw new IllegalArgumentException("ordinal must not be negative: " + ordinal);
        }
    }

    @Override
    public int compareTo(Position o) {
        int c = commitLsn.compareTo(o.commitLsn);
        return c != 0 ? c : Long.compare(ordinal, o.ordinal);
    }

    public boolean isAfter(Position o) {
        return compareTo(o) > 0;
    }

    @Override
    public String toString() {
        return commitLsn + "#" + ordinal;
    }
}
