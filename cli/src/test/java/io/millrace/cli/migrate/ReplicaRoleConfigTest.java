package io.millrace.cli.migrate;

import io.millrace.core.MillraceException;
import io.millrace.engine.config.ConfigLoader;
import io.millrace.sink.postgres.PostgresSinkConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The postgres destination's {@code session_replication_role} setting, read from the YAML configuration. */
class ReplicaRoleConfigTest {
    @TempDir
    Path dir;

    private PostgresSinkConfig load(String role) throws Exception {
        Path f = dir.resolve("c.yaml");
        Files.writeString(f, "source:\n  database: app\n  user: millrace\n  tables: [public.t]\ndestinations:\n  - name: target\n"
                + "    type: postgres\n    database: app\n    user: postgres\n" + (role == null ? "" : "    session_replication_role: " + role + "\n"));
        return (PostgresSinkConfig) new ConfigLoader(k -> null).load(f).destinations().get(0);
    }

    @Test
    void replicaOriginAndTheDefault() throws Exception {
        assertThat(load("replica").replicaRole()).isTrue();
        assertThat(load("origin").replicaRole()).isFalse();
        assertThat(load(null).replicaRole()).isFalse();
    }

    @Test
    void anotherValueIsAnErrorNamingTheSetting() {
        assertThatThrownBy(() -> load("local")).isInstanceOf(MillraceException.class)
                .hasMessageContaining("destinations[0].session_replication_role").hasMessageContaining("must be origin")
                .hasMessageContaining("got 'local'");
    }
}
