package io.millrace.sink.postgres;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class CopyTextTest {
    @Test
    void escapesTheFourSpecialCharacters() {
        assertThat(CopyText.escape("plain")).isSameAs("plain");
        assertThat(CopyText.escape("a\tb\nc\rd\\e")).isEqualTo("a\\tb\\nc\\rd\\\\e");
        assertThat(CopyText.escape("\\N")).isEqualTo("\\\\N"); // the text "\N" is not NULL
        assertThat(CopyText.escape("ünï\tcode")).isEqualTo("ünï\\tcode");
    }
}
