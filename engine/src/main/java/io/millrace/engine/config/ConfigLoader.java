package io.millrace.engine.config;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.millrace.api.OperationsSettings;
import io.millrace.api.PipelineSettings;
import io.millrace.api.SnapshotSettings;
import io.millrace.api.SourceSettings;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.Secret;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.DestinationContext;
import io.millrace.core.sink.DestinationProvider;
import io.millrace.core.sink.DestinationProviders;
import io.millrace.engine.transform.Mask;
import io.millrace.engine.transform.TableRule;
import io.millrace.engine.transform.Transforms;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
    private static final String[] SECTIONS = {"name", "source", "snapshot", "pipeline", "operations", "destinations", "transforms"};
    private static final String[] SOURCE_KEYS = {"host", "port", "database", "user", "password", "password_env", "password_file", "slot",
            "publication", "tables", "exclude_tables", "create_publication", "binary", "status_interval_ms", "ssl", "socket_timeout_s",
            "on_slot_lost", "new_tables_poll_s", "hosts", "failover", "capture_from"};
    /** The types built into the distribution, each in its own module: named when a configuration asks for one that is missing. */
    private static final List<String> BUILT_IN_MODULES = List.of("postgres", "jsonl", "duckdb", "kafka");

    private final Function<String, String> env;
    private final DestinationProviders providers;
    /** Which secrets may stay unresolved, for a command that does not use them. */
    private final Needs needs;

    /**
     * What a command needs of the configuration's secrets; the ones it does not need may stay unresolved, each listed in
     * {@link #deferred()}. Ordered: each level defers what the one before it does, and more.
     */
    private enum Needs {
        /** {@code run}: every secret. */
        ALL,
        /** {@code reset}: the source's and the destinations' (it writes to them), not the control token or the salt. */
        NOT_RUN_ONLY,
        /** {@code preflight}, {@code status}, {@code setup}: the source's only. */
        SOURCE_ONLY
    }
    private final List<String> deferred = new ArrayList<>();

    /** @param env environment lookup (System::getenv in production) */
    public ConfigLoader(Function<String, String> env) {
        this(env, DestinationProviders.installed(), Needs.ALL);
    }

    private ConfigLoader(Function<String, String> env, DestinationProviders providers, Needs needs) {
        this.env = env;
        this.providers = providers;
        this.needs = needs;
    }

    /** This loader with exactly {@code providers} as the destination types it accepts (instead of the class path's). */
    public ConfigLoader withProviders(DestinationProviders providers) {
        return new ConfigLoader(env, providers, needs);
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
        return new ConfigLoader(env, providers, Needs.SOURCE_ONLY);
    }

    /**
     * For commands that write to the source and the destinations but never run the pipeline ({@code reset}): the control
     * token and the transforms' hash salt may stay unresolved, as {@link #sourceOnly()} lets them; every destination's
     * secrets are read.
     */
    public ConfigLoader withoutRunSecrets() {
        return new ConfigLoader(env, providers, Needs.NOT_RUN_ONLY);
    }

    /** The problems {@link #sourceOnly()} let pass, each naming its key, in the order found. */
    public List<String> deferred() {
        return List.copyOf(deferred);
    }

    /** Throws {@code e}, or when a command that needs no more than {@code unneeded} reads it, records it and returns no secret. */
    private Secret unresolved(MillraceException e, Needs unneeded) {
        if (unneeded == null || needs.compareTo(unneeded) < 0) {
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
            throw new MillraceException(Kind.CONFIG, "config: not valid YAML" + yamlError(e, yaml));
        }
        if (root == null || root.isNull() || root.isMissingNode()) {
            throw new MillraceException(Kind.CONFIG, "config: the file is empty; see config/example.yaml for a complete example");
        }
        Node r = new Node(root, "");
        r.allow(SECTIONS);
        String name = r.string("name", "millrace");
        SourceSettings source = source(r.child("source"), base);
        SnapshotSettings snapshot = snapshot(r.child("snapshot"));
        PipelineSettings pipeline = pipeline(r.child("pipeline"), base);
        OperationsSettings ops = operations(r.child("operations"), base);

        List<DestinationConfig> destinations = new ArrayList<>();
        List<Node> ds = r.children("destinations");
        EngineConfigs.requireDestinations(ds.size());
        DestinationContext context = new DestinationContext(name, source.slot(), new SourceMeta(name, source.database()), base);
        for (Node dn : ds) {
            destinations.add(destination(dn, base, context));
        }
        Transforms transforms = transforms(r.child("transforms"), base);
        r.done();
        return EngineConfigs.of(name, source, snapshot, pipeline, ops, destinations).withTransforms(transforms);
    }

    /**
     * The {@code transforms:} section, checked: unknown keys, both include and exclude, a mask that is not redact, hash or
     * truncate(N), a hash without a salt. A reload builds it again the same way; the columns are checked at start.
     */
    public Transforms transforms(String yaml, Path base) {
        JsonNode root;
        try {
            root = new ObjectMapper(new YAMLFactory()).enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION).readTree(yaml);
        } catch (JsonProcessingException e) {
            throw new MillraceException(Kind.CONFIG, "config: not valid YAML" + yamlError(e, yaml));
        }
        Node r = new Node(root, "");
        r.allow(SECTIONS);
        return transforms(r.child("transforms"), base);
    }

    /**
     * The {@code transforms:} section given as the mapping its YAML would hold (strings, lists, nested maps), checked
     * the same way, naming {@code transforms.<key>} in errors.
     */
    public Transforms transforms(Map<String, ?> settings, Path base) {
        return transforms(new Node(new ObjectMapper().valueToTree(settings), "transforms"), base);
    }

    private Map<String, io.millrace.core.transform.Transform> userTransforms;

    /** The {@link io.millrace.core.transform.Transform}s of the class path (the context class loader's), by name; found once. */
    private Map<String, io.millrace.core.transform.Transform> userTransforms() {
        if (userTransforms == null) {
            ClassLoader cl = Thread.currentThread().getContextClassLoader();
            Map<String, io.millrace.core.transform.Transform> found = new java.util.TreeMap<>();
            java.util.ServiceLoader.load(io.millrace.core.transform.Transform.class, cl != null ? cl : ConfigLoader.class.getClassLoader())
                    .forEach(t -> found.putIfAbsent(t.name(), t));
            userTransforms = found;
        }
        return userTransforms;
    }

    private Transforms transforms(Node t, Path base) {
        int unread = deferred.size();
        Secret salt = secret(t, "hash_salt", base, Needs.NOT_RUN_ONLY);
        if (deferred.size() > unread) {
            // a command that never hashes a value: a stand-in no real salt equals, so that the rules read as they are
            salt = Secret.of("unread salt " + java.util.UUID.randomUUID());
        }
        List<TableRule> rules = new ArrayList<>();
        for (Node rn : t.children("tables")) {
            String match = rn.requireString("match", "public.customers");
            TableRef pattern;
            try {
                pattern = TableRef.parse(match);
            } catch (RuntimeException e) {
                throw Node.error(rn.key("match"), "must be a table (schema.table) or a pattern like public.* ; got '" + match + "'");
            }
            Node cols = rn.child("columns");
            List<String> include = cols.has("include") ? cols.strings("include") : null;
            List<String> exclude = cols.strings("exclude");
            cols.done();
            Map<String, Mask> masks = new LinkedHashMap<>();
            for (Map.Entry<String, String> m : rn.stringMap("mask").entrySet()) {
                Mask mask;
                try {
                    mask = Mask.parse(m.getValue(), userTransforms()::get);
                } catch (IllegalArgumentException e) {
                    throw Node.error(rn.key("mask") + "." + m.getKey(), e.getMessage() + " (installed: " + userTransforms().keySet()
                            + "; a Transform is listed in META-INF/services/io.millrace.core.transform.Transform of a jar on the class path)");
                }
                if (mask == null) {
                    throw Node.error(rn.key("mask") + "." + m.getKey(), "must be redact, hash, truncate(N) (N characters kept) or java(name)"
                            + " (a Transform of your own), got '" + m.getValue() + "'");
                }
                masks.put(m.getKey(), mask);
            }
            String filter = rn.string("filter", null);
            String rename = rn.string("rename", null);
            rn.done();
            rules.add(new TableRule(rn.key("").replaceAll("\\.$", ""), pattern, include, exclude, masks, filter, rename));
        }
        Transforms.Toast toast = t.choice("toast", Transforms.Toast.PLACEHOLDER, Transforms.Toast.class);
        Integer cacheMb = t.integer("toast_cache_mb", Limit.TRANSFORMS_TOAST_CACHE_MB);
        t.done();
        return new Transforms(rules, salt, toast, cacheMb == null ? Transforms.DEFAULT_TOAST_CACHE_MB
                : Limit.TRANSFORMS_TOAST_CACHE_MB.check("transforms.toast_cache_mb", cacheMb));
    }

    /** Sets {@code set} from the whole number at {@code key} when present (its bounds are the builder's to check). */
    private static void integer(Node n, String key, Limit limit, java.util.function.IntConsumer set) {
        Integer v = n.integer(key, limit);
        if (v != null) {
            set.accept(v);
        }
    }

    private static void string(Node n, String key, java.util.function.Consumer<String> set) {
        String v = n.string(key, null);
        if (v != null) {
            set.accept(v);
        }
    }

    private static SnapshotSettings snapshot(Node snap) {
        SnapshotSettings.Builder b = SnapshotSettings.builder();
        b.mode(snap.choice("mode", SnapshotSettings.Mode.INITIAL, SnapshotSettings.Mode.class));
        integer(snap, "readers", Limit.SNAPSHOT_READERS, b::readers);
        integer(snap, "chunk_pages", Limit.SNAPSHOT_CHUNK_PAGES, b::chunkPages);
        Node on = snap.child("online");
        integer(on, "readers", Limit.ONLINE_READERS, b::onlineReaders);
        integer(on, "min_chunk_rows", Limit.ONLINE_CHUNK_ROWS, b::minChunkRows);
        integer(on, "max_chunk_rows", Limit.ONLINE_CHUNK_ROWS, b::maxChunkRows);
        integer(on, "chunk_rows", Limit.ONLINE_CHUNK_ROWS, b::chunkRows);
        integer(on, "target_chunk_ms", Limit.ONLINE_TARGET_CHUNK_MS, b::targetChunkMs);
        integer(on, "max_chunk_mb", Limit.ONLINE_MAX_CHUNK_MB, b::maxChunkMb);
        on.done();
        string(snap, "signal_table", b::signalTable);
        snap.done();
        return b.build();
    }

    private static PipelineSettings pipeline(Node p, Path base) {
        PipelineSettings.Builder b = PipelineSettings.builder();
        integer(p, "memory_budget_mb", Limit.PIPELINE_MEMORY_BUDGET_MB, b::memoryBudgetMb);
        integer(p, "batch_kb", Limit.PIPELINE_BATCH_KB, b::batchKb);
        integer(p, "linger_ms", Limit.PIPELINE_LINGER_MS, b::lingerMs);
        // Streamed rows decoded by a pool of this many threads (0: on the assembler thread); docs/BENCHMARKS.md has the measurements.
        integer(p, "decoders", Limit.PIPELINE_DECODERS, b::decoders);
        integer(p, "decode_chunk_rows", Limit.PIPELINE_DECODE_CHUNK_ROWS, b::decodeChunkRows);
        string(p, "spill_dir", dir -> b.spillDir(base.resolve(dir)));
        p.done();
        return b.build();
    }

    private OperationsSettings operations(Node o, Path base) {
        OperationsSettings.Builder b = OperationsSettings.builder().environment(env);
        Node rn = o.child("retry");
        integer(rn, "initial_ms", Limit.RETRY_MS, b::retryInitialMs);
        integer(rn, "max_ms", Limit.RETRY_MS, b::retryMaxMs);
        integer(rn, "attempts", Limit.RETRY_ATTEMPTS, b::retryAttempts);
        integer(rn, "attempts_once_running", Limit.RETRY_ATTEMPTS, b::retryAttemptsOnceRunning);
        rn.done();
        integer(o, "ready_max_lag_s", Limit.READY_MAX_LAG_S, b::readyMaxLagS);
        integer(o, "ready_max_lag_mb", Limit.READY_MAX_LAG_MB, b::readyMaxLagMb);
        integer(o, "live_max_stall_s", Limit.LIVE_MAX_STALL_S, b::liveMaxStallS);
        integer(o, "monitor_interval_ms", Limit.MONITOR_INTERVAL_MS, b::monitorIntervalMs);
        integer(o, "retained_wal_warn_mb", Limit.RETAINED_WAL_WARN_MB, b::retainedWalWarnMb);
        string(o, "http_host", b::httpHost);
        integer(o, "http_port", Limit.HTTP_PORT, b::httpPort);
        literal(o, "control_token");
        string(o, "control_token_env", b::controlTokenEnv);
        string(o, "control_token_file", f -> b.controlTokenFile(base.resolve(f)));
        if (needs != Needs.ALL) {
            b.tolerateUnreadableControlToken(deferred::add);
        }
        OperationsSettings built = b.logFormat(o.choice("log_format", OperationsSettings.LogFormat.TEXT, OperationsSettings.LogFormat.class))
                .build();
        o.done();
        return built;
    }

    /**
     * Where and what: the YAML parser's own problem position (Jackson's location is where the
     * enclosing construct began, e.g. line 1 for a tab on line 2), one line, no parser internals.
     */
    private static String yamlError(JsonProcessingException e, String yaml) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof org.yaml.snakeyaml.error.MarkedYAMLException m && m.getProblemMark() != null) {
                int line = m.getProblemMark().getLine();
                String[] lines = yaml.split("\n", -1);
                String text = line < lines.length ? lines[line] : "";
                // a pattern's ? in a [ ] list reads as YAML's own "?" (found by a user writing README's sales.orders_20??)
                String hint = text.contains("[") && text.contains("?") ? "; a table pattern with ? or * in a [ ] list must be"
                        + " quoted, e.g. tables: [\"sales.orders_20??\"]" : "";
                return " at line " + (line + 1) + ", column " + (m.getProblemMark().getColumn() + 1) + ": "
                        + m.getProblem() + (m.getContext() == null ? "" : " (" + m.getContext() + ")") + hint;
            }
        }
        String where = e.getLocation() == null ? "" : " at line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr();
        return where + ": " + e.getOriginalMessage();
    }

    private SourceSettings source(Node s, Path base) {
        s.allow(SOURCE_KEYS);
        SourceSettings.Builder b = SourceSettings.builder().environment(env);
        string(s, "host", b::host);
        integer(s, "port", Limit.SOURCE_PORT, b::port);
        b.database(s.requireString("database", "app")).user(s.requireString("user", "millrace"));
        literal(s, "password");
        string(s, "password_env", b::passwordEnv);
        string(s, "password_file", f -> b.passwordFile(base.resolve(f)));
        string(s, "slot", b::slot);
        string(s, "publication", b::publication);
        if (s.has("tables")) {
            b.tables(s.strings("tables")); // the forms are checked here, the names by the builder
        }
        b.excludeTables(s.strings("exclude_tables"));
        b.createPublication(s.bool("create_publication", true));
        b.binary(s.choice("binary", SourceSettings.BinaryMode.AUTO, SourceSettings.BinaryMode.class));
        integer(s, "status_interval_ms", Limit.SOURCE_STATUS_INTERVAL_MS, b::statusIntervalMs);
        b.onSlotLost(s.choice("on_slot_lost", SourceSettings.OnSlotLost.STOP, SourceSettings.OnSlotLost.class));
        Node ssl = s.child("ssl");
        string(ssl, "mode", b::sslMode);
        string(ssl, "root_cert", f -> b.sslRootCert(base.resolve(f)));
        ssl.done();
        integer(s, "socket_timeout_s", Limit.SOURCE_SOCKET_TIMEOUT_S, b::socketTimeoutS);
        integer(s, "new_tables_poll_s", Limit.SOURCE_NEW_TABLES_POLL_S, b::newTablesPollS);
        if (s.has("hosts")) {
            b.hosts(s.strings("hosts"));
        }
        b.failover(s.bool("failover", false));
        b.captureFrom(s.choice("capture_from", SourceSettings.CaptureFrom.PRIMARY, SourceSettings.CaptureFrom.class));
        s.done();
        return b.build();
    }

    /** Refuses a secret written in the file itself ({@code <prefix>}, e.g. {@code password}). */
    private static void literal(Node n, String prefix) {
        if (n.has(prefix)) {
            String what = prefix.equals("password") ? "password" : prefix.equals("control_token") ? "token" : "secret";
            throw Node.error(n.key(prefix), "is not allowed: a " + what + " must not be written in the configuration file."
                    + " Put it in an environment variable and name it in " + n.key(prefix + "_env")
                    + ", or in a file named by " + n.key(prefix + "_file"));
        }
    }

    /**
     * A secret from {@code <prefix>_env} or {@code <prefix>_file} (e.g. {@code password_env}); a literal {@code <prefix>}
     * key is refused. {@code unneeded}: the level of {@link Needs} from which it may stay unresolved, or null (never).
     */
    private Secret secret(Node n, String prefix, Path base, Needs unneeded) {
        literal(n, prefix);
        String envKey = prefix + "_env";
        String fileKey = prefix + "_file";
        String var = n.string(envKey, null);
        String file = n.string(fileKey, null);
        if (var != null && file != null) {
            throw Secrets.both(n.key(envKey), n.key(fileKey));
        }
        try {
            if (var != null) {
                return Secrets.fromEnv(n.key(envKey), var, env, prefix.equals("password") ? "password" : "secret");
            }
            return file == null ? Secret.NONE : Secrets.fromFile(n.key(fileKey), base.resolve(file));
        } catch (MillraceException e) {
            return unresolved(e, unneeded);
        }
    }

    /**
     * One destination, read by the provider of its {@code type:}. Its secrets may be deferred ({@link #sourceOnly()}):
     * commands that talk to the source only need none of them.
     */
    /**
     * One destination given as a mapping of its settings (the builder's form of a YAML mapping: strings, numbers,
     * booleans, nested maps), read by the provider of its {@code type}, with the errors the YAML gives, naming
     * {@code destinations[<index>].<key>}. Relative paths resolve against {@link DestinationContext#baseDir()}.
     */
    public DestinationConfig destination(int index, Map<String, ?> settings, DestinationContext context) {
        Node d = new Node(new ObjectMapper().valueToTree(settings), "destinations[" + index + "]");
        return destination(d, context.baseDir(), context);
    }

    private DestinationConfig destination(Node d, Path base, DestinationContext context) {
        d.refuseMisspelling("type", "name", "type"); // a misspelt "type" is named as such, not reported missing
        String type = d.requireString("type", "jsonl");
        DestinationProvider provider = providers.find(type).orElseThrow(() -> Node.error(d.key("type"), "must be one of "
                + String.join(", ", providers.types()) + "; got '" + type + "'" + (BUILT_IN_MODULES.contains(type)
                ? " (its module, millrace-sink-" + type + ", is not on the class path)" : " (a destination of your own is found by its"
                + " type once its jar, with its DestinationProvider listed in META-INF/services, is on the class path:"
                + " MILLRACE_CLASSPATH for bin/millrace)")));
        String name = d.string("name", type);
        DestinationConfig out = provider.configure(name, new NodeSettings(d, base, (n, prefix) -> secret(n, prefix, base, Needs.SOURCE_ONLY)), context);
        d.done();
        return out;
    }
}
