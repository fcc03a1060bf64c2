package io.millrace.pgoutput;

import io.millrace.core.MillraceException;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.UnchangedToast;
import io.millrace.pgoutput.PgOutputBytes.Col;
import io.millrace.pgoutput.PgOutputMessage.Insert;
import io.millrace.pgoutput.PgOutputMessage.RelationMessage;
import io.millrace.pgoutput.PgOutputMessage.Update;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static io.millrace.pgoutput.PgOutputBytes.UNCHANGED;
import static io.millrace.pgoutput.PgOutputBytes.insert;
import static io.millrace.pgoutput.PgOutputBytes.relation;
import static io.millrace.pgoutput.PgOutputBytes.update;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RawTupleTest {
    static final int INT4 = 23;
    static final int TEXT = 25;
    static final int T1 = 16384;

    private final PgOutputFramer framer = new PgOutputFramer(TypeResolver.builtinsOnly());

    private PgOutputMessage frame(byte[] msg) {
        return framer.frame(msg, 0, msg.length);
    }

    private RelationInfo describe(Col... cols) {
        return ((RelationMessage) frame(relation(null, T1, "public", "people", 'd', cols))).relation();
    }

    @Test
    void decodesTextBinaryNullAndUnchangedToast() {
        RelationInfo rel = describe(Col.key("id", INT4), Col.of("name", TEXT), Col.of("note", TEXT), Col.of("big", TEXT));
        Insert ins = (Insert) frame(insert(null, T1, "42", "Zoë", null, "x".repeat(3000)));
        assertThat(ins.newTuple().decode(rel)).containsExactly(42, "Zoë", null, "x".repeat(3000));

        Insert binary = (Insert) frame(insert(null, T1, new byte[] {0, 0, 1, 0}, "b".getBytes(), null, null));
        assertThat(binary.newTuple().decode(rel)).containsExactly(256, "b", null, null);

        Update u = (Update) frame(update(null, T1, "42", "Zoe", null, UNCHANGED));
        Object[] values = u.newTuple().decode(rel);
        assertThat(values[3]).isSameAs(UnchangedToast.INSTANCE);
        assertThat(values[1]).isEqualTo("Zoe");
    }

    @Test
    void aCodecFailureNamesTableColumnTypeAndValue() {
        RelationInfo rel = describe(Col.key("id", INT4), Col.of("name", TEXT));
        Insert bad = (Insert) frame(insert(null, T1, "forty-two", "a"));
        assertThatThrownBy(() -> bad.newTuple().decode(rel))
                .isInstanceOfSatisfying(MillraceException.class, e -> {
                    assertThat(e.kind()).isEqualTo(MillraceException.Kind.DECODE);
                    assertThat(e.getMessage()).contains("\"id\"", "public.people", "int4", "'forty-two'");
                    assertThat(e.getCause()).isNotNull();
                });

        Insert badBinary = (Insert) frame(insert(null, T1, new byte[] {1, 2, 3}, "a"));
        assertThatThrownBy(() -> badBinary.newTuple().decode(rel))
                .isInstanceOfSatisfying(MillraceException.class, e -> {
                    assertThat(e.kind()).isEqualTo(MillraceException.Kind.DECODE);
                    assertThat(e.getMessage()).contains("\"id\"", "public.people", "int4", "0x010203 (3 bytes)");
                });
    }

    @Test
    void longValuesAreTruncatedInErrors() {
        RelationInfo rel = describe(Col.key("id", INT4));
        String longGarbage = "9".repeat(5000);
        Insert bad = (Insert) frame(insert(null, T1, longGarbage));
        assertThatThrownBy(() -> bad.newTuple().decode(rel))
                .isInstanceOfSatisfying(MillraceException.class, e -> {
                    assertThat(e.getMessage()).contains("(5000 bytes)");
                    assertThat(e.getMessage().length()).isLessThan(1000);
                });
    }

    @Test
    void aTupleWithFewerOrMoreColumnsThanTheRelationIsADecodeError() {
        RelationInfo two = describe(Col.key("id", INT4), Col.of("name", TEXT));
        Insert ins = (Insert) frame(insert(null, T1, "1", "a"));
        RelationInfo three = describe(Col.key("id", INT4), Col.of("name", TEXT), Col.of("extra", TEXT));
        assertThat(ins.newTuple().decode(two)).containsExactly(1, "a");
        assertThatThrownBy(() -> ins.newTuple().decode(three))
                .isInstanceOfSatisfying(MillraceException.class, e -> {
                    assertThat(e.kind()).isEqualTo(MillraceException.Kind.DECODE);
                    assertThat(e.getMessage()).contains("public.people", "has 2 column(s)", "describes 3");
                });
        Insert wide = (Insert) frame(insert(null, T1, "1", "a", "b", "c"));
        assertThatThrownBy(() -> wide.newTuple().decode(three)).isInstanceOf(MillraceException.class)
                .hasMessageContaining("has 4 column(s)");
    }

    @Test
    void decodeIsSafeFromManyThreads() throws Exception {
        RelationInfo rel = describe(Col.key("id", INT4), Col.of("name", TEXT));
        List<Insert> rows = new ArrayList<>();
        for (int i = 0; i < 2000; i++) {
            rows.add((Insert) frame(insert(null, T1, Integer.toString(i), "n" + i)));
        }
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<Boolean>> results = new ArrayList<>();
            for (int w = 0; w < 4; w++) {
                results.add(pool.submit(() -> {
                    for (int i = 0; i < rows.size(); i++) {
                        Object[] v = rows.get(i).newTuple().decode(rel);
                        if (!v[0].equals(i) || !v[1].equals("n" + i)) {
                            return false;
                        }
                    }
                    return true;
                }));
            }
            for (Future<Boolean> f : results) {
                assertThat(f.get()).isTrue();
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
