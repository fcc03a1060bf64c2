package io.millrace.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/** Test support: runs the {@code millrace} command line in-process and keeps what it printed. */
public final class Cli {
    private Cli() {
    }

    /** The outcome of one command: its exit code, and what picocli and the command wrote to out and err. */
    public record Run(int exitCode, String out, String err) {
    }

    public static Run millrace(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code;
        try (PrintWriter o = new PrintWriter(out, true); PrintWriter e = new PrintWriter(err, true)) {
            code = Main.execute(o, e, args);
        }
        return new Run(code, out.toString(), err.toString());
    }
}
