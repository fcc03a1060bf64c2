package io.millrace.core.change;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Issue 17: a key range's ends are typed — open, or a key — and no null stands for "open". */
class KeyBoundTest {
    @Test
    void aRangeHasTwoEndsAndNoneIsNull() {
        assertThatThrownBy(() -> new OnlineTask.KeyRange(null, KeyBound.OPEN)).isInstanceOf(NullPointerException.class)
                .hasMessageContaining("KeyBound.OPEN");
        assertThatThrownBy(() -> new OnlineTask.KeyRange(KeyBound.OPEN, null)).isInstanceOf(NullPointerException.class);
        assertThat(OnlineTask.KeyRange.ALL).isEqualTo(new OnlineTask.KeyRange(KeyBound.OPEN, KeyBound.OPEN));
    }

    @Test
    void aKeyHasAValuePerColumnAndNoneNull() {
        assertThatThrownBy(() -> new KeyBound.Key(List.of())).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new KeyBound.Key(java.util.Arrays.asList("1", null))).isInstanceOf(NullPointerException.class);
        assertThat(new KeyBound.Key(List.of("1", "a")).values()).containsExactly("1", "a");
    }

    @Test
    void theStoredFormReadsNullAsOpen() {
        assertThat(KeyBound.stored(null)).isSameAs(KeyBound.OPEN);
        assertThat(KeyBound.stored(List.of("7"))).isEqualTo(new KeyBound.Key(List.of("7")));
        assertThat(OnlineTask.KeyRange.stored(null, List.of("9")))
                .isEqualTo(new OnlineTask.KeyRange(KeyBound.OPEN, new KeyBound.Key(List.of("9"))));
    }
}
