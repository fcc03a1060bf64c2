package io.millrace.connect;

import io.millrace.core.event.EnvelopeWriter;

/** The connector's version: Millrace's (the version the events' source.version carries). */
final class Version {
    static final String VERSION = EnvelopeWriter.VERSION;

    private Version() {
    }
}
