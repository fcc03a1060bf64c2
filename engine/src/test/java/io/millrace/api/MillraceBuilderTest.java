package io.millrace.api;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.Secret;
import io.millrace.core.sink.NullSink;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.engine.config.EngineConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * The builder checks what the YAML loader checks, with the same messages: each case gives a mistake both ways — as YAML
 * to {@link ConfigLoader} and as builder calls — and expects one and the same {@code config: ...} error.
 */
class MillraceBuilderTest {
    @TempDir
    Path dir;

    private static final String SOURCE = """
            source:
              host: 127.0.0.1
              port: 5432
              database: shop
              user: cdc
              password_env: SRC_PW
              tables: [public.orders]
            """;
    private static final String FILES = """
            destinations:
              - name: files
                type: discard
            """;
    private static final Map<String, String> ENV = Map.of("SRC_PW", "s3cret-src", "EMPTY", "", "TOKEN", "short");

    private static SourceSettings.Builder source() {
        return SourceSettings.builder().host("127.0.0.1").port(5432).database("shop").user("cdc").environment(ENV::get)
                .passwordEnv("SRC_PW").tables("public.orders");
    }

    private static Millrace.Builder pipeline(SourceSettings.Builder source) {
        return Millrace.builder().source(source.build()).destination("files", new NullSink("files"));
    }

    private String yamlError(String yaml) {
        return error(() -> new ConfigLoader(ENV::get).parse(yaml, dir));
    }

    private static String error(Runnable r) {
        MillraceException e = catchThrowableOfType(MillraceException.class, r::run);
        assertThat(e).as("a configuration error").isNotNull();
        assertThat(e.kind()).isEqualTo(Kind.CONFIG);
        assertThat(e.getMessage()).startsWith("config: ").doesNotContain("s3cret-src");
        return e.getMessage();
    }

    /** The builder's error for {@code built} is the loader's for {@code yaml}, and contains {@code expected}. */
    private void same(String yaml, Runnable built, String expected) {
        String fromYaml = yamlError(yaml);
        assertThat(error(built)).isEqualTo(fromYaml).contains(expected);
    }

    @Test
    void sourceValuesOutOfBoundsOrMalformed() {
        same(SOURCE.replace("port: 5432", "port: 70000") + FILES, () -> source().port(70000),
                "config: source.port must be from 1 to 65535, got 70000");
        same(SOURCE + "  slot: My-Slot\n" + FILES, () -> source().slot("My-Slot"),
                "config: source.slot must be 1 to 63 lower-case letters, digits or underscores");
        same(SOURCE.replace("tables: [public.orders]", "tables: []") + FILES, () -> source().tables(List.of()),
                "config: source.tables is an empty list");
        same(SOURCE.replace("tables: [public.orders]", "tables: ['public.\"orders']") + FILES, () -> source().tables("public.\"orders"),
                "unterminated double quote");
        same(SOURCE + "  status_interval_ms: 50\n" + FILES, () -> source().statusIntervalMs(50), "source.status_interval_ms must be from 100");
        same(SOURCE + "  ssl:\n    mode: strict\n" + FILES, () -> source().sslMode("strict"), "source.ssl.mode must be one of disable");
        same(SOURCE.replace("host: 127.0.0.1", "host: ' '") + FILES, () -> source().host(" "), "config: source.host must not be empty");
    }

    @Test
    void sourcePasswordFromTheEnvironmentOrAFile() {
        same(SOURCE.replace("SRC_PW", "UNSET_PW") + FILES, () -> source().passwordEnv("UNSET_PW").build(),
                "config: source.password_env names the environment variable UNSET_PW, which is not set; export it");
        same(SOURCE.replace("SRC_PW", "EMPTY") + FILES, () -> source().passwordEnv("EMPTY").build(),
                "source.password_env names the environment variable EMPTY, which is empty");
        same(SOURCE + "  password_file: pw.txt\n" + FILES, () -> source().passwordFile(dir.resolve("pw.txt")).build(),
                "config: source.password_env and source.password_file are both set; keep one");
        same(SOURCE.replace("password_env: SRC_PW", "password_file: missing-pw.txt") + FILES,
                () -> SourceSettings.builder().database("shop").user("cdc").passwordFile(dir.resolve("missing-pw.txt")).build(),
                "source.password_file names " + dir.resolve("missing-pw.txt"));
        same("source:\n  user: u\n" + FILES, () -> SourceSettings.builder().user("u").build(),
                "config: source.database is required (e.g. database: app)");
        same(FILES, () -> Millrace.builder().destination("files", new NullSink("files")).build(), "config: source.database is required");
    }

