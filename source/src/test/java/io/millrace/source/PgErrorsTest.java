package io.millrace.source;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.sql.SQLException;

import static org.assertj.core.api.Assertions.assertThat;

class PgErrorsTest {
    /**
     * A server that turns the session away for a while is retried (CONNECTION), not a set-up error (exit 6, not retried):
     * a lock the application's own ALTER TABLE held past a DBA's lock_timeout while the pipeline reconnected stopped it for
     * good, and so did a role's CONNECTION LIMIT reached by a new connection of a running pipeline.
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "55P03|canceling statement due to lock timeout|lock_timeout",
        "53300|too many connections for role \"millrace\"|CONNECTION LIMIT",
        "57014|canceling statement due to user request|cancelled",
        "40P01|deadlock detected|deadlock"})
    void aServerTurningTheSessionAwayForAWhileIsRetried(String state, String message, String fix) {
        MillraceException e = PgErrors.translate("checking the source h:5432/app", new SQLException("ERROR: " + message, state));
        assertThat(e.kind()).isEqualTo(Kind.CONNECTION);
        assertThat(e.kind().retryable()).isTrue();
        assertThat(e.getMessage()).startsWith("checking the source h:5432/app failed: ERROR: " + message).contains("[SQLSTATE " + state + "]")
                .contains(fix).contains("Retried");
    }

    @Test
    void anUnknownErrorIsStillASetUpError() {
        MillraceException e = PgErrors.translate("creating the publication", new SQLException("ERROR: something new", "XX999"));
        assertThat(e.kind()).isEqualTo(Kind.SOURCE_SETUP);
    }
}
