package io.millrace.migrate;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The major-version upgrade: the cutover tests of {@link MigrateCutoverIT} (a write load, nothing lost, sequences ahead,
 * constraints valid; an interrupted cutover aborted) from PostgreSQL 14 to PostgreSQL 17.
 */
class MigrateUpgradeIT extends MigrateCutoverIT {
    @Override
    int sourceMajor() {
        return 14;
    }

    @Override
    int targetMajor() {
        return 17;
    }

    @Test
    void theSourceRunsFourteenAndTheTargetSeventeen() throws Exception {
        assertThat(Servers.text(src, "postgres", "SHOW server_version_num")).startsWith("14");
        assertThat(Servers.text(tgt, "postgres", "SHOW server_version_num")).startsWith("17");
    }
}
