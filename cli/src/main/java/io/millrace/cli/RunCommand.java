package io.millrace.cli;

import io.millrace.engine.Supervisor;
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
        description = "Run the pipeline described by a YAML configuration file. SIGTERM or Ctrl-C stops it after the last durable checkpoint;"
                + " SIGHUP reloads source.tables and source.exclude_tables from the file.")
final class RunCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "CONFIG", description = "the configuration file (YAML)")
    Path config;

    @Override
    public Integer call() throws Exception {
        // The stop signals first: a SIGTERM while the configuration loads (the JVM's first second or two) ended the process
        // with 143, not in the exit codes (found by a user); now it stops the run before it starts, and it exits 0.
        java.util.concurrent.atomic.AtomicReference<Runnable> stopper = new java.util.concurrent.atomic.AtomicReference<>(() -> { });
        java.util.concurrent.atomic.AtomicBoolean stopAsked = new java.util.concurrent.atomic.AtomicBoolean();
        onStopSignals(() -> {
            stopAsked.set(true);
            stopper.get().run();
        });
        EngineConfig cfg = ConfigLoader.fromSystem().load(config);
        // JSON logs are for collectors: no progress lines on standard output then (the log says when each table lands).
        boolean json = LogFormat.apply(cfg.operations().logFormat()) == EngineConfig.LogFormat.JSON;
        // A Supervisor restarts the engine after transient failures (operations.retry); permanent ones end the run.
        Supervisor engine = new Supervisor(cfg, json ? new io.millrace.snapshot.SnapshotRunner.Listener() {
        } : new ProgressDisplay(System.out));
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
        stopper.set(engine::stop);
        if (stopAsked.get()) {
            engine.stop(); // asked before the engine existed: it ends before it starts
        }
        engine.reloadFrom(() -> ConfigLoader.fromSystem().load(config));
        onReloadSignal(engine);
        try {
            engine.run();
        } finally {
            if (status != null) {
                status.close();
            }
            done.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the JVM is already ending: the hook has run
            }
        }
        return 0;
    }

    /**
     * SIGTERM and SIGINT (Ctrl-C) ask the engine to stop; {@code run()} then returns after the last durable
     * checkpoint and the command exits 0, "stopped on request". Left to the JVM's own handlers, the signal
     * would start the JVM's shutdown, and the process would end with 128 + signal (143, 130) whatever this
     * command returns. A second signal while stopping ends the process at once, with 128 + signal; that is
     * safe, as after any crash (INV: RESUME). The shutdown hook stays for every other way the JVM may end.
     */
    /**
     * SIGHUP reloads the table selection from the configuration file ({@link Supervisor#reload}), on a thread of its own
     * (a signal handler must not wait on the database); the outcome is logged and shown in the status
     * ({@code last_reload}). A bad file changes nothing.
     */
    private static void onReloadSignal(Supervisor engine) {
        try {
            sun.misc.SignalHandler before = sun.misc.Signal.handle(new sun.misc.Signal("HUP"), s -> {
                Thread t = new Thread(() -> {
                    try {
                        engine.reload(); // logs what changed
                    } catch (RuntimeException e) {
                        // logged by the supervisor and shown in the status
                    }
                }, "millrace-reload");
                t.setDaemon(true);
                t.start();
            });
            if (before == sun.misc.SignalHandler.SIG_IGN) {
                // The JVM leaves a signal its parent ignored (nohup, some supervisors) ignored, and says so only this way.
                org.slf4j.LoggerFactory.getLogger(RunCommand.class).warn("SIGHUP is ignored in this process (started under nohup, or by a"
                        + " parent that ignores it), so it does not reload the configuration: reload with POST /reload and the control"
                        + " token (operations.http_port), or start millrace without nohup (systemd, a container, a terminal multiplexer)");
            }
        } catch (IllegalArgumentException e) {
            // no SIGHUP here (java -Xrs): POST /reload still reloads
        }
    }

    static void onStopSignals(Runnable stop) {
        java.util.concurrent.atomic.AtomicBoolean asked = new java.util.concurrent.atomic.AtomicBoolean();
        for (String name : new String[] {"TERM", "INT"}) {
            try {
                sun.misc.Signal.handle(new sun.misc.Signal(name), s -> {
                    if (asked.getAndSet(true)) {
                        Runtime.getRuntime().halt(128 + s.getNumber());
                    }
                    stop.run();
                });
            } catch (IllegalArgumentException e) {
                // the signal is reserved here (e.g. java -Xrs): the shutdown hook stops the engine instead
            }
        }
    }
}
