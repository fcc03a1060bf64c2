package io.millrace.cli;

import io.millrace.core.MillraceException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.PrintWriter;

/**
 * The {@code millrace} command.
 *
 * <p>Exit codes: 0 success; 1 unexpected error; 2 configuration; 3 connection; 4 authentication;
 * 5 permission; 6 source not set up; 7 slot in use; 8 checkpoint of another pipeline (identity);
 * 9 decode error; 10 destination error; 11 migration target not ready; 12 migrate verify found divergent chunks;
 * 70 internal error; 130 interrupted. The same table is in
 * README.md.
 */
@Command(name = "millrace", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Change-data-capture for PostgreSQL: snapshot, then stream every committed change into destinations.",
        subcommands = {RunCommand.class, PreflightCommand.class, SetupCommand.class, StatusCommand.class, SnapshotCommand.class,
                ResetCommand.class, DuckDbCopyCommand.class, DemoCommand.class, MigrateCommand.class, CommandLine.HelpCommand.class})
public final class Main {

    public static void main(String[] args) {
        System.exit(execute(args));
    }

    /** Runs the command line and returns its exit code (for tests). */
    public static int execute(String... args) {
        PrintWriter out = null;
        PrintWriter err = null;
        return execute(out, err, args);
    }

    /**
     * Runs the command line with picocli's output and errors (usage, the one-line error message) going to
     * {@code out} and {@code err} ({@code null}: standard output and error), and returns its exit code.
     */
    public static int execute(PrintWriter out, PrintWriter err, String... args) {
        CommandLine cl = new CommandLine(new Main());
        if (out != null) {
            cl.setOut(out);
        }
        if (err != null) {
            cl.setErr(err);
        }
        try {
            LogFormat.apply(io.millrace.engine.config.EngineConfig.LogFormat.TEXT); // MILLRACE_LOG_FORMAT, from the first line
        } catch (MillraceException e) {
            cl.getErr().println("millrace: " + e.getMessage());
            return e.kind().exitCode();
        }
        cl.setExecutionExceptionHandler((ex, cmd, parsed) -> {
            // With JSON logs the error that ends the command is a log line too, so that a collector reads every line as JSON.
            boolean json = LogFormat.current() == io.millrace.engine.config.EngineConfig.LogFormat.JSON;
            if (ex instanceof MillraceException me) {
                if (json) {
                    org.slf4j.LoggerFactory.getLogger(Main.class).error("millrace: {}", me.getMessage());
                } else {
                    cmd.getErr().println("millrace: " + me.getMessage());
                }
                return me.kind().exitCode();
            }
            if (ex instanceof InterruptedException) {
                return 130;
            }
            if (json) {
                org.slf4j.LoggerFactory.getLogger(Main.class).error("millrace: unexpected error", ex);
            } else {
                cmd.getErr().println("millrace: unexpected error: " + ex);
                ex.printStackTrace(cmd.getErr());
            }
            return 1;
        });
        // picocli lets help win over a word it does not know ("millrace migrate --help" printed the top-level help and
        // exited 0): an unknown command or option is an error naming it, with or without --help (exit 2).
        CommandLine.IExecutionStrategy run = new CommandLine.RunLast();
        cl.setExecutionStrategy(parsed -> {
            if (!parsed.unmatched().isEmpty()) {
                throw new CommandLine.UnmatchedArgumentException(parsed.commandSpec().commandLine(), parsed.unmatched());
            }
            return run.execute(parsed);
        });
        return cl.execute(args);
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = Main.class.getPackage().getImplementationVersion();
            return new String[] {"millrace " + (v == null ? "0.1.0-SNAPSHOT" : v)};
        }
    }
}
