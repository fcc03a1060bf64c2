package io.millrace.sink.postgres;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * Named fault points around the sink's commit, for crash tests: each may throw to simulate a
 * failure at that moment. Production uses {@link #NONE}.
 */
interface FaultPoints {
    FaultPoints NONE = new FaultPoints() {
    };

    /** Data and checkpoint written, transaction not yet committed. */
    default void beforeCommit(Connection conn) throws SQLException {
    }

    /** Committed, but the sink has not yet returned (e.g. the commit's acknowledgement is lost). */
    default void afterCommit(Connection conn) throws SQLException {
    }
}
