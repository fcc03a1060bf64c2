package io.millrace.cli;

import io.millrace.api.Millrace;
import io.millrace.api.SourceSettings;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.sink.DestinationConfig;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.migrate.CutoverReport;
import io.millrace.migrate.Migration;
import io.millrace.migrate.Plan;
import io.millrace.migrate.VerifyReport;
import io.millrace.sink.postgres.PostgresSinkConfig;
import io.millrace.source.SourceConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/**
 * {@code millrace migrate plan|run|verify|cutover|reverse|rollback|status|abort CONFIG}: a PostgreSQL-to-PostgreSQL migration
 * ({@link Migration}). The configuration is the one {@code millrace run} reads, with one destination of type
 * {@code postgres}: the target. Exit codes as the README's table; {@code verify} exits 12 when chunks differ.
 */
@Command(name = "migrate", mixinStandardHelpOptions = true,
        description = "Move a database to another PostgreSQL server with seconds of write downtime: plan, run (schema, copy, follow),"
                + " verify, cutover; the way back (reverse, rollback); status and abort.",
        subcommands = {MigrateCommand.PlanCmd.class, MigrateCommand.RunCmd.class, MigrateCommand.VerifyCmd.class,
                MigrateCommand.CutoverCmd.class, MigrateCommand.ReverseCmd.class, MigrateCommand.RollbackCmd.class,
                MigrateCommand.StatusCmd.class, MigrateCommand.AbortCmd.class})
