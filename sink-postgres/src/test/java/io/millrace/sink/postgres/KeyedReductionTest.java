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
        KeyedReduction r = new KeyedReduction(rel, rel.table(), events.length);
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
        assertThat(row.values()).containsExactly("1", "c", "y");
    }

    @Test
    void keyChangeDeletesTheOldKey() {
        KeyedReduction r = reduce(ev.update(rel, keyImage(rel, 1), row(2, "a", "x")));
        assertThat(r.rows().get("1").delete).isTrue();
        assertThat(r.rows().get("2").values()).containsExactly("2", "a", "x");
    }

    @Test
    void unchangedToastMergesWithAnEarlierImageOfTheKey() {
        KeyedReduction r = reduce(ev.insert(rel, 1, "a", "big value"), ev.update(rel, 1, "b", U));
        KeyedReduction.Row row = r.rows().get("1");
        assertThat(row.values()).containsExactly("1", "b", "big value");
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
        assertThat(r.rows().get("1").values()).containsExactly("1", "\\N", "tab\\there ünï");
        assertThat(new String(r.rows().get("1").line, java.nio.charset.StandardCharsets.UTF_8))
                .isEqualTo("1\t\\N\ttab\\there ünï");
    }

    @Test
    void updateWithUnchangedToastOfADeletedRowIsRefused() {
        assertThatThrownBy(() -> reduce(ev.delete(rel, keyImage(rel, 1)), ev.update(rel, 1, "b", U)))
                .isInstanceOf(MillraceException.class).hasMessageContaining("table s.t");
    }
}
