package io.millrace.core.types;

import org.junit.jupiter.api.Test;

import static io.millrace.core.types.JsonFormTest.json;
import static io.millrace.core.types.TextAndBinaryFormsTest.bin;
import static io.millrace.core.types.TextAndBinaryFormsTest.c;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** tsvector and tsquery: binary prints what tsvectorout / tsqueryout print; the value and JSON are that text. */
class TextSearchCodecsTest {

    @Test
    void tsvector() {
        // 2 lexemes: "a" with positions 1A (0xC001) and 2; "it's" without positions
        String b = "00000002" + "6100" + "0002" + "c001" + "0002" + "69742773" + "00" + "0000";
        assertThat(bin("tsvector", b)).isEqualTo("'a':1A,2 'it''s'");
        assertThat(c("tsvector").decodeText("'a':1A,2 'it''s'")).isEqualTo("'a':1A,2 'it''s'");
        assertThat(json(c("tsvector"), "'a':1A,2")).isEqualTo("\"'a':1A,2\"");
        assertThat(bin("tsvector", "00000000")).isEqualTo("");
        assertThatThrownBy(() -> bin("tsvector", "00000001" + "61")).hasMessageContaining("unterminated lexeme");
    }

    @Test
    void tsquery() {
        // 'fat' & ( 'rat' | !'cat' ): AND, then its right operand (OR, NOT cat, rat), then its left (fat)
        String b = "00000006" + "0202" + "0203" + "0201" + "010000" + "63617400" + "010000" + "72617400" + "010000" + "66617400";
        assertThat(bin("tsquery", b)).isEqualTo("'fat' & ( 'rat' | !'cat' )");
        // 'a' <2> 'b':*A
        String phrase = "00000003" + "0204" + "0002" + "010801" + "6200" + "010000" + "6100";
        assertThat(bin("tsquery", phrase)).isEqualTo("'a' <2> 'b':*A");
        assertThat(bin("tsquery", "00000000")).isEqualTo("");
        assertThatThrownBy(() -> bin("tsquery", "00000001" + "0209")).hasMessageContaining("bad operator 9");
    }
}
