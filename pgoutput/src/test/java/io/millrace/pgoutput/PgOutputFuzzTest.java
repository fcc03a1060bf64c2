package io.millrace.pgoutput;

import io.millrace.core.MillraceException;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TypeResolver;
import io.millrace.pgoutput.PgOutputMessage.Delete;
import io.millrace.pgoutput.PgOutputMessage.Insert;
import io.millrace.pgoutput.PgOutputMessage.Update;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.fail;

/**
 * Mutates valid messages at random: the framer (and decoding what it framed) either succeeds or
 * throws a DECODE {@link MillraceException}, never anything else. The seed is printed; rerun one
 * with {@code -Dmillrace.fuzz.seed=N}.
 */
class PgOutputFuzzTest {

    @Test
    void mutatedMessagesGiveDecodeErrorsOnly() {
        long seed = Long.getLong("millrace.fuzz.seed", System.nanoTime());
        System.out.println("PgOutputFuzzTest seed " + seed + " (rerun: -Dmillrace.fuzz.seed=" + seed + ")");
        Random random = new Random(seed);
        List<byte[]> valid = PgOutputFramerTest.validMessagesOutsideAStream();
        for (int round = 0; round < 5_000; round++) {
            byte[] msg = valid.get(random.nextInt(valid.size())).clone();
            int mutations = 1 + random.nextInt(4);
            for (int m = 0; m < mutations && msg.length > 0; m++) {
                switch (random.nextInt(3)) {
                    case 0 -> msg[random.nextInt(msg.length)] = (byte) random.nextInt(256);
                    case 1 -> msg = java.util.Arrays.copyOf(msg, random.nextInt(msg.length + 1));
                    default -> {
                        byte[] longer = java.util.Arrays.copyOf(msg, msg.length + 1 + random.nextInt(8));
                        for (int i = msg.length; i < longer.length; i++) {
                            longer[i] = (byte) random.nextInt(256);
                        }
                        msg = longer;
                    }
                }
            }
            PgOutputFramer framer = new PgOutputFramer(TypeResolver.builtinsOnly());
            byte[] rel = PgOutputFramerTest.validMessagesOutsideAStream().get(3);
            framer.frame(rel, 0, rel.length);
            if (random.nextBoolean()) {
                byte[] start = PgOutputBytes.streamStart(77, true);
                framer.frame(start, 0, start.length);
            }
            try {
                PgOutputMessage out = framer.frame(msg, 0, msg.length);
                decodeAll(out);
            } catch (MillraceException e) {
                if (e.kind() != MillraceException.Kind.DECODE) {
                    fail("seed " + seed + " round " + round + ": kind " + e.kind(), e);
                }
            } catch (RuntimeException e) {
                fail("seed " + seed + " round " + round + ": " + e, e);
            }
        }
    }

    private static void decodeAll(PgOutputMessage m) {
        if (m instanceof Insert i) {
            decode(i.relation(), i.newTuple());
        } else if (m instanceof Update u) {
            decode(u.relation(), u.oldTuple());
            decode(u.relation(), u.newTuple());
        } else if (m instanceof Delete d) {
            decode(d.relation(), d.oldTuple());
        }
    }

    private static void decode(RelationInfo relation, RawTuple tuple) {
        if (tuple != null) {
            tuple.decode(relation);
        }
    }
}
