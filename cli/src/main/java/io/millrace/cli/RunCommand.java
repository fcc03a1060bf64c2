package io.millrace.cli;

import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.ops.StatusServer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** {@code millrace run config.yaml}: runs a pipeline until SIGTERM/SIGINT or a failure. */
@Command(name = "run", mixinStandardHelpOptions = true,
        description = "Run the pipeline described by a YAML configuration file. SIGTERM or Ctrl-C stops it after the last durable checkpoint.")
final class RunCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "CONFIG", description = "the configuration file (YAML)")
    Path config;

    @Override
    public Integer call() throws Exception {
        EngineConfig cfg = ConfigLoader.fromSystem().load(config);
        Engine engine = new Engine(cfg);
        StatusServer status = cfg.operations().httpPort() > 0
                ? StatusServer.start(engine, cfg.operations().httpHost(), cfg.operations().httpPort()) : null;
        CountDownLatch done = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            engine.stop();
            try {
                done.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "millrace-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            engine.run();
        } finally {
            if (status != null) {
                status.close();
            }
            done.countDown();
        }
        return 0;
    }
}