    /** A sink given under another name than its own ran under its own, silently (found by a user): refused, both named. */
    @Test
    void aSinkGivenUnderAnotherNameIsRefused() {
        MillraceException e = catchThrowableOfType(MillraceException.class,
                () -> Millrace.builder().destination("renamed", new NullSink("mirror")));
        assertThat(e.kind()).isEqualTo(MillraceException.Kind.CONFIG);
        assertThat(e).hasMessageContaining("destinations[0].name: 'renamed' is not the sink's own name() 'mirror'");
    }

    @Test
    void snapshotAndPipelineBounds() {
        same(SOURCE + "snapshot:\n  readers: 0\n" + FILES, () -> SnapshotSettings.builder().readers(0),
                "config: snapshot.readers must be from 1 to 64, got 0");
        same(SOURCE + "snapshot:\n  online:\n    min_chunk_rows: 900\n    max_chunk_rows: 800\n" + FILES,
                () -> SnapshotSettings.builder().minChunkRows(900).maxChunkRows(800).build(),
                "config: snapshot.online needs min_chunk_rows (900) <= chunk_rows (");
        same(SOURCE + "pipeline:\n  memory_budget_mb: 8\n  batch_kb: 8192\n" + FILES,
                () -> PipelineSettings.builder().memoryBudgetMb(8).batchKb(8192).build(),
                "pipeline.batch_kb (8192) must be at most half of pipeline.memory_budget_mb (8 MB)");
        same(SOURCE + "pipeline:\n  decoders: 300\n" + FILES, () -> PipelineSettings.builder().decoders(300),
                "config: pipeline.decoders must be from 0 to 256, got 300");
    }

    /** INV: BOUNDED. A helper's 100000 at bin/millrace's -Xmx192m was taken without a word (in flight reached ~91 MB of a 184 MB heap). */
    @Test
    void aMemoryBudgetAboveHalfTheHeapIsRefusedWithTheHeapAndTheWayOut() {
        int huge = (int) Math.min(1 << 20, (Runtime.getRuntime().maxMemory() >> 20) + 1);
        same(SOURCE + "pipeline:\n  memory_budget_mb: " + huge + "\n" + FILES,
                () -> PipelineSettings.builder().memoryBudgetMb(huge).build(),
                "config: pipeline.memory_budget_mb (" + huge + ") must be at most about half of the JVM's maximum heap (");
        // bin/millrace's -Xmx192m -XX:+UseParallelGC gives a maximum heap of 184 MB.
        assertThatThrownBy(() -> PipelineSettings.Builder.checkHeap(100_000, 184L << 20))
                .hasMessageContaining("(100000) must be at most about half of the JVM's maximum heap (184 MB, so at most 101)")
                .hasMessageContaining("MILLRACE_JAVA_OPTS");
        PipelineSettings.Builder.checkHeap(101, 184L << 20);
        // -Xmx128m gives a maximum heap of 123 MB: the 64 the example configuration once set runs there (docs/BENCHMARKS.md)
        PipelineSettings.Builder.checkHeap(64, 123L << 20);
    }

    @Test
    void operationsBoundsAndControlToken() {
        same(SOURCE + FILES + "operations: {ready_max_lag_s: 0}\n", () -> OperationsSettings.builder().readyMaxLagS(0),
                "operations.ready_max_lag_s");
        same(SOURCE + FILES + "operations:\n  retry: {initial_ms: 5000, max_ms: 1000}\n",
                () -> OperationsSettings.builder().retryInitialMs(5000).retryMaxMs(1000).build(),
                "config: operations.retry.max_ms (1000) must be at least operations.retry.initial_ms (5000)");
        same(SOURCE + FILES + "operations: {control_token_env: TOKEN}\n",
                () -> OperationsSettings.builder().environment(ENV::get).controlTokenEnv("TOKEN").build(),
                "config: operations.control_token_env holds a token of 5 characters; use at least 16");
        assertThat(yamlError(SOURCE + FILES + "operations: {control_token: abcdefghijklmnopqrstuvwx}\n")).isEqualTo("config: operations.control_token"
                + " is not allowed: a token must not be written in the configuration file. Put it in an environment variable and name it"
                + " in operations.control_token_env, or in a file named by operations.control_token_file");
        same(SOURCE + FILES + "operations: {control_token_env: NO_TOKEN}\n",
                () -> OperationsSettings.builder().environment(ENV::get).controlTokenEnv("NO_TOKEN").build(),
                "operations.control_token_env names the environment variable NO_TOKEN, which is not set or empty");
    }

