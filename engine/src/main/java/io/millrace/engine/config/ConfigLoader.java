package io.millrace.engine.config;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.Secret;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.DestinationContext;
import io.millrace.core.sink.DestinationProvider;
import io.millrace.core.sink.DestinationProviders;
import io.millrace.pipeline.Pipeline;
import io.millrace.snapshot.SnapshotRunner;
import io.millrace.source.SourceConfig;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Reads a YAML configuration file into an {@link EngineConfig}. Strict: unknown keys and values of
 * the wrong form are errors that name the key and the expected form. Passwords come from an
 * environment variable ({@code password_env}) or a file ({@code password_file}), never from the
 * file itself. Relative paths are resolved against the configuration file's folder.
 *
 * <p>A destination's {@code type:} names a {@link DestinationProvider} found on the class path with
 * {@link java.util.ServiceLoader}; the provider reads the destination's other keys.
 */
public final class ConfigLoader {
    /** The top-level sections, and the keys of each mapping that checks required settings while reading. */
    private static final String[] SECTIONS = {"name", "source", "snapshot", "pipeline", "operations", "destinations"};
    private static final String[] SOURCE_KEYS = {"host", "port", "database", "user", "password", "password_env", "password_file", "slot",
            "publication", "tables", "exclude_tables", "create_publication", "binary", "status_interval_ms", "ssl", "socket_timeout_s"};
    /** The types built into the distribution, each in its own module: named when a configuration asks for one that is missing. */
    private static final List<String> BUILT_IN_MODULES = List.of("postgres", "jsonl", "duckdb", "kafka");

    private final Function<String, String> env;
    private final DestinationProviders providers;
    /** Whether secrets the source does not need (control token, destination passwords) may stay unresolved. */
    private final boolean sourceOnly;
    private final List<String> deferred = new ArrayList<>();

    /** @param env environment lookup (System::getenv in production) */
    public ConfigLoader(Function<String, String> env) {
        this(env, DestinationProviders.installed(), false);
    }

    private ConfigLoader(Function<String, String> env, DestinationProviders providers, boolean sourceOnly) {
        this.env = env;
        this.providers = providers;
        this.sourceOnly = sourceOnly;
    }

    /** This loader with exactly {@code providers} as the destination types it accepts (instead of the class path's). */
    public ConfigLoader withProviders(DestinationProviders providers) {
        return new ConfigLoader(env, providers, sourceOnly);
    }

    public static ConfigLoader fromSystem() {
        return new ConfigLoader(System::getenv);
    }

    /**
     * For commands that talk to the source only ({@code preflight}, {@code status}): a control token or destination
     * password that cannot be read (its variable unset, its file unreadable) is not an error but left empty, and
     * its problem is listed in {@link #deferred()} — {@code run} refuses it. Every other check stays.
     */
    public ConfigLoader sourceOnly() {
        return new ConfigLoader(env, providers, true);
    }

    /** The problems {@link #sourceOnly()} let pass, each naming its key, in the order found. */
    public List<String> deferred() {
        return List.copyOf(deferred);
    }

    /** Throws {@code e}, or with {@link #sourceOnly()} records it and returns no secret. */
    private Secret unresolved(MillraceException e, boolean deferrable) {
        if (!deferrable || !sourceOnly) {
            throw e;
        }
        deferred.add(e.getMessage());
        return Secret.NONE;
    }

