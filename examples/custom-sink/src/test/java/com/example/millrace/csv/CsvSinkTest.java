package com.example.millrace.csv;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.Position;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.change.SnapshotProgress;
import io.millrace.core.sink.SinkReset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** The csv destination's directory, without an engine: its own from the first open, never another's files. */
class CsvSinkTest {
    @TempDir
    Path dir;

    @Test
    void aNewDirectoryIsMadeAndHasNoCheckpointUntilTheFirstWrite() {
        Path out = dir.resolve("new").resolve("changes");
        try (CsvSink sink = new CsvSink(new CsvSinkConfig("changes", out))) {
            assertThat(sink.open()).isEmpty();
        }
        assertThat(out.resolve(CsvSink.STATE_FILE)).exists();
        try (CsvSink again = new CsvSink(new CsvSinkConfig("changes", out))) {
            assertThat(again.open()).isEmpty();
        }
    }

    @Test
    void aDirectoryWithSomeoneElsesCsvFilesIsRefusedAndLeftAlone() throws Exception {
        Files.writeString(dir.resolve("report.csv"), "a,b\n1,2");
        try (CsvSink sink = new CsvSink(new CsvSinkConfig("changes", dir))) {
            MillraceException e = catchThrowableOfType(MillraceException.class, sink::open);
            assertThat(e).isNotNull();
            assertThat(e.kind()).isEqualTo(MillraceException.Kind.SINK);
            assertThat(e.getMessage()).contains("holds report.csv but no " + CsvSink.STATE_FILE).contains("not this destination's directory");
        }
        assertThat(dir.resolve("report.csv")).hasContent("a,b\n1,2");
        assertThat(dir.resolve(CsvSink.STATE_FILE)).doesNotExist();
    }

    @Test
    void aResetListsWhatItDoesAndDoesNothingElse() throws Exception {
        Checkpoint cp = new Checkpoint(Checkpoint.VERSION, new Identity("7301", "shop", "s", "p", "changes"), Lsn.of(0x100),
                new Position(Lsn.of(0x100), 2), SnapshotProgress.skipped(Lsn.of(0x80)));
        try (CsvSink sink = new CsvSink(new CsvSinkConfig("changes", dir))) {
            sink.open();
            sink.write(List.of(), cp); // the checkpoint alone advances
        }
        Files.writeString(dir.resolve("public.items.csv"), "_commit_lsn,_ordinal,_op,id\n");
        try (CsvSink sink = new CsvSink(new CsvSinkConfig("changes", dir)); SinkReset keep = sink.reset(List.of(), SinkReset.Data.KEEP)) {
            assertThat(keep.checkpoint()).contains(cp);
            assertThat(keep.actions()).hasSize(2).anySatisfy(a -> assertThat(a).startsWith("move 1 csv file(s)"))
                    .anySatisfy(a -> assertThat(a).startsWith("delete its state file"));
            assertThat(dir.resolve("public.items.csv")).as("nothing done before apply").exists();
            keep.apply();
        }
        assertThat(dir.resolve("public.items.csv")).doesNotExist();
        assertThat(dir.resolve(CsvSink.STATE_FILE)).doesNotExist();
        try (java.util.stream.Stream<Path> kept = Files.list(dir)) {
            assertThat(kept.filter(p -> p.getFileName().toString().startsWith("reset-")).findFirst().orElseThrow().resolve("public.items.csv"))
                    .exists();
        }
        try (CsvSink sink = new CsvSink(new CsvSinkConfig("changes", dir))) {
            assertThat(sink.open()).as("the next run starts afresh").isEmpty();
        }
    }
}
