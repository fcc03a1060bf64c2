package io.millrace.connect;

import io.millrace.api.Millrace;
import io.millrace.api.SourceCheck;
import io.millrace.core.MillraceException;
import org.apache.kafka.common.config.ConfigValue;

import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The database half of the connector's validate: once the settings themselves are valid, the source is checked as
 * {@code millrace preflight} checks it ({@link Millrace#checkSource}), so that {@code PUT .../config/validate} and the
 * creation of a connector refuse a wrong password, a database that does not exist, a role without REPLICATION, a table
 * without a replica identity, ..., at once, with the fix, on the key to change (as Debezium's connector does), instead
 * of a task that fails after it started. Messages name the connector's keys, not the YAML configuration's.
 */
final class SourceValidation {
    private SourceValidation() {
    }

    /** The YAML configuration's source keys and the connector keys that set the same thing. */
    private static final Map<String, String> KEYS = Map.of("host", ConnectorSettings.HOST, "port", ConnectorSettings.PORT,
            "database", ConnectorSettings.DBNAME, "user", ConnectorSettings.USER, "password", ConnectorSettings.PASSWORD,
            "slot", ConnectorSettings.SLOT, "publication", ConnectorSettings.PUBLICATION, "tables", ConnectorSettings.TABLE_INCLUDE,
            "exclude_tables", ConnectorSettings.TABLE_EXCLUDE, "create_publication", ConnectorSettings.PUBLICATION_AUTOCREATE);
    private static final Pattern YAML_KEY = Pattern.compile("\\bsource\\.([a-z_]+(?:\\.[a-z_]+)?)\\b");
    /** Keys of the YAML configuration with no one-to-one word in {@link #KEYS} (a password's sources, the TLS block, the pipeline's). */
    private static final Map<String, String> PHRASES = Map.of("source.password_env / source.password_file", ConnectorSettings.PASSWORD,
            "source.password_env", ConnectorSettings.PASSWORD, "source.password_file", ConnectorSettings.PASSWORD,
            "source.ssl.mode", ConnectorSettings.SSLMODE, "pipeline.memory_budget_mb", ConnectorSettings.M_MEMORY,
            "pipeline.batch_kb", ConnectorSettings.M_BATCH_KB, "pipeline.linger_ms", ConnectorSettings.M_LINGER);

    /** Adds the source's failures to {@code values} (on the key that fixes each); nothing when a setting is in error already. */
    static void check(Map<String, String> props, List<ConfigValue> values) {
        if (values.stream().anyMatch(v -> !v.errorMessages().isEmpty())) {
            return; // the settings first: the source is checked with settings that hold
        }
        ConnectorSettings settings;
        try {
            settings = new ConnectorSettings(props);
        } catch (RuntimeException e) {
            error(values, ConnectorSettings.HOST, connectorKeys(e.getMessage()));
            return;
        }
        try {
            for (SourceCheck c : Millrace.checkSource(settings.source())) {
                // A slot in use is no error of the configuration: when the connector's configuration is changed (PUT
                // .../config validates it first), its own running task reads the slot, and a task that starts while another
                // process holds it waits and retries. Before, every change of a running connector's configuration was
                // refused, with a fix that would end its own task's connection (found by a user).
                if (c.failed() && c.kind() != MillraceException.Kind.SLOT_IN_USE) {
                    error(values, keyOf(c), connectorKeys(c.name() + ": " + c.detail() + (c.fix() == null ? "" : ". Fix: " + c.fix())));
                }
            }
        } catch (MillraceException e) {
            for (String key : keysOf(e)) {
                error(values, key, connectorKeys(e.getMessage()));
            }
        }
    }

    /**
     * {@code e} as the task's failure shows it: a pipeline's error with its message in the connector's keys, and its
     * stack and cause kept; the trace Connect shows prints the cause's message too (a user read "choose another
     * slot.name" at its top and "choose another source.slot" under "Caused by").
     */
    static RuntimeException withConnectorKeys(RuntimeException e) {
        if (!(e instanceof MillraceException m)) {
            return e;
        }
        MillraceException named = new MillraceException(m.kind(), connectorKeys(m.getMessage()), m.getCause());
        named.setStackTrace(m.getStackTrace());
        for (Throwable s : m.getSuppressed()) {
            named.addSuppressed(s);
        }
        return named;
    }

    /** {@code message} with the YAML configuration's source keys ({@code source.database}) named as the connector's ({@code database.dbname}). */
    static String connectorKeys(String message) {
        if (message == null) {
            return null;
        }
        // the longest phrases first ("source.password_env / source.password_file" before its parts)
        for (String phrase : PHRASES.keySet().stream().sorted((a, b) -> b.length() - a.length()).toList()) {
            message = message.replace(phrase, PHRASES.get(phrase));
        }
        Matcher m = YAML_KEY.matcher(message);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String yaml = m.group(1);
            int dot = yaml.indexOf('.');
            String key = KEYS.get(yaml);
            if (key == null && dot > 0 && KEYS.containsKey(yaml.substring(0, dot))) {
                key = KEYS.get(yaml.substring(0, dot)) + yaml.substring(dot); // a word after the key: kept
            }
            m.appendReplacement(out, Matcher.quoteReplacement(key != null ? key : m.group()));
        }
        m.appendTail(out);
        return out.toString();
    }

    private static String keyOf(SourceCheck c) {
        String name = c.name();
        if (name.equals("replication privilege") || c.kind() == MillraceException.Kind.PERMISSION && !name.startsWith("table")) {
            return ConnectorSettings.USER;
        }
        if (name.startsWith("table")) {
            return ConnectorSettings.TABLE_INCLUDE;
        }
        if (name.contains("slot") && !name.startsWith("max_")) {
            return ConnectorSettings.SLOT;
        }
        if (name.startsWith("publication")) {
            return ConnectorSettings.PUBLICATION;
        }
        return ConnectorSettings.HOST; // the server's settings and version
    }

    /** The keys whose values may be wrong: a server that cannot be reached is a wrong host or a wrong port (found by a user). */
    private static List<String> keysOf(MillraceException e) {
        for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
            if (t instanceof SQLException s && "3D000".equals(s.getSQLState())) {
                return List.of(ConnectorSettings.DBNAME);
            }
        }
        return switch (e.kind()) {
            case AUTHENTICATION -> List.of(e.getMessage().contains("password") ? ConnectorSettings.PASSWORD : ConnectorSettings.USER);
            case PERMISSION -> List.of(ConnectorSettings.USER);
            case CONNECTION -> List.of(ConnectorSettings.HOST, ConnectorSettings.PORT);
            default -> List.of(ConnectorSettings.HOST);
        };
    }

    private static void error(List<ConfigValue> values, String key, String message) {
        for (ConfigValue v : values) {
            if (v.name().equals(key)) {
                v.addErrorMessage(message);
                return;
            }
        }
        ConfigValue v = new ConfigValue(key);
        v.addErrorMessage(message);
        values.add(v);
    }
}
