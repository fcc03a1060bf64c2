package io.millrace.core.schema;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TableRefTest {
    @Test
    void parsesPlainQuotedAndDefaultSchemaNames() {
        assertThat(TableRef.parse("orders")).isEqualTo(new TableRef("public", "orders"));
        assertThat(TableRef.parse("Sales.Orders")).isEqualTo(new TableRef("Sales", "Orders"));
        assertThat(TableRef.parse("\"my.schema\".\"a\"\"b\"")).isEqualTo(new TableRef("my.schema", "a\"b"));
        assertThat(new TableRef("my.schema", "a\"b").sql()).isEqualTo("\"my.schema\".\"a\"\"b\"");
        assertThatThrownBy(() -> TableRef.parse("a.b.c")).hasMessageContaining("must be 'table' or 'schema.table'");
        assertThatThrownBy(() -> TableRef.parse("\"open")).hasMessageContaining("unterminated double quote");
    }

    @Test
    void patternsMatchWithStarAndQuestionMarkAndPlainNamesOnlyThemselves() {
        TableRef orders = new TableRef("sales", "orders_2024");
        assertThat(TableRef.matches(TableRef.parse("sales.*"), orders)).isTrue();
        assertThat(TableRef.matches(TableRef.parse("*.orders_20??"), orders)).isTrue();
        assertThat(TableRef.matches(TableRef.parse("sales.orders_202?"), orders)).isTrue();
        assertThat(TableRef.matches(TableRef.parse("sales.orders"), orders)).isFalse();
        assertThat(TableRef.matches(TableRef.parse("public.*"), orders)).isFalse();
        assertThat(TableRef.matches(TableRef.parse("sales.orders_2024"), orders)).isTrue();
        assertThat(TableRef.parse("sales.*").isPattern()).isTrue();
        assertThat(TableRef.parse("sales.orders").isPattern()).isFalse();
    }
}