    @Test
    void commandsThatReadOnlyTheSourceDeferAnUnreadableControlToken() {
        ConfigLoader loader = new ConfigLoader(ENV::get).sourceOnly();
        EngineConfig c = loader.parse(SOURCE + FILES + "operations: {control_token_env: NO_TOKEN}\n", dir);
        assertThat(c.operations().controlToken()).isEqualTo(Secret.NONE);
        assertThat(loader.deferred()).containsExactly("config: operations.control_token_env names the environment variable NO_TOKEN,"
                + " which is not set or empty; export the token in the environment of this command (millrace run, and the commands"
                + " that call a running pipeline, such as millrace snapshot and millrace duckdb-copy, read it there)");
        List<String> problems = new java.util.ArrayList<>();
        OperationsSettings o = OperationsSettings.builder().environment(ENV::get).controlTokenEnv("NO_TOKEN")
                .tolerateUnreadableControlToken(problems::add).build();
        assertThat(o.controlToken()).isEqualTo(Secret.NONE);
        assertThat(problems).isEqualTo(loader.deferred());
    }

    @Test
    void destinationsRequiredWithUniqueNames() {
        same(SOURCE, () -> Millrace.builder().source(source().build()).build(), "config: destinations is required");
        same(SOURCE + FILES + "  - name: files\n    type: discard\n",
                () -> pipeline(source()).destination("files", new NullSink("files")).build(),
                "config: destinations[1].name 'files' is used by two destinations; names must be unique");
        // two consumers on one checkpoint file: each would overwrite the other's, and the next start refused them as
        // another pipeline's (found by a user)
        ChangeConsumer none = batch -> { };
        assertThatThrownBy(() -> Millrace.builder().source(source().build()).changeConsumer("a", dir.resolve("cp.json"), none)
                .changeConsumer("b", dir.resolve(".").resolve("cp.json"), none))
                .isInstanceOf(io.millrace.core.MillraceException.class)
                .hasMessageContaining("destinations[1].checkpoint_file: consumer 'b' is given the checkpoint file of consumer 'a'");
    }

    @Test
    void destinationsGivenAsSettingsAreReadByTheirProvider() {
        same(SOURCE + "destinations:\n  - {name: f, type: jsonl}\n",
                () -> Millrace.builder().source(source().build()).destination("jsonl", Map.of("name", "f")).build(),
                "config: destinations[0].directory is required for a jsonl destination");
        same(SOURCE + "destinations:\n  - {name: k, type: kinesis}\n",
                () -> Millrace.builder().source(source().build()).destination("kinesis", Map.of("name", "k")).build(),
                "config: destinations[0].type must be one of");
        same(SOURCE + "destinations:\n  - {type: discard}\n  - {name: f, type: jsonl, directroy: d}\n",
                () -> Millrace.builder().source(source().build()).destination("discard", Map.of())
                        .destination("jsonl", Map.of("name", "f", "directroy", "d")).build(),
                "config: destinations[1].directroy is not a known setting; did you mean 'directory'?");
        EngineConfig loaded = new ConfigLoader(ENV::get).parse(SOURCE
                        + "destinations:\n  - {name: f, type: jsonl, directory: events, rotate_mb: 2, encoder_threads: 3}\n", dir);
        EngineConfig built = Millrace.builder().source(source().build()).baseDir(dir)
                .destination("jsonl", Map.of("name", "f", "directory", "events", "rotate_mb", 2, "encoder_threads", 3)).config();
        assertThat(built.destinations()).isEqualTo(loaded.destinations());
        assertThat(((io.millrace.sink.jsonl.JsonlSinkConfig) loaded.destinations().get(0)).encoderThreads()).isEqualTo(3);
        same(SOURCE + "destinations:\n  - {name: f, type: jsonl, directory: events, encoder_threads: 65}\n",
                () -> Millrace.builder().source(source().build())
                        .destination("jsonl", Map.of("name", "f", "directory", "events", "encoder_threads", 65)).build(),
                "config: destinations[0].encoder_threads");
    }

