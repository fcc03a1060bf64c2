package io.millrace.cli;

import io.millrace.core.schema.TableRef;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import io.millrace.engine.verify.Verifier;
import io.millrace.ops.StatusServer;
import io.millrace.pipeline.PipelineStats;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

/**
 * {@code millrace demo}: the whole product in one command, on a PostgreSQL started from Maven jars.
 * Creates a sample shop database, runs a write load, snapshots and streams it into a postgres
 * destination (a second database on the same server) and a JSON-lines folder, then checks that the
 * destination equals the source.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Run Millrace end to end on an embedded PostgreSQL (nothing to install) and verify the copy.")
final class DemoCommand implements Callable<Integer> {
    @Option(names = "--seconds", defaultValue = "20", description = "how long the write load runs (default: ${DEFAULT-VALUE})")
    int seconds;

    @Option(names = "--rate", defaultValue = "200", description = "write transactions per second (default: ${DEFAULT-VALUE})")
    int rate;

    @Option(names = "--rows", defaultValue = "20000", description = "orders in the sample data before the copy (default: ${DEFAULT-VALUE})")
    int rows;

    @Option(names = "--dir", defaultValue = "millrace-demo", description = "working folder (default: ${DEFAULT-VALUE})")
    Path dir;

    @Option(names = "--pg-major", defaultValue = "17", description = "PostgreSQL major version: 14, 15 or 17 (default: ${DEFAULT-VALUE})")
    int major;

    @Override
    public Integer call() throws Exception {
        PrintStream out = System.out;
        if (major != 14 && major != 15 && major != 17) {
            // before: an unexpected error (exit 1) with a stack trace from the embedded server (found by a user)
            throw new io.millrace.core.MillraceException(io.millrace.core.MillraceException.Kind.CONFIG, "--pg-major " + major
                    + ": the demo runs PostgreSQL 14, 15 or 17, whose binaries come with it; pick one of those");
        }
        Path work = dir.toAbsolutePath();
        deleteTree(work.resolve("events"));
        Files.createDirectories(work);
        out.println("millrace demo: starting PostgreSQL " + major + " from Maven jars (no install) ...");
        try (EmbeddedPg pg = EmbeddedPg.builder().major(major).dataDirectory(work.resolve("pgdata"), true).start()) {
            pg.createDatabase("shop");
            pg.createDatabase("replica");
            DemoWorkload workload = new DemoWorkload(pg, "shop");
            workload.createSchema(rows);
            out.printf("  source:      database 'shop' on 127.0.0.1:%d (%d orders, %d tables, one without a primary key)%n", pg.port(),
                    rows, DemoWorkload.TABLES.size());
            out.printf("  destination: database 'replica' on the same server, and JSON lines in %s%n", work.resolve("events"));

            Path configFile = work.resolve("millrace.yaml");
            Files.writeString(configFile, config(pg.port()));
            EngineConfig cfg = ConfigLoader.fromSystem().load(configFile);
            Engine engine = new Engine(cfg, new ProgressDisplay(out));
            StatusServer statusPage = StatusServer.start(engine, "127.0.0.1", 0);
            out.printf("  status page: http://127.0.0.1:%d/  (metrics at /metrics, JSON at /status)%n", statusPage.port());
            AtomicReference<Throwable> engineError = new AtomicReference<>();
            Thread runner = new Thread(() -> {
                try {
                    engine.run();
                } catch (Throwable t) {
                    engineError.set(t);
                }
            }, "millrace-engine");
            Thread hook = new Thread(engine::stop);
            Runtime.getRuntime().addShutdownHook(hook);
            runner.start();

            out.printf("  write load:  %d transactions/s for %d s (inserts, updates, deletes, TOASTed jsonb)%n%n", rate, seconds);
            long end = System.currentTimeMillis() + seconds * 1000L;
            Thread load = new Thread(() -> workload.run(rate, end), "millrace-demo-load");
            load.start();
            while (load.isAlive() && runner.isAlive()) {
                load.join(1000);
                status(out, engine, workload);
            }
            load.join();
            workload.throwIfFailed();
            out.printf("%nload finished: %d transactions committed; waiting for the destination to catch up ...%n", workload.transactions());

            List<Verifier.TableResult> results = null;
            long deadline = System.currentTimeMillis() + 120_000;
            try (Connection src = pg.connect("shop"); Connection dst = pg.connect("replica")) {
                while (runner.isAlive() && System.currentTimeMillis() < deadline) {
                    results = Verifier.compare(src, dst, DemoWorkload.TABLES, null);
                    if (results.stream().allMatch(Verifier.TableResult::equal)) {
                        break;
                    }
                    Thread.sleep(500);
                }
                engine.stop();
                runner.join();
                Runtime.getRuntime().removeShutdownHook(hook);
                if (engineError.get() != null) {
                    Throwable t = engineError.get();
                    if (t instanceof Exception e) {
                        throw e;
                    }
                    throw new IllegalStateException(t);
                }
                results = Verifier.compare(src, dst, DemoWorkload.TABLES, null);
            }
            out.println("\nverification (every row of the source against the destination database):");
            results.forEach(r -> out.println("  " + r));
            boolean ok = results.stream().allMatch(Verifier.TableResult::equal);
            PipelineStats stats = engine.stats();
            out.printf("%n%s: %d change events delivered%n", ok ? "OK — destination equals source" : "FAILED — destination differs",
                    stats == null ? 0 : stats.eventsWritten());
            out.println("\nwhere to look next:");
            out.println("  change events (Debezium envelope): " + work.resolve("events"));
            out.println("  the pipeline's configuration:      " + configFile);
            out.println("  your own database: copy that file, point source: at your server and run 'bin/millrace preflight <file>',");
            out.println("  then 'bin/millrace run <file>' (README.md, section 'Running it on your database').");
            statusPage.close();
            return ok ? 0 : 1;
        }
    }

    private static String config(int port) {
        return String.join("\n",
                "# Written by 'millrace demo'. A complete pipeline: copy, then stream, into two destinations.",
                "name: demo",
                "source:",
                "  host: 127.0.0.1",
                "  port: " + port,
                "  database: shop",
                "  user: postgres",
                "  slot: millrace_demo",
                "  publication: millrace_demo",
                "  tables: [" + String.join(", ", DemoWorkload.TABLES.stream().map(TableRef::toString).toList()) + "]",
                "snapshot:",
                "  mode: initial",
                "destinations:",
                "  - name: replica",
                "    type: postgres",
                "    host: 127.0.0.1",
                "    port: " + port,
                "    database: replica",
                "    user: postgres",
                "  - name: files",
                "    type: jsonl",
                "    directory: events",
                "");
    }

    private static void status(PrintStream out, Engine engine, DemoWorkload workload) {
        PipelineStats s = engine.stats();
        long lagMs = s == null || s.lastCommitMicros() == 0 ? -1 : Math.max(0, System.currentTimeMillis() - s.lastCommitMicros() / 1000);
        out.printf("  %-12s source: %6d tx   delivered: %8d events   durable at %s%s%n", engine.state().name().toLowerCase(),
                workload.transactions(), s == null ? 0 : s.eventsWritten(), s == null ? "-" : s.durable(),
                lagMs < 0 ? "" : "   newest delivered commit " + lagMs + " ms ago");
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(p)) {
            for (Path x : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(x);
            }
        }
    }

}
