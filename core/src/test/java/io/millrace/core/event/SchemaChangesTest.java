package io.millrace.core.event;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.SchemaChange;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.Codecs;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Which schema-change events an event destination writes ({@link SchemaChanges}), and their JSON. */
class SchemaChangesTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final EnvelopeWriter WRITER = new EnvelopeWriter(new SourceMeta("shop", "shopdb"),
            Clock.fixed(Instant.parse("2024-05-06T07:08:09Z"), ZoneOffset.UTC), "9.9.9");

    private static RelationInfo rel(String... cols) {
        List<ColumnInfo> c = new java.util.ArrayList<>();
        for (String n : cols) {
            c.add(new ColumnInfo(n, Codecs.builtin(n.equals("id") ? 23 : 25), -1, n.equals("id")));
        }
        return new RelationInfo(7, new TableRef("public", "t"), 'd', c, TypeResolver.builtinsOnly());
    }

    private static ChangeEvent insert(RelationInfo r, long commit, boolean snapshot) {
        Object[] row = new Object[r.columnCount()];
        row[0] = 1;
        return new ChangeEvent(snapshot ? Op.READ : Op.CREATE, r, null, row, Lsn.of(commit), new Position(Lsn.of(commit), 1), 9,
                1_700_000_000_000_000L, snapshot);
    }

    @Test
    void withoutTheTriggerANewShapeAfterTheCopyIsAnnouncedOnceAsTheRelationMessagesShowIt() throws Exception {
        SchemaChanges s = new SchemaChanges();
        RelationInfo v1 = rel("id", "a");
        RelationInfo v2 = rel("id", "b");
        assertThat(s.due(insert(v1, 100, true))).as("a copy's rows").isNull();
        assertThat(s.due(insert(rel("id", "a"), 200, false))).as("the same shape, another instance").isNull();
        SchemaChange c = s.due(insert(v2, 300, false));
        assertThat(c).isNotNull();
        assertThat(c.exact()).isFalse();
        assertThat(s.due(insert(v2, 301, false))).isNull();
        JsonNode n = JSON.readTree(WRITER.schemaChangeBytes(c, insert(v2, 300, false)));
        assertThat(n.path("exact").asBoolean()).isFalse();
        assertThat(n.path("ddl").isNull()).isTrue();
        assertThat(n.path("source").path("commit_lsn").asLong()).isEqualTo(300);
        JsonNode b = n.path("tableChanges").get(0).path("table").path("columns").get(1);
        assertThat(b.path("name").asText()).isEqualTo("b");
        assertThat(b.path("previousName").asText()).as("same type in the same place: read as a rename").isEqualTo("a");
        assertThat(n.path("tableChanges").get(0).path("table").path("primaryKeyColumnNames").get(0).asText()).isEqualTo("id");
    }

    @Test
    void withTheTriggerTheToldChangeIsWrittenOncePerShape() throws Exception {
        SchemaChange told = SchemaChange.parse(("{\"command\":\"ALTER TABLE\",\"oid\":7,\"schema\":\"public\",\"table\":\"t\","
                + "\"before\":{\"1\":\"id\",\"2\":\"a\"},\"columns\":[{\"attnum\":1,\"name\":\"id\",\"type\":\"integer\",\"not_null\":true},"
                + "{\"attnum\":3,\"name\":\"b\",\"type\":\"text\"}],\"ddl\":\"ALTER TABLE t DROP a, ADD b text\"}").getBytes(StandardCharsets.UTF_8));
        RelationInfo v2 = rel("id", "b").withDdl(told);
        SchemaChanges s = new SchemaChanges();
        assertThat(s.due(insert(v2, 300, false))).isSameAs(told);
        assertThat(s.due(insert(v2, 301, false))).isNull();
        JsonNode n = JSON.readTree(WRITER.schemaChangeBytes(told, insert(v2, 300, false)));
        assertThat(n.path("exact").asBoolean()).isTrue();
        assertThat(n.path("ddl").asText()).isEqualTo("ALTER TABLE t DROP a, ADD b text");
        JsonNode b = n.path("tableChanges").get(0).path("table").path("columns").get(1);
        assertThat(b.path("added").asBoolean()).as("a drop and an add, not a rename").isTrue();
        assertThat(b.path("previousName").isNull()).isTrue();
        assertThat(n.path("tableChanges").get(0).path("table").path("columns").get(0).path("optional").asBoolean()).isFalse();
    }
}
