package io.millrace.embedded;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;

import static org.assertj.core.api.Assertions.assertThat;

class EmbeddedPgIT {
    @ParameterizedTest
    @ValueSource(ints = {14, 15, 17})
    void startsEachMajorReadyForLogicalReplication(int major) throws Exception {
        try (EmbeddedPg pg = EmbeddedPg.builder().major(major).start();
             Connection c = pg.connect("postgres"); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT current_setting('server_version_num')::int / 10000, current_setting('wal_level')")) {
                rs.next();
                assertThat(rs.getInt(1)).isEqualTo(major);
                assertThat(rs.getString(2)).isEqualTo("logical");
            }
        }
    }
}
