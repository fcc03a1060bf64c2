package com.example.millrace.csv;

import io.millrace.core.fault.FaultPoint;
import io.millrace.core.sink.Sink;
import io.millrace.sinkkit.EventSinkContract;
import io.millrace.sinkkit.Recorded;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;

/** The csv destination passes Millrace's sink contract kit as an at-least-once event destination, a directory per destination. */
class CsvSinkContractTest extends EventSinkContract {
    @TempDir
    static Path dir;

    @Override
    protected Sink newSink(String destination) {
        return new CsvSink(new CsvSinkConfig(destination, dir.resolve(destination)));
    }

    @Override
    protected List<FaultPoint> faultPoints() {
        return List.of(CsvSink.BEFORE_STATE, CsvSink.AFTER_STATE);
    }

    /** The change log as its state file covers it: a delete's row is the old image, the others' the new one. */
    @Override
    protected List<Recorded> recorded(String destination) {
        try {
            return CsvChangeLog.read(dir.resolve(destination)).stream().map(c -> switch (c.op()) {
                case "d" -> new Recorded(c.op(), c.table(), c.position(), c.row(), null);
                case "t" -> new Recorded(c.op(), c.table(), c.position(), null, null);
                default -> new Recorded(c.op(), c.table(), c.position(), null, c.row());
            }).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
