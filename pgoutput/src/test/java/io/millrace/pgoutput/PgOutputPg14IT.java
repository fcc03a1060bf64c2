package io.millrace.pgoutput;

/** Real pgoutput from PostgreSQL 14: protocol v1 (text and binary) and v2 with streaming. */
class PgOutputPg14IT extends AbstractPgOutputIT {
    @Override
    int major() {
        return 14;
    }
}
