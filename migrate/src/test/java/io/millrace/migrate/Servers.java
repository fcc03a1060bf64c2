package io.millrace.migrate;

import io.millrace.api.SourceSettings;
import io.millrace.core.Secret;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.sink.postgres.PostgresSinkConfig;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/** Helpers of the migration tests: a source and a target database on embedded servers, as the superuser. */
final class Servers {
    private Servers() {
    }

    static SourceSettings source(EmbeddedPg pg, String db, String... tables) {
        SourceSettings.Builder b = SourceSettings.builder().host(pg.host()).port(pg.port()).database(db).user("postgres")
                .slot("mig_" + db).publication("mig_" + db);
        if (tables.length > 0) {
            b.tables(tables);
        }
        return b.build();
    }

    static PostgresSinkConfig target(EmbeddedPg pg, String db) {
        return PostgresSinkConfig.of("target", pg.jdbcUrl(db), "postgres", Secret.NONE);
    }

    static long count(EmbeddedPg pg, String db, String sql) throws SQLException {
        try (Connection c = pg.connect(db); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static String text(EmbeddedPg pg, String db, String sql) throws SQLException {
        try (Connection c = pg.connect(db); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        }
    }
}
