package io.millrace.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code millrace snapshot}: asks a running pipeline, over its HTTP control calls, to copy tables again while
 * it streams (optionally only rows matching a filter), or to pause or resume its online snapshots.
 */
@Command(name = "snapshot", mixinStandardHelpOptions = true,
        description = {"Copy tables of a running pipeline again while it streams (an online snapshot), or pause/resume such copies.",
                "Needs the pipeline's operations.http_port and its control token (the variable named by operations.control_token_env)."})
final class SnapshotCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "CONFIG", description = "the running pipeline's configuration")
    Path config;

    static final class Action {
        @Option(names = {"-t", "--table"}, description = "a table to copy again, e.g. public.orders (repeatable)")
        List<String> tables;

        @Option(names = "--pause", description = "hold the online snapshots under way")
        boolean pause;

        @Option(names = "--resume", description = "continue held online snapshots")
        boolean resume;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    Action action;

    @Option(names = "--filter", paramLabel = "CONDITION", description = "copy only rows matching this SQL condition, e.g. \"created_at > now() - interval '1 day'\"")
    String filter;

    @Override
    public Integer call() throws Exception {
        EngineConfig cfg = ConfigLoader.fromSystem().load(config);
        if (filter != null && action.tables == null) {
            throw new MillraceException(Kind.CONFIG, "--filter goes with --table");
        }
        String path;
        String body = "";
        if (action.pause) {
            path = "/snapshot/pause";
        } else if (action.resume) {
            path = "/snapshot/resume";
        } else {
            path = "/snapshot";
            ObjectNode o = new ObjectMapper().createObjectNode();
            action.tables.forEach(o.putArray("tables")::add);
            if (filter != null) {
                o.put("filter", filter);
            }
            body = o.toString();
        }
        System.out.println(ControlCall.post(cfg, config, path, body, Duration.ofSeconds(30)));
        return 0;
    }
}
