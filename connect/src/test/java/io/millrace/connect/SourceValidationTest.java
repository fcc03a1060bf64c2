package io.millrace.connect;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The engine's messages name the YAML configuration's keys; the connector's validate and task failures name the
 * connector's. Before, a wrong password said "(source.password_env / source.password_file)" and a refused TLS mode "set
 * source.ssl.mode to prefer", keys a Connect user does not have (found by a user).
 */
class SourceValidationTest {
    @Test
    void yamlKeysAreNamedAsTheConnectorsKeys() {
        assertThat(SourceValidation.connectorKeys("Check the user name and the password (source.password_env / source.password_file)."))
                .isEqualTo("Check the user name and the password (database.password).");
        assertThat(SourceValidation.connectorKeys("the server refused TLS: set source.ssl.mode to prefer or disable"))
                .isEqualTo("the server refused TLS: set database.sslmode to prefer or disable");
        assertThat(SourceValidation.connectorKeys("Check the database name (source.database). Name them in source.tables."))
                .isEqualTo("Check the database name (database.dbname). Name them in table.include.list.");
        assertThat(SourceValidation.connectorKeys("config: pipeline.batch_kb (8192) must be at most half of pipeline.memory_budget_mb (8 MB)"))
                .isEqualTo("config: millrace.pipeline.batch.kb (8192) must be at most half of millrace.pipeline.memory.budget.mb (8 MB)");
        assertThat(SourceValidation.connectorKeys("source.unknown stays")).isEqualTo("source.unknown stays");
    }

    /** The task's failure trace prints its cause too: that one names the connector's keys as well (found by a user). */
    @Test
    void aPipelinesFailureNamesTheConnectorsKeysInTheCauseToo() {
        RuntimeException root = new IllegalStateException("the server said no");
        io.millrace.core.MillraceException failed = new io.millrace.core.MillraceException(io.millrace.core.MillraceException.Kind.SOURCE_SETUP,
                "replication slot 'flat_slot' exists, but no destination holds a checkpoint of it; drop it, or choose another source.slot", root);
        RuntimeException shown = SourceValidation.withConnectorKeys(failed);
        assertThat(shown).isInstanceOf(io.millrace.core.MillraceException.class).hasMessageEndingWith("choose another slot.name")
                .hasCause(root);
        assertThat(((io.millrace.core.MillraceException) shown).kind()).isEqualTo(io.millrace.core.MillraceException.Kind.SOURCE_SETUP);
        assertThat(shown.getStackTrace()).isEqualTo(failed.getStackTrace());
        RuntimeException other = new IllegalArgumentException("source.slot");
        assertThat(SourceValidation.withConnectorKeys(other)).isSameAs(other);
    }
}
