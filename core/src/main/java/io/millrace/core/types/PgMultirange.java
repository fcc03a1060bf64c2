package io.millrace.core.types;

import java.util.List;

/** A value of a multirange type (PostgreSQL 14+): its ranges, as the server orders and merges them (none empty). */
public record PgMultirange(List<PgRange> ranges) {
    public PgMultirange {
        ranges = List.copyOf(ranges);
    }
}