    public EngineConfig load(Path file) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new MillraceException(Kind.CONFIG, "config: file " + file + " does not exist");
        } catch (IOException e) {
            throw new MillraceException(Kind.CONFIG, "config: cannot read " + file + ": " + e.getMessage(), e);
        }
        Path base = file.toAbsolutePath().getParent();
        return parse(text, base);
    }

    public EngineConfig parse(String yaml, Path base) {
        JsonNode root;
        try {
            // A key given twice would otherwise silently keep the last value.
            root = new ObjectMapper(new YAMLFactory()).enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION).readTree(yaml);
        } catch (JsonProcessingException e) {
            throw new MillraceException(Kind.CONFIG, "config: not valid YAML" + yamlError(e));
        }
        if (root == null || root.isNull() || root.isMissingNode()) {
            throw new MillraceException(Kind.CONFIG, "config: the file is empty; see config/example.yaml for a complete example");
        }
        Node r = new Node(root, "");
        r.allow(SECTIONS);
        String name = r.string("name", "millrace");
        SourceConfig source = source(r.child("source"), base);
        Node snap = r.child("snapshot");
        EngineConfig.SnapshotMode mode = snap.choice("mode", EngineConfig.SnapshotMode.INITIAL, EngineConfig.SnapshotMode.class);
        SnapshotRunner.Options d = SnapshotRunner.Options.defaults();
        boolean binaryCopy = source.binary() != SourceConfig.BinaryMode.OFF; // snapshots read COPY in binary where the types allow
        SnapshotRunner.Options snapshot = new SnapshotRunner.Options(snap.integer("readers", d.readers(), 1, 64),
                snap.integer("chunk_pages", (int) d.pagesPerChunk(), 1, Integer.MAX_VALUE), d.batchBytes(), binaryCopy);
        Node on = snap.child("online");
        io.millrace.snapshot.online.OnlineSnapshotter.Options od0 = io.millrace.snapshot.online.OnlineSnapshotter.Options.defaults();
        io.millrace.snapshot.online.KeysetChunker.Sizing sz = od0.sizing();
        int onReaders = on.integer("readers", od0.readers(), 1, 64);
        int minRows = on.integer("min_chunk_rows", (int) sz.minRows(), 1, Integer.MAX_VALUE);
        int maxRows = on.integer("max_chunk_rows", (int) sz.maxRows(), 1, Integer.MAX_VALUE);
        int chunkRows = on.integer("chunk_rows", (int) Math.max(minRows, Math.min(maxRows, sz.initialRows())), 1, Integer.MAX_VALUE);
        int targetMs = on.integer("target_chunk_ms", (int) (sz.targetNanos() / 1_000_000), 1, 3_600_000);
        int maxChunkMb = on.integer("max_chunk_mb", (int) (sz.maxBytes() >> 20), 1, 1 << 16);
        if (minRows > chunkRows || chunkRows > maxRows) {
            throw Node.error("snapshot.online", "needs min_chunk_rows (" + minRows + ") <= chunk_rows (" + chunkRows
                    + ") <= max_chunk_rows (" + maxRows + ")");
        }
        on.done();
        String signal = snap.string("signal_table", null);
        io.millrace.snapshot.online.OnlineSnapshotter.Options online = new io.millrace.snapshot.online.OnlineSnapshotter.Options(onReaders,
                new io.millrace.snapshot.online.KeysetChunker.Sizing(chunkRows, minRows, maxRows, targetMs * 1_000_000L,
                        (long) maxChunkMb << 20),
                signal == null ? null : io.millrace.core.schema.TableRef.parse(signal), binaryCopy);
        snap.done();

        Node p = r.child("pipeline");
        Pipeline.Options pd = Pipeline.Options.defaults();
        long budget = (long) p.integer("memory_budget_mb", (int) (pd.budgetBytes() >> 20), 4, 1 << 20) << 20;
        long batch = (long) p.integer("batch_kb", (int) (pd.batchBytes() >> 10), 1, 1 << 20) << 10;
        int linger = p.integer("linger_ms", (int) pd.lingerMillis(), 1, 60_000);
        if (batch * 2 > budget) {
            throw Node.error("pipeline.batch_kb", "(" + (batch >> 10) + ") must be at most half of pipeline.memory_budget_mb ("
                    + (budget >> 20) + " MB)");
        }
        // Streamed rows decoded by a pool of this many threads (0: on the assembler thread); docs/BENCHMARKS.md has the measurements.
        int decoders = p.integer("decoders", pd.decoders(), 0, 256);
        int decodeChunk = p.integer("decode_chunk_rows", pd.decodeChunkRows(), 1, 1 << 20);
        Pipeline.Options pipeline = new Pipeline.Options(budget, batch, Math.min(budget / 2, batch * 4), linger, decoders, decodeChunk);
        String spill = p.string("spill_dir", null);
        java.nio.file.Path spillDir = spill != null ? base.resolve(spill)
                : java.nio.file.Path.of(System.getProperty("java.io.tmpdir"), "millrace-spill-" + source.slot());
        p.done();

        Node o = r.child("operations");
        EngineConfig.Operations od = EngineConfig.Operations.defaults();
        Node rn = o.child("retry");
        EngineConfig.Retry rd = EngineConfig.Retry.defaults();
        int initialMs = rn.integer("initial_ms", (int) rd.initialMillis(), 10, 3_600_000);
        int maxMs = rn.integer("max_ms", (int) rd.maxMillis(), 10, 3_600_000);
        if (maxMs < initialMs) {
            throw Node.error("operations.retry.max_ms", "(" + maxMs + ") must be at least operations.retry.initial_ms (" + initialMs + ")");
        }
        EngineConfig.Retry retry = new EngineConfig.Retry(initialMs, maxMs, rn.integer("attempts", rd.attempts(), 0, 1_000_000));
        rn.done();
        EngineConfig.Health hd = od.health();
        EngineConfig.Health health = new EngineConfig.Health(o.integer("ready_max_lag_s", (int) (hd.readyMaxLagMillis() / 1000), 1, 86_400) * 1000L,
                (long) o.integer("ready_max_lag_mb", (int) (hd.readyMaxLagBytes() >> 20), 0, Integer.MAX_VALUE) << 20,
                o.integer("live_max_stall_s", (int) (hd.liveMaxStallMillis() / 1000), 0, 86_400) * 1000L);
        EngineConfig.Operations ops = new EngineConfig.Operations(o.integer("monitor_interval_ms", (int) od.monitorIntervalMillis(), 100, 3_600_000),
                (long) o.integer("retained_wal_warn_mb", (int) (od.retainedWalWarnBytes() >> 20), 1, Integer.MAX_VALUE) << 20,
                o.string("http_host", od.httpHost()), o.integer("http_port", od.httpPort(), 0, 65535), retry, controlToken(o, base), health,
                o.choice("log_format", od.logFormat(), EngineConfig.LogFormat.class));
        o.done();

        List<DestinationConfig> destinations = new ArrayList<>();
        Set<String> names = new HashSet<>();
        List<Node> ds = r.children("destinations");
        if (ds.isEmpty()) {
            throw Node.error("destinations", "is required: a list with at least one destination, e.g.\n"
                    + "destinations:\n  - name: files\n    type: jsonl\n    directory: ./out");
        }
        DestinationContext context = new DestinationContext(name, source.slot(), new SourceMeta(name, source.database()), base);
        for (Node dn : ds) {
            DestinationConfig dest = destination(dn, base, context);
            if (!names.add(dest.name())) {
                throw Node.error(dn.key("name"), "'" + dest.name() + "' is used by two destinations; names must be unique"
                        + " (a destination without a name is named after its type): give each destination its own name");
            }
            destinations.add(dest);
        }
        r.done();
        return new EngineConfig(name, source, mode, snapshot, destinations, pipeline, ops, spillDir, online);
    }

    /**
     * Where and what: the YAML parser's own problem position (Jackson's location is where the
     * enclosing construct began, e.g. line 1 for a tab on line 2), one line, no parser internals.
     */
    private static String yamlError(JsonProcessingException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof org.yaml.snakeyaml.error.MarkedYAMLException m && m.getProblemMark() != null) {
                return " at line " + (m.getProblemMark().getLine() + 1) + ", column " + (m.getProblemMark().getColumn() + 1) + ": "
                        + m.getProblem() + (m.getContext() == null ? "" : " (" + m.getContext() + ")");
            }
        }
        String where = e.getLocation() == null ? "" : " at line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr();
        return where + ": " + e.getOriginalMessage();
    }

    private SourceConfig source(Node s, Path base) {
        s.allow(SOURCE_KEYS);
        String host = s.string("host", "127.0.0.1");
        int port = s.integer("port", 5432, 1, 65535);
        String database = s.requireString("database", "app");
        String user = s.requireString("user", "millrace");
        Secret password = secret(s, "password", base, false);
        String slot = s.string("slot", "millrace");
        if (!slot.matches("[a-z0-9_]{1,63}")) {
            throw Node.error(s.key("slot"), "must be 1 to 63 lower-case letters, digits or underscores (a PostgreSQL slot name), got '" + slot + "'");
        }
        String publication = s.string("publication", "millrace");
        List<TableRef> tables = tableList(s, "tables");
        if (tables.isEmpty() && s.has("tables")) {
            // Absent, the key means "every table of the existing publication"; an empty list is never that.
            throw Node.error(s.key("tables"), "is an empty list: name the tables to capture (e.g. tables: [public.orders] or"
                    + " tables: ['public.*']), or remove " + s.key("tables") + " to capture the tables of the existing publication");
        }
        List<TableRef> exclude = tableList(s, "exclude_tables");
        boolean create = s.bool("create_publication", true);
        SourceConfig.BinaryMode binary = s.choice("binary", SourceConfig.BinaryMode.AUTO, SourceConfig.BinaryMode.class);
        int status = s.integer("status_interval_ms", 10_000, 100, 600_000);
        Map<String, String> jdbc = new LinkedHashMap<>();
        Node ssl = s.child("ssl");
        String mode = ssl.string("mode", null);
        if (mode != null) {
            if (!List.of("disable", "allow", "prefer", "require", "verify-ca", "verify-full").contains(mode)) {
                throw Node.error(ssl.key("mode"), "must be one of disable, allow, prefer, require, verify-ca, verify-full; got '" + mode + "'");
            }
            jdbc.put("sslmode", mode);
        }
        String rootCert = ssl.string("root_cert", null);
        if (rootCert != null) {
            jdbc.put("sslrootcert", base.resolve(rootCert).toString());
        }
        ssl.done();
        // A regular source connection (catalog, snapshot reads, slot monitor, key lookups) that receives nothing for
        // this long is given up as a lost connection, and the supervisor reconnects; the replication connection has its
        // own receive timeout. Without it a connection blackholed by the network waits for TCP keepalive (hours).
        int socketTimeout = s.integer("socket_timeout_s", 600, 0, 86_400);
        if (socketTimeout > 0) {
            jdbc.put("socketTimeout", Integer.toString(socketTimeout));
        }
        s.done();
        return new SourceConfig(host, port, database, user, password, slot, publication, tables, exclude, create, binary,
                Duration.ofMillis(status), jdbc);
    }

    private static List<TableRef> tableList(Node s, String key) {
        List<TableRef> out = new ArrayList<>();
        for (String t : s.strings(key)) {
            try {
                out.add(TableRef.parse(t));
            } catch (IllegalArgumentException e) {
                throw Node.error(s.key(key), e.getMessage());
            }
        }
        return out;
    }

    /** The token control calls must carry; only from the environment or a file, like passwords. NONE: no control calls. */
    private Secret controlToken(Node o, Path base) {
        if (o.has("control_token")) {
            throw Node.error(o.key("control_token"), "is not allowed: a token must not be written in the configuration file. Put it in an"
                    + " environment variable and name it in " + o.key("control_token_env") + ", or in a file named by "
                    + o.key("control_token_file"));
        }
        String var = o.string("control_token_env", null);
        String file = o.string("control_token_file", null);
        if (var != null && file != null) {
            throw Node.error(o.key("control_token_env"), "and " + o.key("control_token_file") + " are both set; keep one");
        }
        Secret token = Secret.NONE;
        if (var != null) {
            String v = env.apply(var);
            if (v == null || v.isBlank()) {
                return unresolved(Node.error(o.key("control_token_env"), "names the environment variable " + var + ", which is not set"
                        + " or empty; export the token before starting"), true);
            }
            token = Secret.of(v.strip());
        } else if (file != null) {
            Path f = base.resolve(file);
            try {
                token = Secret.of(Files.readString(f, StandardCharsets.UTF_8).strip());
            } catch (IOException e) {
                return unresolved(Node.error(o.key("control_token_file"), "names " + f + ", which cannot be read: " + e.getMessage()), true);
            }
        }
        if (!token.isEmpty() && token.reveal().length() < 16) {
            throw Node.error(o.key(var != null ? "control_token_env" : "control_token_file"), "holds a token of "
                    + token.reveal().length() + " characters; use at least 16 (e.g. openssl rand -hex 24)");
        }
        return token;
    }

    /**
     * A secret from {@code <prefix>_env} or {@code <prefix>_file} (e.g. {@code password_env}); a literal {@code <prefix>}
     * key is refused. {@code deferrable}: see {@link #sourceOnly()}.
     */
    private Secret secret(Node n, String prefix, Path base, boolean deferrable) {
        String what = prefix.equals("password") ? "password" : "secret";
        String envKey = prefix + "_env";
        String fileKey = prefix + "_file";
        if (n.has(prefix)) {
            throw Node.error(n.key(prefix), "is not allowed: a " + what + " must not be written in the configuration file."
                    + " Put it in an environment variable and name it in " + n.key(envKey)
                    + ", or in a file named by " + n.key(fileKey));
        }
        String var = n.string(envKey, null);
        String file = n.string(fileKey, null);
        if (var != null && file != null) {
            throw Node.error(n.key(envKey), "and " + n.key(fileKey) + " are both set; keep one");
        }
        if (var != null) {
            String v = env.apply(var);
            if (v == null) {
                return unresolved(Node.error(n.key(envKey), "names the environment variable " + var + ", which is not set;"
                        + " export it before starting"), deferrable);
            }
            if (v.isEmpty()) {
                return unresolved(Node.error(n.key(envKey), "names the environment variable " + var + ", which is empty;"
                        + " export the " + what + " in it, or remove " + n.key(envKey) + " if the server needs no " + what), deferrable);
            }
            return Secret.of(v);
        }
        if (file != null) {
            Path f = base.resolve(file);
            try {
                return Secret.of(Files.readString(f, StandardCharsets.UTF_8).strip());
            } catch (IOException e) {
                return unresolved(Node.error(n.key(fileKey), "names " + f + ", which cannot be read: " + e.getMessage()), deferrable);
            }
        }
        return Secret.NONE;
    }

    /**
     * One destination, read by the provider of its {@code type:}. Its secrets may be deferred ({@link #sourceOnly()}):
     * commands that talk to the source only need none of them.
     */
    private DestinationConfig destination(Node d, Path base, DestinationContext context) {
        d.refuseMisspelling("type", "name", "type"); // a misspelt "type" is named as such, not reported missing
        String type = d.requireString("type", "jsonl");
        DestinationProvider provider = providers.find(type).orElseThrow(() -> Node.error(d.key("type"), "must be one of "
                + String.join(", ", providers.types()) + "; got '" + type + "'" + (BUILT_IN_MODULES.contains(type)
                ? " (its module, millrace-sink-" + type + ", is not on the class path)" : "")));
        String name = d.string("name", type);
        DestinationConfig out = provider.configure(name, new NodeSettings(d, base, (n, prefix) -> secret(n, prefix, base, true)), context);
        d.done();
        return out;
    }
}
