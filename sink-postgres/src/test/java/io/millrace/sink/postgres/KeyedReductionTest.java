package io.millrace.sink.postgres;

import io.millrace.core.MillraceException;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.types.UnchangedToast;
import io.millrace.testkit.Events;
import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static io.millrace.testkit.Events.INT4;
import static io.millrace.testkit.Events.TEXT;
import static io.millrace.testkit.Events.col;
import static io.millrace.testkit.Events.key;
import static io.millrace.testkit.Events.keyImage;
import static io.millrace.testkit.Events.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KeyedReductionTest {
    private static final Object U = UnchangedToast.INSTANCE;
    private final Events ev = new Events();
    private final RelationInfo rel = Events.rel("s", "t", 'd', key("id", INT4), col("a", TEXT), col("big", TEXT));

    private KeyedReduction reduce(io.millrace.core.change.ChangeEvent... events) {
        return reduce(false, events);
    }

    private KeyedReduction reduce(boolean binary, io.millrace.core.change.ChangeEvent... events) {
        KeyedReduction r = new KeyedReduction(rel, rel.table(), events.length, binary);
        for (var e : events) {
            r.add(e);
        }
        return r;
    }

    @Test
    void deleteThenReinsertEndsWithTheRowPresent() {
        KeyedReduction r = reduce(ev.insert(rel, 1, "a", "x"), ev.update(rel, 1, "b", "x"), ev.delete(rel, keyImage(rel, 1)),
                ev.insert(rel, 1, "c", "y"));
        assertThat(r.rows()).hasSize(1);
        KeyedReduction.Row row = r.rows().get("1");
        assertThat(row.delete).isFalse();
        assertThat(r.values(row)).containsExactly("1", "c", "y");
    }

    @Test
    void keyChangeDeletesTheOldKey() {
        KeyedReduction r = reduce(ev.update(rel, keyImage(rel, 1), row(2, "a", "x")));
        assertThat(r.rows().get("1").delete).isTrue();
        assertThat(r.values(r.rows().get("2"))).containsExactly("2", "a", "x");
    }

    @Test
    void unchangedToastMergesWithAnEarlierImageOfTheKey() {
        KeyedReduction r = reduce(ev.insert(rel, 1, "a", "big value"), ev.update(rel, 1, "b", U));
        KeyedReduction.Row row = r.rows().get("1");
        assertThat(r.values(row)).containsExactly("1", "b", "big value");
        assertThat(row.from).isNull();
        assertThat(row.line).isNotNull();
    }

    @Test
    void unchangedToastWithoutEarlierImageComesFromTheDestinationRow() {
        KeyedReduction r = reduce(ev.update(rel, 1, "b", U), ev.update(rel, 1, "c", U));
        KeyedReduction.Row row = r.rows().get("1");
        assertThat(Arrays.asList(row.vals)).containsExactly("1", "c", null);
        assertThat(row.from).containsExactly("1");
    }

    @Test
    void keyChangeWithUnchangedToastTakesItFromTheOldKeysRow() {
        KeyedReduction r = reduce(ev.update(rel, keyImage(rel, 1), row(2, "b", U)));
        assertThat(r.rows().get("1").delete).isTrue();
        assertThat(r.rows().get("2").from).containsExactly("1");
    }

    @Test
    void nullsAndSpecialCharactersAreRenderedForCopy() {
        KeyedReduction r = reduce(ev.insert(rel, 1, null, "tab\there ünï"));
        assertThat(r.values(r.rows().get("1"))).containsExactly("1", "\\N", "tab\\there ünï");
        assertThat(new String(r.rows().get("1").line, java.nio.charset.StandardCharsets.UTF_8))
                .isEqualTo("1\t\\N\ttab\\there ünï");
    }

    @Test
    void updateWithUnchangedToastOfADeletedRowIsRefused() {
        assertThatThrownBy(() -> reduce(ev.delete(rel, keyImage(rel, 1)), ev.update(rel, 1, "b", U)))
                .isInstanceOf(MillraceException.class).hasMessageContaining("table s.t");
    }

    /** In binary format the reduction keeps send forms, merges them alike, and reads a complete row's line back. */
    @Test
    void inBinaryFormatValuesAreSendFormsAndMergeAlike() {
        KeyedReduction r = reduce(true, ev.insert(rel, 1, null, "big value"), ev.update(rel, 1, "b", U),
                ev.update(rel, keyImage(rel, 2), row(3, "c", U)));
        byte[] one = rel.codec(0).encodeBinary(1);
        KeyedReduction.Row row = r.rows().get(new String(one, java.nio.charset.StandardCharsets.ISO_8859_1));
        Object[] vals = r.values(row);
        assertThat((byte[]) vals[0]).isEqualTo(one);
        assertThat(new String((byte[]) vals[1], java.nio.charset.StandardCharsets.UTF_8)).isEqualTo("b");
        assertThat(new String((byte[]) vals[2], java.nio.charset.StandardCharsets.UTF_8)).isEqualTo("big value");
        assertThat(row.line).hasSize(3 * 4 + 4 + 1 + 9);
        KeyedReduction.Row moved = r.rows().get(new String(rel.codec(0).encodeBinary(3), java.nio.charset.StandardCharsets.ISO_8859_1));
        assertThat(moved.vals[2]).isNull();
        assertThat((byte[]) moved.from[0]).isEqualTo(rel.codec(0).encodeBinary(2));
        KeyedReduction nulls = reduce(true, ev.insert(rel, 4, null, ""));
        Object[] v = nulls.values(nulls.rows().values().iterator().next());
        assertThat(v[1]).isSameAs(CopyText.BINARY_NULL);
        assertThat((byte[]) v[2]).isNotSameAs(CopyText.BINARY_NULL).isEmpty();
    }
}
