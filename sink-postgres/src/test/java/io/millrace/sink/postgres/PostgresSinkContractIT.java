package io.millrace.sink.postgres;

import io.millrace.core.fault.FaultPoint;
import io.millrace.core.Secret;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.Sink;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.sinkkit.TableSinkContract;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;

/** The postgres destination passes the sink contract kit, against a real PostgreSQL 17. */
class PostgresSinkContractIT extends TableSinkContract {
    private static final String DB = "contract";
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.builder().major(17).start();
        pg.createDatabase(DB);
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    @Override
    protected Sink newSink(String destination) {
        return new PostgresSink(new PostgresSinkConfig(destination, pg.jdbcUrl(DB), "postgres", Secret.NONE, null, null));
    }

    @Override
    protected List<FaultPoint> faultPoints() {
        return List.of(FaultPoint.SINK_POSTGRES_BEFORE_COMMIT, FaultPoint.SINK_POSTGRES_AFTER_COMMIT);
    }

    @Override
    protected List<Map<String, String>> rows(String destination, TableRef table) {
        String name = Ident.qualified(table.schema(), table.table());
        try (Connection c = pg.connect(DB)) {
            if (query(c, "SELECT to_regclass('" + name.replace("'", "''") + "') AS t").get(0).get("t") == null) {
                return List.of();
            }
            return query(c, "SELECT * FROM " + name);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
