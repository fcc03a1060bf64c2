package io.millrace.cli;

import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.source.DdlTrigger;
import io.millrace.source.PgConnections;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.concurrent.Callable;

/** {@code millrace setup config.yaml}: installs the optional DDL event trigger on the source (needs a superuser). */
@Command(name = "setup", mixinStandardHelpOptions = true,
        description = "Install the optional DDL event trigger on the source, so that schema changes reach the destinations exactly"
                + " (column renames keep their data, dropped tables are followed). Needs a superuser.")
final class SetupCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "CONFIG", description = "the configuration file (YAML)")
    Path config;

    @Option(names = "--print-sql", description = "print the SQL to run as a superuser instead of running it")
    boolean printSql;

    @Option(names = "--uninstall", description = "remove the trigger and its schema 'millrace'")
    boolean uninstall;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        if (printSql) {
            out.println(uninstall ? DdlTrigger.uninstallSql() : DdlTrigger.sql());
            out.flush();
            return 0;
        }
        EngineConfig cfg = ConfigLoader.fromSystem().sourceOnly().load(config);
        try (Connection c = new PgConnections(cfg.source()).open()) {
            if (uninstall) {
                try (var s = c.createStatement()) {
                    s.execute(DdlTrigger.uninstallSql());
                }
                out.println("removed the DDL event trigger from " + cfg.source().where());
            } else {
                DdlTrigger.install(c);
                out.println("installed the DDL event trigger on " + cfg.source().where() + ": schema changes now reach the"
                        + " destinations exactly, in order with the data");
            }
        }
        out.flush();
        return 0;
    }
}