    @Test
    void aDestinationMadeFromThePipelinesContext() {
        List<io.millrace.core.sink.DestinationContext> seen = new java.util.ArrayList<>();
        EngineConfig c = Millrace.builder().name("shop").source(source().slot("s1").build()).baseDir(dir).destination(context -> {
            seen.add(context);
            return new io.millrace.sink.jsonl.JsonlSinkConfig("files", context.baseDir().resolve("events"), null, 1 << 20, context.meta());
        }).config();
        assertThat(seen).containsExactly(new io.millrace.core.sink.DestinationContext("shop", "s1",
                new io.millrace.core.event.SourceMeta("shop", "shop"), dir.toAbsolutePath()));
        assertThat(c.destinations()).extracting(d -> d.name()).containsExactly("files");
    }

    @Test
    void theBuilderMakesWhatTheLoaderReads() throws Exception {
        Files.writeString(dir.resolve("token.txt"), "0123456789abcdef0123\n");
        String yaml = """
                name: shop
                source:
                  host: db1
                  port: 5433
                  database: shop
                  user: cdc
                  password_env: SRC_PW
                  slot: shop_slot
                  publication: shop_pub
                  tables: [public.orders, 'app.*']
                  exclude_tables: [app.audit]
                  create_publication: false
                  binary: off
                  status_interval_ms: 2000
                  ssl: {mode: verify-full, root_cert: ca.pem}
                  socket_timeout_s: 30
                snapshot:
                  mode: never
                  readers: 3
                  chunk_pages: 100
                  signal_table: public.signals
                  online: {readers: 4, min_chunk_rows: 10, chunk_rows: 20, max_chunk_rows: 30, target_chunk_ms: 250, max_chunk_mb: 8}
                pipeline: {memory_budget_mb: 32, batch_kb: 512, linger_ms: 50, decoders: 2, decode_chunk_rows: 64, spill_dir: spill}
                operations:
                  monitor_interval_ms: 1000
                  retained_wal_warn_mb: 64
                  http_host: 0.0.0.0
                  http_port: 8080
                  retry: {initial_ms: 100, max_ms: 2000, attempts: 3}
                  control_token_file: token.txt
                  ready_max_lag_s: 5
                  ready_max_lag_mb: 16
                  live_max_stall_s: 0
                  log_format: json
                """ + FILES;
        Files.writeString(dir.resolve("ca.pem"), "-----BEGIN CERTIFICATE-----\n");
        EngineConfig loaded = new ConfigLoader(ENV::get).parse(yaml, dir);
        EngineConfig built = Millrace.builder().name("shop")
                .source(SourceSettings.builder().host("db1").port(5433).database("shop").user("cdc").password(Secret.of("s3cret-src"))
                        .slot("shop_slot").publication("shop_pub").tables("public.orders", "app.*").excludeTables("app.audit")
                        .createPublication(false).binary(SourceSettings.BinaryMode.OFF).statusIntervalMs(2000).sslMode("verify-full")
                        .sslRootCert(dir.resolve("ca.pem")).socketTimeoutS(30).build())
                .snapshot(SnapshotSettings.builder().mode(SnapshotSettings.Mode.NEVER).readers(3).chunkPages(100)
                        .signalTable("public.signals").onlineReaders(4).minChunkRows(10).chunkRows(20).maxChunkRows(30)
                        .targetChunkMs(250).maxChunkMb(8).build())
                .pipeline(PipelineSettings.builder().memoryBudgetMb(32).batchKb(512).lingerMs(50).decoders(2).decodeChunkRows(64)
                        .spillDir(dir.resolve("spill")).build())
                .operations(OperationsSettings.builder().monitorIntervalMs(1000).retainedWalWarnMb(64).httpHost("0.0.0.0").httpPort(8080)
                        .retryInitialMs(100).retryMaxMs(2000).retryAttempts(3).controlTokenFile(dir.resolve("token.txt"))
                        .readyMaxLagS(5).readyMaxLagMb(16).liveMaxStallS(0).logFormat(OperationsSettings.LogFormat.JSON).build())
                .destination("files", new NullSink("files"))
                .config();
        assertThat(built.name()).isEqualTo(loaded.name());
        assertThat(built.source()).isEqualTo(loaded.source());
        assertThat(built.snapshotMode()).isEqualTo(loaded.snapshotMode());
        assertThat(built.snapshot()).isEqualTo(loaded.snapshot());
        assertThat(built.online()).isEqualTo(loaded.online());
        assertThat(built.pipeline()).isEqualTo(loaded.pipeline());
        assertThat(built.spillDir()).isEqualTo(loaded.spillDir());
        assertThat(built.operations()).isEqualTo(loaded.operations());
        assertThat(built.operations().controlToken().reveal()).isEqualTo("0123456789abcdef0123");
        assertThat(built.destinations()).extracting(d -> d.name()).isEqualTo(loaded.destinations().stream().map(d -> d.name()).toList());
    }

