package io.millrace.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code millrace duckdb-copy}: while a pipeline runs, no other process can open its DuckDB file (DuckDB lets one
 * process hold a database file); this asks the pipeline to write a consistent copy to a new file, which anyone can then
 * query ({@code duckdb -readonly copy.duckdb}).
 */
@Command(name = "duckdb-copy", mixinStandardHelpOptions = true,
        description = {"Write a consistent copy of a running pipeline's duckdb destination to a new file, to query while it runs.",
                "Needs the pipeline's operations.http_port and its control token (the variable named by operations.control_token_env)."})
final class DuckDbCopyCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "CONFIG", description = "the running pipeline's configuration")
    Path config;

    @Option(names = "--to", required = true, paramLabel = "FILE", description = "the new DuckDB file to write (must not exist)")
    Path to;

    @Option(names = {"-d", "--destination"}, paramLabel = "NAME", description = "the duckdb destination (default: the only one)")
    String destination;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        EngineConfig cfg = ConfigLoader.fromSystem().load(config);
        List<String> ducks = cfg.destinations().stream().filter(d -> d.type().equals("duckdb"))
                .map(io.millrace.core.sink.DestinationConfig::name).toList();
        String name = destination;
        if (name == null) {
            if (ducks.size() != 1) {
                throw new MillraceException(Kind.CONFIG, config + " has " + (ducks.isEmpty() ? "no duckdb destination"
                        : "several duckdb destinations " + ducks + ": choose one with --destination"));
            }
            name = ducks.get(0);
        } else if (!ducks.contains(name)) {
            throw new MillraceException(Kind.CONFIG, "--destination " + name + ": " + config + " has no duckdb destination of that name"
                    + " (duckdb destinations: " + ducks + ")");
        }
        ObjectNode body = new ObjectMapper().createObjectNode();
        body.put("destination", name);
        body.put("file", to.toAbsolutePath().toString()); // the engine writes it: on this machine, by its absolute path
        spec.commandLine().getOut().println(ControlCall.post(cfg, config, "/duckdb/copy", body.toString(), Duration.ofMinutes(30)));
        spec.commandLine().getOut().flush();
        return 0;
    }
}
