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

    /** The machine's own installation, where there is one: its defaults, set up for logical replication, stopped and removed on close. */
    @org.junit.jupiter.api.Test
    void startsTheMachinesOwnServerWithItsDefaults() throws Exception {
        java.util.Optional<java.nio.file.Path> bin = EmbeddedPg.systemBinaries();
        org.junit.jupiter.api.Assumptions.assumeTrue(bin.isPresent(), "no PostgreSQL installation under /usr/lib/postgresql");
        int port;
        try (EmbeddedPg pg = EmbeddedPg.builder().system(bin.get()).start();
             Connection c = pg.connect("postgres"); Statement s = c.createStatement()) {
            port = pg.port();
            assertThat(pg.system()).isTrue();
            try (ResultSet rs = s.executeQuery("SELECT current_setting('wal_level'), current_setting('fsync'),"
                    + " current_setting('logical_decoding_work_mem'), current_setting('server_version_num')::int / 10000")) {
                rs.next();
                assertThat(rs.getString(1)).isEqualTo("logical");
                assertThat(rs.getString(2)).as("a user's server syncs").isEqualTo("on");
                assertThat(rs.getString(3)).isEqualTo("64MB");
                assertThat(rs.getInt(4)).isEqualTo(pg.major());
            }
        }
        try (java.net.Socket ignored = new java.net.Socket("127.0.0.1", port)) {
            throw new AssertionError("the server still listens on " + port + " after close");
        } catch (java.io.IOException expected) {
            // stopped
        }
    }
}