    @Test
    void theDefaultsAreTheLoaders() {
        Function<String, String> env = ENV::get;
        EngineConfig loaded = new ConfigLoader(env).parse(SOURCE + FILES, dir);
        EngineConfig built = pipeline(source()).config();
        assertThat(built.source()).isEqualTo(loaded.source());
        assertThat(built.snapshot()).isEqualTo(loaded.snapshot());
        assertThat(built.online()).isEqualTo(loaded.online());
        assertThat(built.pipeline()).isEqualTo(loaded.pipeline());
        assertThat(built.operations()).isEqualTo(loaded.operations());
        assertThat(built.spillDir()).isEqualTo(loaded.spillDir());
    }

    /** Transforms given to the builder as the YAML mapping's settings are read and checked as the YAML is. */
    @Test
    void transformsAsSettingsAreTheYamlsTransforms() {
        String yaml = SOURCE + FILES + """
                transforms:
                  hash_salt_env: SRC_PW
                  tables:
                    - match: public.orders
                      columns: {exclude: [note]}
                      mask: {email: hash, phone: truncate(2)}
                      filter: "id > 3"
                """;
        Map<String, Object> rule = new java.util.LinkedHashMap<>();
        rule.put("match", "public.orders");
        rule.put("columns", Map.of("exclude", List.of("note")));
        rule.put("mask", new java.util.LinkedHashMap<>(Map.of("email", "hash")));
        ((Map<String, Object>) rule.get("mask")).put("phone", "truncate(2)");
        rule.put("filter", "id > 3");
        var built = TestConfigs.of(pipeline(source()).environment(ENV::get).transforms(Map.of("hash_salt_env", "SRC_PW", "tables", List.of(rule))));
        var fromYaml = new ConfigLoader(ENV::get).parse(yaml, dir);
        assertThat(built.transforms().rules()).isEqualTo(fromYaml.transforms().rules()).hasSize(1);
        same(SOURCE + FILES + "transforms:\n  tables: [{match: public.orders, mask: {a: scramble}}]\n",
                () -> TestConfigs.of(pipeline(source()).transforms(Map.of("tables", List.of(Map.of("match", "public.orders", "mask",
                        Map.of("a", "scramble")))))), "config: transforms.tables[0].mask.a must be redact, hash, truncate(N)");
    }

    /**
     * A handle runs once. stop() before start() ends it there: await() returns, status says stopped, and start() throws
     * naming why (before, start() then returned as if it ran, and nothing ever did).
     */
    @Test
    void aPipelineStoppedBeforeItStartedSaysSoWhenStarted() throws Exception {
        Millrace m = pipeline(source()).build();
        m.stop();
        assertThat(m.await(java.time.Duration.ofSeconds(5))).isTrue();
        assertThat(m.status().state()).isEqualTo("stopped");
        assertThatThrownBy(m::start).isInstanceOf(IllegalStateException.class)
                .hasMessage("pipeline 'millrace' was stopped before it started: a Millrace handle runs once; build a new one with"
                        + " the same settings to run again (it goes on from the destinations' checkpoints)");
        m.close();
    }

    /** A root certificate that is not there is a configuration error at once (it was retried as a lost connection, then exit 3). */
    @Test
    void aRootCertificateThatIsNotThereIsAConfigurationError() {
        assertThat(yamlError(SOURCE.replace("  tables: [public.orders]\n", "  tables: [public.orders]\n  ssl: {mode: verify-full, root_cert: nope.pem}\n")
                + FILES)).startsWith("config: source.ssl.root_cert file ").contains("nope.pem does not exist or cannot be read");
    }
}
