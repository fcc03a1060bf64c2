package io.millrace.pgoutput;

import io.millrace.pgoutput.PgOutputMessage.StreamAbort;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Real pgoutput from PostgreSQL 17: also protocol v3 and v4 with parallel streaming. */
class PgOutputPg17IT extends AbstractPgOutputIT {
    @Override
    int major() {
        return 17;
    }

    @Test
    void protocolV3Streaming() throws Exception {
        List<PgOutputMessage> messages = read("v3-streaming", "proto_version", "3", "publication_names", "pub", "messages", "true",
                "streaming", "on");
        assertStreamed(messages);
    }

    @Test
    void protocolV4ParallelStreamingSendsAbortLsnAndTime() throws Exception {
        List<PgOutputMessage> messages = read("v4-parallel", "proto_version", "4", "publication_names", "pub", "messages", "true",
                "streaming", "parallel", "binary", "true");
        assertStreamed(messages);
        List<StreamAbort> aborts = messages.stream().filter(m -> m instanceof StreamAbort).map(m -> (StreamAbort) m).toList();
        assertThat(aborts).isNotEmpty().allSatisfy(a -> {
            assertThat(a.abortLsn()).isNotNull();
            assertRecent(a.abortTimeMicros());
        });
    }

    @Test
    void protocolV4WithoutParallelStreamingHasNoAbortLsn() throws Exception {
        List<PgOutputMessage> messages = read("v4-streaming", "proto_version", "4", "publication_names", "pub", "messages", "true",
                "streaming", "on");
        assertStreamed(messages);
        assertThat(messages).filteredOn(m -> m instanceof StreamAbort).isNotEmpty()
                .allMatch(m -> ((StreamAbort) m).abortLsn() == null && ((StreamAbort) m).abortTimeMicros() == 0);
    }
}
