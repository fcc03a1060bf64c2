package io.millrace.sink.postgres;

import io.millrace.core.sink.DestinationConfig;
import io.millrace.core.sink.DestinationContext;
import io.millrace.core.sink.DestinationProvider;
import io.millrace.core.sink.DestinationSettings;

import java.util.Locale;

/** {@code type: postgres}: a PostgreSQL database receiving the tables, exactly once ({@link PostgresSinkConfig}). */
public final class PostgresDestinationProvider implements DestinationProvider {
    public static final String TYPE = "postgres";

    @Override
    public String type() {
        return TYPE;
    }

    @Override
    public DestinationConfig configure(String name, DestinationSettings s, DestinationContext context) {
        s.allow("url", "host", "port", "database", "user", "password", "password_env", "password_file", "schema", "state_schema",
                "session_replication_role", "drop_tables");
        String url = s.string("url", null);
        if (url == null) {
            String host = s.string("host", "127.0.0.1");
            int port = s.integer("port", 5432, 1, 65535);
            String db = s.requireString("database", "replica");
            url = "jdbc:postgresql://" + host + ":" + port + "/" + db;
        } else if (!url.startsWith("jdbc:postgresql://")) {
            // Only the scheme is echoed: postgres://user:password@host/db would print the password.
            int colon = url.indexOf(':');
            throw s.error("url", "must start with jdbc:postgresql:// (e.g. jdbc:postgresql://127.0.0.1:5432/replica)"
                    + (colon > 0 ? ", got a URL starting with '" + url.substring(0, colon + 1) + "'" : ""));
        } else if (url.toLowerCase(Locale.ROOT).contains("password=")) {
            throw s.error("url", "must not hold a password: remove it from the URL and name an environment variable in "
                    + s.key("password_env") + " (or a file in " + s.key("password_file") + ")");
        }
        String user = s.requireString("user", "millrace");
        String role = s.string("session_replication_role", "origin");
        if (!role.equals("origin") && !role.equals("replica")) {
            throw s.error("session_replication_role", "must be origin (the default: triggers and foreign keys fire) or replica"
                    + " (they do not, as for a subscriber), got '" + role + "'");
        }
        return new PostgresSinkConfig(name, url, user, s.secret("password"), s.string("schema", null),
                s.string("state_schema", PostgresSinkConfig.DEFAULT_STATE_SCHEMA), role.equals("replica"), s.bool("drop_tables", false));
    }
}
