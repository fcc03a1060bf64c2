package io.millrace.cli;

import org.junit.jupiter.api.Test;

import static io.millrace.cli.Cli.millrace;
import static org.assertj.core.api.Assertions.assertThat;

/** The command line itself, without a server: what a mistyped command does. */
class MainTest {
    @Test
    void anUnknownCommandWithHelpIsAnErrorNamingIt() {
        Cli.Run r = millrace("mirgate", "--help");
        assertThat(r.exitCode()).isEqualTo(2);
        assertThat(r.err()).contains("'mirgate'");
        assertThat(r.out()).as("no help printed as if the command were fine").isEmpty();
    }

    /** A version the demo has no binaries for: exit 1 and a stack trace before (an "unexpected error", found by a user). */
    @Test
    void aDemoOfAPostgresVersionItDoesNotBringIsAUsageError(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        Cli.Run r = millrace("demo", "--pg-major", "16", "--dir", dir.toString());
        assertThat(r.exitCode()).isEqualTo(2);
        assertThat(r.err()).contains("--pg-major 16: the demo runs PostgreSQL 14, 15 or 17").doesNotContain("\tat ");
    }

    @Test
    void anUnknownCommandIsAnErrorNamingIt() {
        Cli.Run r = millrace("mirgate");
        assertThat(r.exitCode()).isEqualTo(2);
        assertThat(r.err()).contains("'mirgate'");
    }

    @Test
    void helpAndKnownCommandsHelpStillExitZero() {
        assertThat(millrace("--help").exitCode()).isZero();
        assertThat(millrace("run", "--help").exitCode()).isZero();
        assertThat(millrace("help", "run").exitCode()).isZero();
    }
}
