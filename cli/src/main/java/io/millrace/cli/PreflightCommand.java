package io.millrace.cli;

import io.millrace.core.MillraceException;
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
import java.util.List;
import java.util.concurrent.Callable;

/** {@code millrace preflight config.yaml}: checks the source and the destinations and prints what to fix. */
@Command(name = "preflight", mixinStandardHelpOptions = true,
        description = "Check that the source is ready (wal_level, privileges, publication, slot, replica identity) and that each destination"
                + " answers and can be written, and print the fixes.")
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
                // A destination's secret it cannot read leaves that destination unchecked (below), which the line must say.
                out.println(new Preflight.Check("configuration", Preflight.Status.WARN, d.replaceFirst("^config: ", "")
                        + (d.contains("destinations[") ? " (so that destination is not checked here; 'millrace run' needs it)"
                        : " (preflight does not need it; 'millrace run' does)"), null, null));
            }
            List<Preflight.Check> destinations = destinations(cfg, loader.deferred());
            destinations.forEach(out::println);
            Preflight.Check failed = destinations.stream().filter(d -> d.status() == Preflight.Status.FAIL).findFirst().orElse(null);
            if (r.ok() && failed != null) {
                out.println("\n" + destinations.stream().filter(d -> d.status() == Preflight.Status.FAIL).count()
                        + " destination problem(s) to fix before 'millrace run'.");
                out.flush();
                return failed.kind().exitCode();
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

    /**
     * Each destination's own checks ({@link io.millrace.core.sink.DestinationConfig#preflight()}: it answers, takes the
     * credentials, can be written), one line each; one whose secret could not be read is left to {@code run} (a WARN
     * above names it). Before, preflight looked at the source only, and a destination that could not be written was
     * found by the first {@code run} (found by a user).
     */
    private static List<Preflight.Check> destinations(EngineConfig cfg, List<String> deferred) {
        List<Preflight.Check> out = new java.util.ArrayList<>();
        for (int i = 0; i < cfg.destinations().size(); i++) {
            io.millrace.core.sink.DestinationConfig d = cfg.destinations().get(i);
            String name = "destination " + d.name();
            String key = "destinations[" + i + "]";
            if (deferred.stream().anyMatch(m -> m.contains(key))) {
                continue;
            }
            if (!checks(d)) {
                out.add(new Preflight.Check(name, Preflight.Status.OK, d.type() + ": no checks of its own (its DestinationConfig does"
                        + " not override preflight()); 'millrace run' opens it", null, null));
                continue;
            }
            try {
                d.preflight();
                out.add(new Preflight.Check(name, Preflight.Status.OK, d.type() + ": answers, and can be written", null, null));
            } catch (MillraceException e) {
                out.add(new Preflight.Check(name, Preflight.Status.FAIL, e.getMessage(), null, e.kind()));
            } catch (RuntimeException e) { // a destination of your own may throw anything
                out.add(new Preflight.Check(name, Preflight.Status.FAIL, d.type() + ": " + e, null, MillraceException.Kind.SINK));
            }
        }
        return out;
    }

    /** Whether {@code d}'s class has checks of its own, not the interface's default that checks nothing. */
    private static boolean checks(io.millrace.core.sink.DestinationConfig d) {
        try {
            return d.getClass().getMethod("preflight").getDeclaringClass() != io.millrace.core.sink.DestinationConfig.class;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }
}
