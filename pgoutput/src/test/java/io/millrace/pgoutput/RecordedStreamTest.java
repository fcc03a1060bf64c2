package io.millrace.pgoutput;

import io.millrace.core.schema.TypeResolver;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Replays pgoutput streams recorded from real servers (by the integration tests: one base64
 * message per line, see README) without a server. The recordings are the first transactions of the
 * IT workload: every row-message shape, unchanged TOAST, an origin, columns added and dropped,
 * logical messages and a truncate.
 */
class RecordedStreamTest {

    @ParameterizedTest
    @ValueSource(strings = {"pg17-v1-text.b64", "pg14-v1-binary.b64"})
    void replaysARecordedStream(String file) throws IOException {
        List<byte[]> recording = read("/recordings/" + file);
        PgOutputFramer framer = new PgOutputFramer(TypeResolver.builtinsOnly());
        List<PgOutputMessage> messages = new ArrayList<>();
        for (byte[] b : recording) {
            messages.add(framer.frame(b, 0, b.length));
        }
        List<String> expected = AbstractPgOutputIT.expectedUnits();
        assertThat(StreamTrace.units(messages)).containsExactlyElementsOf(expected.subList(0, expected.indexOf("T [full_t]") + 1));
        AbstractPgOutputIT.assertTransactionFramesOrdered(messages);
    }

    /** Reads a recording: one pgoutput message per line, base64. */
    static List<byte[]> read(String resource) throws IOException {
        try (InputStream in = RecordedStreamTest.class.getResourceAsStream(resource)) {
            assertThat(in).as(resource).isNotNull();
            List<byte[]> out = new ArrayList<>();
            for (String line : new String(in.readAllBytes(), StandardCharsets.US_ASCII).split("\n")) {
                if (!line.isBlank()) {
                    out.add(Base64.getDecoder().decode(line.strip()));
                }
            }
            return out;
        }
    }
}
