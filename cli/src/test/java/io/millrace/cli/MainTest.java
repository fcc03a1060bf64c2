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
