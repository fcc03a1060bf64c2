package io.millrace.connect;

import io.millrace.api.PipelineSettings;
import io.millrace.api.SnapshotSettings;
import io.millrace.api.SourceSettings;
import io.millrace.core.Secret;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.common.config.types.Password;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The connector's configuration: Debezium PostgreSQL connector keys for what Millrace has too, Millrace's own settings
 * under {@code millrace.*}, and Kafka Connect's own keys (converters, transforms, ...) passed through. Every other key
 * is refused by {@link #refusals}, naming it: a known Debezium key without an equivalent says why, an unknown key says
 * it is unknown. Nothing is ignored silently.
 *
 * <p>Mapping (Debezium → Millrace): {@code database.*} → {@link SourceSettings}, {@code slot.name},
 * {@code publication.name}, {@code table.include.list}/{@code table.exclude.list} (Debezium's regular expressions,
 * limited to what a Millrace pattern says: {@code public\.orders}, {@code public\..*}), {@code schema.include.list}/
 * {@code schema.exclude.list} ({@code <schema>.*}), {@code snapshot.mode} → {@link SnapshotSettings.Mode},
 * {@code signal.data.collection} → the signal table, {@code incremental.snapshot.chunk.size} → online chunks of that
 * many rows, fixed. Immutable; any thread.
 */
final class ConnectorSettings {
    static final String HOST = "database.hostname";
    static final String PORT = "database.port";
    static final String USER = "database.user";
    static final String PASSWORD = "database.password";
    static final String DBNAME = "database.dbname";
    static final String SSLMODE = "database.sslmode";
    static final String TOPIC_PREFIX = "topic.prefix";
    static final String SLOT = "slot.name";
    static final String PUBLICATION = "publication.name";
    static final String PUBLICATION_AUTOCREATE = "publication.autocreate.mode";
    static final String PLUGIN = "plugin.name";
    static final String TABLE_INCLUDE = "table.include.list";
    static final String TABLE_EXCLUDE = "table.exclude.list";
    static final String SCHEMA_INCLUDE = "schema.include.list";
    static final String SCHEMA_EXCLUDE = "schema.exclude.list";
    static final String SNAPSHOT_MODE = "snapshot.mode";
    static final String TOMBSTONES = "tombstones.on.delete";
    static final String SKIPPED_OPERATIONS = "skipped.operations";
    static final String SIGNAL_TABLE = "signal.data.collection";
    static final String CHUNK_SIZE = "incremental.snapshot.chunk.size";
    static final String DECIMAL_MODE = "decimal.handling.mode";
    static final String INTERVAL_MODE = "interval.handling.mode";
    static final String BINARY_MODE = "binary.handling.mode";
    static final String TX_METADATA = "provide.transaction.metadata";
    static final String TX_TOPIC = "topic.transaction";
    static final String HEARTBEAT_PREFIX = "topic.heartbeat.prefix";

    static final String M_BINARY = "millrace.source.binary";
    static final String M_STATUS_INTERVAL = "millrace.source.status.interval.ms";
    static final String M_READERS = "millrace.snapshot.readers";
    static final String M_ONLINE_READERS = "millrace.snapshot.online.readers";
    static final String M_MEMORY = "millrace.pipeline.memory.budget.mb";
    static final String M_BATCH_KB = "millrace.pipeline.batch.kb";
    static final String M_LINGER = "millrace.pipeline.linger.ms";
    static final String M_HANDOFF_TIMEOUT = "millrace.commit.timeout.ms";

    private static final String G_DB = "Database";
    private static final String G_CAPTURE = "Capture";
    private static final String G_EVENTS = "Events";
    private static final String G_MILLRACE = "Millrace";

    private static final Pattern TOPIC_CHARS = Pattern.compile("[a-zA-Z0-9._-]+");

    /** Kafka Connect's own connector keys (and prefixes), read by the worker, not by the connector. */
    private static final List<String> FRAMEWORK_KEYS = List.of("name", "connector.class", "tasks.max", "key.converter",
            "value.converter", "header.converter", "transforms", "predicates", "config.action.reload", "exactly.once.support",
            "transaction.boundary", "transaction.boundary.interval.ms", "offsets.storage.topic", "errors.retry.timeout",
            "errors.retry.delay.max.ms", "errors.tolerance", "errors.log.enable", "errors.log.include.messages", "topic.creation.groups",
            "task.class", "connector.plugin.version", "key.converter.plugin.version", "value.converter.plugin.version", "header.converter.plugin.version");
    private static final List<String> FRAMEWORK_PREFIXES = List.of("key.converter.", "value.converter.", "header.converter.",
            "transforms.", "predicates.", "topic.creation.", "producer.override.", "consumer.override.", "admin.override.");

    /** Debezium PostgreSQL connector keys that Millrace has no equivalent for, with the reason given when one is set. */
    private static final Map<String, String> UNSUPPORTED = new LinkedHashMap<>();

    static {
        String tuning = "Debezium's queue tuning; Millrace batches by millrace.pipeline.batch.kb and bounds memory by "
                + "millrace.pipeline.memory.budget.mb";
        UNSUPPORTED.put("max.batch.size", tuning);
        UNSUPPORTED.put("max.queue.size", tuning);
        UNSUPPORTED.put("max.queue.size.in.bytes", tuning);
        UNSUPPORTED.put("poll.interval.ms", tuning);
        UNSUPPORTED.put("time.precision.mode", "Millrace writes time and timestamp in microseconds always (MicroTime, MicroTimestamp)");
        UNSUPPORTED.put("hstore.handling.mode", "hstore values are written as the server's text");
        UNSUPPORTED.put("include.unknown.datatypes", "Millrace always writes unknown types as the server's text");
        UNSUPPORTED.put("heartbeat.interval.ms", "Millrace writes a heartbeat record only to carry the offset of a batch without"
                + " changes (see " + HEARTBEAT_PREFIX + ")");
        UNSUPPORTED.put("heartbeat.action.query", "not supported");
        UNSUPPORTED.put("slot.drop.on.stop", "Millrace never drops the slot when a task stops (it holds the resume position)");
        UNSUPPORTED.put("slot.stream.params", "not supported");
        UNSUPPORTED.put("snapshot.select.statement.overrides", "not supported; an online snapshot takes a filter (signals)");
        UNSUPPORTED.put("snapshot.include.collection.list", "not supported: the initial snapshot copies every captured table");
        UNSUPPORTED.put("column.include.list", "column filters are not supported");
        UNSUPPORTED.put("column.exclude.list", "column filters are not supported");
        UNSUPPORTED.put("message.key.columns", "the key is the table's replica identity");
        UNSUPPORTED.put("database.server.name", "removed in Debezium 2.0; use " + TOPIC_PREFIX);
        UNSUPPORTED.put("database.initial.statements", "not supported");
        UNSUPPORTED.put("converters", "custom converters are not supported");
        UNSUPPORTED.put("event.processing.failure.handling.mode", "Millrace stops on an event it cannot process");
        UNSUPPORTED.put("schema.refresh.mode", "Millrace reads the table's shape from the stream");
        UNSUPPORTED.put("topic.naming.strategy", "topics are <topic.prefix>.<schema>.<table>");
        UNSUPPORTED.put("signal.enabled.channels", "signals come from " + SIGNAL_TABLE + " only");
    }

    static final ConfigDef DEF = new ConfigDef()
            .define(HOST, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(), Importance.HIGH,
                    "Resolvable host name or IP address of the PostgreSQL server.", G_DB, 1, ConfigDef.Width.MEDIUM, "Hostname")
            .define(PORT, Type.INT, 5432, ConfigDef.Range.between(1, 65535), Importance.HIGH,
                    "Port of the PostgreSQL server.", G_DB, 2, ConfigDef.Width.SHORT, "Port")
            .define(USER, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(), Importance.HIGH,
                    "Name of the PostgreSQL user (with REPLICATION, and SELECT on the captured tables).", G_DB, 3, ConfigDef.Width.MEDIUM, "User")
            .define(PASSWORD, Type.PASSWORD, "", Importance.HIGH,
                    "Password of the PostgreSQL user (empty: none, e.g. trust authentication).", G_DB, 4, ConfigDef.Width.MEDIUM, "Password")
            .define(DBNAME, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(), Importance.HIGH,
                    "Name of the database to capture.", G_DB, 5, ConfigDef.Width.MEDIUM, "Database")
            .define(SSLMODE, Type.STRING, "prefer", ConfigDef.ValidString.in("disable", "allow", "prefer", "require", "verify-ca",
                    "verify-full"), Importance.MEDIUM, "TLS to the server, as libpq's sslmode.", G_DB, 6, ConfigDef.Width.SHORT, "SSL mode")
            .define(TOPIC_PREFIX, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new TopicPrefix(), Importance.HIGH,
                    "The source's logical name: topics are <topic.prefix>.<schema>.<table>, and source.name in the events.",
                    G_EVENTS, 1, ConfigDef.Width.MEDIUM, "Topic prefix")
            .define(SLOT, Type.STRING, "debezium", new Identifier("[a-z0-9_]{1,63}", "1 to 63 lower-case letters, digits or underscores"),
                    Importance.MEDIUM, "Logical replication slot (pgoutput); created when missing.", G_CAPTURE, 1, ConfigDef.Width.MEDIUM, "Slot")
            .define(PUBLICATION, Type.STRING, "dbz_publication", new ConfigDef.NonEmptyString(), Importance.MEDIUM,
                    "Publication the slot reads.", G_CAPTURE, 2, ConfigDef.Width.MEDIUM, "Publication")
            .define(PUBLICATION_AUTOCREATE, Type.STRING, "filtered", ConfigDef.ValidString.in("filtered", "disabled"), Importance.LOW,
                    "filtered: create the publication for the captured tables when missing; disabled: it must exist."
                            + " (Debezium's all_tables is not supported: Millrace publishes only what it captures.)",
                    G_CAPTURE, 3, ConfigDef.Width.SHORT, "Publication creation")
            .define(PLUGIN, Type.STRING, "pgoutput", ConfigDef.ValidString.in("pgoutput"), Importance.LOW,
                    "Logical decoding plugin: pgoutput only.", G_CAPTURE, 4, ConfigDef.Width.SHORT, "Plugin")
            .define(TABLE_INCLUDE, Type.LIST, "", new TableList(), Importance.HIGH,
                    "Tables to capture, as <schema>\\.<table> regular expressions limited to names and .* (public\\.orders,"
                            + " public\\..*). Empty: every table of the existing publication.", G_CAPTURE, 5, ConfigDef.Width.LONG, "Tables")
            .define(TABLE_EXCLUDE, Type.LIST, "", new TableList(), Importance.MEDIUM,
                    "Tables not to capture, in the form of " + TABLE_INCLUDE + ".", G_CAPTURE, 6, ConfigDef.Width.LONG, "Excluded tables")
            .define(SCHEMA_INCLUDE, Type.LIST, "", new TableList(), Importance.MEDIUM,
                    "Schemas whose tables to capture (each becomes <schema>.*).", G_CAPTURE, 7, ConfigDef.Width.LONG, "Schemas")
            .define(SCHEMA_EXCLUDE, Type.LIST, "", new TableList(), Importance.MEDIUM,
                    "Schemas whose tables not to capture.", G_CAPTURE, 8, ConfigDef.Width.LONG, "Excluded schemas")
            .define(SNAPSHOT_MODE, Type.STRING, "initial", ConfigDef.ValidString.in("initial", "never", "no_data", "initial_only"),
                    Importance.MEDIUM, "initial: copy the tables, then stream; never / no_data: stream only; initial_only: copy"
                            + " and stop.", G_CAPTURE, 9, ConfigDef.Width.SHORT, "Snapshot mode")
            .define(SIGNAL_TABLE, Type.STRING, null, new OptionalText(), Importance.LOW,
                    "Signal table <schema>.<table>: an execute-snapshot row starts an online snapshot.", G_CAPTURE, 10,
                    ConfigDef.Width.MEDIUM, "Signal table")
            .define(CHUNK_SIZE, Type.INT, null, ConfigDef.LambdaValidator.with((name, value) -> {
                        if (value != null) {
                            ConfigDef.Range.atLeast(1).ensureValid(name, value);
                        }
                    }, () -> "[1,...], or not set"), Importance.LOW,
                    "Rows per chunk of an online snapshot, fixed, as Debezium's incremental snapshot. Not set: Millrace sizes"
                            + " each chunk toward half a second of reading (5000 rows at first, 500 to 50000).", G_CAPTURE, 11,
                    ConfigDef.Width.SHORT, "Online snapshot chunk rows")
            .define(TOMBSTONES, Type.BOOLEAN, true, Importance.MEDIUM,
                    "Whether a delete is followed by a tombstone (the key, a null value).", G_EVENTS, 2, ConfigDef.Width.SHORT, "Tombstones")
            .define(SKIPPED_OPERATIONS, Type.LIST, "t", ConfigDef.ValidList.in("t", "none"), Importance.LOW,
                    "t: truncates are not written (Debezium's default); none: a truncate is a record with op t.", G_EVENTS, 3,
                    ConfigDef.Width.SHORT, "Skipped operations")
            .define(DECIMAL_MODE, Type.STRING, "precise", ConfigDef.ValidString.in("precise", "double", "string"), Importance.LOW,
                    "numeric and money values, as Debezium's: precise (Kafka Decimal; io.debezium.data.VariableScaleDecimal for a"
                            + " numeric without a scale; NaN and infinities null), double, or string (the plain decimal, as Millrace's"
                            + " own JSON; docs/TYPES.md).", G_EVENTS, 4, ConfigDef.Width.SHORT, "Decimals")
            .define(INTERVAL_MODE, Type.STRING, "numeric", ConfigDef.ValidString.in("numeric", "string"), Importance.LOW,
                    "interval values, as Debezium's: numeric (io.debezium.time.MicroDuration, months as 365.25 / 12 days) or"
                            + " string (ISO-8601, as Millrace's own JSON).", G_EVENTS, 5, ConfigDef.Width.SHORT, "Intervals")
            .define(BINARY_MODE, Type.STRING, "bytes", ConfigDef.ValidString.in("bytes"), Importance.LOW,
                    "bytea values: bytes only.", G_EVENTS, 6, ConfigDef.Width.SHORT, "Binary")
            .define(TX_METADATA, Type.BOOLEAN, false, Importance.LOW,
                    "Whether each source transaction gets a BEGIN and an END record on <topic.prefix>.<topic.transaction> and its"
                            + " change records the transaction block (id, total_order, data_collection_order), as Debezium's;"
                            + " false: the transaction field is null.", G_EVENTS, 7, ConfigDef.Width.SHORT, "Transaction metadata")
            .define(TX_TOPIC, Type.STRING, "transaction", new TopicPrefix(), Importance.LOW,
                    "The transaction metadata topic is <topic.prefix>.<topic.transaction>.", G_EVENTS, 8, ConfigDef.Width.MEDIUM,
                    "Transaction topic")
            .define(HEARTBEAT_PREFIX, Type.STRING, "__debezium-heartbeat", new TopicPrefix(), Importance.LOW,
                    "A batch without changes (only other tables' transactions, snapshot progress) carries its offset in a record to"
                            + " <topic.heartbeat.prefix>.<topic.prefix>.", G_EVENTS, 9, ConfigDef.Width.MEDIUM, "Heartbeat topic prefix")
            .define(M_BINARY, Type.STRING, "auto", ConfigDef.ValidString.in("auto", "on", "off"), Importance.LOW,
                    "pgoutput values in binary: auto (where possible), on, off.", G_MILLRACE, 1, ConfigDef.Width.SHORT, "Binary values")
            .define(M_STATUS_INTERVAL, Type.INT, 10_000, ConfigDef.Range.between(100, 3_600_000), Importance.LOW,
                    "How often the slot's confirmed position is reported to the server, in ms.", G_MILLRACE, 2, ConfigDef.Width.SHORT,
                    "Status interval")
            .define(M_READERS, Type.INT, 2, ConfigDef.Range.between(1, 64), Importance.MEDIUM,
                    "Parallel readers of the initial snapshot.", G_MILLRACE, 3, ConfigDef.Width.SHORT, "Snapshot readers")
            .define(M_ONLINE_READERS, Type.INT, 1, ConfigDef.Range.between(1, 64), Importance.LOW,
                    "Parallel readers of an online snapshot.", G_MILLRACE, 4, ConfigDef.Width.SHORT, "Online snapshot readers")
            .define(M_MEMORY, Type.INT, null, ConfigDef.LambdaValidator.with((name, value) -> {
                        if (value != null) {
                            ConfigDef.Range.between(16, 1 << 20).ensureValid(name, value);
                            heapHolds(name, (Integer) value, Runtime.getRuntime().maxMemory());
                        }
                    }, () -> "[16,...,1048576], at most half of the worker's maximum heap"), Importance.MEDIUM,
                    "Memory the pipeline may hold, in MiB (beyond it, large transactions spill to disk); at most half of the"
                            + " worker's heap. Default: 256, or a quarter of the worker's maximum heap if less.", G_MILLRACE, 5,
                    ConfigDef.Width.SHORT, "Memory budget")
            .define(M_BATCH_KB, Type.INT, 1024, ConfigDef.Range.between(1, 1 << 20), Importance.LOW,
                    "Size of a batch handed to Connect, in KiB: one Kafka transaction.", G_MILLRACE, 6, ConfigDef.Width.SHORT, "Batch size")
            .define(M_LINGER, Type.INT, 50, ConfigDef.Range.between(1, 60_000), Importance.LOW,
                    "How long a batch waits for more changes, in ms.", G_MILLRACE, 7, ConfigDef.Width.SHORT, "Linger")
            .define(M_HANDOFF_TIMEOUT, Type.LONG, 600_000L, ConfigDef.Range.between(1_000, Long.MAX_VALUE), Importance.LOW,
                    "How long the engine may wait for Kafka to acknowledge a batch's records (on an exactly-once worker with"
                            + " connector-defined boundaries: to commit its transaction) before the task fails, in ms.", G_MILLRACE, 8,
                    ConfigDef.Width.SHORT, "Commit timeout");

    private final AbstractConfig config;

    ConnectorSettings(Map<String, String> props) {
        List<String> refused = refusals(props);
        if (!refused.isEmpty()) {
            throw new ConfigException(String.join("; ", refused));
        }
        this.config = new AbstractConfig(DEF, props, false);
    }

    /** The keys of {@code props} this connector refuses, each as {@code key: reason}. */
    static List<String> refusals(Map<String, String> props) {
        List<String> out = new ArrayList<>();
        for (String key : props.keySet()) {
            String reason = refusal(key);
            if (reason != null) {
                out.add(key + ": " + reason);
            }
        }
        return out;
    }

    /** Why {@code key} is refused, or null when it is one of this connector's keys or Connect's own. */
    static String refusal(String key) {
        if (DEF.names().contains(key) || FRAMEWORK_KEYS.contains(key) || FRAMEWORK_PREFIXES.stream().anyMatch(key::startsWith)) {
            return null;
        }
        String why = UNSUPPORTED.get(key);
        if (why != null) {
            return "a Debezium setting that Millrace does not support (" + why + ")";
        }
        return "unknown setting: Millrace's connector does not know it (its settings: the Debezium keys it shares, and millrace.*)";
    }

    /** {@link ConfigDef#validate} plus an error on each refused key. */
    static List<ConfigValue> validate(Map<String, String> props) {
        List<ConfigValue> values = new ArrayList<>(DEF.validate(props));
        for (String key : props.keySet()) {
            String reason = refusal(key);
            if (reason != null) {
                ConfigValue v = new ConfigValue(key);
                v.addErrorMessage(key + ": " + reason);
                values.add(v);
            }
        }
        if (!props.getOrDefault(TABLE_INCLUDE, "").isBlank() && !props.getOrDefault(SCHEMA_INCLUDE, "").isBlank()) {
            for (ConfigValue v : values) {
                if (v.name().equals(SCHEMA_INCLUDE)) {
                    v.addErrorMessage(SCHEMA_INCLUDE + " and " + TABLE_INCLUDE + " cannot both be set");
                }
            }
        }
        return values;
    }

    String topicPrefix() {
        return config.getString(TOPIC_PREFIX);
    }

    String slot() {
        return config.getString(SLOT);
    }

    String database() {
        return config.getString(DBNAME);
    }

    /** How numeric, money and interval values are written ({@code decimal.handling.mode}, {@code interval.handling.mode}). */
    ColumnTypes.Modes modes() {
        return new ColumnTypes.Modes(config.getString(DECIMAL_MODE), config.getString(INTERVAL_MODE));
    }

    boolean tombstones() {
        return config.getBoolean(TOMBSTONES);
    }

    boolean truncates() {
        return config.getList(SKIPPED_OPERATIONS).contains("none");
    }

    String heartbeatTopic() {
        return config.getString(HEARTBEAT_PREFIX) + "." + topicPrefix();
    }

    /** {@code <topic.prefix>.<topic.transaction>} with {@code provide.transaction.metadata=true}, else null. */
    String transactionTopic() {
        return config.getBoolean(TX_METADATA) ? topicPrefix() + "." + config.getString(TX_TOPIC) : null;
    }

    long commitTimeoutMs() {
        return config.getLong(M_HANDOFF_TIMEOUT);
    }

    SourceSettings source() {
        SourceSettings.Builder b = SourceSettings.builder().host(config.getString(HOST)).port(config.getInt(PORT))
                .database(config.getString(DBNAME)).user(config.getString(USER)).slot(slot())
                .publication(config.getString(PUBLICATION)).sslMode(config.getString(SSLMODE))
                .createPublication(config.getString(PUBLICATION_AUTOCREATE).equals("filtered"))
                .binary(SourceSettings.BinaryMode.valueOf(config.getString(M_BINARY).toUpperCase(Locale.ROOT)))
                .statusIntervalMs(config.getInt(M_STATUS_INTERVAL));
        Password password = config.getPassword(PASSWORD);
        if (password != null && !password.value().isEmpty()) {
            b.password(Secret.of(password.value()));
        }
        List<String> tables = new ArrayList<>();
        for (String t : config.getList(TABLE_INCLUDE)) {
            tables.add(pattern(TABLE_INCLUDE, t));
        }
        for (String s : config.getList(SCHEMA_INCLUDE)) {
            tables.add(schemaPattern(SCHEMA_INCLUDE, s));
        }
        if (!tables.isEmpty()) {
            b.tables(tables);
        }
        List<String> excluded = new ArrayList<>();
        for (String t : config.getList(TABLE_EXCLUDE)) {
            excluded.add(pattern(TABLE_EXCLUDE, t));
        }
        for (String s : config.getList(SCHEMA_EXCLUDE)) {
            excluded.add(schemaPattern(SCHEMA_EXCLUDE, s));
        }
        if (!excluded.isEmpty()) {
            b.excludeTables(excluded);
        }
        return b.build();
    }

    SnapshotSettings snapshot() {
        SnapshotSettings.Mode mode = switch (config.getString(SNAPSHOT_MODE)) {
            case "never", "no_data" -> SnapshotSettings.Mode.NEVER;
            case "initial_only" -> SnapshotSettings.Mode.INITIAL_ONLY;
            default -> SnapshotSettings.Mode.INITIAL;
        };
        SnapshotSettings.Builder b = SnapshotSettings.builder().mode(mode).readers(config.getInt(M_READERS))
                .onlineReaders(config.getInt(M_ONLINE_READERS));
        String signal = config.getString(SIGNAL_TABLE);
        if (signal != null && !signal.isBlank()) {
            b.signalTable(signal);
        }
        Integer chunk = config.getInt(CHUNK_SIZE);
        if (chunk != null) { // fixed, as Debezium's: every chunk this size, none adapted
            b.minChunkRows(chunk).maxChunkRows(chunk).chunkRows(chunk);
        }
        return b.build();
    }

    PipelineSettings pipeline() {
        Integer mb = config.getInt(M_MEMORY);
        return PipelineSettings.builder().memoryBudgetMb(mb != null ? mb : defaultBudgetMb(Runtime.getRuntime().maxMemory()))
                .batchKb(config.getInt(M_BATCH_KB)).lingerMs(config.getInt(M_LINGER)).build();
    }

    /**
     * {@value #M_MEMORY} when not set: 256 MiB, or a quarter of the worker's maximum heap if less (at least 16). A fixed
     * 256 refused every connector on a worker with less than 512 MiB of heap once a budget above half the heap was refused.
     */
    static int defaultBudgetMb(long maxHeapBytes) {
        return (int) Math.max(16, Math.min(256, maxHeapBytes >> 22));
    }

    /**
     * INV: BOUNDED — a budget above half the worker's heap does not bound anything the heap can hold, and the heap is every
     * connector's on the worker: refused on the key, at validate and at start.
     */
    static void heapHolds(String name, Integer mb, long maxHeapBytes) {
        long max = PipelineSettings.maxBudgetMb(maxHeapBytes); // the engine's own bound (half of -Xmx)
        if (mb != null && mb > max) {
            throw new ConfigException(name, mb, "must be at most about half of the worker's maximum heap (" + (maxHeapBytes >> 20)
                    + " MiB, so at most " + max + "): lower it, leave it out (the default follows the heap), or give the worker"
                    + " more heap (-Xmx, e.g. KAFKA_HEAP_OPTS)");
        }
    }

    /**
     * A Debezium table regular expression as a Millrace pattern: {@code \.} and the first bare {@code .} separate
     * schema and table, {@code .*} is {@code *}, a later bare {@code .} is {@code ?}; anything else a regular expression
     * can say is refused, naming the key.
     */
    static String pattern(String key, String regex) {
        StringBuilder out = new StringBuilder();
        boolean separated = false;
        regex = unanchored(regex);
        for (int i = 0; i < regex.length(); i++) {
            char c = regex.charAt(i);
            if (c == '\\' && i + 1 < regex.length() && regex.charAt(i + 1) == '$') {
                out.append('$'); // a $ in the name, escaped as a regular expression escapes it
                i++;
            } else if (c == '\\' && i + 1 < regex.length() && regex.charAt(i + 1) == '.') {
                out.append('.');
                separated = true;
                i++;
            } else if (c == '.' && i + 1 < regex.length() && regex.charAt(i + 1) == '*') {
                out.append('*');
                i++;
            } else if (c == '.') {
                out.append(separated ? '?' : '.');
                separated = true;
            } else if (Character.isLetterOrDigit(c) || c == '_' || c == '$' || c == '-') {
                out.append(c);
            } else {
                throw new ConfigException(key, regex, "Millrace matches tables by name with * (written .*) only; the regular"
                        + " expression '" + regex + "' uses '" + c + "', which it cannot express");
            }
        }
        if (!separated) {
            throw new ConfigException(key, regex, "name a table as <schema>\\.<table> (e.g. public\\.orders)");
        }
        return out.toString();
    }

    /**
     * {@code regex} without a leading {@code ^} and a trailing unescaped {@code $}: Debezium matches the whole name, so
     * those anchors say nothing more (before, a trailing $ was read as part of the table's name: "table "public"."orders$"
     * does not exist", found by a user).
     */
    private static String unanchored(String regex) {
        int from = regex.startsWith("^") ? 1 : 0;
        int to = regex.endsWith("$") && !regex.endsWith("\\$") ? regex.length() - 1 : regex.length();
        return regex.substring(from, Math.max(from, to));
    }

    private static String schemaPattern(String key, String regex) {
        String p = pattern(key, unanchored(regex) + "\\.x");
        return p.substring(0, p.length() - 1) + "*";
    }

    private static final class TopicPrefix implements ConfigDef.Validator {
        @Override
        public void ensureValid(String name, Object value) {
            if (value == null || !TOPIC_CHARS.matcher(value.toString()).matches()) {
                throw new ConfigException(name, value, "must be letters, digits, '.', '_' or '-' (a Kafka topic name part)");
            }
        }

        @Override
        public String toString() {
            return "[a-zA-Z0-9._-]+";
        }
    }

    private record Identifier(String regex, String what) implements ConfigDef.Validator {
        @Override
        public void ensureValid(String name, Object value) {
            if (value == null || !value.toString().matches(regex)) {
                throw new ConfigException(name, value, "must be " + what);
            }
        }

        @Override
        public String toString() {
            return what;
        }
    }

    private static final class TableList implements ConfigDef.Validator {
        @Override
        public void ensureValid(String name, Object value) {
            if (value instanceof List<?> list) {
                for (Object o : list) {
                    if (name.startsWith("schema.")) {
                        schemaPattern(name, o.toString());
                    } else {
                        pattern(name, o.toString());
                    }
                }
            }
        }

        @Override
        public String toString() {
            return "comma-separated <schema>\\.<table> (names and .*)";
        }
    }

    private static final class OptionalText implements ConfigDef.Validator {
        @Override
        public void ensureValid(String name, Object value) {
            if (value != null && !value.toString().matches("[^.\\s]+\\.[^.\\s]+")) {
                throw new ConfigException(name, value, "must be <schema>.<table>");
            }
        }

        @Override
        public String toString() {
            return "<schema>.<table>";
        }
    }

}
