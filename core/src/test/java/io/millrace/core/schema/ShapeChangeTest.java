package io.millrace.core.schema;

import io.millrace.core.types.Codecs;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link ShapeChange} read from two Relation messages (a guess) and from the event trigger's message (exact). */
class ShapeChangeTest {
    private static final TableRef T = new TableRef("public", "t");

    private static ColumnInfo col(String name, int type) {
        return new ColumnInfo(name, Codecs.builtin(type), -1, false);
    }

    private static RelationInfo rel(ColumnInfo... cols) {
        return new RelationInfo(100, T, 'd', List.of(cols), TypeResolver.builtinsOnly());
    }

    private static SchemaChange message(String json) {
        return SchemaChange.parse(json.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void aColumnDroppedAndAnotherOfTheSameTypeAddedInItsPlaceIsARenameAsTheRelationMessagesShowIt() {
        RelationInfo before = rel(col("id", 23), col("c", 23));
        RelationInfo after = rel(col("id", 23), col("d", 23));
        ShapeChange guess = ShapeChange.between(before, after);
        assertThat(guess.exact()).isFalse();
        assertThat(guess.renamed()).isEqualTo(Map.of("c", "d"));
    }

    @Test
    void theTriggersMessageTellsTheDropAndAddAndARenameWithARetype() {
        RelationInfo before = rel(col("id", 23), col("a", 23), col("c", 23));
        SchemaChange m = message("""
                {"command": "ALTER TABLE", "oid": 100, "schema": "public", "table": "t", "old_schema": "public", "old_table": "t",
                 "before": {"1": "id", "2": "a", "3": "c"},
                 "columns": [{"attnum": 1, "name": "id", "type": "integer"}, {"attnum": 2, "name": "a2", "type": "bigint"},
                             {"attnum": 4, "name": "d", "type": "integer", "missing": true, "value": "7"}],
                 "dropped": false, "ddl": "ALTER TABLE t ..."}""");
        RelationInfo after = rel(col("id", 23), col("a2", 20), col("d", 23)).withDdl(m);
        ShapeChange exact = ShapeChange.between(before, after);
        assertThat(exact.exact()).isTrue();
        assertThat(exact.renamed()).isEqualTo(Map.of("a", "a2"));
        assertThat(exact.retyped()).containsExactly("a2");
        assertThat(exact.dropped()).extracting(ColumnInfo::name).containsExactly("c");
        assertThat(exact.added()).extracting(ColumnInfo::name).containsExactly("d");
        assertThat(m.column("d").missing()).isTrue();
        assertThat(m.column("d").value()).isEqualTo("7");
        assertThat(ShapeChange.between(rel(col("id", 23), col("x", 23)), after).exact())
                .as("a held shape the message does not start from: read as without the trigger").isFalse();
    }

    @Test
    void messagesInARowComposeAndUnknownOldNamesFallBack() {
        SchemaChange first = message("{\"oid\": 100, \"schema\": \"public\", \"table\": \"t\", \"before\": {\"1\": \"a\"},"
                + " \"columns\": [{\"attnum\": 1, \"name\": \"b\", \"type\": \"integer\"}]}");
        SchemaChange second = message("{\"oid\": 100, \"schema\": \"public\", \"table\": \"t\", \"before\": {\"1\": \"b\"},"
                + " \"columns\": [{\"attnum\": 1, \"name\": \"c\", \"type\": \"integer\"}]}");
        ShapeChange both = ShapeChange.between(rel(col("a", 23)), rel(col("c", 23)).withDdl(first.then(second)));
        assertThat(both.exact()).isTrue();
        assertThat(both.renamed()).isEqualTo(Map.of("a", "c"));
        SchemaChange unknown = message("{\"oid\": 100, \"schema\": \"public\", \"table\": \"t\", \"before\": null,"
                + " \"columns\": [{\"attnum\": 1, \"name\": \"c\", \"type\": \"integer\"}]}");
        assertThat(ShapeChange.between(rel(col("a", 23)), rel(col("c", 23)).withDdl(unknown)).exact()).isFalse();
    }
}
