package io.millrace.sink.jsonl;

import io.millrace.core.fault.FaultPoint;
import io.millrace.core.event.SourceMeta;
import io.millrace.core.fault.FaultPoint;
import io.millrace.core.sink.Sink;
import io.millrace.sinkkit.EventSinkContract;
import io.millrace.sinkkit.Recorded;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The jsonl destination passes the sink contract kit (at least once), a directory per destination; files rotate every
 * few events, so that a fault lands inside a batch that rotates too.
 */
class JsonlSinkContractTest extends EventSinkContract {
    private static final long ROTATE_BYTES = 2_000;

    @TempDir
    static Path dir;

    @Override
    protected Sink newSink(String destination) {
        return new JsonlSink(new JsonlSinkConfig(destination, dir.resolve(destination), null, ROTATE_BYTES,
                new SourceMeta("contract", "app")));
    }

    @Override
    protected List<FaultPoint> faultPoints() {
        return List.of(FaultPoint.SINK_JSONL_BEFORE_CHECKPOINT, FaultPoint.SINK_JSONL_AFTER_CHECKPOINT);
    }

    /** Every complete line of the events files, oldest file first (docs/EVENTS.md, "The jsonl destination"). */
    @Override
    protected List<Recorded> recorded(String destination) {
        Path d = dir.resolve(destination);
        if (!Files.isDirectory(d)) {
            return List.of();
        }
        List<Recorded> out = new ArrayList<>();
        try (Stream<Path> files = Files.list(d)) {
            for (Path f : files.filter(p -> p.getFileName().toString().matches("events-\\d{6}\\.jsonl")).sorted().toList()) {
                String text = Files.readString(f);
                int end = text.lastIndexOf('\n') + 1;
                text.substring(0, end).lines().map(Recorded::fromEnvelope).forEach(out::add);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }
}
