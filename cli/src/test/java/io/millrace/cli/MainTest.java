package io.millrace.cli;

import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.assertj.core.api.Assertions.assertThat;

/** The command line itself, without a server: what a mistyped command does. */
class MainTest {
    /** The outcome of one command. */
    record Run(int exitCode, String out, String err) {
    }

    private static Run millrace(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code;
        try (PrintWriter o = new PrintWriter(out, true); PrintWriter e = new PrintWriter(err, true)) {
            code = Main.execute(o, e, args);
        }
        return new Run(code, out.toString(), err.toString());
    }

    @Test
    void anUnknownCommandWithHelpIsAnErrorNamingIt() {
        Run r = millrace("migrate", "--help");
        assertThat(r.exitCode()).isEqualTo(2);
        assertThat(r.err()).contains("'migrate'");
        assertThat(r.out()).as("no help printed as if the command were fine").isEmpty();
    }

    @Test
    void anUnknownCommandIsAnErrorNamingIt() {
        Run r = millrace("migrate");
        assertThat(r.exitCode()).isEqualTo(2);
        assertThat(r.err()).contains("'migrate'");
    }

    @Test
    void helpAndKnownCommandsHelpStillExitZero() {
        assertThat(millrace("--help").exitCode()).isZero();
        assertThat(millrace("run", "--help").exitCode()).isZero();
        assertThat(millrace("help", "run").exitCode()).isZero();
    }
}
