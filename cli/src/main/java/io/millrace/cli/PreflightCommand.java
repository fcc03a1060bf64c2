package io.millrace.cli;

import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.source.PgConnections;
import io.millrace.source.Preflight;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.concurrent.Callable;

/** {@code millrace preflight config.yaml}: checks the source and prints what to fix. */
@Command(name = "preflight", mixinStandardHelpOptions = true,
        description = "Check that the source is ready (wal_level, privileges, publication, slot, replica identity) and print the fixes.")
final class PreflightCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "CONFIG", description = "the configuration file (YAML)")
    Path config;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        // Preflight checks the source: a control token or destination password it cannot read is for `run` to refuse.
        ConfigLoader loader = ConfigLoader.fromSystem().sourceOnly();
        EngineConfig cfg = loader.load(config);
        PgConnections conns = new PgConnections(cfg.source());
        try (Connection c = conns.open()) {
            Preflight.Report r = Preflight.run(conns, c);
            out.println(r.render());
            for (String d : loader.deferred()) {
                out.println(new Preflight.Check("configuration", Preflight.Status.WARN, d.replaceFirst("^config: ", "")
                        + " (preflight does not need it; 'millrace run' does)", null, null));
            }
            if (r.ok()) {
                out.println("\nready: " + (loader.deferred().isEmpty() ? "" : "once the variables or files named above are there, ")
                        + "run 'millrace run " + config + "'");
                out.flush();
                return 0;
            }
            out.println("\n" + r.failures().size() + " problem(s) to fix before 'millrace run'.");
            out.flush();
            return r.failures().get(0).kind().exitCode();
        }
    }
}
