package io.millrace.cli;

import io.millrace.core.sink.SinkReset;
import io.millrace.engine.Reset;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.Console;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code millrace reset config.yaml}: lists what removing the pipeline's state would do; with {@code --yes}, or a
 * "yes" typed at the prompt, does it. Without {@code --yes} and without a terminal it only lists (a dry run).
 */
@Command(name = "reset", mixinStandardHelpOptions = true,
        description = {"Remove this pipeline's state so that the next 'millrace run' starts afresh (a new slot, a new snapshot):"
                + " the replication slot and each destination's checkpoint. Lists what it would do first; nothing is removed"
                + " without --yes or a confirmation. Refused while an engine runs the pipeline, and when a destination holds"
                + " another pipeline's checkpoint."})
final class ResetCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "CONFIG", description = "the configuration file (YAML)")
    Path config;

    @Option(names = "--yes", description = "do it without asking (for scripts)")
    boolean yes;

    @Option(names = "--data", paramLabel = "keep|truncate|drop", defaultValue = "truncate",
            description = {"the data copied into the destinations: truncate (default) empties the tables and deletes the jsonl events"
                    + " files, so the next run's copy equals the source; drop also drops the tables (the next run creates them"
                    + " from the source's shape); keep leaves the rows (the next run copies every row over them: rows deleted"
                    + " from the source since stay) and moves jsonl events files aside. Kafka topics are always kept."})
    String data;

    @Option(names = "--drop-publication", description = "also drop the publication (kept by default: it holds no position and"
            + " retains no WAL)")
    boolean dropPublication;

    @Override
    public Integer call() throws Exception {
        SinkReset.Data mode;
        try {
            mode = SinkReset.Data.valueOf(data.strip().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new io.millrace.core.MillraceException(io.millrace.core.MillraceException.Kind.CONFIG, "--data must be keep, truncate"
                    + " or drop, got '" + data + "'");
        }
        EngineConfig cfg = ConfigLoader.fromSystem().withoutRunSecrets().load(config); // the control token and the salt: not used here
        PrintStream out = System.out;
        try (Reset reset = Reset.plan(cfg, new Reset.Options(mode, dropPublication))) {
            List<String> actions = reset.actions();
            List<String> keeps = reset.keeps();
            out.println("Reset of pipeline '" + cfg.name() + "' (source " + cfg.source().where() + ", slot '" + cfg.source().slot()
                    + "', publication '" + cfg.source().publication() + "'):");
            if (actions.isEmpty()) {
                out.println("  nothing to remove: no destination holds a checkpoint of this pipeline.");
            } else {
                actions.forEach(a -> out.println("  - " + a));
            }
            if (!keeps.isEmpty()) {
                out.println("Kept:");
                keeps.forEach(k -> out.println("  - " + k));
            }
            if (actions.isEmpty()) {
                return 0;
            }
            if (!yes && !confirmed()) {
                out.println("Nothing was removed. Run 'millrace reset " + config + " --yes' to do the above.");
                return 0;
            }
            reset.apply();
            out.println("Done. The next 'millrace run " + config + "' starts afresh: a new slot and a new snapshot.");
            return 0;
        }
    }

    /** Asks on the terminal; without one (a script, a pipe) the answer is no. */
    private static boolean confirmed() {
        Console console = System.console();
        if (console == null) {
            return false;
        }
        String answer = console.readLine("Do this? Type 'yes' to confirm: ");
        return answer != null && answer.strip().equalsIgnoreCase("yes");
    }
}