final class MigrateCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    /** Without a subcommand: the usage, exit 2. */
    @Override
    public Integer call() {
        spec.commandLine().getErr().println("millrace migrate: name a step: plan, run, verify, cutover, reverse, rollback, status or abort");
        spec.commandLine().usage(spec.commandLine().getErr());
        return 2;
    }

    /** What every subcommand takes: the configuration file. */
    abstract static class Sub implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "CONFIG", description = "the configuration file (YAML): the source, and one postgres destination (the target)")
        Path config;

        @Spec
        CommandSpec spec;

        PrintWriter out() {
            return spec.commandLine().getOut();
        }

        /** Prints {@code text} at once and returns {@code code}. */
        int print(String text, int code) {
            out().print(text);
            out().flush();
            return code;
        }

        Migration migration() {
            EngineConfig cfg = ConfigLoader.fromSystem().load(config);
            if (cfg.operations().httpPort() > 0) {
                // not served by the migrate commands (docs/MIGRATE.md "Not built yet"): said, not ignored silently (a user's
                // configuration, made for 'millrace run', had it)
                spec.commandLine().getErr().println("millrace migrate: operations.http_port " + cfg.operations().httpPort()
                        + " is not served by 'millrace migrate' (no status page or metrics yet); 'millrace migrate status "
                        + config + "' shows the step, each table's phase and the lag");
                spec.commandLine().getErr().flush();
            }
            if (cfg.destinations().size() != 1 || !(cfg.destinations().get(0) instanceof PostgresSinkConfig target)) {
                throw new MillraceException(Kind.CONFIG, "config: migrate needs exactly one destination, of type postgres (the"
                        + " target); " + config + " has " + cfg.destinations().stream().map(DestinationConfig::type).toList());
            }
            return Migration.of(settings(cfg.source()), target);
        }

        /** The engine's source configuration as the public settings the migration takes. */
        private static SourceSettings settings(SourceConfig s) {
            SourceSettings.Builder b = SourceSettings.builder().host(s.host()).port(s.port()).database(s.database()).user(s.user())
                    .password(s.password()).slot(s.slot()).publication(s.publication()).createPublication(s.createPublication())
                    .binary(SourceSettings.BinaryMode.valueOf(s.binary().name()));
            if (!s.tables().isEmpty()) {
                b.tables(s.tables().stream().map(Object::toString).toList());
            }
            if (!s.excludeTables().isEmpty()) {
                b.excludeTables(s.excludeTables().stream().map(Object::toString).toList());
            }
            String ssl = s.jdbcProperties().get("sslmode");
            if (ssl != null) {
                b.sslMode(ssl);
            }
            String root = s.jdbcProperties().get("sslrootcert");
            if (root != null) {
                b.sslRootCert(Path.of(root));
            }
            return b.build();
        }
    }

    @Command(name = "plan", mixinStandardHelpOptions = true,
            description = "Check both servers and print what will be copied, what cannot be and why, and what to fix. Writes nothing.")
    static final class PlanCmd extends Sub {
        @Override
        public Integer call() {
            Plan p = migration().plan();
            return print(p.render() + (p.ok() ? "\nready: run 'millrace migrate run " + config + "'\n"
                    : "\n" + p.problems().size() + " problem(s) to fix before 'millrace migrate run'.\n"),
                    p.ok() ? 0 : p.problems().get(0).kind().exitCode());
        }
    }

    @Command(name = "run", mixinStandardHelpOptions = true,
            description = "Create the schema on the target, copy the tables, then follow every change until the cutover, SIGTERM or"
                    + " Ctrl-C. Started again, it goes on from where it stopped.")
    static final class RunCmd extends Sub {
        @Option(names = "--copy-timeout-s", defaultValue = "86400", description = "how long the copy may take (default ${DEFAULT-VALUE} s)")
        long copyTimeoutS;

        @Override
        public Integer call() throws Exception {
            Migration m = migration();
            Millrace following;
            try (Interrupted said = new Interrupted("migrate run: interrupted before following began (the schema or the copy). Started"
                    + " again, it goes on from where it stopped; 'millrace migrate status " + config + "' shows each table's phase")) {
                following = m.follow(Duration.ofSeconds(copyTimeoutS));
            }
            out().println("migrate: copy done, following. Next: 'millrace migrate verify " + config + "', then 'millrace migrate cutover "
                    + config + "'. SIGTERM or Ctrl-C stops following.");
            out().flush();
            Stopping stopping = new Stopping(following);
            // Once cut over (or aborted) there is nothing left to follow: the source is fenced and the target has it all.
            stopAt(m, following, st -> st == io.millrace.migrate.MigrationState.CUT_OVER
                    || st == io.millrace.migrate.MigrationState.ABORTED, "migrate: the migration is %s; following stops", out());
            try {
                following.await();
                io.millrace.migrate.MigrationState st = m.status().state();
                if (st == io.millrace.migrate.MigrationState.CUT_OVER || st == io.millrace.migrate.MigrationState.ABORTED) {
                    if (m.releaseSource(Duration.ofSeconds(10))) {
                        out().println("migrate: replication slot dropped on the source (it retains no WAL for this migration)");
                        out().flush();
                    }
                }
            } finally {
                stopping.close();
            }
            return 0;
        }
    }

    /**
     * While open: when the JVM ends (Ctrl-C, SIGTERM) before {@link #close()}, {@code message} goes to standard error, so that
     * a command interrupted in the middle leaves a word on the terminal and not only an exit status (found by a user: a
     * cutover interrupted after the fence ended silently with the source fenced).
     */
    static final class Interrupted implements AutoCloseable {
        private final Thread hook;

        Interrupted(String message) {
            hook = new Thread(() -> {
                System.err.println(message);
                System.err.flush();
            }, "millrace-migrate-interrupted");
            Runtime.getRuntime().addShutdownHook(hook);
        }

        @Override
        public void close() {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the JVM is ending: the hook has run
            }
        }
    }

    /**
     * Stops {@code pipeline} once the migration's recorded step is one {@code done} accepts (looked at every second on a
     * daemon thread), printing {@code message} with the step: a step taken by another command ends this one's stream.
     */
    static void stopAt(Migration m, Millrace pipeline, java.util.function.Predicate<io.millrace.migrate.MigrationState> done,
                       String message, PrintWriter out) {
        Thread watch = new Thread(() -> {
            try {
                while (!pipeline.await(Duration.ofSeconds(1))) {
                    io.millrace.migrate.MigrationState st = m.status().state();
                    if (done.test(st)) {
                        out.println(String.format(message, st));
                        out.flush();
                        pipeline.stop();
                        return;
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                // the pipeline's own error ends the command; a status read that failed is tried no more
            }
        }, "millrace-migrate-watch");
        watch.setDaemon(true);
        watch.start();
    }

    /**
     * While open: SIGTERM and Ctrl-C stop {@code pipeline} after its last durable checkpoint and the command exits 0 (as
     * {@code millrace run}); any other end of the JVM stops it too and waits until {@link #close()} says the command is done.
     */
    static final class Stopping implements AutoCloseable {
        private final CountDownLatch done = new CountDownLatch(1);
        private final Thread hook;

        Stopping(Millrace pipeline) {
            hook = new Thread(() -> {
                pipeline.stop();
                try {
                    done.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "millrace-migrate-shutdown");
            Runtime.getRuntime().addShutdownHook(hook);
            RunCommand.onStopSignals(pipeline::stop);
        }

        @Override
        public void close() {
            done.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the JVM is ending: the hook has run
            }
        }
    }

    @Command(name = "verify", mixinStandardHelpOptions = true,
            description = "Compare source and target chunk by chunk while 'migrate run' follows; exit 12 when chunks differ.")
    static final class VerifyCmd extends Sub {
        @Option(names = "--repair", description = "copy divergent chunks again")
        boolean repair;

        @Option(names = "--chunk-rows", defaultValue = "1000", description = "rows per chunk (default ${DEFAULT-VALUE})")
        int chunkRows;

        @Override
        public Integer call() throws Exception {
            VerifyReport r = migration().verify(repair, chunkRows);
            return print(r.render(), r.equal() ? 0 : Kind.DIVERGED.exitCode());
        }
    }

    @Command(name = "cutover", mixinStandardHelpOptions = true,
            description = "Fence the source, wait until the target has every write, set the sequences past the source's, and print"
                    + " the write-unavailable window. Needs 'migrate run' following.")
    static final class CutoverCmd extends Sub {
        @Option(names = "--max-lag-mb", defaultValue = "16", description = "fence only once the target is less than this far behind (default ${DEFAULT-VALUE} MB)")
        long maxLagMb;

        @Option(names = "--timeout-s", defaultValue = "300", description = "how long each wait may take (default ${DEFAULT-VALUE} s)")
        long timeoutS;

        @Option(names = "--verify", description = "compare every table with the source fenced before the sequences are set"
                + " (exact; its time is part of the window); a difference stops the cutover, fenced, with exit 12")
        boolean verify;

        @Option(names = "--chunk-rows", defaultValue = "1000", description = "rows per chunk of --verify (default ${DEFAULT-VALUE})")
        int chunkRows;

        @Option(names = "--reverse", description = "prepare the way back: a slot on the target, made at the fence, that keeps every"
                + " write of the new primary for 'migrate reverse' (needs wal_level = logical on the target; checked before the fence)")
        boolean reverse;

        @Override
        public Integer call() throws Exception {
            CutoverReport r;
            // A Ctrl-C or SIGTERM ends the JVM in the middle of the cutover, perhaps with the source fenced: it says so.
            try (Interrupted said = new Interrupted("migrate cutover: interrupted. The source may be fenced: 'millrace migrate status "
                    + config + "' says which step was recorded and whether it is; 'millrace migrate cutover " + config + "' finishes"
                    + " the cutover, 'millrace migrate abort " + config + "' lifts the fence")) {
                r = migration().cutover(maxLagMb << 20, Duration.ofSeconds(timeoutS), verify ? Math.max(1, chunkRows) : 0, reverse);
            }
            return print(r.render().replace("CONFIG", config.toString()), 0);
        }
    }

    @Command(name = "reverse", mixinStandardHelpOptions = true,
            description = "After 'migrate cutover --reverse': stream every write made on the new primary (the target) back into the"
                    + " old one (the source, still fenced for the applications), until SIGTERM or Ctrl-C. Started again, it goes on.")
    static final class ReverseCmd extends Sub {
        @Override
        public Integer call() throws Exception {
            Migration m = migration();
            Millrace back = m.reverse(Duration.ofSeconds(30));
            out().println("migrate reverse: streaming the target's changes into the source. SIGTERM or Ctrl-C stops;"
                    + " 'millrace migrate rollback " + config + "' makes the source the primary again and stops it.");
            out().flush();
            // Once rolled back, the source has every write of the target and the target is fenced: nothing left to stream.
            stopAt(m, back, st -> st == io.millrace.migrate.MigrationState.ROLLED_BACK,
                    "migrate reverse: the migration is %s; streaming stops", out());
            try (Stopping stopping = new Stopping(back)) {
                back.await();
                if (m.status().state() == io.millrace.migrate.MigrationState.ROLLED_BACK && m.releaseReverse(Duration.ofSeconds(10))) {
                    out().println("migrate reverse: its slot dropped on the target (it retains no WAL for this migration)");
                    out().flush();
                }
            }
            return 0;
        }
    }

    @Command(name = "rollback", mixinStandardHelpOptions = true,
            description = "After 'migrate cutover --reverse', with 'migrate reverse' running: make the source the primary again."
                    + " Fences the target, waits until the reverse stream brought all its writes to the source, sets the source's"
                    + " sequences past the target's and lifts the source's fence. Run again, it finishes an interrupted rollback.")
    static final class RollbackCmd extends Sub {
        @Option(names = "--timeout-s", defaultValue = "60", description = "how long to wait for the reverse stream to bring the"
                + " target's last writes (default ${DEFAULT-VALUE} s)")
        long timeoutS;

        @Override
        public Integer call() throws Exception {
            io.millrace.migrate.RollbackReport r = migration().rollback(Duration.ofSeconds(timeoutS));
            return print(r.render(), 0);
        }
    }

    @Command(name = "status", mixinStandardHelpOptions = true, description = "Print the migration's recorded step and whether the source is fenced.")
    static final class StatusCmd extends Sub {
        @Override
        public Integer call() {
            return print(migration().status().render(), 0);
        }
    }

    @Command(name = "abort", mixinStandardHelpOptions = true,
            description = "Abandon the migration before it is cut over: lift the source's fence and record ABORTED.")
    static final class AbortCmd extends Sub {
        @Override
        public Integer call() {
            return print(migration().abort().render(), 0);
        }
    }
}
