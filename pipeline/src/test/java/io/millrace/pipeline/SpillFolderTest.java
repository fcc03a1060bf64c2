package io.millrace.pipeline;

import io.millrace.core.MillraceException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * A spill folder is held by one pipeline at a time: a second pipeline given the same folder (the default was named after
 * the slot only, so two servers' pipelines with one slot name on one machine shared it) emptied it at its start and wrote
 * files of the same names, its server's xids: the first one's large transactions lost or mixed. It is refused now, and
 * the first one's files stay.
 */
class SpillFolderTest {
    @Test
    void aFolderHeldByAPipelineIsRefusedToAnotherAndKeepsItsFiles(@TempDir Path dir) throws Exception {
        Path spill = dir.resolve("spill");
        try (Spill first = new Spill(spill, new PipelineStats())) {
            Path inProgress = spill.resolve("xid-750001.spill");
            Files.writeString(inProgress, "first pipeline's transaction");
            MillraceException e = catchThrowableOfType(MillraceException.class, () -> new Spill(spill, new PipelineStats()));
            assertThat(e).isNotNull();
            assertThat(e.kind()).isEqualTo(MillraceException.Kind.CONFIG);
            assertThat(e.getMessage()).contains("pipeline.spill_dir " + spill).contains("in use by another running pipeline")
                    .contains("give each pipeline its own pipeline.spill_dir");
            assertThat(inProgress).exists();
        }
        // once the first has ended, the folder is free: the next start empties it (its files are of no use after a restart)
        Files.writeString(spill.resolve("xid-1.spill"), "left by a crash");
        try (Spill next = new Spill(spill, new PipelineStats())) {
            assertThat(spill.resolve("xid-1.spill")).doesNotExist();
        }
    }
}
