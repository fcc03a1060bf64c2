package io.millrace.cli;

import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.source.PgConnections;
import io.millrace.source.Preflight;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.sql.Connection;
import java.util.concurrent.Callable;

/** {@code millrace preflight config.yaml}: checks the source and prints what to fix. */
@Command(name = "preflight", mixinStandardHelpOptions = true,
        description = "Check that the source is ready (wal_level, privileges, publication, slot, replica identity) and print the fixes.")
final class PreflightCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "CONFIG", description = "the configuration file (YAML)")
    Path config;

    @Override
    public Integer call() throws Exception {
        EngineConfig cfg = ConfigLoader.fromSystem().load(config);
        PgConnections conns = new PgConnections(cfg.source());
        try (Connection c = conns.open()) {
            Preflight.Report r = Preflight.run(cfg.source(), c);
            System.out.println(r.render());
            if (r.ok()) {
                System.out.println("\nready: run 'millrace run " + config + "'");
                return 0;
            }
            System.out.println("\n" + r.failures().size() + " problem(s) to fix before 'millrace run'.");
            return r.failures().get(0).kind().exitCode();
        }
    }
}
